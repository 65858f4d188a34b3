"""harness.profile counts on the meta device what it counts on the CPU: every registered model's parameters and
multiply-adds both ways (slow: the CPU side builds and runs every model at the paper's input size)."""

from __future__ import annotations

import pytest

from harness import registry
from harness.profile import profile_model


@pytest.mark.slow
@pytest.mark.parametrize("model", sorted(registry.models()))
def test_meta_and_cpu_profiles_agree(model: str) -> None:
    spec = registry.models()[model][1]
    assert profile_model(spec, "meta") == profile_model(spec, "cpu")
