"""Every page of the Streamlit app through Streamlit's AppTest, over a real database (and over none)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from harness import store
from leaderboard import queries, ui
from tests.conftest import REPO, make_record
from tests.leaderboard.conftest import GPT_PDF, MACHINES, PLAN, PUBLISHED, build, toy_records

APP = REPO / "leaderboard" / "app.py"
TOY = "toy-paper"


def app_over(db: Path, monkeypatch: pytest.MonkeyPatch, page: str | None = None, **params: str) -> AppTest:
    monkeypatch.setenv("HARNESS_DB", str(db))
    at = AppTest.from_file(str(APP), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    if page:
        at.switch_page(f"views/{page}.py")
    at.run()
    assert not at.exception, at.exception
    return at


def charts(at: AppTest) -> list[tuple[dict, pd.DataFrame]]:
    """Each chart's Vega-Lite spec and its data (sent beside the spec as Arrow)."""
    found = []
    for chart in at.get("vega_lite_chart"):
        (dataset,) = chart.proto.datasets
        found.append((json.loads(chart.proto.spec), pa.ipc.open_stream(dataset.data.data).read_pandas()))
    return found


def metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def headlines(at: AppTest) -> list[dict[str, str]]:
    """The overview's three headlines (the paper's numbers, the direction at budget scale, architecture claims):
    label -> value; each starts with "Papers"."""
    found: list[dict[str, str]] = []
    for m in at.metric:
        if m.label == "Papers":
            found.append({})
        found[-1][m.label] = m.value
    return found


