"""Budget plans: ``reproductions/<paper>/plan.yaml``, committed before a budget experiment's runs.

A budget claim is judged only under its paper's plan (docs/verdicts.md, "Plans"). The plan fixes, per claim, the
recipe of each arm by its resolved-config hash (:func:`recipe_hash`), the seeds (sized by :func:`seeds_needed` from
a pilot's spread), the analysis, the premise checks the records must pass before the claim is judged, the smallest
effect of interest and the stopping rule. Records off the plan (another recipe, a seed it does not list, a run
started before ``fixed_at``, a run the plan tags ``pilot`` or ``abandoned``) are shown and never judged.
"""

from __future__ import annotations

import copy
import math
import statistics
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.claims import ID_PATTERN, Claim, Number, _describe, _SafeLoader
from harness.errors import HarnessError
from harness.records import RUN_ID_PATTERN, RunRecord, canonical_hash, record_value

POWER = 0.8  # the power a plan's seeds are sized for
# the init_from keys that name a parent's recipe (not the one run: its id, seed and weights differ per seed)
PARENT_RECIPE_KEYS = ("config", "tier", "model", "prefixes", "into")


class Premise(BaseModel):
    """One condition under which a claim is testable, checked from the records before the claim is judged.

    - ``beats``: ``model``'s mean ``metric`` is better than ``reference``'s (a trivial model the harness runs on the
      same data: majority class, unigram LM, a linear model) by ``margin`` (in the metric's unit) or by the ratio
      ``factor`` (e.g. perplexity: reference / model >= factor).
    - ``gap``: in ``model``'s records, the mean of ``high`` minus the mean of ``low`` is at least ``min`` (a
      regulariser's premise: the baseline over-fits, e.g. high = metrics.val_loss, low = metrics.train_loss).
    - ``equal``: ``metric`` (a record path) is the same in every judged record of both arms (e.g. the targets seen).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=ID_PATTERN)
    check: Literal["beats", "gap", "equal"]
    model: str | None = None
    reference: str | None = None
    metric: str | None = None
    higher_is_better: bool | None = None  # default: the claim's
    margin: Number | None = None
    factor: Number | None = Field(default=None, gt=1)
    high: str | None = Field(default=None, pattern=r"^(metrics|config)\..+")
    low: str | None = Field(default=None, pattern=r"^(metrics|config)\..+")
    min: Number | None = None

    @model_validator(mode="after")
    def _check_fields(self) -> Premise:
        needs = {
            "beats": ("model", "reference", "metric"),
            "gap": ("model", "high", "low", "min"),
            "equal": ("metric",),
        }[self.check]
        missing = [name for name in needs if getattr(self, name) is None]
        if missing:
            raise ValueError(f"a '{self.check}' premise needs {', '.join(repr(name) for name in missing)}")
        if self.check == "beats" and (self.margin is None) == (self.factor is None):
            raise ValueError("a 'beats' premise needs exactly one of 'margin' and 'factor'")
        return self


class Pilot(BaseModel):
    """The pilot the seeds were sized from: its runs (kept, tagged ``pilot``) and the between-seed spread."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    std: Number = Field(gt=0)  # of the per-seed difference (paired) or of one arm's values (independent)
    runs: list[str] = Field(default_factory=list)
    note: str | None = None


class PlannedClaim(BaseModel):
    """One budget claim's design."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    claim: str = Field(pattern=ID_PATTERN)
    # the planned recipes, each by the recipe_hash of its resolved config: a label (an arm, a sweep's cell) -> hash
    recipes: dict[str, str] = Field(default_factory=dict)
    seeds: list[int] = Field(default_factory=list)
    analysis: Literal["paired", "independent"] | None = None  # default: the claim's
    smallest_effect: Number | None = Field(default=None, gt=0)  # in the claim's unit
    alpha: Number = Field(default=0.05, gt=0, lt=1)
    stopping: str | None = None
    pilot: Pilot | None = None
    premises: list[Premise] = Field(default_factory=list)
    untestable: str | None = None  # why no affordable design can test the claim (with the numbers)

    @model_validator(mode="after")
    def _check_design(self) -> PlannedClaim:
        if self.untestable is not None:
            return self
        for name in ("recipes", "seeds", "smallest_effect", "stopping"):
            if not getattr(self, name):
                raise ValueError(f"field '{name}': a planned claim needs it (or 'untestable' with the reason)")
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError("field 'seeds': a seed is listed twice")
        if self.pilot is not None:
            needed = seeds_needed(self.smallest_effect, self.pilot.std, self.alpha, self.analysis == "paired")
            if len(self.seeds) < needed:
                raise ValueError(
                    f"field 'seeds': {len(self.seeds)} seed(s) cannot see an effect of {self.smallest_effect:g} at "
                    f"{POWER:.0%} power with the pilot's spread {self.pilot.std:g}: {needed} are needed (plan them, "
                    "or mark the claim 'untestable' with that number)"
                )
        return self


class Tag(BaseModel):
    """A kept run that is not evidence: a ``pilot`` (sized the plan) or ``abandoned`` (a recipe given up, and why)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run: str = Field(pattern=RUN_ID_PATTERN)
    tag: Literal["pilot", "abandoned"]
    why: str = Field(min_length=1)


