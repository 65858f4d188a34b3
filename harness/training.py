"""The training entry: a resolved tier config's identity and run ids, and the Lightning fit + test that writes one
run record per ``evaluate`` entry.

harness.runner reads and resolves the config; harness.chains resolves a config's ``init_from`` (running a parent
stage first when it has not run) before :func:`run_training` loads the parents' weights. A run is identified by its
resolved config without where the data lives (:func:`identity`), so its ids are known before anything runs and a run
whose records exist is skipped.
"""

from __future__ import annotations

import copy
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.checkpoints import checkpoint_path, load_into, load_state, save_state
from harness.contract import cited_artifacts, data_hash, loader_metrics
from harness.distributed import unpadded_test_loaders
from harness.errors import HarnessError
from harness.preparation import instantiate, make_datamodule
from harness.records import (
    RUN_ID_MAX,
    RUN_ID_PATTERN,
    RUNS_DIR,
    code_version,
    file_sha256,
    make_run_id,
    new_record,
    now,
    record_path,
    run_provenance,
    write_record,
)
from harness.registry import Reproduction
from harness.summary import log_artifacts, progress_bar, training_loggers

LIGHTNING_DIR = Path("results/lightning")

# system arguments naming weight files: a run is identified by the files' content (evaluated or fine-tuned from)
WEIGHT_ARGS = ("checkpoint", "init_checkpoint", "init_heads")

TOKENIZER_FILE = re.compile(r"[0-9a-f]{64}\.(?:json|model)")  # a stored tokenizer (tasks.tokenizers.artifacts)

RESOLVED_KEYS = ("run", "checkpoint_sha256", "prefixes", "into")  # what of init_from identifies the child run


@dataclass(frozen=True)
class Evaluation:
    dataset: str
    split: str
    run_id: str


def parent_specs(init_from: dict[str, Any] | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The parents a config's ``init_from`` names: none, one mapping, or a list of them."""
    return [] if init_from is None else list(init_from) if isinstance(init_from, list) else [init_from]


def parents_identity(init_from: dict[str, Any] | list[dict[str, Any]]) -> dict[str, Any] | list[dict[str, Any]]:
    """The part of a resolved ``init_from`` that identifies the child run: the parents, their weights, what is
    loaded (a mapping, or a list of them, as the config has it)."""
    chosen = []
    for spec in parent_specs(init_from):
        if "checkpoint_sha256" not in spec:
            raise HarnessError("init_from is not resolved: run the config with `harness run` (harness.chains)")
        chosen.append({key: spec[key] for key in RESOLVED_KEYS if key in spec})
    return chosen if isinstance(init_from, list) else chosen[0]


def _file_sha256(path: str) -> str:
    try:
        return file_sha256(path)
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read the checkpoint: {exc.strerror}") from exc


def without_location(resolved: dict[str, Any]) -> dict[str, Any]:
    """A copy of the config without where the data lives or how it was made: the same data elsewhere is the same run
    (the record's data_hash says which data it was)."""
    key = copy.deepcopy(resolved)
    key["data"]["init_args"].pop("data_root", None)
    key.pop("prepare", None)
    return key


def identity(resolved: dict[str, Any]) -> dict[str, Any]:
    """What the run ids hash of the config: :func:`without_location`, with weight files named by their content and
    a parent by its run and checkpoint."""
    key = without_location(resolved)
    for name in WEIGHT_ARGS:  # the weights, not where they lie, make the run
        path = key["system"]["init_args"].pop(name, None)
        if path:
            key[f"{name}_sha256"] = _file_sha256(path)
    if "init_from" in key:  # the parent run and its weights, not how the config named it
        key["init_from"] = parents_identity(key["init_from"])
    return key


def plan(repro: Reproduction, resolved: dict[str, Any], key: dict[str, Any] | None = None) -> list[Evaluation]:
    """The run id of each ``evaluate`` entry (``key``: the run's identity, computed here when not given)."""
    key = key if key is not None else identity(resolved)
    evaluations = []
    for index, e in enumerate(resolved["evaluate"]):
        run_id = make_run_id(
            repro.id, resolved["model"], resolved["tier"], e["dataset"], e["split"], key, resolved["seed"]
        )
        if len(run_id) > RUN_ID_MAX or not re.fullmatch(RUN_ID_PATTERN, run_id):
            raise HarnessError(
                f"key 'evaluate[{index}]': its run id would be {len(run_id)} characters ({run_id[:60]}...), at most "
                f"{RUN_ID_MAX} of a-z, 0-9, '.', '_', '-': shorten the model, dataset or split name"
            )
        evaluations.append(Evaluation(e["dataset"], e["split"], run_id))
    return evaluations


def run_training(repro: Reproduction, resolved: dict[str, Any], runs_dir: Path = RUNS_DIR) -> list[Path]:
    """Prepare data, fit (unless ``fit: false``) and test; write one record per ``evaluate`` entry. A resolved
    ``init_from`` (harness.chains) loads the parent's weights before the fit; ``save_checkpoint`` stores them after.
    The records cite a tokenizer the config names or the data module or system registers (docs/tokenizers.md)."""
    import pytorch_lightning as pl  # torch and Lightning: imported when something trains

    from harness.predictions import PredictionsKeeper  # both import torch and Lightning
    from harness.resume import RandomState, last_checkpoint

    key = identity(resolved)
    evaluations = plan(repro, resolved, key)
    paths = [record_path(e.run_id, runs_dir) for e in evaluations]
    if all(path.exists() for path in paths):
        print(f"already recorded: {', '.join(p.name for p in paths)}", file=sys.stderr)
        return paths
    cited = _tokenizer_artifacts(resolved)  # checked before anything runs
    data = make_datamodule(resolved)
    data._log_hyperparams = False  # the loggers get the system's; Lightning refuses keys both share (crop_size)
    pl.seed_everything(resolved["seed"], workers=True)
    system = instantiate(resolved["system"], model=resolved["model"])
    if "init_from" in resolved:
        _load_parents(system, resolved["init_from"], runs_dir)
    run_dir = LIGHTNING_DIR / repro.id / resolved["tier"] / evaluations[0].run_id  # logs, checkpoints: resume.py
    loggers = training_loggers(LIGHTNING_DIR / repro.id / resolved["tier"], evaluations[0].run_id)
    trainer_args = {"default_root_dir": str(LIGHTNING_DIR / repro.id / resolved["tier"]), "logger": loggers}
    trainer_args = progress_bar(resolved["tier"], {**trainer_args, **(resolved.get("trainer") or {})})
    keeper = PredictionsKeeper([e.run_id for e in evaluations], runs_dir.parent)  # predictions -> artifacts
    callbacks = [*(trainer_args.get("callbacks") or []), keeper, RandomState()]
    trainer = pl.Trainer(**{**trainer_args, "callbacks": callbacks})
    unpadded_test_loaders(data)  # several processes: each test example seen once (harness.distributed)
    started = now()
    if resolved["fit"]:
        resume = last_checkpoint(run_dir)
        if resume is not None:
            print(f"resuming from {resume}", file=sys.stderr)
        trainer.fit(system, datamodule=data, ckpt_path=resume)
    saving = resolved.get("save_checkpoint") and trainer.is_global_zero  # several processes: rank 0 writes
    artifacts = _save_checkpoint(system, runs_dir) if saving else {}
    results = trainer.test(system, datamodule=data, verbose=False)
    if not trainer.is_global_zero:  # another process of a multi-process run: rank 0 writes the records
        return []
    artifacts = {**cited, **cited_artifacts(data, system), **artifacts, **log_artifacts(loggers)}
    finished = now()
    if len(results) != len(evaluations):
        raise HarnessError(f"the test produced {len(results)} result set(s) but 'evaluate' lists {len(evaluations)}")
    provenance = run_provenance(key, data_hash(data), code_version(repro.id))
    parents = [spec["run"] for spec in parent_specs(resolved.get("init_from"))]
    written = []
    for index, evaluation in enumerate(evaluations):
        record = new_record(
            run_id=evaluation.run_id, paper=repro.id, model=resolved["model"], tier=resolved["tier"],
            dataset=evaluation.dataset, split=evaluation.split, seed=resolved["seed"],
            metrics=loader_metrics(results[index], index), started_at=started, finished_at=finished,
            provenance=provenance, protocol=resolved.get("protocol"), config=resolved,
            artifacts={**artifacts, **keeper.artifacts(index)}, parents=parents,
        )  # fmt: skip
        written.append(write_record(record, runs_dir))
    shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)  # recorded: nothing left to resume (logs stay)
    return written


