"""Registries of reproductions and tasks, filled from Python entry points.

Built-in papers and tasks are registered exactly like a third-party plugin: a distribution declares
entry points in the groups ``harness.reproductions`` and ``harness.tasks`` whose name is the id and whose
value is a light object (a :class:`Reproduction` or :class:`Task`). Nothing heavy is imported here; model
builders, systems and scorers are named as ``"module:attribute"`` strings and imported on use.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.protocols import BUILTIN, Protocol
from harness.suggest import did_you_mean
from harness.tiers import TABLE, TIERS

REPRODUCTIONS_GROUP = "harness.reproductions"
TASKS_GROUP = "harness.tasks"


def model_variant(model: str, variants: Collection[str], family: str, prefix: str = "") -> str:
    """The variant a model id names (``"efficientnet-b3"`` -> ``"b3"`` with ``prefix="efficientnet-"``); an id
    without the prefix or with an unknown variant is an error naming every known id of ``family``."""
    variant = model.removeprefix(prefix)
    if not model.startswith(prefix) or variant not in variants:
        ids = [prefix + v for v in variants]
        raise HarnessError(f"unknown {family} model id {model!r}{did_you_mean(model, ids)}; known: {', '.join(ids)}")
    return variant


def load_object(target: str) -> Any:
    """Import ``"package.module:attr"`` (or ``"package.module.attr"``) and return the attribute."""
    module_name, sep, attr = target.partition(":")
    if not sep:
        module_name, _, attr = target.rpartition(".")
    if not module_name or not attr:
        raise HarnessError(f"{target!r} is not an import path of the form 'package.module:attribute'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise HarnessError(f"cannot import {module_name!r} (named by {target!r}): {exc}") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise HarnessError(f"module {module_name!r} has no attribute {attr!r} (named by {target!r})") from None


FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
INTEGER_DTYPES = ("int64", "int32", "int16", "int8", "uint8", "bool")


@dataclass(frozen=True)
class InputSpec:
    """One named input of a model's ``forward`` (passed as a keyword argument), e.g. token ids ``(1, 512)``.

    Example tensors, for profiling and for the contract tests, are made from the spec alone (harness.profile):
    every element ``fill`` when it is given (an attention mask of ones; lengths equal to the time dimension);
    otherwise uniform integers in ``[low, high)`` for an integer or bool dtype (``high``: e.g. the vocabulary size,
    ``2`` for a random 0/1 mask, ``T + 1`` with ``low=1`` for lengths up to ``T``), and standard normal values for a
    floating dtype. An integer input must give ``high`` or ``fill``: there is no safe default for token ids.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    low: int = 0
    high: int | None = None
    fill: float | None = None

    def __post_init__(self) -> None:
        where = f"input {self.name!r}"
        if not self.name.isidentifier():
            raise HarnessError(f"{where}: the name must be a Python identifier (a forward() argument)")
        if not self.shape or not all(isinstance(n, int) and n > 0 for n in self.shape):
            raise HarnessError(f"{where}: shape {self.shape!r} must be a non-empty tuple of positive integers")
        if self.dtype not in FLOAT_DTYPES + INTEGER_DTYPES:
            known = ", ".join(FLOAT_DTYPES + INTEGER_DTYPES)
            raise HarnessError(f"{where}: unknown dtype {self.dtype!r}; known: {known}")
        if self.dtype in INTEGER_DTYPES and self.fill is None and self.high is None:
            raise HarnessError(f"{where}: an integer input needs 'high' (values in [low, high)) or 'fill'")
        if self.high is not None and self.high <= self.low:
            raise HarnessError(f"{where}: 'high' ({self.high}) must be above 'low' ({self.low})")

    def describe(self) -> str:
        """``"input_ids (1, 512) int64"``: how errors name the input."""
        return f"{self.name} {tuple(self.shape)} {self.dtype}"


