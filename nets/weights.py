"""Weights read safely, never unpickled: the one loader of every reproduction's ``checkpoint`` and ``init_checkpoint``.

A weights file is a ``.safetensors`` file or a torch file read with ``torch.load(..., weights_only=True)`` (tensors and
plain containers only, no arbitrary objects); a Lightning checkpoint's ``state_dict`` is unwrapped and, when every key
carries the system's ``model.`` prefix, the prefix is removed, so a system's checkpoint loads into its bare model.
Errors name the file: not found, unreadable (corrupt or unsafe), or not fitting the model.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from harness.errors import HarnessError


def read_state(path: str | Path, prefix: str = "model.") -> dict[str, torch.Tensor]:
    """Tensors of ``.safetensors`` or a torch state dict (``weights_only``); of a Lightning checkpoint, the
    ``prefix`` keys with the prefix removed."""
    path = Path(path)
    if not path.is_file():
        raise HarnessError(f"{path}: weights file not found")
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            state = load_file(str(path))
        else:
            state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a corrupt or unsafe file is named, not hidden behind a traceback
        raise HarnessError(f"{path}: cannot read weights: {exc}") from exc
    state = state.get("state_dict", state)
    if state and all(key.startswith(prefix) for key in state):
        state = {key.removeprefix(prefix): value for key, value in state.items()}
    return state


def load_state(module: nn.Module, path: str | Path, prefix: str = "model.") -> None:
    """Load every weight of ``module`` from ``path`` (see :func:`read_state`), for evaluation."""
    state = read_state(path, prefix)
    try:
        module.load_state_dict(state)
    except RuntimeError as exc:
        raise HarnessError(f"{path}: weights do not fit the model: {exc}") from exc