class Plan(BaseModel):
    """A paper's budget plan. ``fixed_at``: when it was fixed (committed); a run started before it is not judged."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    paper: str = Field(pattern=ID_PATTERN)
    fixed_at: datetime
    claims: list[PlannedClaim]
    tags: list[Tag] = Field(default_factory=list)
    path: str | None = None  # where it was read from (set by load_plan)

    def entry(self, claim_id: str) -> PlannedClaim | None:
        return next((entry for entry in self.claims if entry.claim == claim_id), None)

    def tag_of(self, run_id: str) -> Tag | None:
        return next((tag for tag in self.tags if tag.run == run_id), None)


def load_plan(path: Path, paper: str | None = None) -> Plan:
    """Read and validate one plan file; an error names the file, the line and the field."""
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.load(text, Loader=_SafeLoader)  # noqa: S506 (a safe loader)
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: cannot read the plan: {exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise HarnessError(f"{path}{f':{mark.line + 1}' if mark else ''}: invalid YAML in the plan") from exc
    if not isinstance(data, dict):
        raise HarnessError(f"{path}: a plan is a mapping with 'paper', 'fixed_at' and 'claims'")
    try:
        plan = Plan.model_validate({**data, "path": str(path)})
    except ValidationError as exc:
        error = exc.errors()[0]
        raise HarnessError(f"{path}{_line_of(text, error['loc'])}: {_describe(error)}") from None
    if paper is not None and plan.paper != paper:
        raise HarnessError(f"{path}: field 'paper': {plan.paper!r} is not this reproduction's id {paper!r}")
    seen = [entry.claim for entry in plan.claims]
    if len(set(seen)) != len(seen):
        raise HarnessError(f"{path}: a claim is planned twice: {sorted({c for c in seen if seen.count(c) > 1})}")
    return plan


def _line_of(text: str, loc: tuple[Any, ...]) -> str:
    """``":<line>"`` of the planned claim an error is in (``claims.<i>...``), else nothing."""
    if len(loc) < 2 or loc[0] != "claims" or not isinstance(loc[1], int):
        return ""
    root = yaml.compose(text, Loader=_SafeLoader)
    for key, value in root.value if isinstance(root, yaml.MappingNode) else []:
        if key.value == "claims" and isinstance(value, yaml.SequenceNode) and loc[1] < len(value.value):
            return f":{value.value[loc[1]].start_mark.line + 1}"
    return ""


def paper_plan(repro: Any) -> Plan | None:
    """The paper's committed plan, or None when it has none."""
    return load_plan(repro.plan_path, repro.id) if repro.plan_path.exists() else None


def recipe_hash(config: dict[str, Any] | None) -> str | None:
    """What makes two runs the same recipe: the resolved config without the seed, where the data lies and how it was
    prepared, and with a parent (``init_from``) named by its recipe rather than its run. 16 hex digits."""
    if not config:
        return None
    key = copy.deepcopy(config)
    key.pop("seed", None)
    key.pop("prepare", None)
    data = key.get("data")
    if isinstance(data, dict) and isinstance(data.get("init_args"), dict):
        data["init_args"].pop("data_root", None)
    if "init_from" in key:
        parents = key["init_from"] if isinstance(key["init_from"], list) else [key["init_from"]]
        key["init_from"] = [_parent_recipe(p) for p in parents if isinstance(p, dict)]
    return canonical_hash(key)[:16]


def _parent_recipe(parent: dict[str, Any]) -> dict[str, Any]:
    """A parent as part of its child's recipe: its config and what is loaded, and whether every seed starts from one
    upstream run (a pinned seed) or each from its own (the run's seed): a different design, so a different recipe."""
    recipe = {k: parent[k] for k in PARENT_RECIPE_KEYS if k in parent}
    if "seed" not in parent:
        recipe["seed"] = "run"
    return recipe


