"""Every committed budget plan (reproductions/<paper>/plan.yaml) loads, names only its paper's claims, fixes recipes
its configs still give, and, with every other budget claim of its paper, leaves none without an entry: a plan that
silently drifts from its configs would judge runs that are not the plan's (docs/verdicts.md, "Budget claims")."""

from __future__ import annotations

import pytest

from harness import registry
from harness.claims import registered_claims
from harness.plans import paper_plan
from harness.verify import planned_recipes

PLANNED = sorted(r.id for r in registry.reproductions().values() if r.plan_path.exists())


def test_the_papers_with_plans_are_those_the_readmes_report() -> None:
    assert PLANNED == [
        "attention-augmented", "condconv", "elmo", "gpt", "selfie", "sgd-width", "specaugment", "uda", "ulmfit",
        "xlnet",
    ]  # fmt: skip
    for repro in registry.reproductions().values():  # the others have no budget tier, so no budget claims
        if repro.id not in PLANNED:
            assert [c.id for c in registered_claims(repro.id) if c.id.startswith("budget-")] == [], repro.id


@pytest.mark.parametrize("paper", PLANNED)
def test_a_committed_plan_covers_its_papers_budget_claims_with_the_recipes_its_configs_give(paper: str) -> None:
    repro = registry.reproduction(paper)
    plan = paper_plan(repro)
    claims = {claim.id: claim for claim in registered_claims(paper)}
    named = [entry.claim for entry in plan.claims]
    assert sorted(set(named) - set(claims)) == [] and len(named) == len(set(named))
    budget = {claim_id for claim_id in claims if claim_id.startswith("budget-")}
    assert sorted(budget - set(named)) == []  # every budget claim is planned or marked untestable
    for entry in plan.claims:
        assert entry.untestable is None or len(entry.untestable) > 80, f"{entry.claim}: say why, with the numbers"
    recipes = planned_recipes(repro, plan, "budget")  # raises if a config no longer gives its planned hash
    assert len(recipes) == len({label for entry in plan.claims for label in entry.recipes})
