"""Predictions kept with every run: each evaluated split's predictions in its task's official format.

After ``trainer.test`` every run record names, in its ``artifacts``, a predictions file (or folder) that
``harness score TASK --references R --predictions P`` scores to the record's metrics (see docs/plugins.md).

Two hooks make that work, both optional capabilities of :mod:`harness.contract` (Protocols, no base classes):

- the data module's ``scoring(dataloader_idx, folder) -> Scoring``: which task scores that test loader, its
  references (a file or folder under the data root, or one the data module writes into ``folder`` when the data
  has no references file of its own), and the example ids in the loader's order (plus class names where the
  metric sees class indices);
- the test metric's ``write_predictions(folder, scoring) -> {"predictions": Path, ...}``: writes what it
  accumulated in the official format (further keys are the task's ``options``, e.g. ``na_probs``).

:class:`PredictionsKeeper`, a Lightning callback the runner adds, calls both at ``on_test_epoch_end`` (callbacks
run before the LightningModule's own hook, so before a system computes and resets its ``test_metrics``). Each
split's files are written to a staging folder, then renamed in one step to
``<results>/artifacts/<run_id>/<digest>/`` (``digest``: sha256 of the files' names and contents), so a folder is
complete or absent and no run's files are ever overwritten.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytorch_lightning as pl

from harness.contract import Evaluated, Scored, WritesPredictions, capability
from harness.errors import HarnessError
from harness.records import references_sha256, tree_digest

ARTIFACTS = "artifacts"


@dataclass(frozen=True)
class Scoring:
    """How one test loader's predictions are scored.

    ``task``: the registered task id whose scorer reads them; ``references``: what ``harness score`` is given as
    ``--references``; ``ids``: the example ids in the test loader's order, as the official format spells them;
    ``labels``: class index -> label as the references spell it (``None``: the index itself, ``"0"``, ``"1"`` ...).
    """

    task: str
    references: Path
    ids: Sequence[Any]
    labels: Sequence[str] | None = None

    def label(self, index: int) -> str:
        return str(index) if self.labels is None else self.labels[index]


class KeptLists:
    """Mixed in ahead of a torchmetrics ``Metric`` that keeps per-example predictions in plain lists (strings, PNG
    bytes: what cannot be a tensor state, as states are synced across devices): ``kept_lists`` names them.
    ``reset`` empties them, and ``forward``, which resets the metric to compute one batch's value, keeps what the
    lists held before that batch."""

    kept_lists: tuple[str, ...] = ()

    def reset(self) -> None:
        super().reset()
        for name in self.kept_lists:
            setattr(self, name, [])

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        before = {name: getattr(self, name) for name in self.kept_lists}
        value = super().forward(*args, **kwargs)  # reset, update on this batch only, merge the states back
        for name, items in before.items():
            setattr(self, name, items + getattr(self, name))
        return value


def check_count(kept: int, scoring: Scoring, what: str = "predictions") -> None:
    """A metric holding more predictions than its loader has examples was fed another split (an error naming both)."""
    if kept > len(scoring.ids):
        raise HarnessError(
            f"the metric holds {kept} {what} but the {scoring.task} test split ({scoring.references}) has "
            f"{len(scoring.ids)} examples: was the metric reset between test runs?"
        )


def _fsync_tree(folder: Path) -> None:
    for path in sorted(folder.rglob("*"), reverse=True):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def publish(staging: Path, parent: Path) -> Path:
    """Move the finished ``staging`` folder to ``parent/<digest>`` in one rename; an identical folder already there
    is kept (and ``staging`` removed). Returns the final folder."""
    final = parent / tree_digest(staging)[:16]
    parent.mkdir(parents=True, exist_ok=True)
    _fsync_tree(staging)
    try:
        os.rename(staging, final)
    except OSError:
        if not final.is_dir():
            raise
        shutil.rmtree(staging)  # same digest, same files: another attempt of this run already kept them
    return final


def _relative(path: Path, results_dir: Path) -> str:
    """A path as the record names it, relative to the results folder when it lies in the project holding that
    folder (``artifacts/...``, ``../data/...``), else absolute (a data root elsewhere on the machine)."""
    path, results_dir = Path(os.path.abspath(path)), Path(os.path.abspath(results_dir))
    if path.is_relative_to(results_dir.parent):
        return Path(os.path.relpath(path, results_dir)).as_posix()
    return path.as_posix()


def keep(metric: Any, datamodule: Any, index: int, run_id: str, results_dir: Path) -> dict[str, str]:
    """Write test loader ``index``'s predictions under ``results_dir/artifacts/<run_id>/`` and return the record's
    ``artifacts``: ``task``, ``predictions``, ``references``, ``references_sha256`` and any scorer options."""
    area = results_dir / ARTIFACTS
    area.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=area, prefix=f".{run_id}."))
    try:
        scoring = datamodule.scoring(index, staging)
        files = metric.write_predictions(staging, scoring)
        references = Path(scoring.references)
        digest = references_sha256(references)
        final = publish(staging, area / run_id)
    finally:
        shutil.rmtree(staging, ignore_errors=True)

    def moved(path: Path) -> Path:
        inside = Path(os.path.abspath(path)).is_relative_to(os.path.abspath(staging))
        return final / Path(os.path.abspath(path)).relative_to(os.path.abspath(staging)) if inside else path

    artifacts = {"task": scoring.task, "references": _relative(moved(references), results_dir)}
    artifacts["references_sha256"] = digest
    artifacts.update({name: _relative(moved(path), results_dir) for name, path in files.items()})
    return artifacts


def unwritable(metric: Any, datamodule: Any) -> str | None:
    """Why a test loader's predictions cannot be written, or ``None`` when they can."""
    if metric is None:
        return "the system has no test_metrics entry for this loader"
    if capability(metric, WritesPredictions) is None:
        return f"its test metric ({type(metric).__name__}) has no write_predictions"
    if capability(datamodule, Scored) is None:
        return f"its data module ({type(datamodule).__name__}) has no scoring(dataloader_idx, folder)"
    return None


