"""Selfie's claims against what this repository can produce and against each other."""

from __future__ import annotations

import pytest

from harness import configfile, registry
from harness.claims import registered_claims


def test_the_default_full_run_is_the_setting_of_the_imagenet_claims() -> None:
    full = configfile.read(registry.reproduction("selfie").config_path("full")).tree
    imagenet = [claim for claim in registered_claims("selfie") if claim.dataset == "imagenet-1k"]
    assert imagenet
    for claim in imagenet:
        assert claim.conditions == {
            "data.init_args.options.subset_percent": full["data"]["init_args"]["options"]["subset_percent"]
        }


def test_full_tier_deltas_are_the_difference_of_their_scalars() -> None:
    claims = registered_claims("selfie")
    scalars = {
        (c.model, c.dataset, c.split, c.metric, tuple(sorted(c.conditions.items()))): c.value
        for c in claims
        if c.kind == "scalar"
    }
    checked = 0
    for delta in (c for c in claims if c.kind == "delta"):
        key = (delta.dataset, delta.split, delta.metric, tuple(sorted(delta.conditions.items())))
        if (delta.model, *key) in scalars and (delta.baseline, *key) in scalars:
            assert delta.value == pytest.approx(
                scalars[(delta.model, *key)] - scalars[(delta.baseline, *key)], abs=0.05
            )
            checked += 1
    assert checked >= 1
