"""Whether a claim can be judged by a run of this repository (docs/verdicts.md, "Which results count"), for the
papers' claims tests.

A claim is judged only by records of the same model, dataset, split and config values. An arch claim matches the
records the arch tier writes (the model's ``ModelSpec.dataset``, split ``none``); any other claim matches runs of a
tier config that may judge its kind, evaluates its dataset and split, and sets every key its ``conditions`` name
to the claim's value once the model's ``overrides`` are applied, as the run's record holds it (a misspelt key, or a
value no config sets, would leave the claim ``not-run`` for ever); or a cell of a committed sweep file
(``configs/sweeps/*.yaml``, harness.sweeps) whose resolved config does all that. A delta claim's baseline must be
producible the same way, by its own paper (another paper's, where the claim names one).
"""

from __future__ import annotations

import copy
import fnmatch
import functools
from pathlib import Path
from typing import Any

from harness import configfile, dotted, registry
from harness.claims import Claim
from harness.runner import apply_overrides
from harness.sweeps import Cell, expand, load, sweep_names
from harness.tiers import JUDGING_TIERS


def _sets(config: dict[str, Any], model: str, conditions: dict[str, Any]) -> bool:
    """Whether a run of ``model`` with this config records every condition's value (the model's ``overrides``
    applied, as :func:`harness.runner.resolve_config` applies them)."""
    resolved = copy.deepcopy(config)
    apply_overrides(resolved, model)
    return _holds(resolved, conditions)


def _holds(resolved: dict[str, Any], conditions: dict[str, Any]) -> bool:
    """Whether a resolved config (as a run's record keeps it) has every condition's value."""
    return all(dotted.get(resolved, key) == value for key, value in conditions.items())


def _configs(repro: registry.Reproduction) -> list[dict[str, Any]]:
    return _parsed_configs(repro.root / "configs")


@functools.cache
def _parsed_configs(folder: Path) -> list[dict[str, Any]]:
    """Each tier config of a folder, parsed once per test session (a paper with hundreds of claims reads them
    for every claim)."""
    return [configfile.read(path).tree for path in sorted(folder.glob("*.yaml"))]  # _base_ files merged


@functools.cache
def _sweep_cells(paper: str) -> list[Cell]:
    """Every cell of the paper's committed sweeps, resolved once per test session (their arguments are checked by
    tests/harness/test_sweeps.py)."""
    repro = registry.reproduction(paper)
    return [cell for name in sweep_names(repro) for cell in expand(load(repro, name), check=False)]


def _judges(claim: Claim, config: dict[str, Any]) -> bool:
    """Whether a run of ``config`` (a tier config, or a sweep cell's resolved config) evaluates what ``claim`` is
    judged on, at a tier that may judge it."""
    return (
        config["tier"] in JUDGING_TIERS[claim.kind]
        and {"dataset": claim.dataset, "split": claim.split} in config.get("evaluate", [])
        and (claim.protocol is None or config.get("protocol") == claim.protocol)
    )


def _runs_write(claim: Claim, paper: str, model: str, conditions: dict[str, Any]) -> bool:
    """Whether ``paper`` registers ``model`` (a trend claim's glob: some model it matches) and has a tier config
    whose records could judge ``claim``."""
    repro = registry.reproduction(paper)
    matches = fnmatch.filter(repro.model_ids(), model) if claim.kind == "trend" else [model]
    if not set(matches) & set(repro.model_ids()):
        return False
    if claim.kind == "arch":
        return (claim.dataset, claim.split) == (repro.model(model).dataset, "none")
    if any(
        _judges(claim, config) and any(_sets(config, match, conditions) for match in matches)
        for config in _configs(repro)
    ):
        return True
    return any(
        cell.model in matches and _judges(claim, cell.resolved) and _holds(cell.resolved, conditions)
        for cell in _sweep_cells(paper)
    )


def producible(claim: Claim) -> bool:
    """Whether some run of this repository (any registered model, any tier config) writes a record the claim
    can be judged by (and, for a delta claim, one of its baseline)."""
    ours = _runs_write(claim, claim.paper, claim.model, claim.conditions)
    if claim.baseline is None or not ours:
        return ours
    return _runs_write(claim, claim.baseline_paper, claim.baseline_model, claim.baseline_conditions)
