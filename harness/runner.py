"""``harness run``: turn a paper's tier config into a Lightning fit + test and one run record per evaluation.

The ``arch`` tier needs no config: every model of the paper is profiled (see harness.profile). Every other
tier reads ``configs/<tier>.yaml`` (layout in docs/plugins.md). Run ids are computed before anything runs,
so a run whose records already exist is recognised and skipped. A config's ``init_from`` starts the run from an
earlier stage's checkpoint (harness.chains resolves it, running that stage first when it has not run).
"""

from __future__ import annotations

import copy
import difflib
import inspect
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.contract import Verifiable, capability, cited_artifacts, data_hash, loader_metrics
from harness.distributed import check_trainer, unpadded_test_loaders
from harness.errors import HarnessError
from harness.records import (
    RUN_ID_MAX,
    RUN_ID_PATTERN,
    RUNS_DIR,
    check_writable,
    code_version,
    file_sha256,
    make_run_id,
    new_record,
    now,
    record_path,
    run_provenance,
    write_record,
)
from harness.registry import Reproduction, load_object

CONFIG_KEYS = {
    "tier", "model", "seed", "protocol", "fit", "prepare", "system", "data", "trainer", "evaluate", "overrides",
    "save_checkpoint", "init_from",
}  # fmt: skip
LIGHTNING_DIR = Path("results/lightning")
# system arguments naming weight files: a run is identified by the files' content (evaluated or fine-tuned from)
WEIGHT_ARGS = ("checkpoint", "init_checkpoint", "init_heads")
MAX_SEED = 2**32 - 1  # numpy's seed range, which Lightning's seed_everything keeps to
RUN_ID_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # what a dataset or split may be inside a run id
TOKENIZER_FILE = re.compile(r"[0-9a-f]{64}\.(?:json|model)")  # a stored tokenizer (tasks.tokenizers.artifacts)


@dataclass(frozen=True)
class Evaluation:
    dataset: str
    split: str
    run_id: str


# set by a stage's pool worker (harness.pipeline.run_in_worker): profiles kept across the per-model commands it is
# given, by what was profiled, so it profiles each network once (ids of a sweep build one); else one call's own
PROFILE_CACHE: dict[str, Any] | None = None


def arch_config(spec: Any) -> dict[str, Any]:
    """What an arch run profiles, the config its record keeps: the builder, its arguments and the inputs."""
    config = {"build": spec.build, "kwargs": dict(spec.kwargs), "input_shape": list(spec.input_shape)}
    if spec.inputs:  # named inputs: every one is part of what was profiled
        config["inputs"] = {each.name: list(each.shape) for each in spec.inputs}
    return config


def network_key(spec: Any) -> str:
    """One string per network at its inputs: ids that differ only in how the network is trained share it."""
    return yaml.safe_dump(arch_config(spec), sort_keys=True)


def run_arch(repro: Reproduction, model: str | None = None, runs_dir: Path = RUNS_DIR) -> list[Path]:
    """Profile each model (or one) and record ``params_m`` and ``macs_m`` at tier ``arch``, split ``none``."""
    from harness.profile import profile_model

    specs = [repro.model(model)] if model else list(repro.models)
    if not specs:
        raise HarnessError(f"reproduction {repro.id!r} registers no models: nothing to profile")
    written, profiles = [], PROFILE_CACHE if PROFILE_CACHE is not None else {}
    for spec in specs:
        config = arch_config(spec)
        run_id = make_run_id(repro.id, spec.id, "arch", spec.dataset, "none", config, 0)
        if record_path(run_id, runs_dir).exists():
            written.append(record_path(run_id, runs_dir))
            continue
        started = now()
        # ids that differ only in how the network is trained (e.g. a sweep's) build the same network: profile it once
        key = network_key(spec)
        if key not in profiles:
            profiles[key] = profile_model(spec)
        prof = profiles[key]
        metrics = {"params_m": prof.params / 1e6, "macs_m": prof.macs / 1e6, "params": prof.params, "macs": prof.macs}
        record = new_record(
            run_id=run_id, paper=repro.id, model=spec.id, tier="arch", dataset=spec.dataset, split="none", seed=0,
            metrics=metrics, started_at=started, provenance=run_provenance(config, code=code_version(repro.id)),
            protocol="flopcounter-macs", config=config,
        )  # fmt: skip
        written.append(write_record(record, runs_dir))
    return written


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


