"""The leaderboard in a real browser: Debian's chromium, headless, driven by playwright, against ``harness
leaderboard`` serving a real database. Waits for the tables and charts to render, checks what they show, and saves
the screenshot the README shows (docs/leaderboard.png)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import store
from harness.records import write_record
from tests.conftest import REPO, make_record
from tests.leaderboard.conftest import MACHINES, PUBLISHED, free_port, wait_healthy

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip
SCREENSHOT = REPO / "docs" / "leaderboard.png"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (setup.sh)"),
]


@contextlib.contextmanager
def serve(db: Path) -> Iterator[str]:
    """``harness leaderboard`` on a free localhost port over ``db``; yields its URL."""
    port = free_port()
    harness = Path(sys.executable).parent / "harness"
    server = subprocess.Popen(
        [str(harness), "leaderboard", "--port", str(port), "--db", str(db)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "DISPLAY": ""},
        start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, server)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


@pytest.fixture
def served(fresh_db: Path) -> Iterator[str]:
    with serve(fresh_db) as url:
        yield url


def grid_text(page, index: int = 0) -> str:
    """The text of a rendered st.dataframe (glide-data-grid draws on a canvas and mirrors its cells in an
    accessible table)."""
    grid = page.locator('[data-testid="stDataFrame"]').nth(index)
    grid.locator("canvas").first.wait_for(timeout=30_000)  # drawn
    grid.locator('[role="gridcell"]').first.wait_for(state="attached", timeout=30_000)
    return " | ".join(grid.locator('[role="gridcell"]').all_text_contents())


def chart_marks(page, index: int, field: str) -> list[str]:
    """The accessible labels of a chart's marks that carry ``field`` (Vega's SVG renderer labels each mark with its
    tooltip fields), once the chart has drawn them."""
    marks = page.locator('[data-testid="stVegaLiteChart"]').nth(index).locator(f'svg [aria-label*="{field}: "]')
    marks.first.wait_for(state="attached", timeout=30_000)
    return [marks.nth(i).get_attribute("aria-label") for i in range(marks.count())]


def test_the_leaderboard_in_chromium(served: str, fresh_db: Path, toy: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1700})

        page.goto(served + "/", wait_until="networkidle")
        page.get_by_role("heading", name="Does each paper's number hold?").wait_for(timeout=60_000)
        # the middle grid: the budget claims, here the registered papers' claims their plans mark untestable
        accuracy, budget, architecture = grid_text(page, 0), grid_text(page, 1), grid_text(page, 2)
        assert "paper?paper=elmo" in budget and "paper?paper=toy-paper" not in budget, budget
        title, link = "A Toy Paper About Digits", "paper?paper=toy-paper | https://arxiv.org/abs/2001.00001v2"
        assert f"toy-paper | {title} | {link} | 3 | 2 | 0 | 1 | 0 | full | 7" in accuracy, accuracy
        # claims, reproduced, not reproduced, deviation, derived, not run (the grid mirrors the columns in view)
        assert f"toy-paper | {title} | {link} | 2 | 1 | 1 | 0 | 0 | 0" in architecture, architecture
        bars = chart_marks(page, 0, "paper")
        assert any("paper: toy-paper" in b and "status: reproduced" in b and "count: 2" in b for b in bars), bars
        page.goto(served + "/?status=not-reproduced&paper=toy-paper", wait_until="networkidle")
        page.get_by_text("No claims about the paper's numbers match the filters.").wait_for(timeout=60_000)
        assert "toy-paper | A Toy Paper About Digits" in grid_text(page, 0)  # the architecture table, now the only

        page.goto(served + "/paper?paper=toy-paper", wait_until="networkidle")
        page.get_by_role("heading", name="A Toy Paper About Digits").wait_for(timeout=60_000)
        claims = grid_text(page)
        for row in (
            "mlp-macs | not-reproduced |  | arch | macs_m | 0.002 | 0.001184",
            "mlp-accuracy | reproduced | fragile | full",  # three seeds: one fewer would not decide
        ):
            assert row in claims, claims
        assert "None" not in claims.split(" | ") and "nan" not in claims.split(" | ")  # empty cells are blank
        trend = claims[claims.index("accuracy-grows-with-width") :]
        assert trend.split(" | ")[5:9] == ["", "1", "", ""], trend  # a trend: rho, no reported value, Δ or tolerance
        points = chart_marks(page, 0, "claim_id")
        assert len(points) == 4 and any("claim_id: mlp-macs" in p and "status: not-reproduced" in p for p in points)
        assert any("claim_id: mlp-macs" in p and "z: \u22128.16" in p for p in points), points  # Δ in tolerances
        curve = chart_marks(page, 1, "run_id")
        assert sorted(label.rsplit("; y: ", 1)[1] for label in curve) == ["94.8", "95", "95.2", "96.5", "96.8", "97"]
        page.get_by_text("Trend: test accuracy grows with the hidden width").wait_for()
        page.get_by_text("for seed in 0 1 2; do .venv/bin/harness run toy-paper").first.wait_for()

        page.goto(served + "/paper?paper=efficientnet", wait_until="networkidle")  # claims, no runs
        page.get_by_text("No runs of efficientnet yet").wait_for(timeout=60_000)
        page.get_by_text(".venv/bin/dvc repro efficientnet").wait_for()
        assert page.get_by_text("A claim's evidence").count() == 0
        assert page.locator('[data-testid="stVegaLiteChart"]').count() == 0

        # A live ingest swaps the database file under the running app; the next view shows the new run.
        write_record(make_record(tier="budget", seed=9, metrics={"accuracy": 91.0}), toy / "results" / "runs")
        store.ingest(runs_dir=toy / "results" / "runs", db_path=fresh_db)
        page.goto(served + "/runs?paper=toy-paper&tier=budget", wait_until="networkidle")
        page.get_by_role("heading", name="Runs").wait_for(timeout=60_000)
        assert "toy-paper.toy-mlp.budget.digits.test.s9" in grid_text(page)

        page.goto(served + "/paper?paper=toy-paper", wait_until="networkidle")
        grid_text(page)
        chart_marks(page, 1, "run_id")
        time.sleep(1)  # let the last paint settle
        page.screenshot(path=str(SCREENSHOT))
        browser.close()
    assert SCREENSHOT.stat().st_size > 20_000


def test_the_evidence_in_chromium(evidence_db: Path) -> None:
    """Verdicts of store version 6: the budget direction counted apart on the overview; on the paper page its own
    table (interval, p, Holm p, tags), and a claim's evidence: its tags, premises, plan, machines, per-example
    evidence, what a null excludes, and a delta claim's two arms' learning curves."""
    from playwright.sync_api import sync_playwright

    with serve(evidence_db) as served, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 2600, "height": 1700})  # the grids mirror the columns in view

        page.goto(served + "/", wait_until="networkidle")
        page.get_by_role("heading", name="Direction at budget scale").wait_for(timeout=60_000)
        link = "A Toy Paper About Digits | paper?paper=toy-paper | https://arxiv.org/abs/2001.00001v2"
        paper, budget, architecture = (grid_text(page, i) for i in range(3))
        assert f"toy-paper | {link} | 1 | 1 | 0 | 0 | 0 | full | 3" in paper, paper
        assert f"toy-paper | {link} | 5 | 1 | 0 | 2 | 0 | 1 | 0 | 1 | budget | 9" in budget, budget
        assert f"toy-paper | {link} | 2 | 0 | 0 | 1 | 1 | 0 | 1" in architecture, architecture  # deviation, derived
        page.get_by_text("Derived (no evidence)").first.wait_for()

        page.goto(served + "/paper?paper=toy-paper&claim=wide-beats-narrow", wait_until="networkidle")
        page.get_by_role("heading", name="A claim's evidence").wait_for(timeout=60_000)
        numbers, budget = grid_text(page, 0), grid_text(page, 1)
        assert "mlp-params | reproduced | derived | arch" in numbers and "wide-beats-narrow" not in numbers
        row = "wide-beats-narrow | reproduced | holm | budget | accuracy | 1.6 | [0.9, 2.3] | 0.021 | 0.084"
        assert row + " | paired t over 3 seeds" in budget, budget
        assert "bow-beats-mlp | premise-failed | premise-failed, constructed | budget" in budget, budget
        assert "a loss of more than 0.7 points" in budget
        assert f"published · {MACHINES[0]} @ bcb08d8 | ✓ confirmed on {MACHINES[1]} (3 seeds)" in budget, budget
        for text in ("Interval: [0.9, 2.3]", "p = 0.021, Holm p = 0.084", "Plan: ", "Machines: 2",
                     "mcnemar over 297 examples", "Learning curves of both arms", f"Records: {PUBLISHED}",
                     "Confirmed on: ", "Judged apart on other machines"):  # fmt: skip
            page.get_by_text(text).first.wait_for(timeout=30_000)
        assert f"{MACHINES[1]} | reproduced | 3 | 1.4 | [0.6, 2.2] | 0.03 | local" in grid_text(page, 2)
        assert "baseline-learns | baseline accuracy > 50 | pass | 61.3 > 50" in grid_text(page, 3)
        curves = page.locator('[data-testid="stVegaLiteChart"]').count() - 1  # the last chart: both arms
        marks = chart_marks(page, curves, "model")
        assert {m.split("model: ")[1].split(";")[0] for m in marks} == {"toy-mlp", "toy-mlp-wide"}, marks
        runs = {m.split("run_id: ")[1].split(";")[0] for m in marks}
        assert len(runs) == 6 and {m.split("name: ")[1].split(";")[0] for m in marks} == {"train_loss", "val_accuracy"}

        page.goto(served + "/paper?paper=toy-paper&claim=bow-beats-mlp", wait_until="networkidle")
        page.get_by_role("heading", name="A claim's evidence").wait_for(timeout=60_000)
        assert "bow-learns | toy-bow accuracy > 50 | fail | 11.0: chance level" in grid_text(page, 2)
        badge = page.locator('[data-testid="stMarkdownContainer"]').filter(has_text="at tier budget").first
        assert "premise-failed" in badge.inner_text() and "constructed" in badge.inner_text()
        browser.close()