def seeds_needed(effect: float, std: float, alpha: float = 0.05, paired: bool = False, power: float = POWER) -> int:
    """Seeds per side for a two-sided t-test at ``alpha`` to detect ``effect`` with ``power``, given the between-seed
    spread ``std`` (of the per-seed differences when ``paired``, else of each arm). The exact noncentral-t power,
    searched upwards from 2."""
    from scipy import stats

    for n in range(2, 10_000):
        if paired:
            dof, noncentrality = n - 1, effect / (std / math.sqrt(n))
        else:
            dof, noncentrality = 2 * n - 2, effect / (std * math.sqrt(2 / n))
        critical = stats.t.ppf(1 - alpha / 2, dof)
        achieved = stats.nct.sf(critical, dof, noncentrality) + stats.nct.cdf(-critical, dof, noncentrality)
        if achieved >= power:
            return n
    return 10_000


def on_plan(plan: Plan, entry: PlannedClaim, record: RunRecord) -> str | None:
    """None when ``record`` is evidence under ``entry``; else why not, in words."""
    tag = plan.tag_of(record.run_id)
    if tag is not None:
        return f"tagged {tag.tag}"
    if record.started_at < plan.fixed_at:
        return "started before the plan was fixed"
    if record.seed not in entry.seeds:
        return f"seed {record.seed} is not planned"
    recipe = recipe_hash(record.config)
    if recipe is None:
        return "the record has no config to check its recipe by"
    if recipe not in entry.recipes.values():
        return f"recipe {recipe} is not one the plan fixed"
    return None


def check_premise(premise: Premise, claim: Claim, records: Sequence[RunRecord], judged: list[RunRecord]) -> dict:
    """One premise checked from the records: ``{id, check, passed, detail}``; only records of the judged records'
    tier count (a smoke run of the same model is no evidence about the budget regime)."""
    result = {"id": premise.id, "check": premise.check}
    tiers = {r.tier for r in judged}
    records = [r for r in records if not tiers or r.tier in tiers]
    if premise.check == "equal":
        values = {record_value(r, premise.metric) for r in judged}
        passed = len(values) == 1 and None not in values
        return {**result, "passed": passed, "detail": f"{premise.metric} takes {sorted(map(str, values))}"}
    own = [r for r in judged if r.model == premise.model] or [
        r for r in records if r.model == premise.model and r.status == "ok"
    ]
    if premise.check == "gap":
        highs = [v for r in own if isinstance(v := record_value(r, premise.high), int | float)]
        lows = [v for r in own if isinstance(v := record_value(r, premise.low), int | float)]
        if not highs or not lows:
            return {
                **result,
                "passed": False,
                "detail": f"{premise.model} records lack {premise.high} or {premise.low}",
            }
        gap = statistics.fmean(highs) - statistics.fmean(lows)
        detail = f"{premise.model}: {premise.high} - {premise.low} = {gap:.4g} (needs >= {premise.min:g})"
        return {**result, "passed": gap >= premise.min, "detail": detail}
    return {**result, **_beats(premise, claim, records, own)}


def _beats(premise: Premise, claim: Claim, records: Sequence[RunRecord], own: list[RunRecord]) -> dict[str, Any]:
    metric = premise.metric
    reference = [r for r in records if r.model == premise.reference and r.status == "ok" and metric in r.metrics]
    own = [r for r in own if metric in r.metrics]
    if not reference or not own:
        missing = premise.reference if not reference else premise.model
        return {"passed": False, "detail": f"no records of {missing!r} with {metric!r} to compare"}
    mine = statistics.fmean(r.metrics[metric] for r in own)
    theirs = statistics.fmean(r.metrics[metric] for r in reference)
    higher = claim.higher_is_better if premise.higher_is_better is None else premise.higher_is_better
    if premise.factor is not None:
        ratio = (mine / theirs if higher else theirs / mine) if mine and theirs else 0.0
        detail = (
            f"{premise.model} {mine:.4g} vs {premise.reference} {theirs:.4g}: {ratio:.3g}x (needs {premise.factor:g}x)"
        )
        return {"passed": ratio >= premise.factor, "detail": detail}
    better = mine - theirs if higher else theirs - mine
    detail = (
        f"{premise.model} {mine:.4g} vs {premise.reference} {theirs:.4g}: by {better:.4g} (needs {premise.margin:g})"
    )
    return {"passed": better >= premise.margin, "detail": detail}
