"""Runs that build on runs: a tier config's ``init_from`` names the earlier stage whose checkpoint it starts from.

By run id (``init_from: {run: <run_id>}``: a record in ``results/runs/`` that saved a checkpoint) or by the earlier
stage's config (``init_from: {config: <file>, model: ..., seed: ..., tier: ...}``, the file relative to the naming
config's folder), so a chain is reproducible from nothing: a stage named by config that has not run is run first,
and so on up the chain. The resolved parent run id and its checkpoint's sha256 are part of the child's identity
(its run id changes when the parent does) and its record lists the parent in ``parents``. ``init_from`` may also
be a list of such parents (an ensemble of runs), each loading its ``prefixes`` renamed ``into`` another prefix of the
child (``{config: a.yaml, prefixes: [model.], into: fwd.}``). The shape of ``init_from`` is checked with the rest of
the config (harness.config.Parent); this module resolves it. Layout and messages: docs/plugins.md.
"""

from __future__ import annotations

import contextlib
import copy
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.checkpoints import SHA_ARTIFACT
from harness.config import load_config
from harness.errors import HarnessError
from harness.records import file_lock, read_record, record_path
from harness.registry import Reproduction
from harness.training import parent_specs, plan, run_training

# harness.runner.resolve_config, which the runner gives: a parent stage's config resolved as its own run resolves it
Resolve = Callable[..., dict[str, Any]]


@dataclass(frozen=True)
class Parent:
    run_id: str
    sha256: str


def resolve_parents(
    repro: Reproduction,
    path: Path,
    resolved: dict[str, Any],
    runs_dir: Path,
    resolve: Resolve,
    seen: tuple[Path, ...] = (),
) -> dict[str, Any]:
    """``resolved`` with ``init_from`` completed by the parent's ``run`` id and ``checkpoint_sha256`` (unchanged
    without ``init_from``). A parent named by config that has not run is run first, its own parents before it;
    ``resolve`` resolves a parent's config (harness.runner.resolve_config)."""
    init_from = resolved.get("init_from")
    if init_from is None:
        return resolved
    completed = []
    for spec in parent_specs(init_from):
        if "run" in spec:
            parent = _recorded_parent(spec["run"], runs_dir, f"{path}: key 'init_from.run'")
        else:
            parent = _parent_by_config(repro, path, spec, resolved, runs_dir, resolve, (*seen, path.resolve()))
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
    resolve: Resolve,
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
    config = load_config(parent_path, tier)
    if config.get("save_checkpoint") is not True:
        raise HarnessError(f"{where}: {parent_path} saves no checkpoint: add `save_checkpoint: true` to it")
    resolved = resolve(config, tier, spec.get("model"), seed, None, path=parent_path)
    if resolved["model"] not in repro.model_ids():
        raise HarnessError(f"{where}: {repro.id!r} has no model {resolved['model']!r}; it has: {repro.model_ids()}")
    resolved = resolve_parents(repro, parent_path, resolved, runs_dir, resolve, seen)
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