class PredictionsKeeper(pl.Callback):
    """Keeps each test loader's predictions as an artifact of its run record (see the module docstring).

    ``run_ids``: one per test loader, in order (the runner's ``evaluate`` entries). A loader whose system or data
    module lacks the hooks, a run on several devices, or a write that fails on bad data is reported on stderr and
    (or any error while writing) leaves that record without artifacts: the run's metrics are never lost to its
    predictions.
    """

    def __init__(self, run_ids: Sequence[str], results_dir: Path) -> None:
        self.run_ids = list(run_ids)
        self.results_dir = Path(results_dir)
        self.kept: dict[int, dict[str, str]] = {}

    def artifacts(self, index: int) -> dict[str, str]:
        return dict(self.kept.get(index, {}))

    def on_test_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if trainer.world_size > 1:
            _note("predictions are kept by single-device runs only (metrics hold each device's share)")
            return
        evaluated = capability(pl_module, Evaluated)
        metrics = evaluated.test_metrics if evaluated is not None else []
        for index, run_id in enumerate(self.run_ids):
            metric = metrics[index] if index < len(metrics) else None
            reason = unwritable(metric, trainer.datamodule)
            if reason is not None:
                _note(f"predictions of {run_id} not kept: {reason}")
                continue
            try:
                self.kept[index] = keep(metric, trainer.datamodule, index, run_id, self.results_dir)
            except Exception as exc:  # a run's metrics are worth more than its predictions: note it, go on
                why = str(exc) if isinstance(exc, HarnessError | OSError) else f"{type(exc).__name__}: {exc}"
                _note(f"predictions of {run_id} not kept: {why}")


def _note(message: str) -> None:
    print(f"harness: warning: {message}", file=sys.stderr)
