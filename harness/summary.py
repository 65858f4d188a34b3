"""What ``harness run`` shows when it ends: the metrics each new record holds, the claims they judge and the
verdicts; Lightning's tips and one deprecation notice filtered out; a progress
bar on long tiers when stderr is a terminal."""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.records import read_record

LONG_TIERS = ("budget", "full", "weights")  # training that takes minutes to days: show Lightning's progress bar
NOISE = (
    r"`isinstance\(treespec, LeafSpec\)` is deprecated",  # torch's pytree API, from inside Lightning
    r"The '\w+' does not have many workers",  # the tiers choose their workers on purpose
    r"The number of training batches \(\d+\) is smaller than the logging interval",  # tiny tiers log each epoch
)


class _NoTips(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("💡 Tip")


def quiet_lightning() -> None:
    """Drop Lightning's advertising tips and the deprecation notices above; every other warning and log line stays."""
    for name in ("pytorch_lightning.utilities.rank_zero", "lightning.pytorch.utilities.rank_zero"):
        logging.getLogger(name).addFilter(_NoTips())
    for message in NOISE:
        warnings.filterwarnings("ignore", message=message)


def progress_bar(tier: str, trainer_args: dict[str, Any]) -> dict[str, Any]:
    """Trainer arguments with Lightning's progress bar on for a long tier run at a terminal (display only: the
    config, and so the run id, are untouched)."""
    if tier in LONG_TIERS and sys.stderr.isatty():
        return {**trainer_args, "enable_progress_bar": True}
    return trainer_args


def run_rows(paths: Sequence[Path], verdicts: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per metric of each record at ``paths``, and per claim whose verdict rests on that run and metric
    (``verdicts``: rows of the store's ``verdicts`` table with ``run_ids``, harness.report.run_verdicts); a metric no
    claim judges has one row."""
    rows = []
    for path in paths:
        record = read_record(path)
        for metric, value in record.metrics.items():
            judged = [v for v in verdicts if record.run_id in (v.get("run_ids") or []) and v["metric"] == metric]
            base = {"run_id": record.run_id, "model": record.model, "tier": record.tier, "dataset": record.dataset,
                    "split": record.split, "metric": metric, "value": value}  # fmt: skip
            rows += [
                {**base, "claim_id": v["claim_id"], "reported": v["reported"], "status": v["status"]} for v in judged
            ]
            rows += [] if judged else [{**base, "claim_id": None, "reported": None, "status": None}]
    return rows


def training_loggers(save_dir: Path, version: str) -> list[Any]:
    """Lightning's CSV logger always (``<save_dir>/<version>/metrics.csv``), and TensorBoard's or MLflow's when that
    package is installed: the training curves land where users look, under one folder per run."""
    import importlib.util

    from pytorch_lightning.loggers import CSVLogger

    loggers: list[Any] = [CSVLogger(save_dir=str(save_dir), name="", version=version)]
    if importlib.util.find_spec("tensorboard") or importlib.util.find_spec("tensorboardX"):
        from pytorch_lightning.loggers import TensorBoardLogger

        loggers.append(TensorBoardLogger(save_dir=str(save_dir), name="", version=version))
    if importlib.util.find_spec("mlflow"):
        from pytorch_lightning.loggers import MLFlowLogger

        uri = (save_dir.parent / "mlruns").resolve().as_uri()
        loggers.append(MLFlowLogger(experiment_name=save_dir.as_posix(), run_name=version, tracking_uri=uri))
    return loggers


def log_artifacts(loggers: Sequence[Any]) -> dict[str, str]:
    """The run record's links to the training curves: ``training_log`` (the CSV), and the TensorBoard folder."""
    found: dict[str, str] = {}
    for logger in loggers:
        kind = type(logger).__name__
        if kind == "CSVLogger":
            found["training_log"] = str(Path(logger.log_dir) / "metrics.csv")
        elif kind == "TensorBoardLogger":
            found["tensorboard_log"] = str(logger.log_dir)
        elif kind == "MLFlowLogger":
            found["mlflow_run"] = f"{logger._tracking_uri}#{logger.run_id}"
    return found
