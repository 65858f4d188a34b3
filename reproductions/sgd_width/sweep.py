"""The SGD width study as a sweep: ``harness run sgd-width --tier T`` calls :func:`run_sweep` (``Reproduction.runner``).

A tier config (``configs/<tier>.yaml``) lists studies: a model family, its widening factors and, per
parameterization, the learning rates and batch sizes to try; with ``seeds`` that is the grid. Each grid point is one
Lightning fit (system.WidthSGDSystem on data.ArrayDataModule) that leaves one run record, whatever happens to it:
``ok`` with its late-time test accuracy, ``diverged`` (non-finite training loss; the step it happened at) or
``failed`` (an exception; the traceback goes to a log file the record names). Run ids come from
``harness.records.make_run_id`` over everything that determines the result, and are computed once, here, before
anything runs; a run whose record exists is not run again, so an interrupted sweep resumes with what is missing.

The runs go to an existing executor, chosen by the config's ``executor.kind``:

- ``local``: joblib's loky process pool with ``n_jobs`` workers, each torch limited to ``training.threads`` threads;
- ``slurm``: submitit (``submitit.AutoExecutor``), one array job whose tasks each run ``runs_per_job`` grid points;
  ``executor.parameters`` go to ``update_parameters`` as they are (``timeout_min``, ``slurm_partition``,
  ``cpus_per_task``, ``gpus_per_node``, ``slurm_array_parallelism``...). ``executor.cluster`` may name submitit's
  ``local`` or ``debug`` executors instead of SLURM. A task that dies leaves its runs unrecorded: they run on resume.

When every run of a model (every seed of its grid) has its record, summary.py derives that model's summary record
(the optimal normalized noise scale of the seed-mean accuracy, as the paper defines it, and friends), which the trend
claims are judged on; a sweep narrowed with ``seed`` writes the summary only once the other seeds are recorded too.
"""

from __future__ import annotations

import copy
import itertools
import logging
import sys
import time
import traceback
import warnings
from pathlib import Path
from typing import Any

from harness.config import read_config
from harness.errors import HarnessError
from harness.records import (
    RunRecord,
    code_version,
    make_run_id,
    new_record,
    now,
    read_record,
    record_path,
    run_provenance,
    write_record,
)
from harness.registry import Reproduction, load_object
from reproductions.sgd_width.variants import FAMILIES, PARAMETERIZATIONS, model_id, noise_scale, normalized_noise_scale

CONFIG_KEYS = {"tier", "protocol", "dataset", "split", "seeds", "data", "training", "executor", "studies"}
TRAINING_DEFAULTS = {
    "epochs": 10, "late_epochs": 3, "sigma_w": 2**0.5, "sigma_b": 0.0, "eval_batch_size": 1000, "threads": 1,
    "accelerator": "cpu", "in_channels": 1, "image_size": 28, "num_classes": 10,
}  # fmt: skip
SYSTEM = "reproductions.sgd_width.system:WidthSGDSystem"


def load_sweep_config(path: Path, tier: str) -> dict[str, Any]:
    """Read a sweep config; errors name the file and the key at fault."""
    config = read_config(path, tier, CONFIG_KEYS, what="a sweep config")
    for key in ("dataset", "studies"):
        if key not in config:
            raise HarnessError(f"{path}: missing key {key!r}")
    for index, study in enumerate(config["studies"]):
        _check_study(path, index, study)
    return config


def _check_study(path: Path, index: int, study: Any) -> None:
    where = f"{path}: studies[{index}]"
    if not isinstance(study, dict) or not {"family", "widths", "grids"} <= study.keys():
        raise HarnessError(f"{where}: a study is a mapping with 'family', 'widths' and 'grids'")
    unknown = set(study) - {"family", "widths", "grids", "base_width", "dataset", "data", "training"}
    if unknown:
        raise HarnessError(f"{where}: unknown key(s) {sorted(unknown)}")
    if study["family"] not in FAMILIES:
        raise HarnessError(f"{where}: unknown family {study['family']!r}; known: {sorted(FAMILIES)}")
    for parameterization, grid in study["grids"].items():
        if parameterization not in PARAMETERIZATIONS:
            raise HarnessError(f"{where}: unknown parameterization {parameterization!r}")
        if not isinstance(grid, dict) or not grid.get("lr") or not grid.get("batch_size"):
            raise HarnessError(f"{where}.grids.{parameterization}: needs non-empty 'lr' and 'batch_size' lists")