def _file_sha256(path: str) -> str:
    try:
        return file_sha256(path)
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read the checkpoint: {exc.strerror}") from exc


def _identity(resolved: dict[str, Any]) -> dict[str, Any]:
    """The config without where the data lives or how it was made: the same data elsewhere is the same run
    (the record's data_hash says which data it was)."""
    key = copy.deepcopy(resolved)
    key["data"]["init_args"].pop("data_root", None)
    key.pop("prepare", None)
    for name in WEIGHT_ARGS:  # the weights, not where they lie, make the run
        path = key["system"]["init_args"].pop(name, None)
        if path:
            key[f"{name}_sha256"] = _file_sha256(path)
    if "init_from" in key:  # the parent run and its weights, not how the config named it
        from harness.chains import identity

        key["init_from"] = identity(key["init_from"])
    return key


def plan(repro: Reproduction, resolved: dict[str, Any], key: dict[str, Any] | None = None) -> list[Evaluation]:
    """The run id of each ``evaluate`` entry (``key``: the run's identity, computed here when not given)."""
    key = key if key is not None else _identity(resolved)
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


def _instantiate(spec: dict[str, Any], **extra: Any) -> Any:
    return load_object(spec["class_path"])(**{**(spec.get("init_args") or {}), **extra})


def run_training(repro: Reproduction, resolved: dict[str, Any], runs_dir: Path = RUNS_DIR) -> list[Path]:
    """Prepare data, fit (unless ``fit: false``) and test; write one record per ``evaluate`` entry. A resolved
    ``init_from`` (harness.chains) loads the parent's weights before the fit; ``save_checkpoint`` stores them after.
    The records cite a tokenizer the config names or the data module or system registers (docs/tokenizers.md)."""
    import pytorch_lightning as pl

    from harness.predictions import PredictionsKeeper
    from harness.resume import RandomState, last_checkpoint
    from harness.summary import log_artifacts, progress_bar, training_loggers

    identity = _identity(resolved)
    evaluations = plan(repro, resolved, identity)
    paths = [record_path(e.run_id, runs_dir) for e in evaluations]
    if all(path.exists() for path in paths):
        print(f"already recorded: {', '.join(p.name for p in paths)}", file=sys.stderr)
        return paths
    cited = _tokenizer_artifacts(resolved)  # checked before anything runs
    datamodule = _datamodule(resolved)
    datamodule._log_hyperparams = False  # the loggers get the system's; Lightning refuses keys both share (crop_size)
    pl.seed_everything(resolved["seed"], workers=True)
    system = _instantiate(resolved["system"], model=resolved["model"])
    if "init_from" in resolved:
        _load_parents(system, resolved["init_from"], runs_dir)
    run_dir = LIGHTNING_DIR / repro.id / resolved["tier"] / evaluations[0].run_id  # logs, checkpoints: resume.py
    loggers = training_loggers(LIGHTNING_DIR / repro.id / resolved["tier"], evaluations[0].run_id)
    trainer_args = {"default_root_dir": str(LIGHTNING_DIR / repro.id / resolved["tier"]), "logger": loggers}
    trainer_args = progress_bar(resolved["tier"], {**trainer_args, **(resolved.get("trainer") or {})})
    keeper = PredictionsKeeper([e.run_id for e in evaluations], runs_dir.parent)  # predictions -> artifacts
    callbacks = [*(trainer_args.get("callbacks") or []), keeper, RandomState()]
    trainer = pl.Trainer(**{**trainer_args, "callbacks": callbacks})
    unpadded_test_loaders(datamodule)  # several processes: each test example seen once (harness.distributed)
    started = now()
    if resolved["fit"]:
        resume = last_checkpoint(run_dir)
        if resume is not None:
            print(f"resuming from {resume}", file=sys.stderr)
        trainer.fit(system, datamodule=datamodule, ckpt_path=resume)
    saving = resolved.get("save_checkpoint") and trainer.is_global_zero  # several processes: rank 0 writes
    artifacts = _save_checkpoint(system, runs_dir) if saving else {}
    results = trainer.test(system, datamodule=datamodule, verbose=False)
    if not trainer.is_global_zero:  # another process of a multi-process run: rank 0 writes the records
        return []
    artifacts = {**cited, **cited_artifacts(datamodule, system), **artifacts, **log_artifacts(loggers)}
    finished = now()
    if len(results) != len(evaluations):
        raise HarnessError(f"the test produced {len(results)} result set(s) but 'evaluate' lists {len(evaluations)}")
    provenance = run_provenance(identity, data_hash(datamodule), code_version(repro.id))
    parents = [spec["run"] for spec in _parent_specs(resolved.get("init_from"))]
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


