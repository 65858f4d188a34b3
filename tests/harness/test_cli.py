"""The ``harness`` command as users run it (a subprocess): JSON shapes pinned, errors one line on stderr."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import TOY_SRC, cli_json, harness_cli

REPORT_KEYS = {"paper", "claim_id", "kind", "model", "dataset", "split", "metric", "reported", "tolerance",
               "status", "tier", "mean", "std", "n", "delta", "reason"}  # fmt: skip


def test_run_arch_then_report_json(toy_site: Path, tmp_path: Path) -> None:
    done = harness_cli("run", "toy-paper", "--tier", "arch", cwd=tmp_path, site=toy_site)
    assert done.returncode == 0, done.stderr
    assert "database holds 3 run(s)" in done.stderr  # toy-mlp, toy-mlp-wide, toy-bow
    report = cli_json("report", "--paper", "toy-paper", cwd=tmp_path, site=toy_site)
    assert all(REPORT_KEYS <= set(row) for row in report)  # DESIGN.md's keys; tests/harness/test_report.py: the rest
    by_id = {row["claim_id"]: row for row in report}
    assert by_id["mlp-params"]["status"] == "reproduced" and by_id["mlp-params"]["tier"] == "arch"
    assert by_id["mlp-macs"]["status"] == "not-reproduced"  # 0.001184 M against 0.002 ± 0.0001
    assert by_id["mlp-accuracy"]["status"] == "not-run"
    human = harness_cli("report", "--paper", "toy-paper", cwd=tmp_path, site=toy_site).stdout
    summary = "5 claim(s). Paper's numbers (5): 1 reproduced, 1 not-reproduced, 0 inconclusive, 3 not-run. "
    assert "mlp-params" in human and summary + "Direction at budget scale (0): none." in human


def test_json_shapes(toy_site: Path, tmp_path: Path) -> None:
    profile = cli_json("profile", "toy-mlp", cwd=tmp_path, site=toy_site)
    assert profile == {"model": "toy-mlp", "params": 1210, "macs": 1184, "input_shape": [1, 64]}
    claims = cli_json("claims", "--paper", "toy-paper", cwd=tmp_path, site=toy_site)
    assert claims[0]["id"] == "mlp-params" and {"paper", "arxiv", "source", "kind", "value", "tolerance"} <= set(
        claims[0]
    )
    models = cli_json("models", cwd=tmp_path, site=toy_site)
    assert isinstance(models, list) and {"toy-mlp", "toy-mlp-wide"} <= set(models)
    refs, preds = tmp_path / "refs.csv", tmp_path / "preds.csv"
    refs.write_text("a,1\nb,2\nc,3\nd,4\n")
    preds.write_text("a,1\nb,2\nc,0\nd,4\n")
    score = cli_json(
        "score", "toy-digits", "--references", str(refs), "--predictions", str(preds), cwd=tmp_path, site=toy_site
    )
    assert score == {"accuracy": 75.0, "error": 25.0}


def test_report_without_database_says_so(toy_site: Path, tmp_path: Path) -> None:
    """The report reads the verdicts ingest wrote; with no database it says how to make one (it judges nothing)."""
    done = harness_cli("report", "--json", cwd=tmp_path, site=toy_site)
    assert done.returncode == 2 and done.stdout == ""
    assert "no database yet; create it with `harness ingest`" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", "no-such-paper"), "unknown paper 'no-such-paper'"),
        (("profile", "no-such-model"), "unknown model 'no-such-model'"),
        (("score", "no-such-task", "--references", "a", "--predictions", "b"), "unknown task 'no-such-task'"),
        (
            ("score", "toy-digits", "--references", "missing.csv", "--predictions", "b"),
            "missing.csv: file given to --references",
        ),
        (
            ("score", "toy-digits", "--references", "a", "--predictions", "b", "--na-probs", "c"),
            "does not take '--na-probs'",
        ),
        (("ingest", "nowhere.json"), "nowhere.json: cannot read run record"),
    ],
)
def test_errors_are_one_line_without_traceback(toy_site: Path, tmp_path: Path, args, message: str) -> None:
    done = harness_cli(*args, cwd=tmp_path, site=toy_site)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.startswith("harness: error")]
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in done.stderr


def test_malformed_claims_file_is_named_and_debug_shows_traceback(toy_site: Path, tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(TOY_SRC, src)
    claims = src / "toy_paper" / "claims.yaml"
    claims.write_text(claims.read_text().replace("value: 95.0", "value: lots"))
    done = harness_cli("claims", "--paper", "toy-paper", cwd=tmp_path, site=toy_site, src=src)
    assert done.returncode == 2
    assert f"{claims}:8: claim 'mlp-accuracy' (entry 2): field 'value'" in done.stderr
    debug = harness_cli("claims", "--paper", "toy-paper", "--debug", cwd=tmp_path, site=toy_site, src=src)
    assert "Traceback" in debug.stderr
    # among every paper's claims, the broken file is reported and left out (tests/harness/test_claims_cannot_lie.py)
    done = harness_cli("claims", cwd=tmp_path, site=toy_site, src=src)
    assert done.returncode == 0 and "field 'value'" in done.stderr and "its claims are left out" in done.stderr
