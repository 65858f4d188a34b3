"""``harness run``: read and resolve a paper's tier config, then hand it to the training entry (harness.training:
a Lightning fit + test and one run record per evaluation).

The ``arch`` tier needs no config: every model of the paper is profiled (harness.arch). Every other tier reads
``configs/<tier>.yaml`` (layout in docs/plugins.md). Run ids are computed before anything runs, so a run whose records
already exist is recognised and skipped. A config's ``init_from`` starts the run from an earlier stage's checkpoint
(harness.chains resolves it, running that stage first when it has not run).
"""

from __future__ import annotations

import copy
import difflib
import inspect
import re
from pathlib import Path
from typing import Any

import yaml

from harness import registry
from harness.arch import run_arch
from harness.chains import resolve_parents
from harness.distributed import check_trainer
from harness.errors import HarnessError
from harness.records import RUNS_DIR, check_writable
from harness.registry import Reproduction, load_object
from harness.training import plan, run_training

__all__ = ["load_config", "plan", "resolve_config", "run", "run_training"]  # plan, run_training: harness.training's

CONFIG_KEYS = {
    "tier", "model", "seed", "protocol", "fit", "prepare", "system", "data", "trainer", "evaluate", "overrides",
    "save_checkpoint", "init_from",
}  # fmt: skip
MAX_SEED = 2**32 - 1  # numpy's seed range, which Lightning's seed_everything keeps to
RUN_ID_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # what a dataset or split may be inside a run id


