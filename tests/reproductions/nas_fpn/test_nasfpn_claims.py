"""NAS-FPN's claims against what this repository can produce (``tests.claims_check``; the claims no run here can
judge are listed with their reasons in tests/test_claims_producible.py)."""

from __future__ import annotations

from harness import configfile, registry
from harness.claims import registered_claims
from tests.claims_check import producible


def test_arch_claims_name_the_records_the_arch_tier_writes() -> None:
    arch = [claim for claim in registered_claims("nas-fpn") if claim.kind == "arch"]
    assert {claim.model for claim in arch} == {"nasfpn-r50-7x256-640", "retinanet-r50-fpn-640"}
    assert all(producible(claim) and claim.metric in {"params_m", "macs_m"} for claim in arch)


def test_schedule_conditions_select_the_schedule_the_number_was_trained_with() -> None:
    """Zoo and yaml AP numbers belong to one training length each; the full config's own length is the yaml's."""
    epochs = {c.id: c.conditions.get("trainer.max_epochs") for c in registered_claims("nas-fpn") if c.metric == "ap"}
    full = configfile.read(registry.reproduction("nas-fpn").config_path("full")).tree
    assert epochs["yaml-r50-nasfpn-5x256-640-ap"] == full["trainer"]["max_epochs"]
    assert all(f"-{epochs[key]}ep-" in key for key in epochs if key.startswith("zoo-"))