def test_overview_page(leaderboard_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = app_over(leaderboard_db, monkeypatch)
    assert at.title[0].value == "Does each paper's number hold?"
    assert [h.value for h in at.header] == ["The paper's numbers", "Direction at budget scale", "Architecture claims"]
    frames = [frame.value.set_index("paper") for frame in at.dataframe]
    # the middle frame: the registered papers whose plans mark budget claims untestable, shown with no runs
    accuracy, budget, architecture = frames[0].loc[TOY], frames[1], frames[-1].loc[TOY]
    assert TOY not in budget.index and len(frames) == 3
    assert budget.loc["elmo", "untestable"] == 3 and budget.loc["sgd-width", "untestable"] == 7
    statuses = ["claims", "reproduced", "not-reproduced", "inconclusive", "not-run"]
    assert accuracy[statuses].tolist() == [3, 2, 0, 1, 0] and architecture[statuses].tolist() == [2, 1, 1, 0, 0]
    assert accuracy["title"] == "A Toy Paper About Digits" and accuracy["claims_page"] == "paper?paper=toy-paper"
    assert (accuracy["best_tier"], accuracy["runs"], architecture["runs"]) == ("full", 7, 1)
    assert [frame.proto.placeholder for frame in at.dataframe] == ["", "", ""]  # an empty cell is blank, not "None"
    assert len(charts(at)) == 3
    at.multiselect(key="filter-status").select("not-reproduced").run()
    assert "No claims about the paper's numbers match the filters." in [i.value for i in at.info]
    filtered = at.dataframe[0].value
    assert list(filtered["paper"]) == [TOY] and filtered["claims"].tolist() == [1]


def test_the_overview_headline_follows_the_filters(leaderboard_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = app_over(leaderboard_db, monkeypatch, paper=TOY)
    accuracy, _, architecture = headlines(at)
    assert (accuracy["Papers"], accuracy["Claims"], accuracy["Successful runs"], accuracy["Reproduced"]) == (
        "1", "3", "7", "2",
    )  # fmt: skip
    assert (architecture["Claims"], architecture["Not reproduced"], architecture["Successful runs"]) == ("2", "1", "1")
    at.multiselect(key="filter-status").select("not-reproduced").run()
    accuracy, _, architecture = headlines(at)
    assert (accuracy["Papers"], accuracy["Claims"], accuracy["Successful runs"]) == ("0", "0", "0")
    assert (architecture["Papers"], architecture["Claims"], architecture["Not reproduced"]) == ("1", "1", "1")


def test_the_best_tier_never_shows_smoke(toy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = build(toy, [r for r in toy_records() if r.tier in ("smoke", "arch")])
    at = app_over(db, monkeypatch)
    accuracy = at.dataframe[0].value.set_index("paper").loc[TOY]
    assert accuracy["runs"] == 1 and accuracy["best_tier"] is None  # shown blank (placeholder "")


def test_overview_filters_come_from_the_url(leaderboard_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = app_over(leaderboard_db, monkeypatch, tier="arch")
    assert at.multiselect(key="filter-tier").value == ["arch"]
    assert "No claims about the paper's numbers match the filters." in [i.value for i in at.info]
    assert at.dataframe[0].value.set_index("paper").loc[TOY, "claims"] == 2  # the architecture table


def test_paper_page(leaderboard_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = app_over(leaderboard_db, monkeypatch, "paper", paper=TOY)
    assert at.title[0].value == "A Toy Paper About Digits"  # headed by the title, the id beneath
    assert at.markdown[0].value == "`toy-paper` · [arXiv:2001.00001v2](https://arxiv.org/abs/2001.00001v2)"
    assert at.dataframe[0].proto.placeholder == ""
    claims = at.dataframe[0].value.set_index("claim_id")
    assert claims.loc["mlp-macs", ["status", "tier", "reported", "measured"]].tolist() == [
        "not-reproduced", "arch", 0.002, pytest.approx(0.001184)
    ]  # fmt: skip
    assert claims.loc["mlp-accuracy", "seeds"] == "0, 1, 2"
    assert claims.loc["mlp-macs", "command"] == ".venv/bin/harness run toy-paper --tier arch --model toy-mlp"
    assert claims.loc["mlp-accuracy", "runs"] == "runs?paper=toy-paper&claim=mlp-accuracy"
    (scatter, points), (trend, curve) = charts(at)
    x = scatter["layer"][2]["encoding"]["x"]  # the claims: delta over tolerance, on a symmetric-log axis
    assert (x["field"], x["scale"]["type"]) == ("z", "symlog")
    claim = points[points["layer"] == "claim"].set_index("claim_id")
    assert sorted(claim.index) == ["mlp-accuracy", "mlp-macs", "mlp-params", "wide-beats-narrow"]
    assert claim.loc["mlp-macs", "z"] == pytest.approx((0.001184 - 0.002) / 0.0001)
    assert trend["layer"][0]["encoding"]["x"]["title"] == "config.system.init_args.hidden"
    assert list(zip(curve["x"], curve["y"], strict=True)) == [
        (16, 94.8), (20, 95.0), (24, 95.2), (64, 96.5), (80, 96.8), (96, 97.0)
    ]  # fmt: skip
    assert "Trend: test accuracy grows with the hidden width" in [s.value for s in at.subheader]
    at.selectbox(key="claim-detail").select("mlp-macs").run()
    assert at.code[0].value == ".venv/bin/harness run toy-paper --tier arch --model toy-mlp"
    assert at.dataframe[1].value["run_id"].tolist() == ["toy-paper.toy-mlp.arch.digits.none.s0"]


def test_a_claim_of_many_runs_is_looked_up_when_chosen(leaderboard_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queries, "MAX_JOINED_RUNS", 2)  # as if mlp-accuracy's 3 runs were a million
    at = app_over(leaderboard_db, monkeypatch, "paper", paper=TOY)
    claims = at.dataframe[0].value.set_index("claim_id")
    assert claims.loc["mlp-accuracy", ["seeds", "n_runs"]].tolist() == ["", 3]  # blank cell, the count kept
    assert pd.isna(claims.loc["mlp-accuracy", "command"])
    assert any("more than 2 runs" in c.value for c in at.caption)
    at.selectbox(key="claim-detail").select("mlp-accuracy").run()
    assert at.code[0].value.startswith("for seed in 0 1 2; do .venv/bin/harness run toy-paper --tier full")
    assert len(at.dataframe[1].value) == 3


def test_paper_page_filters(leaderboard_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = app_over(leaderboard_db, monkeypatch, "paper", paper=TOY, status="reproduced,inconclusive")
    assert sorted(at.dataframe[0].value["status"]) == ["inconclusive", "reproduced", "reproduced", "reproduced"]
    at.multiselect(key="filter-status").set_value(["not-run"]).run()
    assert "No claim of this paper matches the filters." in [i.value for i in at.info]


def test_runs_page(leaderboard_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = app_over(leaderboard_db, monkeypatch, "runs", paper=TOY)
    table = at.dataframe[0].value
    assert len(table) == 8 and {"git_sha", "config_hash", "data_hash", "seed", "hardware", "versions"} <= set(table)
    assert [b.proto.label for b in at.get("download_button")] == [
        "Download CSV", "Download Parquet", "Export model-index.yml"
    ]  # fmt: skip
    at.multiselect(key="filter-tier").select("arch").run()
    assert at.dataframe[0].value["tier"].tolist() == ["arch"]


def test_runs_of_one_claim(leaderboard_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = app_over(leaderboard_db, monkeypatch, "runs", paper=TOY, claim="mlp-accuracy")
    assert sorted(at.dataframe[0].value["seed"]) == [0, 1, 2]
    assert "rests on" in at.info[0].value


@pytest.mark.parametrize("page", [None, "paper", "runs"])
def test_without_a_database_every_page_says_how_to_make_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, page: str | None
) -> None:
    at = app_over(tmp_path / "none.duckdb", monkeypatch, page)
    assert "There is no database at" in at.info[0].value
    assert at.code[0].value == ".venv/bin/dvc repro" and not at.dataframe


def test_an_empty_database_says_how_to_fill_it(toy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = toy / "results" / "harness.duckdb"
    store.ingest(runs_dir=toy / "results" / "runs", db_path=db)
    at = app_over(db, monkeypatch)
    assert "holds no runs yet" in at.info[0].value and ".venv/bin/harness ingest" in at.code[1].value


def test_a_database_of_an_older_harness_says_run_ingest(fresh_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with duckdb.connect(str(fresh_db)) as con:  # as written before ingest stored trend points and figures
        con.execute("DROP TABLE trend_points; DROP TABLE figures; UPDATE meta SET store_version = 1")
    at = app_over(fresh_db, monkeypatch, "paper", paper=TOY)
    assert "run `harness ingest`" in at.info[0].value
    assert [c.value for c in at.code] == [".venv/bin/harness ingest"] and not at.dataframe


def test_a_live_ingest_shows_on_the_next_run(fresh_db: Path, toy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app holds no connection: an ingest swaps the file while the app runs, and the next rerun reads it."""
    at = app_over(fresh_db, monkeypatch, "paper", paper=TOY)
    assert at.dataframe[0].value.set_index("claim_id").loc["mlp-accuracy", "n"] == 3
    build(toy, toy_records(offset=10))  # three more seeds of each model
    at.run()
    assert at.dataframe[0].value.set_index("claim_id").loc["mlp-accuracy", "n"] == 6
    at.switch_page("views/overview.py").run()
    assert headlines(at)[0]["Successful runs"] == "14"  # smoke and full runs; the arch run is the same one


def test_a_paper_named_by_its_pdf_and_a_baseline_of_another_paper(
    two_papers_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = app_over(two_papers_db, monkeypatch, "paper", paper="gpt")
    assert f"`gpt` · [{GPT_PDF}]({GPT_PDF}) (sha256 `{'0' * 64}`)" in [m.value for m in at.markdown]
    at = app_over(two_papers_db, monkeypatch, "paper", paper="uda")
    row = at.dataframe[0].value.set_index("claim_id").loc["beats-bert"]
    assert (row["status"], row["tier"]) == ("off-plan", "budget")  # no plan committed: shown, never judged
    assert "harness run xlnet --tier budget --model bert-base" in at.code[-1].value


def test_a_paper_without_runs_says_what_to_run(two_papers_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No empty chart, trend or evidence boxes: the page names the commands that make the paper's runs."""
    at = app_over(two_papers_db, monkeypatch, "paper", paper="gpt")
    assert at.dataframe[0].value["status"].tolist() == ["not-run"]  # its claims are still listed
    assert "No runs of `gpt` yet" in at.info[0].value
    assert at.code[0].value == ".venv/bin/dvc repro gpt"
    assert at.code[1].value.splitlines() == [
        "for seed in 0 1; do .venv/bin/harness run gpt --tier full --model gpt --data-root /path/to/glue-rte "
        "--seed $seed; done",
        ".venv/bin/harness ingest",
    ]
    assert [h.value for h in at.subheader] == ["The paper's numbers"]  # its claims' table, nothing else
    assert not charts(at) and len(at.selectbox) == 1  # only the paper chooser


@pytest.mark.parametrize("seek", [False, True], ids=["offset", "seek"])
def test_the_runs_page_shows_a_page_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seek: bool) -> None:
    """250 runs: the page asks the database for 100 and says how many there are; any page can be jumped to, and
    shows the rows LIMIT/OFFSET gives, also when sought by its sort key (as deep pages of a million runs are)."""
    if seek:
        monkeypatch.setattr(queries, "SEEK_FROM", 0)
        monkeypatch.setattr(queries, "SORT_AT_MOST", 0)
    records = [
        make_record(seed=seed, metrics={"accuracy": 90.0 + seed % 7}, finished_at=f"2026-01-0{1 + seed % 3}T00:00:00Z")
        for seed in range(250)
    ]  # three finishing times: ties across every page boundary
    db = tmp_path / "harness.duckdb"
    store.build_database(records, store.Tables(), db)
    at = app_over(db, monkeypatch, "runs")
    assert len(at.dataframe[0].value) == ui.PAGE_SIZE == 100
    assert at.caption[0].value.startswith("runs 1–100 of 250.")
    for page in (3, 2):
        at.number_input(key="runs-page").set_value(page).run()
        shown = at.dataframe[0].value
        expected = queries.runs(db, limit=100, offset=(page - 1) * 100)
        assert shown["run_id"].tolist() == expected["run_id"].tolist()
    at.number_input(key="runs-page").set_value(3).run()
    last = at.dataframe[0].value
    assert len(last) == 50 and at.caption[0].value.startswith("runs 201–250 of 250.")
    assert last["metrics"].notna().all()  # each run of the page has its metrics joined


def test_the_runs_page_draws_a_runs_training_curves(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CSV log a run's record names (``artifacts.training_log``, as Lightning's CSVLogger writes it) is drawn
    and offered for download; a record naming no log says so."""
    log = "results/lightning/toy-paper/full/toy-paper.toy-mlp.full.digits.test.s0/metrics.csv"
    (tmp_path / log).parent.mkdir(parents=True)
    (tmp_path / log).write_text(
        "epoch,step,train_loss,val_accuracy\n0,9,2.1,\n0,9,,61.5\n1,19,1.2,\n1,19,,80.25\n", encoding="utf-8"
    )
    trained = make_record(seed=0, artifacts={"training_log": log}, finished_at="2026-01-02T00:00:00Z")
    db = tmp_path / "results" / "harness.duckdb"
    store.build_database([trained, make_record(tier="arch", split="none", seed=0)], store.Tables(), db)
    at = app_over(db, monkeypatch, "runs")
    assert at.selectbox(key="run-detail").value == trained.run_id
    ((spec, curves),) = charts(at)
    assert spec["facet"]["field"] == "name"
    by_name = curves.groupby("name")["value"].apply(list).to_dict()
    assert by_name == {"train_loss": [2.1, 1.2], "val_accuracy": [61.5, 80.25]}
    assert "Download metrics.csv" in [b.proto.label for b in at.get("download_button")]
    at.selectbox(key="run-detail").select("toy-paper.toy-mlp.arch.digits.none.s0").run()
    assert not charts(at) and any("names no training log" in c.value for c in at.caption)


def test_the_overview_shows_the_budget_direction_apart(evidence_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = app_over(evidence_db, monkeypatch)
    paper, budget, architecture = headlines(at)
    assert (paper["Claims"], paper["Reproduced"]) == ("1", "1")
    assert (budget["Claims"], budget["Reproduced"], budget["Inconclusive"], budget["Premise failed"]) == (
        "5", "1", "2", "1",
    )  # fmt: skip
    assert (budget["Off plan"], budget["Successful runs"]) == ("1", "9")
    assert (architecture["Reproduced"], architecture["Deviation"], architecture["Derived (no evidence)"]) == (
        "0", "1", "1",
    )  # fmt: skip


def test_the_paper_page_shows_each_claims_evidence(evidence_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = app_over(evidence_db, monkeypatch, "paper", paper=TOY, claim="wide-beats-narrow")
    assert [h.value for h in at.subheader] == [
        "The paper's numbers", "Direction at budget scale", "Reported against measured", "A claim's evidence",
    ]  # fmt: skip
    numbers, budget = (frame.value.set_index("claim_id") for frame in at.dataframe[:2])
    assert sorted(numbers.index) == ["mlp-accuracy", "mlp-macs", "mlp-params"]
    assert (
        numbers.loc["mlp-params", "tags_text"] == "derived"
        and numbers.loc["mlp-accuracy", "interval"] == "[94.5, 95.5]"
    )
    wide = budget.loc["wide-beats-narrow"]
    assert (wide["interval"], wide["p_value"], wide["p_holm"], wide["machines"]) == ("[0.9, 2.3]", 0.021, 0.084, 2)
    assert (wide["evidence_text"], wide["others_text"]) == (
        f"published · {MACHINES[0]} @ bcb08d8", f"✓ confirmed on {MACHINES[1]} (3 seeds)",
    )  # fmt: skip
    assert numbers.loc["mlp-accuracy", "others_text"] == f"re-run on {MACHINES[1]}: inconclusive (2 seeds)"
    assert pd.isna(budget.loc["bow-old-judge", "evidence_text"])  # no evidence: a blank cell
    assert budget.loc["bow-beats-mlp", "tags_text"] == "premise-failed, constructed"
    assert budget.loc["wide-beats-bow", "excluded"] == "a loss of more than 0.7 points"
    assert at.selectbox(key="claim-detail").value == "wide-beats-narrow"  # ?claim= chose it
    text = "\n".join(m.value for m in at.markdown)
    assert "**reproduced** at tier `budget` :orange-badge[holm]" in text
    for line in ("Interval: [0.9, 2.3]", "p = 0.021, Holm p = 0.084", "Analysis: paired t over 3 seeds",
                 f"Plan: `{PLAN}`", "Machines: 2: `x86_64-avx2`, `x86_64-avx512`",
                 "mcnemar over 297 examples: estimate +1.8, interval [0.4, 3.1], p = 0.011",
                 f"Machine: `{MACHINES[0]}`", "Commits: `bcb08d89be91` (clean working tree)", f"Records: {PUBLISHED}",
                 f"Confirmed on: `{MACHINES[1]}`"):  # fmt: skip
        assert line in text, text
    others = at.dataframe[2].value  # after the two tables of claims
    assert others[["machine", "status", "n", "interval", "origins"]].values.tolist() == [
        [MACHINES[1], "reproduced", 3, "[0.6, 2.2]", "local"]
    ]
    premises = at.dataframe[3].value
    assert premises[["id", "result", "detail"]].values.tolist() == [["baseline-learns", "pass", "61.3 > 50"]]
    spec, curves = charts(at)[-1]  # both arms' learning curves
    assert spec["spec"]["encoding"]["color"]["field"] == "model" and spec["facet"]["field"] == "name"
    assert sorted(curves.groupby("model")["run_id"].nunique().items()) == [("toy-mlp", 3), ("toy-mlp-wide", 3)]
    at.selectbox(key="claim-detail").select("bow-beats-mlp").run()
    assert ":violet-badge[premise-failed] :gray-badge[constructed]" in at.markdown[1].value
    premises = at.dataframe[2].value  # after the two tables of claims
    assert premises[["id", "result"]].values.tolist() == [["baseline-learns", "pass"], ["bow-learns", "fail"]]
    at.selectbox(key="claim-detail").select("wide-beats-bow").run()
    text = "\n".join(m.value for m in at.markdown)
    assert "A null excludes: a loss of more than 0.7 points" in text and "Seeds needed: 12 per side" in text
    at.selectbox(key="claim-detail").select("bow-old-judge").run()  # the nulls of an older judge
    assert not at.exception and "Judges the direction at budget scale (the sign only)" in at.markdown[3].value
    assert not any("What it rests on" in m.value for m in at.markdown)
    at.selectbox(key="claim-detail").select("mlp-accuracy").run()
    text = "\n".join(m.value for m in at.markdown)
    assert "Commits: `3f2c1ab9d0e4`, `bcb08d89be91` (made from a dirty working tree)" in text, text
    assert "Records: local (no published record set)" in text and "Confirmed on" not in text
    assert at.dataframe[2].value["status"].tolist() == ["inconclusive"]
