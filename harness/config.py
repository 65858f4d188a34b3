"""The tier config as typed data: one pydantic schema (:class:`TierConfig`) for every ``configs/<tier>.yaml`` the
harness runs, checked before anything is prepared or trained.

A config file is read with its ``_base_`` files merged (harness.configfile), checked against the schema, and handed
to the runner as the plain mapping it is (the resolved mapping is what run ids hash, so checking never changes it).
An error names the file and line that set the key, and the key, one line per problem, e.g.
``configs/budget.yaml:12: key 'trainer.max_steps': ...`` (a key the file lacks names the file). The model's
``overrides`` and ``--set`` are checked again once applied (:func:`check_resolved`): the error then names the
override's line, or the ``--set`` that gave the value. Layout and keys: docs/plugins.md, "A tier config".
"""

from __future__ import annotations

import re
import typing
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from harness import configfile, dotted, protocols
from harness.configfile import ConfigFile
from harness.errors import HarnessError
from harness.records import RUN_ID_PATTERN
from harness.suggest import did_you_mean
from harness.tiers import TABLE

MAX_SEED = 2**32 - 1  # numpy's seed range, which Lightning's seed_everything keeps to
RUN_ID_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # what a dataset or split may be inside a run id
CONFIGURED_TIERS = tuple(tier.name for tier in TABLE if tier.needs_config)
SHAPES = ("<one parent>", "<parents>")  # init_from's two shapes, as pydantic names them in an error's location


def check_seed(seed: Any, where: str) -> int:
    """A seed is an integer from 0 to :data:`MAX_SEED`; anything else is an error naming ``where`` it came from."""
    try:
        return _seed(seed)
    except ValueError as exc:
        raise HarnessError(f"{where}: {exc}") from None


