"""Paper claims: the numbers and statements a paper reports, loaded from ``reproductions/<paper>/claims.yaml``.

A claims file is a mapping with optional ``defaults`` (merged into every entry; an entry's own keys win) and
a ``claims`` list. Each entry is validated against :class:`Claim`; an error names the file, the line, the
entry (id or index) and the field.

Where the paper comes from is one stable identifier, in one of three forms (docs/verdicts.md, "Claims"):
``arxiv`` (an arXiv id with its version), ``url`` with ``accessed`` (the date it was read there), or the PDF's
``sha256`` with the ``url`` it was published at.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.errors import HarnessError
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
    alpha: float = Field(default=0.05, gt=0, lt=1)
    min: float | None = None
    max: float | None = None

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
    value: float | None = None
    unit: str
    higher_is_better: bool
    tolerance: float | None = Field(default=None, ge=0)
    statement: str | None = None
    rule: TrendRule | None = None
    baseline: str | Baseline | None = None
    conditions: dict[str, Condition] = Field(default_factory=dict)
    quote: str | None = None
    protocol: str | None = None
    notes: str | None = None

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


def _entry_lines(path: Path, text: str) -> list[int]:
    """1-based line of each entry of the ``claims`` list, for error messages."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    if not isinstance(root, yaml.MappingNode):
        return []
    for key, value in root.value:
        if key.value == "claims" and isinstance(value, yaml.SequenceNode):
            return [item.start_mark.line + 1 for item in value.value]
    return []


def _read_yaml(path: Path) -> tuple[dict[str, Any], list[int]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read claims file: {exc.strerror}") from exc
    try:
        data = yaml.safe_load(text)
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
    return data, _entry_lines(path, text)


def _describe(error: dict[str, Any], prefix: str = "") -> str:
    message = error["msg"].removeprefix("Value error, ")
    if not error["loc"] and message.startswith("field '"):
        return message  # a check across fields that names the field itself
    field = ".".join(str(part) for part in error["loc"]) or "(entry)"
    return f"field '{prefix}{field}': {message}"


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
    path: Path, paper: str | None = None, registered: Mapping[str, Collection[str]] | None = None
) -> list[Claim]:
    """Load and validate one claims file; ``paper`` (if given) must be every claim's paper id; ``registered`` (paper
    id -> its model ids, if given) is what a baseline of another paper may name."""
    data, lines = _read_yaml(path)
    defaults = data.get("defaults") or {}
    claims: list[Claim] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(data["claims"]):
        line = f":{lines[index]}" if index < len(lines) else ""
        if not isinstance(entry, dict):
            raise HarnessError(f"{path}{line}: claim entry {index} is not a mapping")
        name = f"claim {entry['id']!r} (entry {index})" if isinstance(entry.get("id"), str) else f"claim entry {index}"
        try:
            claim = Claim.model_validate({**defaults, **entry})
        except ValidationError as exc:
            raise HarnessError(f"{path}{line}: {name}: {_describe(exc.errors()[0])}") from exc
        try:
            if registered is not None:
                _check_baseline(claim, registered)
        except ValueError as exc:
            raise HarnessError(f"{path}{line}: {name}: {exc}") from exc
        if paper is not None and claim.paper != paper:
            raise HarnessError(
                f"{path}{line}: {name}: field 'paper': {claim.paper!r} is not this reproduction's id {paper!r}"
            )
        if claim.id in seen:
            raise HarnessError(
                f"{path}{line}: {name}: duplicate claim id {claim.id!r} (first at entry {seen[claim.id]})"
            )
        seen[claim.id] = index
        claims.append(claim)
    return claims


def registered_claims(paper: str | None = None) -> list[Claim]:
    """Claims of every registered reproduction (or of one paper), in file order."""
    from harness import registry

    papers = [registry.reproduction(paper)] if paper else list(registry.reproductions().values())
    registered = {repro.id: repro.model_ids() for repro in registry.reproductions().values()}
    found: list[Claim] = []
    for repro in papers:
        if repro.claims_path.exists():
            found.extend(load_claims(repro.claims_path, paper=repro.id, registered=registered))
    return found
