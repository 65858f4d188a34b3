"""The leaderboard in a real browser: Debian's chromium, headless, driven by playwright, against ``harness
leaderboard`` serving a real database. Waits for the tables and charts to render, checks what they show, and saves
the screenshot the README shows (docs/leaderboard.png)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import store
from harness.records import write_record
from tests.conftest import REPO, make_record

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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, server: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"the leaderboard exited with {server.returncode}: {server.stdout.read()}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
                if response.read() == b"ok":
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"{url} not healthy after {timeout}s")


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


def test_the_leaderboard_in_chromium(served: str, fresh_db: Path, toy: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(served + "/paper?paper=toy-paper", wait_until="networkidle")
        page.get_by_role("heading", name="toy-paper").wait_for(timeout=60_000)
        text = grid_text(page)
        for expected in ("mlp-accuracy", "accuracy-grows-with-width", "reproduced", "not-reproduced"):
            assert expected in text
        charts = page.locator('[data-testid="stVegaLiteChart"]')
        charts.first.locator("canvas, svg").first.wait_for(timeout=30_000)
        assert charts.count() == 2  # reported against measured; the trend's curve
        assert "Trend: test accuracy grows with the hidden width" in page.inner_text("body")
        page.get_by_text("for seed in 0 1 2; do .venv/bin/harness run toy-paper").first.wait_for()

        page.goto(served + "/", wait_until="networkidle")
        page.get_by_role("heading", name="Does each paper's number hold?").wait_for(timeout=60_000)
        overview = grid_text(page)
        assert re.search(r"toy-paper", overview) and "full" in overview
        page.locator('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg').first.wait_for()

        # A live ingest swaps the database file under the running app; a reload shows the new runs.
        write_record(make_record(tier="budget", seed=9, metrics={"accuracy": 91.0}), toy / "results" / "runs")
        store.ingest(runs_dir=toy / "results" / "runs", db_path=fresh_db)
        page.goto(served + "/runs?paper=toy-paper&tier=budget", wait_until="networkidle")
        page.get_by_role("heading", name="Runs").wait_for(timeout=60_000)
        assert "toy-paper.toy-mlp.budget.digits.test.s9" in grid_text(page)

        page.goto(served + "/paper?paper=toy-paper", wait_until="networkidle")
        grid_text(page)
        page.locator('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg').first.wait_for()
        time.sleep(1)  # let the charts finish their first paint
        SCREENSHOT.parent.mkdir(exist_ok=True)
        page.screenshot(path=str(SCREENSHOT), full_page=True)
        browser.close()
    assert SCREENSHOT.stat().st_size > 20_000