def plan_runs(
    repro_id: str,
    config: dict[str, Any],
    tier: str,
    model: str | None = None,
    seed: int | None = None,
    data_root: str | None = None,
) -> list[dict[str, Any]]:
    """Every grid point as a self-contained run description with its ``run_id`` (nothing runs here)."""
    seeds = [seed] if seed is not None else list(config.get("seeds") or [0])
    runs = []
    for study in config["studies"]:  # a study's own 'data' and 'training' keys override the config's
        training = {**TRAINING_DEFAULTS, **(config.get("training") or {}), **(study.get("training") or {})}
        data = {**(config.get("data") or {}), **(study.get("data") or {})}
        for parameterization, grid in study["grids"].items():
            for width, lr, batch_size, run_seed in itertools.product(
                study["widths"], grid["lr"], grid["batch_size"], seeds
            ):
                name = model_id(study["family"], width, parameterization)
                if model is not None and name != model:
                    continue
                identity = _identity(config, study, training, data, width, parameterization, lr, batch_size)
                run = {
                    "run_id": make_run_id(
                        repro_id, name, tier, identity["dataset"], identity["split"], identity, run_seed
                    ),
                    "paper": repro_id, "model": name, "tier": tier, "seed": run_seed, "config": identity,
                    "data_root": data_root or data.get("root"), "threads": training["threads"],
                    "accelerator": training["accelerator"],
                }  # fmt: skip
                runs.append(run)
    return runs


def _identity(config, study, training, data, width, parameterization, lr, batch_size) -> dict[str, Any]:
    """What determines a run's result (not where its data lies nor how it is executed): its record's config."""
    return {
        "system": SYSTEM, "family": study["family"], "width": width, "parameterization": parameterization,
        "base_width": study.get("base_width") or FAMILIES[study["family"]].base_width,
        "batch_norm": FAMILIES[study["family"]].batch_norm, "lr": float(lr), "batch_size": int(batch_size),
        "dataset": study.get("dataset", config["dataset"]), "split": config.get("split", "test"),
        "protocol": config.get("protocol"),
        "train_size": data.get("train_size"), "test_size": data.get("test_size"), "pool": data.get("pool", 1),
        **{key: training[key] for key in ("epochs", "late_epochs", "sigma_w", "sigma_b", "eval_batch_size")},
        "in_channels": training["in_channels"], "image_size": training["image_size"] // data.get("pool", 1),
        "num_classes": training["num_classes"],
    }  # fmt: skip


def _quiet() -> None:
    """Lightning's per-fit banners and data-loader hints would drown the sweep's progress lines."""
    for name in ("lightning.pytorch", "pytorch_lightning", "lightning.fabric", "lightning_fabric"):
        logging.getLogger(name).setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=".*does not have many workers.*")
    warnings.filterwarnings("ignore", message=".*GPU available but not used.*")
    warnings.filterwarnings("ignore", message=".*treespec.*")


def train_run(run: dict[str, Any], work_dir: Path) -> tuple[str, dict[str, float], str | None]:
    """One Lightning fit of one grid point: ``(status, metrics, data_hash)``, status ``ok`` or ``diverged``."""
    import pytorch_lightning as pl
    import torch

    from reproductions.sgd_width.system import Diverged, WidthSGDSystem
    from tasks.fashion_mnist.data import ArrayDataModule

    _quiet()  # after Lightning's import, which sets its loggers to INFO
    c = run["config"]
    datamodule = ArrayDataModule(
        c["dataset"], run["data_root"], c["batch_size"], c["train_size"], c["test_size"], c["eval_batch_size"],
        seed=run["seed"], pool=c["pool"],
    )  # fmt: skip
    datamodule.setup()
    torch.manual_seed(run["seed"])
    system = WidthSGDSystem(
        run["model"], c["lr"], c["sigma_w"], c["sigma_b"], c["in_channels"], c["image_size"], c["num_classes"],
        c["base_width"], c["late_epochs"],
    )  # fmt: skip
    trainer = pl.Trainer(
        max_epochs=c["epochs"], accelerator=run["accelerator"], devices=1, logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0,
        default_root_dir=str(work_dir),
    )  # fmt: skip
    train_size = datamodule.train_size
    metrics = _noise_metrics(c, train_size, system.fan_in)
    started = time.perf_counter()
    try:
        trainer.fit(system, datamodule=datamodule)
    except Diverged as exc:
        return "diverged", {**metrics, "diverged_at_step": float(exc.step)}, datamodule.data_hash
    if system.diverged():
        return "diverged", {**metrics, "train_loss": system.last_train_loss}, datamodule.data_hash
    metrics |= {
        "accuracy": sum(system.late_accuracy) / len(system.late_accuracy),
        "final_accuracy": system.late_accuracy[-1], "train_loss": system.last_train_loss,
        "steps": float(trainer.global_step), "train_seconds": time.perf_counter() - started,
    }  # fmt: skip
    return "ok", metrics, datamodule.data_hash


