"""The leaderboard reads tables only: in a fresh interpreter where every reproduction and the toy plugin are
registered and importable, its query functions and all three pages run without importing any of them (nor the
registry that would load them). Ingest judged the claims and drew the figures; the app only reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO, TOY_ENTRY_POINTS, TOY_SRC, write_dist_info

SCRIPT = """
import importlib.metadata, importlib.util, json, os, sys
from pathlib import Path

db, app = Path(sys.argv[1]), sys.argv[2]
registered = {ep.name for ep in importlib.metadata.entry_points(group="harness.reproductions")}
assert {"toy-paper", "sgd-width"} <= registered, registered  # plugin code is there to be imported, were it asked for
assert importlib.util.find_spec("toy_paper") is not None

from leaderboard import queries

assert queries.database_state(db) == "ok"
queries.counts(db), queries.filter_options(db), queries.overview(db), queries.runs(db), queries.model_index(db)
claims = queries.paper_claims(db, "toy-paper")
queries.reported_vs_measured(claims), queries.paper_source(db, "toy-paper")
queries.trend_points(db, "toy-paper", "accuracy-grows-with-width"), queries.claim_run_ids(db, "toy-paper", "mlp-macs")
queries.titles(db), queries.runs_count(db), queries.paper_run_count(db, "toy-paper"), queries.run_artifacts(db, "x")
queries.runs(db, claim=("toy-paper", "mlp-macs"), limit=5), queries.overview(db, "architecture")
queries.paper_figures(db, "toy-paper"), queries.paper_figures(db, "sgd-width")

from streamlit.testing.v1 import AppTest

os.environ["HARNESS_DB"] = str(db)
for page in (None, "paper", "runs"):
    at = AppTest.from_file(app, default_timeout=60)
    at.query_params["paper"] = "toy-paper"
    if page:
        at.switch_page(f"views/{page}.py")
    at.run()
    assert not at.exception, at.exception
    assert at.dataframe, page
plugin = ("reproductions", "toy_paper", "toy_other")
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in plugin or m == "harness.registry")))
"""


def test_the_leaderboard_imports_no_reproduction_or_plugin_code(leaderboard_db: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_dist_info(site, "toy-plugin", TOY_ENTRY_POINTS)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(site), str(TOY_SRC)]))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(leaderboard_db), str(REPO / "leaderboard" / "app.py")],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
