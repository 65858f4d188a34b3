"""Resuming a killed run: Lightning's checkpoints are kept per run id, and a run started again continues from the
last one, drawing the same random numbers as a run that was never stopped.

``harness run`` gives each run its own Lightning folder, ``results/lightning/<paper>/<tier>/<run id>/`` (the run id
of its first evaluation: its training logs and ``checkpoints/``), and removes the checkpoints once the run's records
are written. Where the tier's trainer saves
checkpoints (Lightning's default, unless the config says ``enable_checkpointing: false``), a run found with a
checkpoint there resumes from the newest one (``Trainer.fit(ckpt_path=...)``: weights, optimizer, schedulers, loop
counters). Lightning does not keep the random generators' state, so :class:`RandomState` stores it in each
checkpoint and puts it back when training restarts: the next epoch's shuffle and dropout masks are those of the
uninterrupted run (tests/harness/test_resume.py checks the metrics bit for bit on the toy paper). Checkpoints saved
at an epoch's end resume exactly; one saved mid-epoch resumes Lightning's way.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch


def last_checkpoint(folder: Path) -> Path | None:
    """The newest Lightning checkpoint (``*.ckpt``) under ``folder``, if any."""
    found = sorted(folder.glob("**/*.ckpt"), key=lambda path: path.stat().st_mtime) if folder.is_dir() else []
    return found[-1] if found else None


class RandomState(pl.Callback):
    """Saves the Python, NumPy and torch generators' state with each checkpoint and puts it back when a run resumes:
    as the checkpoint is loaded (before Lightning makes the training data loader's iterator, which draws its base
    seed then), and again after the sanity check (whose validation loader draws one too)."""

    def __init__(self) -> None:
        self.restored: dict[str, Any] | None = None

    def state_dict(self) -> dict[str, Any]:
        version, state, gauss = random.getstate()
        name, keys, pos, has_gauss, cached = np.random.get_state()
        return {
            "python": {"version": version, "state": list(state), "gauss": gauss},
            "numpy": {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                      "has_gauss": int(has_gauss), "cached": float(cached)},
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        }  # fmt: skip

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.restored = state_dict
        _set_state(state_dict)

    def on_sanity_check_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self.restored is not None:
            _set_state(self.restored)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.restored = None


def _set_state(saved: dict[str, Any]) -> None:
    py = saved["python"]
    random.setstate((py["version"], tuple(py["state"]), py["gauss"]))
    npy = saved["numpy"]
    np.random.set_state(
        (npy["name"], npy["keys"].numpy().astype(np.uint32), npy["pos"], npy["has_gauss"], npy["cached"])
    )
    torch.set_rng_state(saved["torch"])
    if saved["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(saved["cuda"])