def _datamodule(resolved: dict[str, Any]) -> Any:
    """Make the tier's data (``prepare``) and the data module; ``verify()`` names missing files before training."""
    data_root = resolved["data"]["init_args"].get("data_root")
    if "prepare" in resolved:
        if data_root is None:
            raise HarnessError("config has 'prepare' but no data.init_args.data_root to prepare into")
        remove_stale_partials(Path(data_root))
        load_object(resolved["prepare"]["function"])(root=Path(data_root), **(resolved["prepare"].get("args") or {}))
    datamodule = _instantiate(resolved["data"])
    verifiable = capability(datamodule, Verifiable)
    if verifiable is not None:
        _verify_data(verifiable, "prepare" in resolved)
    return datamodule


def remove_stale_partials(root: Path) -> None:
    """Remove the ``.<root name>.partial-<pid>-*`` folders that data preparation killed mid-way left beside ``root``:
    those whose process is gone (or, named without a pid, were made by an older harness). A live writer's stays."""
    for folder in root.parent.glob(f".{root.name}.partial-*") if root.parent.is_dir() else []:
        pid = folder.name.removeprefix(f".{root.name}.partial-").split("-")[0]
        if not (pid.isdigit() and _alive(int(pid))):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _verify_data(datamodule: Verifiable, prepared: bool) -> None:
    """A tier that reads the user's copy of a dataset (nothing ``prepare``s it) says how to point the run at it."""
    try:
        datamodule.verify()
    except HarnessError as exc:
        if prepared:
            raise
        raise HarnessError(f"{exc}; pass --data-root DIR, the folder that holds this dataset") from exc


def _parent_specs(init_from: dict[str, Any] | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [] if init_from is None else init_from if isinstance(init_from, list) else [init_from]


def _load_parents(system: Any, init_from: dict[str, Any] | list[dict[str, Any]], runs_dir: Path) -> None:
    """Copy each parent run's verified checkpoint into the freshly built system (all tensors, or ``prefixes``; with
    ``into``, the one prefix replaced by it: an ensemble's members)."""
    from harness.checkpoints import checkpoint_path, load_into, load_state

    for spec in _parent_specs(init_from):
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
    from harness.checkpoints import save_state

    return save_state(system.state_dict(), runs_dir)


def registry_config(paper: str, tier: str) -> Path:
    """The path of a registered paper's ``configs/<tier>.yaml``."""
    from harness import registry

    return registry.reproduction(paper).config_path(tier)


def run(
    paper: str,
    tier: str = "smoke",
    model: str | None = None,
    seed: int | None = None,
    data_root: str | None = None,
    config_path: Path | None = None,
    runs_dir: Path = RUNS_DIR,
    checkpoint: str | None = None,
) -> list[Path]:
    """Run one tier of one paper and return the paths of its run records."""
    from harness import registry

    repro = registry.reproduction(paper)
    if model is not None:
        repro.model(model)  # unknown model ids fail before anything runs
    if seed is not None:
        check_seed(seed, "--seed")
    check_writable(runs_dir)  # a read-only or full disk fails now, not when the record is written after training
    if tier == "arch":
        return run_arch(repro, model, runs_dir)
    path = config_path or repro.config_path(tier)
    if not path.exists():
        raise HarnessError(f"{path}: no {tier!r} config for {paper!r}; tiers available: {', '.join(repro.tiers)}")
    if repro.runner is not None:
        custom = load_object(repro.runner)
        return custom(repro, path, tier=tier, model=model, seed=seed, data_root=data_root, runs_dir=runs_dir)
    resolved = resolve_config(load_config(path, tier), tier, model, seed, data_root, checkpoint)
    repro.model(resolved["model"])
    check_arguments(path, resolved)
    if "init_from" in resolved:
        from harness.chains import resolve_parents

        resolved = resolve_parents(repro, path, resolved, runs_dir)  # runs a parent stage that has not run
    return run_training(repro, resolved, runs_dir)
