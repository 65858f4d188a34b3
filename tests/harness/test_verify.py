"""``harness verify``: the plan's runs re-made here, compared with a published set made elsewhere."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from harness import registry
from harness.errors import HarnessError
from harness.plans import recipe_hash
from harness.published import publish
from harness.records import read_record, write_record
from harness.runner import run
from harness.verify import verify
from tests.conftest import TOY_SRC

OTHER = {"cpu_model": "Some Other CPU", "isa": "avx2"}


@pytest.fixture
def paper(toy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The toy paper from a copy of its source (its plan and published set are written there), with a plan for
    seeds 0 and 1 of configs/budget.yaml and a published set of those runs made on another machine."""
    source = tmp_path / "toy_src"
    shutil.copytree(TOY_SRC, source, ignore=shutil.ignore_patterns("__pycache__"))
    for name in [m for m in sys.modules if m == "toy_paper" or m.startswith("toy_paper.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(source))
    registry.reproductions.cache_clear()
    repro = registry.reproduction("toy-paper")
    assert repro.root == source / "toy_paper"
    elsewhere = tmp_path / "elsewhere" / "runs"
    for seed in (0, 1):
        (path,) = run(repro, "budget", seed=seed, runs_dir=tmp_path / "scratch" / "runs")
        record = read_record(path)
        hardware = {**record.provenance.hardware, **OTHER}
        moved = record.model_copy(
            update={
                "run_id": record.run_id + "-other",
                "provenance": record.provenance.model_copy(update={"hardware": hardware}),
            }
        )
        write_record(moved, elsewhere)
    recipe = recipe_hash(record.config)
    (repro.root / "plan.yaml").write_text(
        "paper: toy-paper\nfixed_at: 2025-01-01T00:00:00Z\nclaims:\n  - claim: c\n"
        f"    recipes: {{configs/budget.yaml:toy-mlp: {recipe}}}\n    seeds: [0, 1]\n    smallest_effect: 1.0\n"
        "    stopping: fixed n\n"
    )
    publish(repro, sorted(p.stem for p in elsewhere.glob("*.json")), "budget", runs_dir=elsewhere)
    return repro


def test_verify_makes_the_planned_runs_here_and_compares_them_with_the_published(paper, toy: Path) -> None:
    runs = toy / "results" / "runs"
    assert verify(paper, dry_run=True, runs_dir=runs)["to_run"] == [
        "configs/budget.yaml:toy-mlp seed 0", "configs/budget.yaml:toy-mlp seed 1",
    ]  # fmt: skip
    doc = verify(paper, runs_dir=runs)
    assert doc["runs_made"] == 2 and doc["seeds"] == [0, 1]
    (recipe,) = doc["recipes"]
    assert recipe["recipe"] == "configs/budget.yaml:toy-mlp"
    assert recipe["published"]["n"] == 2 and recipe["here"]["n"] == 2 and len(recipe["per_seed"]) == 2
    assert recipe["largest_difference"] == max(abs(d["difference"]) for d in recipe["per_seed"])
    written = json.loads(Path(doc["written"]).read_text())
    assert written["machine"] == doc["machine"] and written["recipes"] == json.loads(json.dumps(doc["recipes"]))
    # the published records were installed beside the new ones, and a second verify makes nothing again
    assert len(list(runs.glob("*-other.json"))) == 2
    assert verify(paper, runs_dir=runs)["runs_made"] == 0


def test_verify_refuses_a_recipe_changed_after_the_plan(paper, toy: Path) -> None:
    config = paper.root / "configs" / "budget.yaml"
    config.write_text(config.read_text().replace("lr: 0.5", "lr: 0.25"))
    with pytest.raises(HarnessError, match=r"configs/budget.yaml:toy-mlp'.*changed after the plan"):
        verify(paper, runs_dir=toy / "results" / "runs")
    with pytest.raises(HarnessError, match="none of them is planned"):
        config.write_text(config.read_text().replace("lr: 0.25", "lr: 0.5"))
        verify(paper, seeds=[7], runs_dir=toy / "results" / "runs")
