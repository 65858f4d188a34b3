"""Runs that build on runs: a tier config's ``init_from`` names the earlier stage whose checkpoint it starts from.

By run id (``init_from: {run: <run_id>}``: a record in ``results/runs/`` that saved a checkpoint) or by the earlier
stage's config (``init_from: {config: <file>, model: ..., seed: ..., tier: ...}``, the file relative to the naming
config's folder), so a chain is reproducible from nothing: a stage named by config that has not run is run first,
and so on up the chain. The resolved parent run id and its checkpoint's sha256 are part of the child's identity
(its run id changes when the parent does) and its record lists the parent in ``parents``. ``init_from`` may also
be a list of such parents (an ensemble of runs), each loading its ``prefixes`` renamed ``into`` another prefix of the
child (``{config: a.yaml, prefixes: [model.], into: fwd.}``). Layout and messages: docs/plugins.md.
"""

from __future__ import annotations

import contextlib
import copy
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.checkpoints import SHA_ARTIFACT
from harness.errors import HarnessError
from harness.records import RUN_ID_PATTERN, file_lock, read_record, record_path
from harness.registry import Reproduction
from harness.tiers import TABLE
from harness.training import parent_specs, plan, run_training

INIT_FROM_KEYS = {"run", "config", "tier", "model", "seed", "prefixes", "into"}
# (config file, tier, model, seed) -> that stage's resolved config: harness.runner.stage_config, given by the runner
StageConfig = Callable[[Path, str, str | None, int], dict[str, Any]]


@dataclass(frozen=True)
class Parent:
    run_id: str
    sha256: str


def check_init_from(path: Path, spec: Any) -> None:
    """The shape of a config's ``init_from`` (a mapping, or a non-empty list of them); errors name the file and key."""
    if isinstance(spec, list):
        if not spec:
            raise HarnessError(f"{path}: key 'init_from' is a mapping or a non-empty list of mappings")
        for index, entry in enumerate(spec):
            _check_parent(path, entry, f"{path}: key 'init_from[{index}]")
        return
    _check_parent(path, spec, f"{path}: key 'init_from")


def _check_parent(path: Path, spec: Any, where: str) -> None:
    if not isinstance(spec, dict) or set(spec) - INIT_FROM_KEYS:
        raise HarnessError(f"{where}' is a mapping with keys among {sorted(INIT_FROM_KEYS)}")
    if ("run" in spec) == ("config" in spec):
        raise HarnessError(f"{where}' names its parent by exactly one of 'run' (a run id) and 'config' (a file)")
    if "run" in spec and not (isinstance(spec["run"], str) and re.match(RUN_ID_PATTERN, spec["run"])):
        raise HarnessError(f"{where}.run': {spec['run']!r} is not a run id")
    if "run" in spec and set(spec) & {"tier", "model", "seed"}:
        raise HarnessError(f"{where}': 'tier', 'model' and 'seed' describe a parent named by 'config', not by 'run'")
    if (
        not all(isinstance(spec.get(key, ""), str) for key in ("config", "model"))
        or type(spec.get("seed", 0)) is not int
    ):
        raise HarnessError(f"{where}': 'config' is a file name, 'model' a model id and 'seed' an integer")
    configured = tuple(tier.name for tier in TABLE if tier.needs_config)
    if spec.get("tier", "smoke") not in configured:
        raise HarnessError(f"{where}.tier': {spec['tier']!r} is not one of {', '.join(configured)}")
    prefixes = spec.get("prefixes", ["all"])
    if not (isinstance(prefixes, list) and prefixes and all(isinstance(p, str) and p for p in prefixes)):
        raise HarnessError(f"{where}.prefixes' is a non-empty list of tensor-name prefixes (or absent: every tensor)")
    if "into" in spec and not (isinstance(spec["into"], str) and spec["into"] and len(spec.get("prefixes", [])) == 1):
        raise HarnessError(f"{where}.into' is a prefix that replaces the one entry of 'prefixes' in the child's names")


