"""The leaderboard in a real browser: Debian's chromium, headless, driven by playwright, against ``harness
leaderboard`` serving a real database. Waits for the tables and charts to render, checks what they show, and saves
the screenshot the README shows (docs/leaderboard.png)."""

from __future__ import annotations

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
from tests.leaderboard.conftest import free_port, wait_healthy

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


@pytest.fixture
def served(fresh_db: Path) -> Iterator[str]:
    """``harness leaderboard`` on a free localhost port over the test database; yields its URL."""
    port = free_port()
    harness = Path(sys.executable).parent / "harness"
    server = subprocess.Popen(
        [str(harness), "leaderboard", "--port", str(port), "--db", str(fresh_db)],
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
        accuracy, architecture = grid_text(page, 0), grid_text(page, 1)
        title, link = "A Toy Paper About Digits", "paper?paper=toy-paper | https://arxiv.org/abs/2001.00001v2"
        assert f"toy-paper | {title} | {link} | 3 | 2 | 0 | 1 | 0 | full | 7" in accuracy, accuracy
        assert f"toy-paper | {title} | {link} | 2 | 1 | 1 | 0 | 0 | 0 | 1" in architecture, architecture
        bars = chart_marks(page, 0, "paper")
        assert any("paper: toy-paper" in b and "status: reproduced" in b and "count: 2" in b for b in bars), bars
        page.goto(served + "/?status=not-reproduced&paper=toy-paper", wait_until="networkidle")
        page.get_by_text("No claims about the paper's numbers match the filters.").wait_for(timeout=60_000)
        assert "toy-paper | A Toy Paper About Digits" in grid_text(page, 0)  # the architecture table, now the only

        page.goto(served + "/paper?paper=toy-paper", wait_until="networkidle")
        page.get_by_role("heading", name="A Toy Paper About Digits").wait_for(timeout=60_000)
        claims = grid_text(page)
        for row in ("mlp-macs | not-reproduced |  | arch | macs_m | 0.002 | 0.001184", "mlp-accuracy | reproduced |  | full"):
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
