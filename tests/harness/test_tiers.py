"""The one table of tier facts (harness/tiers.py) and what is derived from it, as DESIGN.md and docs/verdicts.md
state them; records, the CLI and the registry take their tiers from it."""

from __future__ import annotations

import pydantic
import pytest

from harness import tiers
from harness.cli import build_parser
from tests.conftest import make_record


def test_the_derived_tables_are_the_documented_ones() -> None:
    assert tiers.TIERS == ("arch", "smoke", "budget", "full", "weights")
    assert tiers.TIER_ORDER == ("full", "weights", "budget", "smoke", "arch")
    assert tiers.JUDGING_TIERS == {
        "arch": ("arch",), "scalar": ("full", "weights"), "delta": ("full", "weights", "budget"),
        "trend": ("full", "weights", "budget"),
    }  # fmt: skip
    assert tiers.FIRST_TIER == {"arch": "arch", "scalar": "full", "delta": "budget", "trend": "budget"}
    assert tiers.DETERMINISTIC_TIERS == ("arch", "weights") and tiers.DATA_TIERS == ("full", "weights")
    assert tiers.CPU_TIERS == ("arch", "smoke", "budget")
    assert not tiers.BY_NAME["smoke"].judges  # a smoke run never judges a claim


def test_records_and_the_cli_accept_exactly_the_tiers_of_the_table() -> None:
    for name in tiers.TIERS:
        assert make_record(tier=name).tier == name
    with pytest.raises(pydantic.ValidationError):
        make_record(tier="huge")
    run = next(a for a in build_parser()._subparsers._group_actions[0].choices["run"]._actions if a.dest == "tier")
    assert tuple(run.choices) == tiers.TIERS
