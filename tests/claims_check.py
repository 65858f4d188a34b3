"""Whether a claim can be judged by a run of this repository (docs/verdicts.md, "Which results count"), for the
papers' claims tests.

A claim is judged only by records of the same model, dataset, split and config values. An arch claim matches the
records the arch tier writes (the model's ``ModelSpec.dataset``, split ``none``); any other claim matches runs of a
tier config that may judge its kind, evaluates its dataset and split, and has every key its ``conditions`` name
(a misspelt key would leave the claim ``not-run`` for ever).
"""

from __future__ import annotations

from typing import Any

import yaml

from harness import registry
from harness.claims import Claim
from harness.verdicts import JUDGING_TIERS


def _has_key(config: dict[str, Any], dotted: str) -> bool:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _configs(repro: registry.Reproduction) -> list[dict[str, Any]]:
    return [yaml.safe_load(path.read_text()) for path in sorted((repro.root / "configs").glob("*.yaml"))]


def producible(claim: Claim) -> bool:
    """Whether some run of this repository (any registered model, any tier config) writes a record the claim
    can be judged by."""
    repro = registry.reproduction(claim.paper)
    models = set(repro.model_ids())
    if claim.model not in models or (claim.baseline is not None and claim.baseline not in models):
        return False
    if claim.kind == "arch":
        return (claim.dataset, claim.split) == (repro.model(claim.model).dataset, "none")
    return any(
        config["tier"] in JUDGING_TIERS[claim.kind]
        and {"dataset": claim.dataset, "split": claim.split} in config.get("evaluate", [])
        and (claim.protocol is None or config.get("protocol") == claim.protocol)
        and all(_has_key(config, key) for key in claim.conditions)
        for config in _configs(repro)
    )
