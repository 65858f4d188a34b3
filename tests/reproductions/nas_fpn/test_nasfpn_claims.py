"""NAS-FPN's claims against what this repository can produce (``tests.claims_check``): claims that nothing here
can produce are listed with the reason, so a new one of them is a decision, not an accident."""

from __future__ import annotations

import yaml

from harness import registry
from harness.claims import registered_claims
from tests.claims_check import producible

NOT_PRODUCIBLE = {
    "abstract-amoebanet-ap": "AmoebaNet backbone not built; COCO test-dev is scored by the evaluation server",
    "abstract-mobile-vs-ssdlite-ap": "SSDLite baseline not built; COCO test-dev is scored by the evaluation server",
    "zoo-r50-nasfpn-640-latency-v100": "latency is hardware-bound: its condition 'hardware' is no config key",
}


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
