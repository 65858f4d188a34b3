"""NAS-FPN's claims against what this repository can produce (docs/verdicts.md, "Which results count").

A claim is judged only by records of the same model, dataset, split and config values. An arch claim matches the
records the arch tier writes (the model's ``ModelSpec.dataset``, split ``none``); any other claim matches runs of a
tier config that may judge its kind, evaluates its dataset and split, and has every key its ``conditions`` name
(a misspelt key would leave the claim ``not-run`` for ever). Claims that nothing here can produce are listed with
the reason, so a new one of them is a decision, not an accident. ``producible`` is shared with test_selfie_claims.
"""

from __future__ import annotations

from typing import Any

import yaml

from harness import registry
from harness.claims import Claim, registered_claims

JUDGING_TIERS = {"arch": {"arch"}, "scalar": {"full", "weights"}, "delta": {"full", "weights", "budget"}}
JUDGING_TIERS["trend"] = JUDGING_TIERS["delta"]

NOT_PRODUCIBLE = {
    "abstract-amoebanet-ap": "AmoebaNet backbone not built; COCO test-dev is scored by the evaluation server",
    "abstract-mobile-vs-ssdlite-ap": "SSDLite baseline not built; COCO test-dev is scored by the evaluation server",
    "zoo-r50-nasfpn-640-latency-v100": "latency is hardware-bound: its condition 'hardware' is no config key",
}


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


def test_every_claim_is_producible_or_listed_with_its_reason() -> None:
    unproducible = {claim.id for claim in registered_claims("nas-fpn") if not producible(claim)}
    assert unproducible == set(NOT_PRODUCIBLE)


def test_arch_claims_name_the_records_the_arch_tier_writes() -> None:
    arch = [claim for claim in registered_claims("nas-fpn") if claim.kind == "arch"]
    assert {claim.model for claim in arch} == {"nasfpn-r50-7x256-640", "retinanet-r50-fpn-640"}
    assert all(producible(claim) and claim.metric in {"params_m", "macs_m"} for claim in arch)


def test_schedule_conditions_select_the_schedule_the_number_was_trained_with() -> None:
    """Zoo and yaml AP numbers belong to one training length each; the full config's own length is the yaml's."""
    epochs = {c.id: c.conditions.get("trainer.max_epochs") for c in registered_claims("nas-fpn") if c.metric == "ap"}
    full = yaml.safe_load(registry.reproduction("nas-fpn").config_path("full").read_text())
    assert epochs["yaml-r50-nasfpn-5x256-640-ap"] == full["trainer"]["max_epochs"]
    assert all(f"-{epochs[key]}ep-" in key for key in epochs if key.startswith("zoo-"))
