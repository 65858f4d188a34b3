"""``harness run``: resolve a paper's tier config (read and checked by harness.config), then hand it to the training
entry (harness.training: a Lightning fit + test and one run record per evaluation).

The ``arch`` tier needs no config: every model of the paper is profiled (harness.arch). Every other tier reads
``configs/<tier>.yaml`` (layout in docs/plugins.md). Run ids are computed before anything runs, so a run whose records
already exist is recognised and skipped. A config's ``init_from`` starts the run from an earlier stage's checkpoint
(harness.chains resolves it, running that stage first when it has not run).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import inspect
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from harness import dotted, registry
from harness.arch import run_arch
from harness.chains import resolve_parents
from harness.config import check_resolved, check_seed, load_config
from harness.distributed import check_trainer
from harness.errors import HarnessError
from harness.records import RUNS_DIR, check_writable
from harness.registry import Reproduction, load_object
from harness.training import plan, run_training

__all__ = ["load_config", "plan", "resolve_config", "run", "run_training"]  # harness.config's, harness.training's


def resolve_config(
    config: dict[str, Any],
    tier: str,
    model: str | None,
    seed: int | None,
    data_root: str | None,
    checkpoint: str | None = None,
    sets: Mapping[str, Any] | None = None,
    path: Path | None = None,
) -> dict[str, Any]:
    """Apply the model's ``overrides``, then ``sets`` (dotted key -> value: ``--set``, a sweep's cell), then the
    command-line options; the result, checked against the schema (harness.config: an error names the ``--set`` or
    the override of ``path`` at fault), is what the run's id and record are made from."""
    resolved = copy.deepcopy(config)
    resolved["tier"] = tier
    resolved["model"] = model or config["model"]
    resolved["seed"] = check_seed(seed, "--seed") if seed is not None else int(config.get("seed", 0))
    resolved.setdefault("fit", True)
    resolved["data"].setdefault("init_args", {})
    resolved["system"].setdefault("init_args", {})
    row = dict((config.get("overrides") or {}).get(resolved["model"]) or {})
    apply_overrides(resolved, resolved["model"])
    for key, value in (sets or {}).items():
        apply_set(resolved, key, value)
    if "init_from" in resolved and resolved["init_from"] is None:  # a model whose override starts it from nothing
        del resolved["init_from"]
    if data_root is not None:
        resolved["data"]["init_args"]["data_root"] = data_root
        resolved.pop("prepare", None)  # the user's data is used as it is
    if checkpoint is not None:
        resolved["system"]["init_args"]["checkpoint"] = checkpoint
    check_resolved(resolved, row, sets or {}, path)
    if not resolved["fit"] and not resolved["system"]["init_args"].get("checkpoint") and "init_from" not in resolved:
        raise HarnessError(f"tier {tier!r} evaluates given weights: pass --checkpoint PATH (or set it in --config)")
    return resolved