def read_config(path: Path, tier: str, allowed: set[str], what: str = "a tier config") -> dict[str, Any]:
    """Read a YAML config mapping with only ``allowed`` keys whose ``tier`` (if given) is ``tier``; errors name the
    file and the key. Shared by the harness's tier configs and plugins' own (e.g. sweep) configs."""
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read config: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
        raise HarnessError(f"{where}: invalid YAML: {problem}") from None
    if not isinstance(config, dict):
        raise HarnessError(f"{path}: {what} is a mapping")
    unknown = set(config) - allowed
    if unknown:
        raise HarnessError(f"{path}: unknown key(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    if config.get("tier", tier) != tier:
        raise HarnessError(f"{path}: key 'tier' is {config['tier']!r} but the run asked for tier {tier!r}")
    return config


TYPES = {  # dotted key -> (type, what a wrong value is told): what the runner relies on before anything runs
    "tier": (str, "a tier name"),
    "model": (str, "a model id"),
    "protocol": (str, "a protocol name"),
    "fit": (bool, "true or false"),
    "trainer": (dict, "a mapping of pytorch_lightning.Trainer arguments"),
    "overrides": (dict, "a mapping of model id to {dotted key: value}"),
    "prepare": (dict, "a mapping with 'function' (and optional 'args')"),
    "prepare.function": (str, "'module:function'"),
    "prepare.args": (dict, "a mapping of keyword arguments"),
    "system.class_path": (str, "'module:Class'"),
    "system.init_args": (dict, "a mapping of argument names to values"),
    "data.class_path": (str, "'module:Class'"),
    "data.init_args": (dict, "a mapping of argument names to values"),
    "data.init_args.data_root": (str, "a path"),
}


def check_types(path: Path, config: dict[str, Any]) -> None:
    """Each key of :data:`TYPES` that a config gives has its type (so a list where a mapping belongs is an error
    naming the key, not a TypeError after the data was prepared); ``overrides`` rows are mappings too."""
    for dotted, (kind, what) in TYPES.items():
        node: Any = config
        for part in dotted.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None and not isinstance(node, kind):
            raise HarnessError(f"{path}: key {dotted!r} is {what}, not {node!r}")
    for model, row in (config.get("overrides") or {}).items():
        if not isinstance(row, dict):
            raise HarnessError(f"{path}: key 'overrides.{model}' is a mapping of dotted key to value, not {row!r}")


def load_config(path: Path, tier: str) -> dict[str, Any]:
    """Read and check a tier config; errors name the file and the key."""
    config = read_config(path, tier, CONFIG_KEYS)
    for key in ("model", "system", "data", "evaluate"):
        if key not in config:
            raise HarnessError(f"{path}: missing key {key!r}")
    for key in ("system", "data"):
        if not isinstance(config[key], dict) or "class_path" not in config[key]:
            raise HarnessError(f"{path}: key {key!r} needs 'class_path' (and optional 'init_args')")
    check_types(path, config)
    entries = config["evaluate"]
    if (
        not isinstance(entries, list)
        or not entries
        or not all(isinstance(e, dict) and {"dataset", "split"} <= e.keys() for e in entries)
    ):
        raise HarnessError(f"{path}: key 'evaluate' is a non-empty list of {{dataset, split}} mappings")
    for index, entry in enumerate(entries):
        for key in ("dataset", "split"):
            if not isinstance(entry[key], str) or not RUN_ID_PART.fullmatch(entry[key]):
                raise HarnessError(
                    f"{path}: key 'evaluate[{index}].{key}': {entry[key]!r} cannot be part of a run id (letters, "
                    "digits, '.', '_' and '-', starting with a letter or digit)"
                )
    if "seed" in config:
        check_seed(config["seed"], f"{path}: key 'seed'")
    if not isinstance(config.get("save_checkpoint", False), bool):
        raise HarnessError(f"{path}: key 'save_checkpoint' is true or false")
    if "init_from" in config:
        from harness.chains import check_init_from

        check_init_from(path, config["init_from"])
    return config


def resolve_config(
    config: dict[str, Any],
    tier: str,
    model: str | None,
    seed: int | None,
    data_root: str | None,
    checkpoint: str | None = None,
) -> dict[str, Any]:
    """Apply the model's ``overrides`` and the command-line overrides; the result is what the run's id and
    record are made from."""
    resolved = copy.deepcopy(config)
    resolved["tier"] = tier
    resolved["model"] = model or config["model"]
    resolved["seed"] = check_seed(seed, "--seed") if seed is not None else int(config.get("seed", 0))
    resolved.setdefault("fit", True)
    resolved["data"].setdefault("init_args", {})
    resolved["system"].setdefault("init_args", {})
    apply_overrides(resolved, resolved["model"])
    if "init_from" in resolved and resolved["init_from"] is None:  # a model whose override starts it from nothing
        del resolved["init_from"]
    if data_root is not None:
        resolved["data"]["init_args"]["data_root"] = data_root
        resolved.pop("prepare", None)  # the user's data is used as it is
    if checkpoint is not None:
        resolved["system"]["init_args"]["checkpoint"] = checkpoint
    if not resolved["fit"] and not resolved["system"]["init_args"].get("checkpoint") and "init_from" not in resolved:
        raise HarnessError(f"tier {tier!r} evaluates given weights: pass --checkpoint PATH (or set it in --config)")
    return resolved


def check_seed(seed: Any, where: str) -> int:
    """A seed is an integer from 0 to :data:`MAX_SEED`; anything else is an error naming ``where`` it came from."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise HarnessError(f"{where}: {seed!r} is not a seed (an integer from 0 to {MAX_SEED})")
    return seed


def _unknown_arguments(target: Any, given: dict[str, Any], name: str, where: str) -> None:
    """Every key of ``given`` is a parameter of ``target`` (a class or function), unless it takes ``**kwargs``."""
    parameters = inspect.signature(target).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
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
    trainer = resolved.get("trainer") or {}
    if not isinstance(trainer, dict):
        raise HarnessError(f"{path}: key 'trainer' is a mapping of pytorch_lightning.Trainer arguments")
    _unknown_arguments(pl.Trainer, trainer, "pytorch_lightning.Trainer", f"{path}: key 'trainer'")
    check_trainer(trainer, f"{path}: key 'trainer'", bool(resolved.get("save_checkpoint")))  # harness.distributed


def apply_overrides(config: dict[str, Any], model: str) -> None:
    """Set the config's ``overrides`` row of ``model`` (dotted key -> value) in place, and drop ``overrides``."""
    for dotted, value in (config.pop("overrides", None) or {}).get(model, {}).items():
        _set_dotted(config, dotted, value)


def _set_dotted(config: dict[str, Any], dotted: str, value: Any) -> None:
    """``overrides`` rows name keys like ``data.init_args.image_size``; every parent must exist."""
    *parents, last = dotted.split(".")
    node = config
    for part in parents:
        if not isinstance(node.get(part), dict):
            raise HarnessError(f"override {dotted!r}: the config has no mapping {part!r} on that path")
        node = node[part]
    node[last] = value


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
) -> list[Path]:
    """Run one tier of one paper (its registered ``Reproduction``: the command line looks the id up) and return the
    paths of its run records."""
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
        custom = load_object(repro.runner)
        return custom(repro, path, tier=tier, model=model, seed=seed, data_root=data_root, runs_dir=runs_dir)
    resolved = resolve_config(load_config(path, tier), tier, model, seed, data_root, checkpoint)
    repro.model(resolved["model"])
    check_arguments(path, resolved)
    if "init_from" in resolved:  # runs a parent stage that has not run
        resolved = resolve_parents(repro, path, resolved, runs_dir, stage_config)
    return run_training(repro, resolved, runs_dir)


def stage_config(path: Path, tier: str, model: str | None, seed: int) -> dict[str, Any]:
    """An earlier stage's config (a parent that ``init_from`` names by file), read and resolved as
    ``harness run --config PATH`` resolves it: what harness.chains is given to load a parent stage with."""
    return resolve_config(load_config(path, tier), tier, model, seed, None)
