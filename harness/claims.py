"""Paper claims: the numbers and statements a paper reports, loaded from ``reproductions/<paper>/claims.yaml``.

A claims file is a mapping with optional ``defaults`` (merged into every entry; an entry's own keys win) and
a ``claims`` list. Each entry is validated against :class:`Claim`; an error names the file, the line, the
entry (id or index) and the field.

Where the paper comes from is one stable identifier, in one of three forms (docs/verdicts.md, "Claims"):
``arxiv`` (an arXiv id with its version), ``url`` with ``accessed`` (the date it was read there), or the PDF's
``sha256`` with the ``url`` it was published at.
"""

from __future__ import annotations

import difflib
import fnmatch
import math
import re
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from harness import configfile
from harness.config import CONFIG_KEYS
from harness.counting import RULES
from harness.errors import HarnessError
from harness.protocols import check as check_protocol
from harness.tiers import CLAIM_KINDS

ID_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
ARXIV_PATTERN = r"^\d{4}\.\d{4,5}v\d+$"
URL_PATTERN = r"^https?://[^\s/]+\S*$"
SHA256_PATTERN = r"^[0-9a-f]{64}$"
SOURCE_FORMS = (
    "'arxiv' (an arXiv id with its version, e.g. 1905.11946v5), or 'url' with 'accessed' (the date it was read "
    "there, YYYY-MM-DD), or 'sha256' (of the PDF, 64 hex digits) with the 'url' it was published at"
)
Condition = str | int | float | bool
PERCENT_UNITS = ("%", "percent")
ARCH_METRICS = ("params_m", "macs_m", "params", "macs")  # what the arch tier records (harness.arch.run_arch)


def _finite_number(value: Any) -> Any:
    """A claim's numbers are numbers: YAML's ``true``, ``"77.1"``, ``.inf`` and ``.nan`` are not."""
    if isinstance(value, bool):
        raise ValueError("a number, not true or false")
    if isinstance(value, str):
        raise ValueError(f"a number, not text ({value!r})")
    if isinstance(value, int | float) and not math.isfinite(value):
        raise ValueError(f"a finite number, not {value}")
    return value


Number = Annotated[float, BeforeValidator(_finite_number)]


class TrendRule(BaseModel):
    """The machine-checkable rule a trend claim is judged by (see docs/verdicts.md).

    ``rank-correlation``: Spearman's rho between ``x`` and ``y`` over the matching records must have the
    sign ``sign`` at significance ``alpha``. ``loglog-slope``: the least-squares slope of log y on log x
    must lie in ``[min, max]`` (its 95% t-interval inside: reproduced; disjoint: not reproduced).
    ``x`` and ``y`` name a record field as ``metrics.<name>`` or ``config.<dotted.path>``.
    """

    model_config = ConfigDict(extra="forbid")

    type: Literal["rank-correlation", "loglog-slope"]
    x: str = Field(pattern=r"^(metrics|config)\..+")
    y: str = Field(pattern=r"^(metrics|config)\..+")
    sign: Literal[-1, 1] | None = None
    alpha: Number = Field(default=0.05, gt=0, lt=1)
    min: Number | None = None
    max: Number | None = None

    @model_validator(mode="after")
    def _check_type_fields(self) -> TrendRule:
        if self.type == "rank-correlation" and self.sign is None:
            raise ValueError("a rank-correlation rule needs 'sign' (1 or -1)")
        if self.type == "loglog-slope" and (self.min is None or self.max is None or self.min > self.max):
            raise ValueError("a loglog-slope rule needs 'min' <= 'max'")
        return self


