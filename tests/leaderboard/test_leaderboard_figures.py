"""A paper's own figures (``Reproduction.figures``) on its leaderboard page: the SGD width study's two figures,
filled from the records of its real (seconds-long) smoke sweep."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import registry, store
from leaderboard import queries


@pytest.fixture(scope="module")
def sgd_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("sgd")
    repro = registry.reproduction("sgd-width")
    runs, db = work / "runs", work / "harness.duckdb"
    registry.load_object(repro.runner)(
        repro, repro.config_path("smoke"), tier="smoke", model=None, seed=None, data_root=None, runs_dir=runs
    )
    store.ingest(runs_dir=runs, db_path=db)
    return db


def test_sgd_width_figures_are_drawn_from_its_records(sgd_db: Path) -> None:
    figures = queries.paper_figures(sgd_db, "sgd-width")
    assert [title for title, _ in figures] == [
        "Test accuracy against the normalized noise scale, one curve per width",
        "Optimal normalized noise scale against width",
    ]
    curves, optimum = (spec["data"]["values"] for _, spec in figures)
    assert curves and {"normalized_noise_scale", "accuracy", "width"} <= set(curves[0])
    assert optimum and {"width", "best_noise_scale"} <= set(optimum[0])


def test_papers_without_figures_or_records_draw_none(sgd_db: Path) -> None:
    assert queries.paper_figures(sgd_db, "efficientnet") == []  # registered, no figures function
    assert queries.paper_figures(sgd_db, "not-a-paper") == []
