"""docs/plugins.md documents the claims format whole: its field table names every field a claim may have, and the
trend rule's and the baseline's fields, so a field added to harness.claims without a line there fails here."""

from __future__ import annotations

import re

from harness.claims import Baseline, Claim, TrendRule
from tests.conftest import REPO


def test_the_claims_field_table_names_every_field() -> None:
    text = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    table = text[text.index("Every field of an entry") :]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    documented = {re.match(r"\| `(\w+)`", row).group(1) for row in rows}
    assert documented == set(Claim.model_fields)
    rule = next(row for row in rows if row.startswith("| `rule`"))
    for name in set(TrendRule.model_fields) - {"type"}:
        assert f"{name}:" in rule, f"docs/plugins.md: the rule's field {name!r} is not documented"
    baseline = next(row for row in rows if row.startswith("| `baseline`"))
    assert all(f"{name}:" in baseline for name in Baseline.model_fields)