class Baseline(BaseModel):
    """A delta claim's baseline: ``model``'s results under paper ``paper`` (another registered paper's records), on
    the claim's dataset, split, metric and protocol; ``conditions`` replace the claim's for the baseline's records
    (default: the claim's own)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    paper: str = Field(pattern=ID_PATTERN)
    model: str = Field(min_length=1)
    conditions: dict[str, Condition] | None = None


class Deviation(BaseModel):
    """A reviewed difference between an arch claim and our count: what we measure (``measured``, in the claim's unit),
    why it differs from the paper's number (``reason``) and what shows our network is the paper's all the same
    (``evidence``, e.g. "equal to the released checkpoint's tensor shapes"). The verdict is ``deviation`` only while
    the measurement still equals ``measured`` (within the claim's tolerance); a count that moves is a failure again."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    measured: Number
    reason: str = Field(min_length=1)
    evidence: str = Field(min_length=1)


class Equivalence(BaseModel):
    """How a "no difference" delta claim (``value: 0``) is judged: two one-sided tests (TOST) at ``alpha`` against
    the margin ``[-margin, margin]`` in the claim's unit: the difference's (1 - 2 alpha) interval inside the margin is
    ``reproduced``, wholly outside it ``not-reproduced``, otherwise ``inconclusive``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    margin: Number = Field(gt=0)
    alpha: Number = Field(default=0.05, gt=0, lt=0.5)


class Claim(BaseModel):
    """One reported number or statement, with its source in the paper."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=ID_PATTERN)
    paper: str = Field(pattern=ID_PATTERN)
    arxiv: str | None = Field(default=None, pattern=ARXIV_PATTERN)
    url: str | None = Field(default=None, pattern=URL_PATTERN)
    accessed: date | None = None
    sha256: str | None = Field(default=None, pattern=SHA256_PATTERN)
    source: str = Field(min_length=1)
    kind: Literal[CLAIM_KINDS]
    model: str = Field(min_length=1)
    dataset: str = Field(min_length=1)
    split: str = Field(min_length=1)
    metric: str = Field(min_length=1)
    value: Number | None = None
    unit: str
    higher_is_better: bool
    tolerance: Number | None = Field(default=None, ge=0)
    statement: str | None = None
    rule: TrendRule | None = None
    baseline: str | Baseline | None = None
    conditions: dict[str, Condition] = Field(default_factory=dict)
    quote: str | None = None
    protocol: str | None = None
    notes: str | None = None
    # how a delta's (or a baseline trend's) seeds are compared: ``paired`` (the same seed on both sides shares its
    # data order and initial draw: the interval of the per-seed differences) or ``independent`` (Welch)
    analysis: Literal["paired", "independent"] = "independent"
    # the unit that was replicated: ``seed`` (each seed is an independent replicate) or ``condition`` (the runs hang
    # from one shared upstream run, e.g. one pre-training: a trend is judged on the condition means, one point per x)
    replicate: Literal["seed", "condition"] = "seed"
    equivalence: Equivalence | None = None  # a "no difference" claim: judged by TOST against this margin
    counting: str | None = Field(default=None, pattern=ID_PATTERN)  # arch: the paper's counting rule (docs/verdicts.md)
    deviation: Deviation | None = None  # arch: a reviewed difference from the paper's count
    derived: bool = False  # the value is computed from the stated configuration: no evidence of fidelity
    constructed: bool = False  # not a comparison the paper itself makes: built from its numbers by this project

    @model_validator(mode="before")
    @classmethod
    def _parse_baseline(cls, data: Any) -> Any:
        """A mapping baseline is validated here, so its errors name ``baseline.<key>`` (not a union member)."""
        baseline = data.get("baseline") if isinstance(data, dict) else None
        if baseline is None or isinstance(baseline, str | Baseline):
            return data
        if not isinstance(baseline, dict):
            raise ValueError("field 'baseline': a model id, or {paper: P, model: M} for another paper's results")
        try:
            return {**data, "baseline": Baseline.model_validate(baseline)}
        except ValidationError as exc:
            raise ValueError(_describe(exc.errors()[0], prefix="baseline.")) from None

    @model_validator(mode="after")
    def _check_paper_source(self) -> Claim:
        given = [name for name in ("arxiv", "url", "accessed", "sha256") if getattr(self, name) is not None]
        if given in (["arxiv"], ["url", "accessed"], ["url", "sha256"]):
            return self
        if not given or "arxiv" in given:
            field = next((name for name in given if name != "arxiv"), "arxiv")  # the field that is too many
        else:
            field = "url" if "url" not in given else "accessed" if len(given) == 1 else "sha256"
        shown = ", ".join(f"'{name}'" for name in given) or "none"
        raise ValueError(f"field '{field}': the paper's source is one of {SOURCE_FORMS}; this claim gives {shown}")

    @model_validator(mode="after")
    def _check_kind_fields(self) -> Claim:
        if self.kind == "trend":
            if not self.statement or self.rule is None:
                raise ValueError("a trend claim needs 'statement' and 'rule'")
        else:
            if self.value is None or self.tolerance is None:
                raise ValueError(f"a {self.kind} claim needs 'value' and 'tolerance'")
            if self.rule is not None:
                raise ValueError(f"'rule' is only for trend claims, not {self.kind}")
        if self.kind == "delta" and not self.baseline:
            raise ValueError(
                "a delta claim needs 'baseline' (the model id it is compared against, or {paper: P, model: M} for "
                "another paper's results)"
            )
        if self.kind not in ("delta", "trend") and self.baseline:
            raise ValueError("'baseline' is only for delta and trend claims")
        return self

    @model_validator(mode="after")
    def _check_judging_fields(self) -> Claim:
        """A "no difference" delta is judged by an equivalence test, never as a positive claim; arch fields are for
        arch claims; an analysis across seeds is for claims with a baseline."""
        if self.kind == "delta" and self.value == 0 and self.equivalence is None:
            raise ValueError(
                "field 'value': a delta of 0 claims no difference, which is judged by an equivalence test: give "
                "'equivalence: {margin: M}' (the largest difference, in the claim's unit, that counts as none)"
            )
        if self.equivalence is not None and (self.kind != "delta" or self.value != 0):
            raise ValueError("field 'equivalence': only for a delta claim of value 0 (no difference)")
        for name in ("counting", "deviation"):
            if getattr(self, name) is not None and self.kind != "arch":
                raise ValueError(f"field '{name}': only for arch claims, not {self.kind}")
        if self.analysis == "paired" and self.baseline is None:
            raise ValueError("field 'analysis': 'paired' compares a model with its baseline: give 'baseline'")
        return self

    @model_validator(mode="after")
    def _check_percentages(self) -> Claim:
        """A percentage is of a whole: 0 to 100 (a delta -100 to 100), and no tolerance wider than the whole."""
        if self.unit not in PERCENT_UNITS:
            return self
        low, what = (-100.0, "a percentage change (-100 to 100)") if self.kind == "delta" else (0.0, "")
        if self.value is not None and not low <= self.value <= 100.0:
            what = what or f"a percentage of {'an' if self.kind == 'arch' else 'a'} {self.kind} claim (0 to 100)"
            raise ValueError(f"field 'value': {self.value} % is not {what}")
        if self.tolerance is not None and self.tolerance > 100.0:
            raise ValueError(f"field 'tolerance': a tolerance of {self.tolerance} % is more than the whole (100 %)")
        return self

    @property
    def baseline_paper(self) -> str:
        """The paper whose records the baseline's results are (this claim's own unless it names another)."""
        return self.baseline.paper if isinstance(self.baseline, Baseline) else self.paper

    @property
    def baseline_model(self) -> str | None:
        return self.baseline.model if isinstance(self.baseline, Baseline) else self.baseline

    @property
    def baseline_conditions(self) -> dict[str, Condition]:
        if isinstance(self.baseline, Baseline) and self.baseline.conditions is not None:
            return self.baseline.conditions
        return self.conditions


def claim_row(claim: Claim) -> dict[str, Any]:
    """A flat row for tables (the claim's ``id`` becomes ``claim_id``; a baseline of another paper becomes
    ``baseline`` (the model), ``baseline_paper`` and ``baseline_conditions``)."""
    data = claim.model_dump(mode="json")
    data["claim_id"] = data.pop("id")
    data["baseline"] = claim.baseline_model
    data["baseline_paper"] = claim.baseline_paper if claim.baseline is not None else None
    data["baseline_conditions"] = claim.baseline_conditions if claim.baseline is not None else None
    return data


# libyaml's parser where PyYAML was built with it (the wheels are): 10x faster than the pure-Python one, which spent
# about 2.5 s of every `harness run`, ingest and report reading the 900 claims (benchmarks/README.md); same documents
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_SafeLoader):
    """PyYAML's safe loader, except that a key repeated in one mapping is an error (PyYAML keeps the last)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if isinstance(key, str | int | float | bool) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {seen[key]})", key_node.start_mark
                )
            seen[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


@dataclass(frozen=True)
class Lines:
    """Where things are in a claims file: each entry's first line and its fields' lines, and the defaults'."""

    entries: list[int]
    fields: list[dict[str, int]]
    defaults: dict[str, int]

    def of(self, index: int, field: str | None) -> str:
        """``":<line>"`` of ``field`` in entry ``index`` (or in the defaults it came from), else of the entry."""
        if index >= len(self.entries):
            return ""
        line = self.fields[index].get(field or "") or self.defaults.get(field or "") or self.entries[index]
        return f":{line}"


def _field_lines(node: yaml.Node) -> dict[str, int]:
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {key.value: key.start_mark.line + 1 for key, _ in node.value if isinstance(key, yaml.ScalarNode)}


def _lines(text: str) -> Lines:
    """The lines of entries and fields, for error messages (empty where the file cannot be composed)."""
    try:
        root = yaml.compose(text, Loader=_SafeLoader)
    except yaml.YAMLError:
        root = None
    lines = Lines([], [], {})
    for key, value in root.value if isinstance(root, yaml.MappingNode) else []:
        if key.value == "defaults":
            lines.defaults.update(_field_lines(value))
        if key.value == "claims" and isinstance(value, yaml.SequenceNode):
            lines.entries.extend(item.start_mark.line + 1 for item in value.value)
            lines.fields.extend(_field_lines(item) for item in value.value)
    return lines


def _decode(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read claims file: {exc.strerror}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise HarnessError(f"{path}:{line}: not UTF-8 text ({exc.reason})") from None


def _read_yaml(path: Path) -> tuple[dict[str, Any], Lines]:
    text = _decode(path)
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise HarnessError(f"{where}: invalid YAML: {getattr(exc, 'problem', exc)}") from exc
    except ValueError as exc:  # a value YAML reads as a date or time but is none (2018-13-01)
        raise HarnessError(f"{path}: invalid YAML value: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise HarnessError(f"{path}: a claims file is a mapping with a 'claims' list (and optional 'defaults')")
    unknown = set(data) - {"defaults", "claims"}
    if unknown:
        raise HarnessError(f"{path}: unknown top-level key(s) {sorted(unknown)}; expected 'defaults' and 'claims'")
    if not isinstance(data.get("defaults", {}), dict):
        raise HarnessError(f"{path}: 'defaults' must be a mapping")
    return data, _lines(text)


def _describe(error: dict[str, Any], prefix: str = "") -> str:
    message = error["msg"].removeprefix("Value error, ")
    if not error["loc"] and message.startswith("field '"):
        return message  # a check across fields that names the field itself
    field = ".".join(str(part) for part in error["loc"]) or "(entry)"
    return f"field '{prefix}{field}': {message}"


def _field_of(message: str) -> str | None:
    """The top-level field a message names (``field 'rule.x': ...`` -> ``rule``)."""
    found = re.match(r"field '([^'.]+)", message)
    return found.group(1) if found else None


# --- names a claim gives must match something registered -----------------------------------------------------------


@dataclass(frozen=True)
class Vocabulary:
    """What one paper's claims may name. ``models``: the paper's registered models and the ones it reports but does
    not build (``Reproduction.unbuilt_models``); ``None`` for a paper that runs its tiers itself (its runner names its
    models). ``datasets``: every task id, every model's dataset, the datasets the paper's configs evaluate and its
    ``unbuilt_datasets``. ``metrics``: every task's keys, the arch tier's metrics and the paper's own
    (``Reproduction.metrics``). ``config_keys``: the top-level keys of a run's config a trend rule's ``config.<path>``
    may start with (``None``: not checked, for a paper whose runner writes its own configs). ``protocols``: the
    registered protocol ids (harness.protocols) a claim's ``protocol`` may be (``None``: not checked)."""

    models: Collection[str] | None
    datasets: Collection[str]
    metrics: Collection[str]
    config_keys: Collection[str] | None = None
    protocols: Collection[str] | None = None


def _unknown(kind: str, name: str, known: Collection[str]) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"unknown {kind} {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


def _check_model(field: str, model: str, models: Collection[str] | None) -> None:
    if models is None or model in models:
        return
    if any(c in model for c in "*?["):
        if not fnmatch.filter(models, model):
            raise ValueError(f"field '{field}': the pattern {model!r} matches no model; known: {', '.join(models)}")
        return
    raise ValueError(f"field '{field}': {_unknown('model', model, models)}; known: {', '.join(sorted(models))}")


def _check_rule_path(field: str, path: str, vocabulary: Vocabulary) -> None:
    head, _, rest = path.partition(".")
    if head == "metrics" and rest not in vocabulary.metrics:
        raise ValueError(f"field '{field}': {_unknown('metric', rest, vocabulary.metrics)}")
    first = rest.split(".")[0]
    keys = vocabulary.config_keys
    if head == "config" and keys is not None and first not in keys:
        close = difflib.get_close_matches(first, list(keys), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f"; its keys: {', '.join(sorted(keys))}"
        raise ValueError(f"field '{field}': {path!r} names no key of a run's config{hint}")


def _check_names(claim: Claim, vocabulary: Vocabulary) -> None:
    """The claim's model, dataset, metric, protocol, baseline and rule paths name something ``vocabulary`` knows."""
    _check_model("model", claim.model, vocabulary.models)
    if claim.dataset not in vocabulary.datasets:
        raise ValueError(f"field 'dataset': {_unknown('dataset', claim.dataset, vocabulary.datasets)}")
    if claim.metric not in vocabulary.metrics:
        raise ValueError(f"field 'metric': {_unknown('metric', claim.metric, vocabulary.metrics)}")
    if claim.protocol is not None and vocabulary.protocols is not None:
        try:
            check_protocol(claim.protocol, vocabulary.protocols)
        except ValueError as exc:
            raise ValueError(f"field 'protocol': {exc}") from None
    if isinstance(claim.baseline, str):
        _check_model("baseline", claim.baseline, vocabulary.models)
    if claim.rule is not None:
        _check_rule_path("rule.x", claim.rule.x, vocabulary)
        _check_rule_path("rule.y", claim.rule.y, vocabulary)
    if claim.counting is not None:
        if claim.counting not in RULES:
            known = ", ".join(sorted(RULES)) or "none is registered yet"
            raise ValueError(f"field 'counting': {_unknown('counting rule', claim.counting, RULES)}; known: {known}")


def _check_baseline(claim: Claim, registered: Mapping[str, Collection[str]]) -> None:
    """A baseline of another paper must name a registered paper and one of its models."""
    if not isinstance(claim.baseline, Baseline):
        return
    paper, model = claim.baseline.paper, claim.baseline.model
    if paper not in registered:
        raise ValueError(f"field 'baseline.paper': unknown paper {paper!r}; registered: {', '.join(registered)}")
    if model not in registered[paper]:
        known = ", ".join(registered[paper]) or "none"
        raise ValueError(f"field 'baseline.model': paper {paper!r} registers no model {model!r}; it has: {known}")


def load_claims(
    path: Path,
    paper: str | None = None,
    registered: Mapping[str, Collection[str]] | None = None,
    vocabulary: Vocabulary | None = None,
) -> list[Claim]:
    """Load and validate one claims file; ``paper`` (if given) must be every claim's paper id; ``registered`` (paper
    id -> its model ids, if given) is what a baseline of another paper may name; ``vocabulary`` (if given) is what
    the claims' model, dataset, metric, protocol, baseline and rule paths may name."""
    data, lines = _read_yaml(path)
    defaults = data.get("defaults") or {}
    claims: list[Claim] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(data["claims"]):
        if not isinstance(entry, dict):
            raise HarnessError(f"{path}{lines.of(index, None)}: claim entry {index} is not a mapping")
        name = f"claim {entry['id']!r} (entry {index})" if isinstance(entry.get("id"), str) else f"claim entry {index}"
        try:
            claim = Claim.model_validate({**defaults, **entry})
        except ValidationError as exc:
            message = _describe(exc.errors()[0])
            raise HarnessError(f"{path}{lines.of(index, _field_of(message))}: {name}: {message}") from exc
        try:
            if registered is not None:
                _check_baseline(claim, registered)
            if vocabulary is not None:
                _check_names(claim, vocabulary)
        except ValueError as exc:
            raise HarnessError(f"{path}{lines.of(index, _field_of(str(exc)))}: {name}: {exc}") from exc
        if paper is not None and claim.paper != paper:
            raise HarnessError(
                f"{path}{lines.of(index, 'paper')}: {name}: field 'paper': {claim.paper!r} is not this reproduction's "
                f"id {paper!r}"
            )
        if claim.id in seen:
            first = seen[claim.id]
            raise HarnessError(
                f"{path}{lines.of(index, 'id')}: {name}: duplicate claim id {claim.id!r} (first at entry {first})"
            )
        seen[claim.id] = index
        claims.append(claim)
    return claims


def vocabulary(repro: Any) -> Vocabulary:
    """What ``repro``'s claims may name, from the registry and the paper's configs (see :class:`Vocabulary`)."""
    from harness import registry  # on use: the leaderboard reads records without the registry

    tasks = registry.tasks().values()
    datasets = {t.id for t in tasks} | {s.dataset for r in registry.reproductions().values() for s in r.models}
    datasets |= _evaluated_datasets(repro) | set(repro.unbuilt_datasets)
    metrics = {key.lower() for t in tasks for key in t.keys} | set(ARCH_METRICS) | set(repro.metrics)
    models = None if repro.runner else {*repro.model_ids(), *repro.unbuilt_models}
    return Vocabulary(models, datasets, metrics, None if repro.runner else CONFIG_KEYS, registry.protocols())


def _evaluated_datasets(repro: Any) -> set[str]:
    """The datasets the paper's tier configs evaluate, their ``_base_`` files merged (read loosely: a broken config
    is ``harness run``'s error)."""
    found: set[str] = set()
    for path in sorted((repro.root / "configs").glob("*.yaml")):
        try:
            config = configfile.read(path).tree  # with its bases: a config may inherit its evaluate list
        except HarnessError:
            continue
        entries = config.get("evaluate")
        found |= {e["dataset"] for e in entries or [] if isinstance(e, dict) and isinstance(e.get("dataset"), str)}
    return found


def _paper_claims(repro: Any, registered: Mapping[str, Collection[str]]) -> list[Claim]:
    if not repro.claims_path.exists():
        return []
    return load_claims(repro.claims_path, paper=repro.id, registered=registered, vocabulary=vocabulary(repro))


def registered_claims(paper: str | None = None) -> list[Claim]:
    """Claims of every registered reproduction (or of one paper), in file order. A broken claims file is an error
    when its paper is asked for; among all papers' it is reported on stderr and its claims are left out, so one
    broken plugin does not stop listing, ingesting or running every other paper."""
    from harness import registry  # on use: the leaderboard reads records without the registry

    registered = {repro.id: repro.model_ids() for repro in registry.reproductions().values()}
    if paper:
        return _paper_claims(registry.reproduction(paper), registered)
    found: list[Claim] = []
    for repro in registry.reproductions().values():
        try:
            found.extend(_paper_claims(repro, registered))
        except HarnessError as exc:
            print(f"harness: warning: {exc}; its claims are left out", file=sys.stderr)
    return found