def _seed(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SEED:
        raise ValueError(f"{value!r} is not a seed (an integer from 0 to {MAX_SEED})")
    return value


def _typed(kind: type, what: str, optional: bool = False) -> BeforeValidator:
    """A value of exactly ``kind`` (``True`` is no integer), else the error ``<what>, not <value>``."""

    def check(value: Any) -> Any:
        if value is None and optional:
            return value
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise ValueError(f"{what}, not {value!r}")
        return value

    return BeforeValidator(check)


def _run_id_part(value: Any) -> str:
    if not isinstance(value, str) or not RUN_ID_PART.fullmatch(value):
        raise ValueError(
            f"{value!r} cannot be part of a run id (letters, digits, '.', '_' and '-', starting with a letter or digit)"
        )
    return value


def _registered_protocols() -> Any:
    from harness import registry  # on use: the leaderboard reads claims and records without the registry

    return registry.protocols()


def _protocol(value: Any, info: ValidationInfo) -> str | None:
    """A protocol is a registered id (harness.protocols); ``context={"protocols": ...}`` gives the known ones."""
    if value is None:
        return value
    if not isinstance(value, str):
        raise ValueError(f"a registered protocol id, not {value!r}")
    known = (info.context or {}).get("protocols")
    protocols.check(value, _registered_protocols() if known is None else known)
    return value


def _non_empty_list(what: str) -> BeforeValidator:
    def check(value: Any) -> Any:
        if not isinstance(value, list) or not value:
            raise ValueError(f"{what}, not {value!r}")
        return value

    return BeforeValidator(check)


def _prefixes(value: Any) -> list[str]:
    if not (isinstance(value, list) and value and all(isinstance(p, str) and p for p in value)):
        raise ValueError(f"a non-empty list of tensor-name prefixes (or absent: every tensor), not {value!r}")
    return value


def _tier(value: Any) -> str:
    if value not in CONFIGURED_TIERS:
        raise ValueError(f"{value!r} is not one of {', '.join(CONFIGURED_TIERS)}")
    return value


def _run_id(value: Any) -> str:
    if not (isinstance(value, str) and re.match(RUN_ID_PATTERN, value)):
        raise ValueError(f"{value!r} is not a run id")
    return value


def _override_row(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"a mapping of dotted key to value, not {value!r}")
    for key in value:
        if not isinstance(key, str):
            raise ValueError(f"{key!r} is not a dotted key (e.g. data.init_args.image_size)")
        dotted.parts(key)  # a ValueError naming an empty part
    return value


Seed = Annotated[int, BeforeValidator(_seed)]
Flag = Annotated[bool, _typed(bool, "true or false")]
RunIdPart = Annotated[str, BeforeValidator(_run_id_part)]
Arguments = Annotated[dict, _typed(dict, "a mapping of argument names to values")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Prepare(_Strict):
    """How the tier's data is made: ``function(root=<data_root>, **args)``, idempotent; skipped with --data-root."""

    function: Annotated[str, _typed(str, "'module:function'")]
    args: Annotated[dict, _typed(dict, "a mapping of keyword arguments")] = {}


class ClassSpec(_Strict):
    """A class and its keyword arguments, LightningCLI's ``class_path`` / ``init_args``."""

    class_path: Annotated[str, _typed(str, "'module:Class'")]
    init_args: Arguments = {}


class DataArguments(BaseModel):
    """The data module's arguments: any its class takes; ``data_root`` (where the data lies) is a path."""

    model_config = ConfigDict(extra="allow")

    data_root: Annotated[str | None, _typed(str, "a path", optional=True)] = None


class DataSpec(ClassSpec):
    init_args: Annotated[DataArguments, _typed(dict, "a mapping of argument names to values")] = DataArguments()


class Evaluation(_Strict):
    """One test dataloader: the dataset and split its run record carries (both part of the run id)."""

    dataset: RunIdPart
    split: RunIdPart


class Parent(_Strict):
    """One parent stage of ``init_from`` (harness.chains): named by a recorded ``run`` or by its ``config`` file
    (relative to this config's folder) with optional ``tier``, ``model`` and ``seed``; ``prefixes`` limits what is
    loaded and ``into`` renames the one prefix in the child."""

    run: Annotated[str | None, BeforeValidator(_run_id)] = None
    config: Annotated[str | None, _typed(str, "a file name, relative to this config's folder", optional=True)] = None
    tier: Annotated[str | None, BeforeValidator(_tier)] = None
    model: Annotated[str | None, _typed(str, "a model id", optional=True)] = None
    seed: Seed | None = None
    prefixes: Annotated[list[str] | None, BeforeValidator(_prefixes)] = None
    into: Annotated[str | None, _typed(str, "a tensor-name prefix")] = None

    @field_validator("tier", "model", "seed")
    @classmethod
    def _by_config_only(cls, value: Any, info: ValidationInfo) -> Any:
        if info.data.get("run") is not None:
            raise ValueError("'tier', 'model' and 'seed' describe a parent named by 'config', not by 'run'")
        return value

    @field_validator("into")
    @classmethod
    def _one_prefix(cls, value: str, info: ValidationInfo) -> str:
        if not value or len(info.data.get("prefixes") or []) != 1:
            raise ValueError("a prefix that replaces the one entry of 'prefixes' in the child's tensor names")
        return value

    @model_validator(mode="after")
    def _named_once(self) -> Parent:
        if (self.run is None) == (self.config is None):
            raise ValueError("name the parent by exactly one of 'run' (a run id) and 'config' (a file)")
        return self


def _shape(value: Any) -> str:
    return SHAPES[1] if isinstance(value, list) else SHAPES[0]


def _parents(value: Any) -> Any:
    if not isinstance(value, dict | list) or value == []:
        raise ValueError(f"a mapping naming the parent stage, or a non-empty list of them, not {value!r}")
    return value


InitFrom = Annotated[
    Annotated[Parent, Tag(SHAPES[0])] | Annotated[list[Parent], Tag(SHAPES[1])],
    Discriminator(_shape),
    BeforeValidator(_parents),
]


class TierConfig(_Strict):
    """A tier config (docs/plugins.md): the default model and seed, the system and data module to build, the
    Trainer's arguments and the test datasets, with optional data preparation, per-model overrides and a parent
    stage. The same schema checks a config once its model's overrides and ``--set`` are applied."""

    tier: Annotated[str | None, _typed(str, "a tier name", optional=True)] = None
    model: Annotated[str, _typed(str, "a model id")]
    seed: Seed = 0
    protocol: Annotated[str | None, BeforeValidator(_protocol)] = None
    fit: Flag = True
    prepare: Annotated[Prepare, _typed(dict, "a mapping with 'function' (and optional 'args')")] = None  # or absent
    system: Annotated[ClassSpec, _typed(dict, "a mapping with 'class_path' (and optional 'init_args')")]
    data: Annotated[DataSpec, _typed(dict, "a mapping with 'class_path' (and optional 'init_args')")]
    trainer: Annotated[dict | None, _typed(dict, "a mapping of pytorch_lightning.Trainer arguments", optional=True)] = (
        None
    )
    evaluate: Annotated[list[Evaluation], _non_empty_list("a non-empty list of {dataset, split} mappings")]
    overrides: Annotated[
        dict[Any, Annotated[dict, BeforeValidator(_override_row)]] | None,
        _typed(dict, "a mapping of model id to {dotted key: value}", optional=True),
    ] = None
    save_checkpoint: Flag = False
    init_from: InitFrom | None = None  # null: no parent (a variant of a chain's stage, or a model's override row)


CONFIG_KEYS = frozenset(TierConfig.model_fields)  # what a tier config (and a run record's config) may hold at the top


# --- errors: the pydantic error's location as a dotted key, and one message --------------------------------------


def key_of(loc: tuple[int | str, ...]) -> str:
    """``("evaluate", 0, "dataset")`` -> ``"evaluate[0].dataset"`` (init_from's shape tags left out)."""
    text = ""
    for part in (p for p in loc if p not in SHAPES):
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def _model_at(loc: tuple[int | str, ...]) -> type[BaseModel] | None:
    """The schema class that holds the mapping at ``loc`` (None where it is a free mapping)."""
    node: type[BaseModel] | None = TierConfig
    for part in loc:
        if isinstance(part, int) or part in SHAPES:
            continue
        field = node.model_fields.get(str(part)) if node is not None else None
        node = _inner_model(field.annotation) if field is not None else None
    return node


def _inner_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def describe(error: Mapping[str, Any]) -> str:
    """One sentence for a pydantic error of the schema."""
    kind, loc, value = error["type"], tuple(error["loc"]), error.get("input")
    if kind == "missing":
        return "missing"
    if kind == "extra_forbidden":
        holder = _model_at(loc[:-1])
        known = list(holder.model_fields) if holder is not None else []
        where = f"of {key_of(loc[:-1])!r}" if loc[:-1] else "of a tier config"
        return f"unknown key{did_you_mean(str(loc[-1]), known)}; the keys {where} are {', '.join(known)}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"a mapping, not {value!r}"
    return error["msg"].removeprefix("Value error, ")


def _first_problem(exc: ValidationError) -> tuple[str, str]:
    """The key and message of the first problem (an unknown key first: it may be a misspelt one that is missing),
    with how many more there are."""
    errors = sorted(exc.errors(), key=lambda error: error["type"] != "extra_forbidden")
    key, message = key_of(tuple(errors[0]["loc"])), describe(errors[0])
    more = len(errors) - 1
    return key, message + (f" (and {more} more problem{'s' * (more > 1)} in this config)" if more else "")


def validate(
    tree: Mapping[str, Any], source: ConfigFile | None = None, known_protocols: Collection[str] | None = None
) -> TierConfig:
    """``tree`` checked against :class:`TierConfig`; an error names ``source``'s file, line and the key."""
    try:
        return TierConfig.model_validate(tree, context={"protocols": known_protocols})
    except ValidationError as exc:
        key, message = _first_problem(exc)
        raise (source.error(key, message) if source is not None else HarnessError(f"key {key!r}: {message}")) from None


def _check_tier(source: ConfigFile, tier: str) -> None:
    given = source.tree.get("tier", tier)
    if given != tier:
        raise source.error("tier", f"{given!r}, but the run asked for tier {tier!r}")


def load_config(path: Path, tier: str) -> dict[str, Any]:
    """Read a tier config (its ``_base_`` files merged) and check it; the plain mapping, as the file gives it."""
    source = configfile.read(path, "a tier config")
    validate(source.tree, source)
    _check_tier(source, tier)
    return source.tree


def check_resolved(
    resolved: Mapping[str, Any],
    model_row: Mapping[str, Any],
    sets: Mapping[str, Any],
    path: Path | None = None,
) -> None:
    """Check a config once the model's overrides (``model_row``) and ``sets`` (``--set``) are applied: an error names
    the ``--set`` or the override (its file and line, where ``path`` is given) that gave the wrong value."""
    try:
        TierConfig.model_validate(resolved)
    except ValidationError as exc:
        key, message = _first_problem(exc)
        raise _blame(key, message, resolved["model"], model_row, sets, path) from None


def _related(key: str, given: str) -> bool:
    """Whether a problem at ``key`` lies in or above what ``given`` set."""
    key, given = key.replace("[", ".["), given.replace("[", ".[")
    return key == given or key.startswith(f"{given}.") or given.startswith(f"{key}.")


def _blame(
    key: str, message: str, model: str, row: Mapping[str, Any], sets: Mapping[str, Any], path: Path | None
) -> HarnessError:
    for name in sets:
        if _related(key, name):
            return HarnessError(f"--set {name}=...: key {key!r}: {message}")
    for name in row:
        if _related(key, name):
            where = f"overrides.{model}.{name}"
            if path is not None:
                return configfile.read(path, "a tier config").error(where, message)
            return HarnessError(f"key {where!r}: {message}")
    return HarnessError(f"{path or 'the resolved config'}: key {key!r}: {message}")


def read_config(path: Path, tier: str, allowed: Collection[str], what: str = "a tier config") -> dict[str, Any]:
    """Read a YAML config mapping (its ``_base_`` files merged) with only ``allowed`` keys, whose ``tier`` (if given)
    is ``tier`` and whose ``protocol`` (if given) is registered; errors name the file, line and key. For plugins'
    own configs (e.g. a sweep's); the harness's tier configs are :func:`load_config`'s."""
    source = configfile.read(path, what)
    for key in source.tree:
        if key not in allowed:
            known = sorted(allowed)
            raise source.error(key, f"unknown key{did_you_mean(str(key), known)}; {what} has {', '.join(known)}")
    _check_tier(source, tier)
    if source.tree.get("protocol") is not None:
        try:
            protocols.check(source.tree["protocol"], _registered_protocols())
        except ValueError as exc:
            raise source.error("protocol", str(exc)) from None
    return source.tree