def _unknown_arguments(target: Any, given: dict[str, Any], name: str, where: str) -> None:
    """Every key of ``given`` is a parameter of ``target`` (a class or function), unless it takes ``**kwargs`` (a
    class whose ``**kwargs`` are its dataclass ``RECIPE``'s fields, nets.systems.tpu_classifier, takes those)."""
    signature = inspect.signature(target).parameters
    parameters = [arg for arg, p in signature.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    if any(p.kind is p.VAR_KEYWORD for p in signature.values()):
        recipe = getattr(target, "RECIPE", None)
        if recipe is None or not dataclasses.is_dataclass(recipe):
            return
        parameters += [field.name for field in dataclasses.fields(recipe)]
    for key in given:
        if key not in parameters:
            close = difflib.get_close_matches(key, list(parameters), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f"; it takes: {', '.join(parameters)}"
            raise HarnessError(f"{where}: {name} takes no argument {key!r}{hint}")


def check_arguments(path: Path, resolved: dict[str, Any]) -> None:
    """The system's and data module's ``init_args`` and the ``trainer`` keys are arguments their classes take:
    a misspelt key is one error naming the config, not a TypeError after the data was prepared."""
    import pytorch_lightning as pl

    for key in ("system", "data"):
        spec = resolved[key]
        _unknown_arguments(
            load_object(spec["class_path"]), spec["init_args"], spec["class_path"], f"{path}: key '{key}.init_args'"
        )
    trainer = resolved.get("trainer") or {}  # a mapping or null: harness.config
    _unknown_arguments(pl.Trainer, trainer, "pytorch_lightning.Trainer", f"{path}: key 'trainer'")
    check_trainer(trainer, f"{path}: key 'trainer'", bool(resolved.get("save_checkpoint")))  # harness.distributed


def apply_overrides(config: dict[str, Any], model: str) -> None:
    """Set the config's ``overrides`` row of ``model`` (dotted key -> value) in place, and drop ``overrides``."""
    for key, value in (config.pop("overrides", None) or {}).get(model, {}).items():
        _assign(config, key, value, f"override {key!r}")  # every parent of an override's key must exist


def _assign(config: dict[str, Any], key: str, value: Any, what: str, create: bool = False) -> None:
    try:
        dotted.assign(config, key, value, create)
    except (KeyError, ValueError) as exc:
        raise HarnessError(f"{what}: {exc.args[0]}") from None


SET_ROOTS = ("system.init_args", "data.init_args", "trainer", "prepare.args", "evaluate", "protocol", "fit",
             "save_checkpoint", "seed", "init_from")  # fmt: skip


def apply_set(config: dict[str, Any], key: str, value: Any) -> None:
    """One ``--set key=value``: ``key`` lies under what a run may change (:data:`SET_ROOTS`; the model is
    ``--model``, the classes are the config's); missing parents of a class's or the trainer's arguments are made."""
    if not any(key == root or key.startswith(f"{root}.") for root in SET_ROOTS):
        raise HarnessError(f"--set {key}=...: {key!r} is not a key a run may set; it starts with one of {SET_ROOTS}")
    _assign(config, key, value, f"--set {key}=...", create=True)


def parse_set(text: str) -> tuple[str, Any]:
    """``key=value`` with the value read as YAML (``3`` an integer, ``true`` a boolean, ``[1, 2]`` a list,
    ``"3"`` a string; ``1e-3`` a number, which YAML 1.1 would read as text); an error names the text."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise HarnessError(f"--set {text!r}: give key=value (e.g. trainer.max_steps=100)")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise HarnessError(f"--set {text!r}: the value is not YAML: {' '.join(str(exc).split())}") from None
    if isinstance(value, str) and raw.strip() == value and re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+", value):
        value = float(value)
    return key.strip(), value


def registry_config(paper: str, tier: str) -> Path:
    """The path of a registered paper's ``configs/<tier>.yaml``."""
    return registry.reproduction(paper).config_path(tier)


def run(
    repro: Reproduction,
    tier: str = "smoke",
    model: str | None = None,
    seed: int | None = None,
    data_root: str | None = None,
    config_path: Path | None = None,
    runs_dir: Path = RUNS_DIR,
    checkpoint: str | None = None,
    sets: Mapping[str, Any] | None = None,
) -> list[Path]:
    """Run one tier of one paper (its registered ``Reproduction``: the command line looks the id up) and return the
    paths of its run records (``sets``: dotted key -> value, applied after the model's overrides, as ``--set`` gives
    them)."""
    if not isinstance(repro, Reproduction):  # the shape before the registry look-up moved to the edge
        raise HarnessError(
            f"harness.runner.run takes the paper's Reproduction, not {repro!r}: pass "
            f"harness.registry.reproduction({repro!r})"
        )
    if model is not None:
        repro.model(model)  # unknown model ids fail before anything runs
    if seed is not None:
        check_seed(seed, "--seed")
    check_writable(runs_dir)  # a read-only or full disk fails now, not when the record is written after training
    if tier == "arch":
        return run_arch(repro, model, runs_dir)
    path = config_path or repro.config_path(tier)
    if not path.exists():
        raise HarnessError(f"{path}: no {tier!r} config for {repro.id!r}; tiers available: {', '.join(repro.tiers)}")
    if repro.runner is not None:
        if sets:
            raise HarnessError(
                f"{repro.id!r} runs its tiers with its own runner ({repro.runner}), which takes no --set"
            )
        custom = load_object(repro.runner)
        return custom(repro, path, tier=tier, model=model, seed=seed, data_root=data_root, runs_dir=runs_dir)
    resolved = resolve_config(load_config(path, tier), tier, model, seed, data_root, checkpoint, sets, path)
    repro.model(resolved["model"])
    check_arguments(path, resolved)
    if "init_from" in resolved:  # runs a parent stage that has not run
        resolved = resolve_parents(repro, path, resolved, runs_dir, resolve_config)
    return run_training(repro, resolved, runs_dir)
