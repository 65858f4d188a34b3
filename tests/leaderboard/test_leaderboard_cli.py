"""``harness leaderboard``: serves the app headless on the given port, and the CLI still starts on the standard
library alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.leaderboard.conftest import free_port, wait_healthy


def test_harness_leaderboard_serves_headless(tmp_path: Path) -> None:
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "harness"), "leaderboard", "--port", str(port), "--db", "none.duckdb"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "DISPLAY": "", "BROWSER": "false"}, start_new_session=True,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        wait_healthy(url, server)
        with urllib.request.urlopen(url + "/", timeout=10) as page:
            assert page.status == 200 and b"<noscript>" in page.read()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        output = server.communicate(timeout=30)[0]
    assert f"leaderboard: http://127.0.0.1:{port}/ over none.duckdb" in output
    assert "Collecting usage statistics" not in output  # telemetry off, and no browser was opened


def test_the_cli_imports_only_the_standard_library() -> None:
    heavy = ("streamlit", "duckdb", "torch", "pandas", "yaml", "pydantic")
    code = f"import sys, harness.cli; print(sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