@dataclass(frozen=True)
class ModelSpec:
    """A named model variant: how to build it and the input(s) it is profiled at.

    A model with one input gives ``input_shape``, one batch-1 input at the paper's resolution, e.g.
    ``(1, 3, 224, 224)``, passed to ``forward`` positionally (``input_dtype`` its dtype; an integer input is zeros);
    ``test_input_shape`` is a small input the contract tests run forward and backward (default: input_shape).
    A model with several inputs gives ``inputs`` instead, :class:`InputSpec` s at batch 1 and the paper's sequence
    length, passed to ``forward`` as keyword arguments by name, and optionally ``test_inputs`` (the same names in
    the same order, smaller shapes) for the contract tests; its ``input_shape`` is the first (primary) input's shape.
    ``dataset`` is the dataset that input size belongs to (arch records and claims carry it).
    """

    id: str
    build: str
    input_shape: tuple[int, ...] = ()
    dataset: str = ""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    input_dtype: str = "float32"
    test_input_shape: tuple[int, ...] | None = None
    inputs: tuple[InputSpec, ...] = ()
    test_inputs: tuple[InputSpec, ...] = ()

    def __post_init__(self) -> None:
        if not self.dataset:
            raise HarnessError(f"model {self.id!r}: 'dataset' is required")
        if self.inputs:
            self._check_named_inputs()
            object.__setattr__(self, "input_shape", tuple(self.input_shape or self.inputs[0].shape))
        elif not self.input_shape:
            raise HarnessError(f"model {self.id!r}: give 'input_shape' (one input) or 'inputs' (named inputs)")
        elif self.test_inputs:
            raise HarnessError(f"model {self.id!r}: 'test_inputs' needs 'inputs'; use 'test_input_shape'")

    def _check_named_inputs(self) -> None:
        names = [spec.name for spec in self.inputs]
        if len(set(names)) != len(names):
            raise HarnessError(f"model {self.id!r}: input names repeat: {names}")
        if self.input_shape and tuple(self.input_shape) != tuple(self.inputs[0].shape):
            raise HarnessError(
                f"model {self.id!r}: 'input_shape' {tuple(self.input_shape)} is not the shape of the first input "
                f"{self.inputs[0].describe()}; leave it out"
            )
        if self.test_input_shape is not None or self.input_dtype != "float32":
            raise HarnessError(
                f"model {self.id!r}: with 'inputs', give 'test_inputs', not 'test_input_shape' or 'input_dtype'"
            )
        test = [(spec.name, spec.dtype) for spec in self.test_inputs]
        if self.test_inputs and test != [(spec.name, spec.dtype) for spec in self.inputs]:
            raise HarnessError(
                f"model {self.id!r}: 'test_inputs' {test} must name the same inputs with the same dtypes, in the same "
                f"order, as 'inputs' {[(spec.name, spec.dtype) for spec in self.inputs]}"
            )

    @property
    def named_inputs(self) -> bool:
        """Whether ``forward`` takes keyword arguments by name (``inputs``) rather than one positional tensor."""
        return bool(self.inputs)

    def input_specs(self, test: bool = False) -> tuple[InputSpec, ...]:
        """The inputs at the paper's size (or, with ``test``, the contract tests' size); a one-input spec gives one
        :class:`InputSpec` named ``input``."""
        if self.inputs:
            return (self.test_inputs or self.inputs) if test else self.inputs
        shape = tuple((self.test_input_shape or self.input_shape) if test else self.input_shape)
        fill = None if self.input_dtype in FLOAT_DTYPES else 0
        return (InputSpec("input", shape, self.input_dtype, fill=fill),)

    def instantiate(self, **overrides: Any) -> Any:
        """Build the ``nn.Module`` (imports the model code on first use)."""
        return load_object(self.build)(**{**self.kwargs, **overrides})


