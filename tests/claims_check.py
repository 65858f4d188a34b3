"""Whether a claim can be judged by a run of this repository (docs/verdicts.md, "Which results count"), for the
papers' claims tests.

A claim is judged only by records of the same model, dataset, split and config values. An arch claim matches the
records the arch tier writes (the model's ``ModelSpec.dataset``, split ``none``); any other claim matches runs of a
tier config that may judge its kind, evaluates its dataset and split, and has every key its ``conditions`` name
(a misspelt key would leave the claim ``not-run`` for ever). A delta claim's baseline must be producible the same
way, by its own paper (another paper's, where the claim names one).
"""

from __future__ import annotations

import fnmatch
import functools
from pathlib import Path
from typing import Any

import yaml

from harness import registry
from harness.claims import Claim
from harness.tiers import JUDGING_TIERS


def _has_key(config: dict[str, Any], dotted: str) -> bool:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _configs(repro: registry.Reproduction) -> list[dict[str, Any]]:
    return _parsed_configs(repro.root / "configs")


@functools.cache
def _parsed_configs(folder: Path) -> list[dict[str, Any]]:
    """Each tier config of a folder, parsed once per test session (a paper with hundreds of claims reads them
    for every claim)."""
    return [yaml.safe_load(path.read_text()) for path in sorted(folder.glob("*.yaml"))]


def _runs_write(claim: Claim, paper: str, model: str, conditions: dict[str, Any]) -> bool:
    """Whether ``paper`` registers ``model`` (a trend claim's glob: some model it matches) and has a tier config
    whose records could judge ``claim``."""
    repro = registry.reproduction(paper)
    matches = fnmatch.filter(repro.model_ids(), model) if claim.kind == "trend" else [model]
    if not set(matches) & set(repro.model_ids()):
        return False
    if claim.kind == "arch":
        return (claim.dataset, claim.split) == (repro.model(model).dataset, "none")
    return any(
        config["tier"] in JUDGING_TIERS[claim.kind]
        and {"dataset": claim.dataset, "split": claim.split} in config.get("evaluate", [])
        and (claim.protocol is None or config.get("protocol") == claim.protocol)
        and all(_has_key(config, key) for key in conditions)
        for config in _configs(repro)
    )


def producible(claim: Claim) -> bool:
    """Whether some run of this repository (any registered model, any tier config) writes a record the claim
    can be judged by (and, for a delta claim, one of its baseline)."""
    ours = _runs_write(claim, claim.paper, claim.model, claim.conditions)
    if claim.baseline is None or not ours:
        return ours
    return _runs_write(claim, claim.baseline_paper, claim.baseline_model, claim.baseline_conditions)