def _noise_metrics(c: dict[str, Any], train_size: int, fan_in: int) -> dict[str, float]:
    return {
        "train_examples": float(train_size), "fan_in": float(fan_in),
        "noise_scale": noise_scale(c["lr"], c["batch_size"], train_size),
        "normalized_noise_scale": normalized_noise_scale(
            c["lr"], c["batch_size"], train_size, c["parameterization"], c["sigma_w"], fan_in
        ),
    }  # fmt: skip


def run_one(run: dict[str, Any], runs_dir: str) -> str:
    """Train one grid point and write its record (ok, diverged or failed); returns the record's path.

    Runs in an executor's worker: it imports torch itself and limits it to ``run["threads"]`` threads.
    """
    import torch

    runs = Path(runs_dir)
    path = record_path(run["run_id"], runs)
    if path.exists():  # another worker (or an earlier, interrupted sweep) recorded it already
        return str(path)
    torch.set_num_threads(run["threads"])
    work_dir = runs.parent / "sweeps" / run["paper"] / run["tier"]
    started, artifacts, data_hash = now(), {}, None
    try:
        status, metrics, data_hash = train_run(run, work_dir)
    except Exception:  # a failed run is recorded as such, not dropped
        status, metrics = "failed", {}
        log = work_dir / f"{run['run_id']}.err"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(traceback.format_exc(), encoding="utf-8")
        artifacts = {"error_log": str(log)}
    return str(write_record(_record(run, status, metrics, started, data_hash, artifacts), runs))


def _record(run, status, metrics, started, data_hash, artifacts) -> RunRecord:
    c = run["config"]
    return new_record(
        run_id=run["run_id"], paper=run["paper"], model=run["model"], tier=run["tier"], dataset=c["dataset"],
        split=c["split"], seed=run["seed"], metrics=metrics, started_at=started,
        provenance=run_provenance(c, data_hash, code=run), status=status, protocol=c["protocol"], config=c,
        artifacts=artifacts,
    )  # fmt: skip


def run_many(runs: list[dict[str, Any]], runs_dir: str) -> list[str]:
    """Several grid points in one executor task (a SLURM array task), one after another."""
    return [run_one(run, runs_dir) for run in runs]


def _progress(done: int, total: int, path: str) -> None:
    record = read_record(Path(path))
    accuracy = record.metrics.get("accuracy")
    shown = f"{accuracy:.2f}%" if accuracy is not None else record.status
    c = record.config or {}
    print(f"[{done}/{total}] {record.model} lr={c.get('lr')} B={c.get('batch_size')} s{record.seed}: {shown}",
          file=sys.stderr, flush=True)  # fmt: skip


def execute_local(runs: list[dict[str, Any]], runs_dir: Path, n_jobs: int) -> list[str]:
    """joblib's loky processes (``n_jobs`` of them; 1 runs in this process)."""
    from joblib import Parallel, delayed

    parallel = Parallel(n_jobs=n_jobs, backend="loky", return_as="generator_unordered")
    paths = []
    for path in parallel(delayed(run_one)(run, str(runs_dir)) for run in runs):
        paths.append(path)
        _progress(len(paths), len(runs), path)
    return paths


def make_submitit_executor(executor: dict[str, Any], folder: Path) -> Any:
    """``submitit.AutoExecutor`` (SLURM, or ``executor.cluster``) with ``executor.parameters``. Without SLURM and
    without an explicit ``cluster``, submitit would quietly run every array task on this machine at once (a full
    sweep: over a hundred processes), so that is an error instead."""
    import submitit
    from submitit.slurm.slurm import SlurmExecutor

    cluster = executor.get("cluster")
    if cluster is None and SlurmExecutor.affinity() < 0:
        raise HarnessError(
            "executor.kind slurm: no SLURM on this machine (srun not found), and submitit would start every array "
            "task here at once; use executor: {kind: local, n_jobs: N} (or set executor.cluster: local to mean it)"
        )
    auto = submitit.AutoExecutor(folder=str(folder), cluster=cluster)
    auto.update_parameters(**(executor.get("parameters") or {}))
    return auto