@dataclass(frozen=True)
class Reproduction:
    """One paper: where its files live and which models and tasks it brings.

    ``package`` is the importable package whose folder holds ``claims.yaml`` and ``configs/<tier>.yaml``.
    ``runner`` optionally names ``"module:function"`` that runs a non-arch tier itself (e.g. a sweep of many
    fits) instead of the harness's single fit + test; it is called as
    ``function(repro, config_path, tier=..., model=..., seed=..., data_root=..., runs_dir=...)`` and returns the
    paths of the run records it wrote (see docs/plugins.md).
    ``figures`` optionally names ``"module:function"`` taking the paper's run records (as dicts) and returning
    ``[(title, vega_lite_spec), ...]``: the figures its claims are about. ``harness ingest`` calls it and stores the
    specs; the leaderboard's paper page draws them from the database.
    The paper is named by exactly one of ``arxiv`` (an arXiv id with its version) or ``url`` (where a paper without
    an arXiv id is published, e.g. OpenAI's GPT report); :attr:`link` is its address either way.
    What its claims may name beyond the registry (harness.claims.Vocabulary): ``unbuilt_models`` and
    ``unbuilt_datasets``, models and datasets the paper reports that this reproduction does not build (their claims
    stay not-run), and ``metrics``, metric names its own runs record beyond its tasks' keys (e.g. a sweep's summary).
    ``protocols``: the evaluation protocols of its own that its configs and claims name (harness.protocols).
    """

    id: str
    title: str
    package: str
    arxiv: str | None = field(default=None, kw_only=True)
    url: str | None = field(default=None, kw_only=True)
    tasks: tuple[str, ...] = ()
    models: tuple[ModelSpec, ...] = ()
    runner: str | None = None
    figures: str | None = None
    unbuilt_models: tuple[str, ...] = ()
    unbuilt_datasets: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    protocols: tuple[Protocol, ...] = ()

    def __post_init__(self) -> None:
        if (self.arxiv is None) == (self.url is None):
            raise HarnessError(f"reproduction {self.id!r}: give exactly one of 'arxiv' (with version) or 'url'")
        if not all(isinstance(p, Protocol) for p in self.protocols):
            raise HarnessError(
                f"reproduction {self.id!r}: 'protocols' is a tuple of harness.protocols.Protocol(id, description)"
            )

    @property
    def link(self) -> str:
        """The paper's address: its arXiv abstract page, or its ``url``."""
        return f"https://arxiv.org/abs/{self.arxiv}" if self.arxiv else str(self.url)

    @property
    def root(self) -> Path:
        spec = importlib.util.find_spec(self.package)
        if spec is None or not spec.submodule_search_locations:
            raise HarnessError(f"reproduction {self.id!r}: package {self.package!r} is not importable")
        return Path(next(iter(spec.submodule_search_locations)))

    @property
    def claims_path(self) -> Path:
        return self.root / "claims.yaml"

    @property
    def plan_path(self) -> Path:
        """The budget plan, committed before the budget runs (harness.plans, docs/verdicts.md)."""
        return self.root / "plan.yaml"

    def config_path(self, tier: str) -> Path:
        return self.root / "configs" / f"{tier}.yaml"

    @property
    def tiers(self) -> tuple[str, ...]:
        """Tiers this paper can run: ``arch`` whenever it has models, plus one per ``configs/<tier>.yaml``
        (variants of a tier, ``configs/<tier>-<variant>.yaml``, are run with ``--config``)."""
        present = {path.stem.split("-", 1)[0] for path in (self.root / "configs").glob("*.yaml")}
        if self.models:
            present |= {tier.name for tier in TABLE if not tier.needs_config}  # arch: profiles the models
        return tuple(tier for tier in TIERS if tier in present)

    def model(self, model_id: str) -> ModelSpec:
        for spec in self.models:
            if spec.id == model_id:
                return spec
        hint = did_you_mean(model_id, self.model_ids())
        raise HarnessError(f"reproduction {self.id!r} has no model {model_id!r}{hint}; it has: {self.model_ids()}")

    def model_ids(self) -> list[str]:
        return [spec.id for spec in self.models]


@dataclass(frozen=True)
class Task:
    """An evaluation task: its data module, its test metric, its official-format scorer and the keys it returns.

    ``data`` names the ``LightningDataModule`` that reads the task's data in its real on-disk format
    (``"tasks.imagenet.data:ImageNetDataModule"``), what a tier config's ``data.class_path`` names for it.
    ``metric`` names the callable (a torchmetrics class or factory) making the metric a system accumulates over one
    test loader of the task, the evaluator :mod:`harness.evaluators` builds per loader; it agrees with the scorer
    and writes the predictions the scorer reads (harness.predictions). ``version`` is the task's version, raised
    whenever the same predictions would score differently (a scorer or protocol fix), as lm-eval's task versions.
    ``score`` names a callable ``(references: Path, predictions: Path, **options) -> dict[str, float]``;
    ``options`` are the extra ``harness score`` flags it accepts (e.g. ``("na_probs",)``), each a path.
    ``example`` names a callable ``(root: Path, task_id: str) -> dict[str, Path]`` that writes a tiny
    references/predictions pair in the task's official formats (keys ``references``, ``predictions`` and
    any options); the contract tests score it and check the keys. ``protocol`` is the scoring convention where
    papers differ (e.g. LibriSpeech's text normalisation), a :class:`harness.protocols.Protocol` that the task
    registers: ``harness score`` states it, and a run record scored this way carries its id as its ``protocol``.
    """

    id: str
    title: str
    score: str
    keys: tuple[str, ...]
    options: tuple[str, ...] = ()
    example: str | None = None
    protocol: Protocol | None = None
    data: str | None = field(default=None, kw_only=True)
    metric: str | None = field(default=None, kw_only=True)
    version: int | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if self.protocol is not None and not isinstance(self.protocol, Protocol):
            raise HarnessError(
                f"task {self.id!r}: 'protocol' is a harness.protocols.Protocol(id, description), which registers it, "
                f"not {self.protocol!r}"
            )
        missing = [name for name in ("data", "metric", "version") if getattr(self, name) is None]
        if missing:
            raise HarnessError(
                f"task {self.id!r}: give {', '.join(repr(name) for name in missing)}: data='package.module:DataModule' "
                "(its LightningDataModule), metric='package.module:Metric' (its test metric), version=1 (raised when "
                "scores change); docs/plugins.md, 'A task'"
            )
        if not isinstance(self.version, int) or self.version < 1:
            raise HarnessError(f"task {self.id!r}: version {self.version!r} must be a positive integer")

    def scorer(self) -> Callable[..., dict[str, float]]:
        return load_object(self.score)

    def data_module(self) -> type:
        """The data module class (imports the data code on first use)."""
        return load_object(self.data)

    def test_metric(self) -> Callable[..., Any]:
        """What makes one test loader's metric (imports the metric code on first use)."""
        return load_object(self.metric)