def _tokenizer_artifacts(resolved: dict[str, Any]) -> dict[str, str]:
    """A run whose data or system ``tokenizer`` is a stored tokenizer file (``<sha256>.json`` / ``.model``) cites it in
    its records: ``tokenizer`` (the path) and ``tokenizer_sha256``, the file's hash checked against its name."""
    for part in ("data", "system"):
        path = resolved[part]["init_args"].get("tokenizer")
        if isinstance(path, str) and TOKENIZER_FILE.fullmatch(Path(path).name):
            try:
                sha256 = file_sha256(path)
            except OSError as exc:
                raise HarnessError(
                    f"{path}: cannot read the tokenizer ({part}.init_args.tokenizer): {exc.strerror}"
                ) from None
            if sha256 != Path(path).name.split(".")[0]:
                raise HarnessError(f"{path}: tokenizer sha256 does not match its name: actual {sha256} (file changed)")
            return {"tokenizer": path, "tokenizer_sha256": sha256}
    return {}


def _load_parents(system: Any, init_from: dict[str, Any] | list[dict[str, Any]], runs_dir: Path) -> None:
    """Copy each parent run's verified checkpoint into the freshly built system (all tensors, or ``prefixes``; with
    ``into``, the one prefix replaced by it: an ensemble's members)."""
    for spec in parent_specs(init_from):
        sha256, parent, prefixes = spec["checkpoint_sha256"], spec["run"], spec.get("prefixes")
        state = load_state(sha256, runs_dir, f"the checkpoint_sha256 of run {parent}")
        if "into" in spec:
            [prefix] = prefixes
            state = {
                spec["into"] + name[len(prefix) :]: value for name, value in state.items() if name.startswith(prefix)
            }
            prefixes = [spec["into"]]
        load_into(system, state, prefixes, f"{checkpoint_path(sha256, runs_dir)} (run {parent})")


def _save_checkpoint(system: Any, runs_dir: Path) -> dict[str, str]:
    return save_state(system.state_dict(), runs_dir)
