"""``harness rescore RUN``: score a run's kept predictions again and set the result beside its record's metrics.

A run record's ``artifacts`` name its predictions in the task's official format, the references they were scored
against and those references' sha256 (harness.predictions writes them). Re-scoring runs the task's official-format
scorer, exactly what ``harness score`` runs, so a record can be checked by anyone holding its files. No Lightning
here: this is the scorer and the files, nothing of the run's code.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness import registry
from harness.errors import HarnessError
from harness.records import RunRecord, read_record, references_sha256

# record metric name -> the scorer's key for it, where the two differ by more than case (COCO's ``AP`` is ``ap``)
METRIC_ALIASES = {"top1": "accuracy", "exact_match": "exact"}
TOLERANCE = 1e-6  # relative: metrics are accumulated in float32, the scorers compute in float64


def artifact_paths(artifacts: Mapping[str, str], results_dir: Path) -> tuple[Any, dict[str, Path]]:
    """The task that scores a record's predictions and its scorer's files by argument name (``references``,
    ``predictions`` and any task options), resolved against ``results_dir``, the folder holding ``runs/`` and
    ``artifacts/``; other artifacts (a checkpoint) are left out."""
    if "predictions" not in artifacts:
        raise HarnessError("the record's artifacts name no predictions (the run kept none)")
    task = registry.task(artifacts["task"])
    names = [name for name in ("references", "predictions", *task.options) if name in artifacts]
    return task, {name: Path(results_dir) / artifacts[name] for name in names}


def rescore_args(artifacts: Mapping[str, str], results_dir: Path) -> list[str]:
    """The ``harness score`` arguments that re-score a record's predictions (see :func:`artifact_paths`)."""
    task, paths = artifact_paths(artifacts, results_dir)
    return [task.id, *(part for name, path in paths.items() for part in (f"--{name.replace('_', '-')}", str(path)))]


def scorer_key(metric: str, scored: Mapping[str, Any]) -> str | None:
    """The scorer's key for a record's metric: the same name up to case, or its alias; None when it scores none."""
    for key in scored:
        if key.lower() == metric or METRIC_ALIASES.get(metric) == key:
            return key
    return None


def find_record(run: str, runs_dir: Path) -> Path:
    """A record given by path, or by run id in ``runs_dir``."""
    path = Path(run)
    if path.suffix == ".json" and path.exists():
        return path
    candidate = runs_dir / f"{run}.json"
    if not candidate.exists():
        raise HarnessError(f"{run}: neither a record file nor a run id in {runs_dir}/")
    return candidate


def _check_files(record: RunRecord, results_dir: Path) -> None:
    artifacts = record.artifacts
    for name in ("references", "predictions"):
        path = results_dir / artifacts.get(name, "")
        if name not in artifacts or not path.exists():
            raise HarnessError(f"run {record.run_id}: its {name} {str(path)!r} are missing (artifacts.{name})")
    references = results_dir / artifacts["references"]
    expected = artifacts.get("references_sha256")
    if not expected:
        return
    actual = references_sha256(references)
    if actual != expected:
        raise HarnessError(
            f"{references}: references changed since run {record.run_id} was scored "
            f"(sha256 {actual}, the record says {expected})"
        )


def rescore(record_path: Path) -> list[dict[str, Any]]:
    """One row per metric of the record: ``{"metric", "recorded", "rescored", "agrees"}`` (``rescored`` None where
    the scorer gives no such key, e.g. a training-time metric)."""
    record = read_record(record_path)
    if "predictions" not in record.artifacts:
        raise HarnessError(f"{record_path}: field 'artifacts': the run kept no predictions, nothing to re-score")
    results_dir = record_path.resolve().parent.parent
    _check_files(record, results_dir)
    task, paths = artifact_paths(record.artifacts, results_dir)
    scored = task.scorer()(paths.pop("references"), paths.pop("predictions"), **paths)
    return [_row(metric, value, scored) for metric, value in sorted(record.metrics.items())]


def _row(metric: str, value: float, scored: Mapping[str, float]) -> dict[str, Any]:
    key = scorer_key(metric, scored)
    got = None if key is None else float(scored[key])
    both_nan = got is not None and math.isnan(got) and math.isnan(value)
    agrees = None if got is None else both_nan or math.isclose(got, value, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
    return {"metric": metric, "recorded": value, "rescored": got, "agrees": agrees}


def rescore_published(repro: Any, runs_dir: Path | None = None) -> list[dict[str, Any]]:
    """Install the paper's published record sets (harness.published), then score each of their records that kept
    predictions again: one row per run and metric, with ``run_id``. A set that fails its hashes is an error."""
    from harness.published import install_all
    from harness.records import RUNS_DIR

    done = install_all([repro], runs_dir or RUNS_DIR)
    if done.errors:
        raise HarnessError("; ".join(done.errors))
    rows = []
    for path in done.records:
        if "predictions" in read_record(path).artifacts:
            rows += [{"run_id": path.stem, **row} for row in rescore(path)]
    return rows