def _source(ep: EntryPoint) -> str:
    dist = ep.dist.name if ep.dist is not None else "<unknown distribution>"
    return f"{dist} ({ep.value})"


def _load_group(group: str, kind: type) -> dict[str, Any]:
    found: dict[str, Any] = {}
    sources: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()
    for ep in entry_points(group=group):
        key = (_source(ep), ep.name)
        if key in seen:  # the same distribution visible twice on sys.path
            continue
        seen.add(key)
        if ep.name in sources:
            first, second = sources[ep.name], _source(ep)
            raise HarnessError(f"duplicate {group} id {ep.name!r}: registered by {first} and by {second}")
        sources[ep.name] = _source(ep)
    for ep in entry_points(group=group):
        if ep.name in found:
            continue
        try:
            obj = ep.load()
        except Exception as exc:  # a broken plugin is named, not hidden behind a traceback
            raise HarnessError(f"cannot load {group} entry point {ep.name!r} from {_source(ep)}: {exc}") from exc
        if not isinstance(obj, kind):
            raise HarnessError(f"{group} entry point {ep.name!r} from {_source(ep)} is not a {kind.__name__}")
        if obj.id != ep.name:
            raise HarnessError(f"{group} entry point {ep.name!r} from {_source(ep)} names an object with id {obj.id!r}")
        found[ep.name] = obj
    return dict(sorted(found.items()))


@functools.cache
def reproductions() -> dict[str, Reproduction]:
    """All registered reproductions by paper id."""
    return _load_group(REPRODUCTIONS_GROUP, Reproduction)


@functools.cache
def tasks() -> dict[str, Task]:
    """All registered tasks by task id."""
    return _load_group(TASKS_GROUP, Task)


def protocols() -> dict[str, Protocol]:
    """Every registered protocol by id: harness.protocols.BUILTIN, each task's ``protocol`` and each reproduction's
    ``protocols`` (not cached: built from the cached registries); one id given two different descriptions is an error
    naming both owners."""
    owned = [("harness.protocols", p) for p in BUILTIN]
    owned += [(f"task {t.id!r}", t.protocol) for t in tasks().values() if t.protocol is not None]
    owned += [(f"reproduction {r.id!r}", p) for r in reproductions().values() for p in r.protocols]
    found: dict[str, tuple[str, Protocol]] = {}
    for owner, protocol in owned:
        first = found.setdefault(protocol.id, (owner, protocol))
        if first[1] != protocol:
            raise HarnessError(f"protocol {protocol.id!r} is registered twice, differently: by {first[0]} and {owner}")
    return {key: protocol for key, (_, protocol) in sorted(found.items())}


def reproduction(paper: str) -> Reproduction:
    known = reproductions()
    if paper not in known:
        hint = did_you_mean(paper, known)
        raise HarnessError(f"unknown paper {paper!r}{hint}; registered: {', '.join(known) or 'none'}")
    return known[paper]


def task(task_id: str) -> Task:
    known = tasks()
    if task_id not in known:
        hint = did_you_mean(task_id, known)
        raise HarnessError(f"unknown task {task_id!r}{hint}; registered: {', '.join(known) or 'none'}")
    return known[task_id]


def models() -> dict[str, tuple[Reproduction, ModelSpec]]:
    """Every registered model id with the reproduction that brings it; a model id registered twice is an error."""
    found: dict[str, tuple[Reproduction, ModelSpec]] = {}
    for repro in reproductions().values():
        for spec in repro.models:
            if spec.id in found:
                other = found[spec.id][0].id
                raise HarnessError(f"duplicate model id {spec.id!r}: in reproductions {other!r} and {repro.id!r}")
            found[spec.id] = (repro, spec)
    return dict(sorted(found.items()))