def execute_submitit(runs: list[dict[str, Any]], runs_dir: Path, executor: dict[str, Any]) -> list[str]:
    """One submitit array job; each task runs ``runs_per_job`` grid points. Waits for all tasks."""
    folder = Path(executor.get("folder") or runs_dir.parent / "sweeps" / "submitit")
    auto = make_submitit_executor(executor, folder)
    size = int(executor.get("runs_per_job", 1))
    chunks = [runs[i : i + size] for i in range(0, len(runs), size)]
    jobs = auto.map_array(run_many, chunks, [str(runs_dir)] * len(chunks))
    print(f"submitted {len(jobs)} task(s) of {len(runs)} run(s); logs in {folder}", file=sys.stderr, flush=True)
    paths: list[str] = []
    for job in jobs:
        try:
            for path in job.result():
                paths.append(path)
                _progress(len(paths), len(runs), path)
        except Exception as exc:  # the task died (time limit, node failure): its runs stay missing, resume reruns them
            print(f"task {job.job_id} did not finish: {exc}", file=sys.stderr, flush=True)
    return paths


def execute(runs: list[dict[str, Any]], runs_dir: Path, executor: dict[str, Any]) -> list[str]:
    kind = executor.get("kind", "local")
    if kind == "local":
        return execute_local(runs, runs_dir, int(executor.get("n_jobs", 1)))
    if kind == "slurm":
        return execute_submitit(runs, runs_dir, executor)
    raise HarnessError(f"unknown executor kind {kind!r}: use 'local' (joblib) or 'slurm' (submitit)")


def run_sweep(
    repro: Reproduction,
    config_path: Path,
    *,
    tier: str,
    model: str | None = None,
    seed: int | None = None,
    data_root: str | None = None,
    runs_dir: Path,
    executor: dict[str, Any] | None = None,
) -> list[Path]:
    """``Reproduction.runner``: run what the sweep lacks, then derive the summaries; returns every record's path.

    ``executor`` replaces the config's ``executor`` section (tests run the local one in-process with it).
    """
    from reproductions.sgd_width.summary import write_summaries

    config = load_sweep_config(Path(config_path), tier)
    runs = plan_runs(repro.id, config, tier, model, seed, data_root)
    if not runs:
        raise HarnessError(f"{config_path}: the sweep has no run for model {model!r}")
    _prepare(config, data_root)
    code = code_version()  # once: every run of this sweep carries the same code identity
    missing = [{**run, "git_sha": code["git_sha"], "git_dirty": code["git_dirty"]} for run in runs]
    missing = [run for run in missing if not record_path(run["run_id"], runs_dir).exists()]
    print(f"sweep {config_path.name}: {len(runs)} runs, {len(runs) - len(missing)} recorded, {len(missing)} to run",
          file=sys.stderr, flush=True)  # fmt: skip
    started = time.perf_counter()
    if missing:
        execute(missing, runs_dir, copy.deepcopy(executor or config.get("executor") or {}))
    print(f"sweep {config_path.name}: ran {len(missing)} in {time.perf_counter() - started:.0f} s",
          file=sys.stderr, flush=True)  # fmt: skip
    recorded = [record_path(run["run_id"], runs_dir) for run in runs]
    present = [path for path in recorded if path.exists()]
    every_seed = plan_runs(repro.id, config, tier, model, None, data_root)  # a summary averages over all seeds
    found = [path for path in (record_path(run["run_id"], runs_dir) for run in every_seed) if path.exists()]
    return present + write_summaries(repro.id, [read_record(path) for path in found], every_seed, runs_dir)


def _prepare(config: dict[str, Any], data_root: str | None) -> None:
    """The tier's data-making step (``data.prepare``), skipped when the user gives ``--data-root``."""
    prepare = (config.get("data") or {}).get("prepare")
    if prepare and data_root is None:
        root = (config.get("data") or {}).get("root")
        if root is None:
            raise HarnessError("sweep config has data.prepare but no data.root to prepare into")
        load_object(prepare["function"])(root=Path(root), **(prepare.get("args") or {}))