def resolve_parents(
    repro: Reproduction,
    path: Path,
    resolved: dict[str, Any],
    runs_dir: Path,
    stage_config: StageConfig,
    seen: tuple[Path, ...] = (),
) -> dict[str, Any]:
    """``resolved`` with ``init_from`` completed by the parent's ``run`` id and ``checkpoint_sha256`` (unchanged
    without ``init_from``). A parent named by config that has not run is run first, its own parents before it;
    ``stage_config`` reads and resolves a parent's config file."""
    init_from = resolved.get("init_from")
    if init_from is None:
        return resolved
    completed = []
    for spec in parent_specs(init_from):
        if "run" in spec:
            parent = _recorded_parent(spec["run"], runs_dir, f"{path}: key 'init_from.run'")
        else:
            parent = _parent_by_config(repro, path, spec, resolved, runs_dir, stage_config, (*seen, path.resolve()))
        completed.append({**spec, "run": parent.run_id, "checkpoint_sha256": parent.sha256})
    resolved = copy.deepcopy(resolved)
    resolved["init_from"] = completed if isinstance(init_from, list) else completed[0]
    return resolved


def _recorded_parent(run_id: str, runs_dir: Path, where: str) -> Parent:
    path = record_path(run_id, runs_dir)
    if not path.is_file():
        raise HarnessError(f"{where}: no run record {run_id!r} in {runs_dir}/ (name a recorded run, or its config)")
    record = read_record(path)
    sha256 = record.artifacts.get(SHA_ARTIFACT)
    if record.status != "ok" or sha256 is None:
        why = f"its status is {record.status!r}" if record.status != "ok" else "its config lacks save_checkpoint: true"
        raise HarnessError(f"{where}: run {run_id!r} saved no checkpoint ({why})")
    return Parent(run_id, sha256)


def _parent_by_config(
    repro: Reproduction,
    path: Path,
    spec: dict[str, Any],
    child: dict[str, Any],
    runs_dir: Path,
    stage_config: StageConfig,
    seen: tuple[Path, ...],
) -> Parent:
    """Resolve (and run, when it has not run) the parent stage a config names by its config file."""
    where = f"{path}: key 'init_from.config'"
    parent_path = path.parent / spec["config"]
    if not parent_path.is_file():
        raise HarnessError(f"{where}: {parent_path} does not exist")
    if parent_path.resolve() in seen:
        raise HarnessError(f"{where}: {parent_path} starts a cycle of init_from (a stage cannot build on itself)")
    tier, seed = spec.get("tier", child["tier"]), spec.get("seed", child["seed"])
    resolved = stage_config(parent_path, tier, spec.get("model"), seed)
    if resolved.get("save_checkpoint") is not True:
        raise HarnessError(f"{where}: {parent_path} saves no checkpoint: add `save_checkpoint: true` to it")
    if resolved["model"] not in repro.model_ids():
        raise HarnessError(f"{where}: {repro.id!r} has no model {resolved['model']!r}; it has: {repro.model_ids()}")
    resolved = resolve_parents(repro, parent_path, resolved, runs_dir, stage_config, seen)
    first = plan(repro, resolved)[0]
    with _parent_lock(runs_dir, first.run_id):  # two children of one parent that has not run: one runs it
        if not record_path(first.run_id, runs_dir).is_file():
            argv = ["harness", "run", repro.id, "--tier", tier, "--config", str(parent_path), "--seed", str(seed)]
            command = shlex.join(argv + (["--model", spec["model"]] if "model" in spec else []))
            print(
                f"harness: {path.name} starts from a stage that has not run; running it first: {command}",
                file=sys.stderr,
            )
            run_training(repro, resolved, runs_dir)
    return _recorded_parent(first.run_id, runs_dir, where)


def _parent_lock(runs_dir: Path, run_id: str) -> contextlib.AbstractContextManager[None]:
    """The exclusive lock on ``.chain-locks/<run_id>.lock`` beside ``runs_dir``: a second process that needs the same
    parent stage waits for the first to record it, then loads that record, instead of training it again and failing
    to write a record that already exists."""
    return file_lock(runs_dir.parent / ".chain-locks" / f"{run_id}.lock")
