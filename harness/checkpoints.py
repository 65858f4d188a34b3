"""Checkpoints: a run's weights as safetensors, stored content-addressed next to the run records.

A run whose config says ``save_checkpoint: true`` stores its system's state dict, after the fit, as
``<runs_dir>/../checkpoints/<sha256>.safetensors`` (``results/checkpoints/`` beside ``results/runs/``), written
atomically like a record; the record names it in ``artifacts`` (``checkpoint``: the path, ``checkpoint_sha256``: the
hash). The name is the content's sha256, so equal weights are stored once and a file can be checked against its
name. Loading verifies the hash first and reads with safetensors only: nothing is ever unpickled.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import HarnessError
from harness.records import atomic_write_bytes, file_sha256

if TYPE_CHECKING:
    import torch
    from torch import nn

PATH_ARTIFACT, SHA_ARTIFACT = "checkpoint", "checkpoint_sha256"  # the record's artifacts keys


def checkpoints_dir(runs_dir: Path) -> Path:
    """Where the checkpoints of the records in ``runs_dir`` live: its sibling ``checkpoints/``."""
    return runs_dir.parent / "checkpoints"


def checkpoint_path(sha256: str, runs_dir: Path) -> Path:
    return checkpoints_dir(runs_dir) / f"{sha256}.safetensors"


def save_state(state: Mapping[str, torch.Tensor], runs_dir: Path) -> dict[str, str]:
    """Store ``state`` (a state dict) content-addressed; returns the record's checkpoint artifacts."""
    from safetensors.torch import save

    # copies on the CPU: safetensors refuses tensors that share memory (tied weights) and device tensors
    tensors = {name: value.detach().to("cpu", copy=True).contiguous() for name, value in state.items()}
    data = save(tensors)
    sha256 = hashlib.sha256(data).hexdigest()
    path = checkpoint_path(sha256, runs_dir)
    if not path.is_file() or file_sha256(path) != sha256:  # present and intact: the same weights, stored once
        atomic_write_bytes(path, data, overwrite=True)
    return {PATH_ARTIFACT: str(path), SHA_ARTIFACT: sha256}


def load_state(sha256: str, runs_dir: Path, source: str) -> dict[str, torch.Tensor]:
    """The tensors of checkpoint ``sha256``, after checking the file's hash; ``source`` says where the hash is from
    (e.g. ``the checkpoint_sha256 of run <id>``)."""
    from safetensors.torch import load_file

    path = checkpoint_path(sha256, runs_dir)
    if not path.is_file():
        raise HarnessError(
            f"{path}: checkpoint missing (expected sha256 {sha256}: {source}); to make it again, move that run's "
            f"record out of {runs_dir}/ and run its stage again"
        )
    actual = file_sha256(path)
    if actual != sha256:
        raise HarnessError(f"{path}: checkpoint sha256 does not match: expected {sha256} ({source}), actual {actual}")
    return load_file(path)


def load_into(module: nn.Module, state: Mapping[str, torch.Tensor], prefixes: Sequence[str] | None, where: str) -> None:
    """Copy ``state`` into ``module``: every tensor, both ways strict, or (``prefixes``) those whose names start
    with one of them, each of which the module must have with the same shape. ``where`` names the checkpoint."""
    own = module.state_dict()
    if prefixes is None:
        chosen, missing = dict(state), sorted(set(own) - set(state))
        if missing:
            raise HarnessError(f"{where}: has no tensor {missing[0]!r} of the system ({len(missing)} missing)")
    else:
        chosen = {name: value for name, value in state.items() if name.startswith(tuple(prefixes))}
        unmatched = [p for p in prefixes if not any(name.startswith(p) for name in chosen)]
        if unmatched:
            raise HarnessError(f"{where}: no tensor's name starts with {unmatched[0]!r} (init_from.prefixes)")
    for name, value in chosen.items():
        if name not in own:
            raise HarnessError(f"{where}: tensor {name!r} is not in the system")
        if own[name].shape != value.shape:
            shapes = f"{tuple(value.shape)} in the checkpoint, {tuple(own[name].shape)} in the system"
            raise HarnessError(f"{where}: tensor {name!r} has shape {shapes}")
    module.load_state_dict(chosen, strict=prefixes is None)
