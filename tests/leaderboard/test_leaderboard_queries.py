"""The leaderboard's pure query functions over a real database built by ``harness.store.ingest``."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest
import yaml

from harness import store
from leaderboard import queries
from tests.conftest import make_record
from tests.leaderboard.conftest import (
    CONFIRMED,
    FAILED,
    GPT_PDF,
    MACHINES,
    MCNEMAR,
    PASSED,
    PLAN,
    PUBLISHED,
    UNDECIDED,
    build,
    toy_records,
)

TOY = "toy-paper"


def toy_row(table):
    rows = table[table["paper"] == TOY]
    assert len(rows) == 1
    return rows.iloc[0].to_dict()


def test_database_state(toy: Path) -> None:
    db = toy / "results" / "harness.duckdb"
    assert queries.database_state(db) == "missing"
    db.parent.mkdir(parents=True)
    db.write_text("not a database")
    assert queries.database_state(db) == "unreadable"
    store.ingest(runs_dir=toy / "results" / "runs", db_path=db)  # claims, no runs
    assert queries.database_state(db) == "empty"
    build(toy, toy_records())
    assert queries.database_state(db) == "ok"
    with duckdb.connect(str(db)) as con:  # as a harness before verdicts, trend points and figures were tables
        con.execute("DROP TABLE figures; UPDATE meta SET store_version = 1")
    assert queries.database_state(db) == "outdated"


def test_overview_separates_accuracy_from_architecture_claims(leaderboard_db: Path) -> None:
    row = toy_row(queries.overview(leaderboard_db))
    assert row == {
        "paper": TOY, "title": "A Toy Paper About Digits", "link": "https://arxiv.org/abs/2001.00001v2", "claims": 3,
        "reproduced": 2, "not-reproduced": 0, "inconclusive": 1, "not-run": 0, "premise-failed": 0, "untestable": 0,
        "off-plan": 0, "deviation": 0, "derived": 0, "best_tier": "full", "runs": 7,
    }  # fmt: skip
    arch = toy_row(queries.overview(leaderboard_db, "architecture"))
    assert {k: arch[k] for k in ("claims", "reproduced", "not-reproduced", "best_tier", "runs")} == {
        "claims": 2, "reproduced": 1, "not-reproduced": 1, "best_tier": "arch", "runs": 1,
    }  # fmt: skip


def test_the_headline_follows_the_filters(leaderboard_db: Path) -> None:
    assert queries.counts(leaderboard_db)["claims"] >= 3
    toy = queries.counts(leaderboard_db, papers=[TOY], statuses=["not-reproduced"])
    assert toy == {"papers": 0, "claims": 0, "runs": 0} | dict.fromkeys(queries.COUNTED, 0)
    arch = queries.counts(leaderboard_db, "architecture", papers=[TOY], statuses=["not-reproduced"])
    assert (arch["papers"], arch["claims"], arch["not-reproduced"], arch["runs"]) == (1, 1, 1, 1)
    assert queries.counts(leaderboard_db, papers=[TOY], tiers=["full"])["runs"] == 6


def test_the_best_tier_is_never_one_that_judges_nothing(toy: Path) -> None:
    """Smoke runs prove a pipeline and judge no claim: a paper with only smoke results has no best tier."""
    db = build(toy, [r for r in toy_records() if r.tier in ("smoke", "arch")])
    row = toy_row(queries.overview(db))
    assert row["runs"] == 1 and row["best_tier"] is None  # the smoke run is counted, never named best
    assert toy_row(queries.overview(db, "architecture"))["best_tier"] == "arch"


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"statuses": ["reproduced"]}, {"claims": 2, "reproduced": 2, "best_tier": "full"}),
        ({"tiers": ["full"]}, {"claims": 3, "best_tier": "full", "runs": 6}),
        ({"tasks": ["digits"], "statuses": ["inconclusive"]}, {"claims": 1, "inconclusive": 1}),
        ({"papers": [TOY]}, {"claims": 3}),
    ],
)
def test_overview_filters(leaderboard_db: Path, filters: dict, expected: dict) -> None:
    row = toy_row(queries.overview(leaderboard_db, **filters))
    assert {key: row[key] for key in expected} == expected


def test_overview_filters_by_tier_per_group(leaderboard_db: Path) -> None:
    row = toy_row(queries.overview(leaderboard_db, "architecture", tiers=["arch"]))
    assert (row["claims"], row["reproduced"], row["not-reproduced"], row["runs"]) == (2, 1, 1, 1)
    assert queries.overview(leaderboard_db, "architecture", tiers=["full"]).empty


def test_overview_filters_that_match_nothing(leaderboard_db: Path) -> None:
    assert queries.overview(leaderboard_db, tasks=["no-such-task"]).empty
    assert TOY not in set(queries.overview(leaderboard_db, papers=["efficientnet"])["paper"])


def test_paper_claims_reported_against_measured(leaderboard_db: Path) -> None:
    claims = queries.paper_claims(leaderboard_db, TOY).set_index("claim_id")
    assert list(claims.index) == sorted(claims.index) and len(claims) == 5
    accuracy = claims.loc["mlp-accuracy"]
    assert (accuracy.status, accuracy.tier, accuracy.n, accuracy.seeds) == ("reproduced", "full", 3, [0, 1, 2])
    assert (accuracy.reported, accuracy.measured, accuracy.tolerance) == (95.0, pytest.approx(95.0), 2.0)
    assert accuracy.n_runs == 3
    # as ingest judged it: the toy records' one machine (no CPU recorded) and commit, none of them published
    assert accuracy.evidence["machine"] == "x86_64 (unrecorded cpu)" and accuracy.evidence["others"] == []
    assert queries.evidence_text(accuracy.evidence) == "local · x86_64 (unrecorded cpu) @ 3f2c1ab"
    assert queries.others_text(accuracy.evidence) is None
    macs = claims.loc["mlp-macs"]
    assert macs.status == "not-reproduced" and macs.delta == pytest.approx(0.001184 - 0.002)
    assert macs.command == ".venv/bin/harness run toy-paper --tier arch --model toy-mlp"
    assert accuracy.command == (
        "for seed in 0 1 2; do .venv/bin/harness run toy-paper --tier full --model toy-mlp "
        "--data-root /path/to/digits --seed $seed; done"
    )
    assert claims.loc["wide-beats-narrow"].run_models == ["toy-mlp", "toy-mlp-wide"]
    only = queries.paper_claims(leaderboard_db, TOY, statuses=["not-reproduced"])
    assert list(only["claim_id"]) == ["mlp-macs"]


def test_reported_vs_measured_puts_every_scale_in_tolerances(leaderboard_db: Path) -> None:
    """A MAC count off by 0.0008 M with a tolerance of 0.0001 M and a top-1 within 2 points share one readable axis:
    each claim's Δ in its own tolerances (raw values would squeeze the bands of small metrics to nothing)."""
    data = queries.reported_vs_measured(queries.paper_claims(leaderboard_db, TOY))
    claims = data[data["layer"] == "claim"].set_index("claim_id")
    assert sorted(claims.index) == ["mlp-accuracy", "mlp-macs", "mlp-params", "wide-beats-narrow"]  # no trend
    assert claims.loc["wide-beats-narrow", "label"] == "wide-beats-narrow (accuracy, delta)"
    assert claims.loc["mlp-macs", "z"] == pytest.approx((0.001184 - 0.002) / 0.0001)  # far outside: not reproduced
    assert abs(claims.loc["mlp-accuracy", "z"]) < 1 and abs(claims.loc["mlp-params", "z"]) < 1  # inside the band
    assert data[data["layer"] == "band"][["lo", "hi"]].values.tolist() == [[-1.0, 1.0]]
    assert queries.reported_vs_measured(queries.paper_claims(leaderboard_db, TOY, statuses=["not-run"])).empty


@pytest.mark.parametrize(
    ("args", "command"),
    [
        (("p", "scalar", None, ["m"], []),
         "for seed in 0 1; do .venv/bin/harness run p --tier full --model m --data-root /path/to/d --seed $seed; done"),
        (("p", "scalar", "smoke", ["m"], [0]),  # smoke never judges a scalar: the command is for the full tier
         "for seed in 0 1; do .venv/bin/harness run p --tier full --model m --data-root /path/to/d --seed $seed; done"),
        (("p", "scalar", "weights", ["m"], []), ".venv/bin/harness run p --tier weights --model m --data-root /path/to/d --seed 0"),
        (("p", "trend", None, ["m*"], []), "for seed in 0 1; do .venv/bin/harness run p --tier budget --seed $seed; done"),
        (("p", "delta", "budget", ["a", "b"], [3]),
         ".venv/bin/harness run p --tier budget --model a --seed 3\n.venv/bin/harness run p --tier budget --model b --seed 3"),
        (("p", "arch", None, ["m"], [0]), ".venv/bin/harness run p --tier arch --model m"),
    ],
)  # fmt: skip
def test_reproduce_command(args: tuple, command: str) -> None:
    assert queries.reproduce_command(*args, dataset="d") == command


def test_many_seeds_are_a_range_in_the_table_and_the_command(toy: Path) -> None:
    """A claim resting on 25 seeds in a row: its seeds are a range, written ``0–24`` and ``$(seq 0 24)``."""
    narrow = [r for r in toy_records() if r.tier == "full" and r.model == "toy-mlp"][0]
    db = build(toy, [narrow.model_copy(update={"seed": s, "run_id": f"{narrow.run_id[:-2]}s{s}"}) for s in range(25)])
    claim = queries.paper_claims(db, TOY).set_index("claim_id").loc["mlp-accuracy"]
    assert (claim.seeds, claim.n_runs) == (range(25), 25)
    assert queries.seeds_text(claim.seeds) == "0–24 (25 seeds)"
    assert claim.command.startswith("for seed in $(seq 0 24); do .venv/bin/harness run toy-paper --tier full")
    assert queries.seeds_text([1, 5]) == "1, 5" and queries.seeds_text(list(range(0, 50, 2))).endswith(", … (25 seeds)")


def test_claims_resting_on_many_runs_are_looked_up_alone(leaderboard_db: Path, monkeypatch) -> None:
    monkeypatch.setattr(queries, "MAX_JOINED_RUNS", 2)
    claims = queries.paper_claims(leaderboard_db, TOY).set_index("claim_id")
    big, small = claims.loc["mlp-accuracy"], claims.loc["mlp-macs"]  # 3 runs, 1 run
    assert (big.n_runs, big.seeds, big.run_models) == (3, None, None) and pd.isna(big.command)
    assert small.seeds == [0] and small.command.startswith(".venv/bin/harness run toy-paper --tier arch")
    alone = queries.paper_claims(leaderboard_db, TOY, claim_id="mlp-accuracy", look_up_all=True)
    assert alone["claim_id"].tolist() == ["mlp-accuracy"] and alone["seeds"][0] == [0, 1, 2]
    assert alone["command"][0].startswith("for seed in 0 1 2; do")


def test_a_trend_of_many_runs_is_drawn_from_its_means(fresh_db: Path, toy: Path) -> None:
    build(toy, toy_records(offset=10))  # a second run at each width
    claim = (TOY, "accuracy-grows-with-width")
    assert len(queries.trend_points(fresh_db, *claim)) == 12
    means = queries.trend_points(fresh_db, *claim, max_points=11)
    assert list(means["x"]) == [16, 20, 24, 64, 80, 96] and set(means["runs"]) == {2}
    assert means["seed"].isna().all() and list(means["y"]) == pytest.approx([94.8, 95.0, 95.2, 96.5, 96.8, 97.0])


def test_the_runs_of_a_claim_are_joined_in_the_database(leaderboard_db: Path) -> None:
    claim = (TOY, "mlp-accuracy")
    runs = queries.runs(leaderboard_db, claim=claim)
    assert sorted(runs["run_id"]) == sorted(queries.claim_run_ids(leaderboard_db, *claim))
    assert queries.runs_count(leaderboard_db, claim=claim) == 3 and queries.runs(leaderboard_db, claim=(TOY, "x")).empty
    page = queries.runs(leaderboard_db, limit=2, offset=1)
    assert page["run_id"].tolist() == queries.runs(leaderboard_db)["run_id"].tolist()[1:3]


def test_runs_with_provenance_and_filters(leaderboard_db: Path) -> None:
    runs = queries.runs(leaderboard_db)
    assert len(runs) == 8
    arch = runs[runs["tier"] == "arch"].iloc[0]
    assert arch.metrics == "macs=1184, macs_m=0.001184, params=1210, params_m=0.00121"
    assert (arch.git_sha, arch.git_dirty, arch.config_hash, arch.data_hash) == (
        "3f2c1ab9d0e4",
        False,
        "9c1e0d2f",
        "toy-digits-v1",
    )
    assert '"cpus":2' in arch.hardware and '"torch":"2.13.0"' in arch.versions
    assert set(queries.runs(leaderboard_db, tiers=["full"], models=["toy-mlp-wide"])["seed"]) == {0, 1, 2}
    ids = queries.claim_run_ids(leaderboard_db, TOY, "mlp-accuracy")
    assert sorted(queries.runs(leaderboard_db, run_ids=ids)["run_id"]) == sorted(ids)
    assert queries.runs(leaderboard_db, run_ids=[]).empty
    assert queries.claim_run_ids(leaderboard_db, TOY, "no-such-claim") == []


def test_trend_points_follow_the_rule(leaderboard_db: Path) -> None:
    points = queries.trend_points(leaderboard_db, TOY, "accuracy-grows-with-width")
    assert list(points["x"]) == [16, 20, 24, 64, 80, 96]
    assert list(points["y"]) == [94.8, 95.0, 95.2, 96.5, 96.8, 97.0]
    assert queries.trend_points(leaderboard_db, TOY, "mlp-accuracy").empty


def test_model_index_in_the_papers_with_code_format(leaderboard_db: Path) -> None:
    index = queries.model_index(leaderboard_db)
    assert yaml.safe_load(yaml.safe_dump(index)) == index  # plain YAML types only
    toy = [c for c in index["Collections"] if c["Name"] == TOY]
    assert toy == [{"Name": TOY, "Paper": {"URL": "https://arxiv.org/abs/2001.00001v2"}}]
    models = {m["Name"]: m for m in index["Models"]}
    narrow = models["toy-mlp"]
    assert narrow["In Collection"] == TOY and narrow["Metadata"] == {"Parameters": 1210, "FLOPs": 1184}
    assert narrow["Results"] == [  # smoke results prove a pipeline, never a number: not exported
        {"Task": "digits", "Dataset": "digits", "Split": "test", "Tier": "full", "Seeds": 3,
         "Metrics": {"accuracy": 95.0, "error": 5.0}}
    ]  # fmt: skip
    assert "Metadata" not in models["toy-mlp-wide"]
    one = queries.model_index(leaderboard_db, queries.claim_run_ids(leaderboard_db, TOY, "mlp-params"))
    assert [m["Name"] for m in one["Models"]] == ["toy-mlp"] and one["Models"][0]["Results"] == []


def test_queries_hold_no_connection(fresh_db: Path, toy: Path) -> None:
    """After any query the file is free: a writer can open it, and an ingest's swap is seen by the next query."""
    queries.overview(fresh_db)
    queries.paper_claims(fresh_db, TOY)
    queries.runs(fresh_db)
    queries.trend_points(fresh_db, TOY, "accuracy-grows-with-width")
    queries.model_index(fresh_db)
    duckdb.connect(str(fresh_db)).close()  # raises if this process still held a read-only connection
    build(toy, toy_records(offset=10))
    assert toy_row(queries.overview(fresh_db))["runs"] == 7 + 7  # smoke and full runs: accuracy's tiers


def test_papers_without_arxiv_ids_and_baselines_of_other_papers(two_papers_db: Path) -> None:
    """The overview links the GPT-like paper's PDF, its source names it, and the UDA-like claim's command runs both
    papers."""
    db = two_papers_db
    links = dict(zip(*queries.overview(db)[["paper", "link"]].T.values, strict=True))
    budget = dict(zip(*queries.overview(db, "budget")[["paper", "link"]].T.values, strict=True))
    assert links["gpt"] == GPT_PDF and budget["uda"] == "https://arxiv.org/abs/1904.12848v6"  # a budget delta claim
    assert queries.paper_source(db, "gpt") == {"arxiv": None, "url": GPT_PDF, "accessed": None, "sha256": "0" * 64,
                                               "link": GPT_PDF}  # fmt: skip
    assert queries.paper_source(db, "no-such-paper") is None
    claim = queries.paper_claims(db, "uda").iloc[0]
    assert (claim.status, claim.baseline, claim.baseline_paper, claim.run_models) == (
        "off-plan", "bert-base", "xlnet", ["uda-bert"],  # no plan committed: shown, never judged
    )  # fmt: skip
    assert claim.command.splitlines() == [
        "for seed in 0 1; do .venv/bin/harness run uda --tier budget --model uda-bert --seed $seed; done",
        "for seed in 0 1; do .venv/bin/harness run xlnet --tier budget --model bert-base --seed $seed; done",
    ]


@pytest.fixture(scope="module")
def tied_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """53 runs of two models at two tiers, finishing at only 4 distinct times (ties of up to 14 runs, which the run id
    orders), one failed."""
    records = [
        make_record(
            model=f"toy-mlp{'-wide' if seed % 2 else ''}", tier="budget" if seed % 5 == 0 else "full", seed=seed,
            status="failed" if seed == 7 else "ok", finished_at=f"2026-01-0{1 + seed % 4}T00:00:00Z",
        )
        for seed in range(53)
    ]  # fmt: skip
    db = tmp_path_factory.mktemp("tied") / "harness.duckdb"
    store.build_database(records, store.Tables(), db)
    return db


def sorted_ids(db: Path, **filters) -> list[str]:
    """The run ids the filters select, sorted newest first, then by run id, in Python: the order to page through."""
    rows = queries.runs(db, **filters)
    return [r.run_id for r in sorted(rows.itertuples(), key=lambda r: (-r.finished_at.value, r.run_id))]


@pytest.fixture(params=["seek", "defaults"])
def seeking(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Pages sought by their sort key from the first row on (as beyond ``SEEK_FROM`` rows of a million runs), or
    the thresholds as shipped (a small store: the plain OFFSET)."""
    if request.param == "seek":
        monkeypatch.setattr(queries, "SEEK_FROM", 0)
        monkeypatch.setattr(queries, "SORT_AT_MOST", 0)
    return request.param == "seek"


@pytest.mark.parametrize(
    "filters",
    [{}, {"tiers": ["full"]}, {"models": ["toy-mlp-wide"], "statuses": ["ok"]}, {"run_ids": "every third"}],
    ids=["all", "tier", "model-and-status", "run-ids"],
)
@pytest.mark.parametrize("size", [5, 14, 100])
def test_runs_page_gives_the_rows_of_the_plain_offset(tied_db: Path, seeking: bool, filters: dict, size: int) -> None:
    """First, middle and last pages (ties across page boundaries) are the rows, in the order, that ORDER BY ...
    LIMIT ... OFFSET gives, and that a sort in Python gives; a page past the end is empty."""
    if filters.get("run_ids") == "every third":
        filters = {"run_ids": sorted_ids(tied_db)[::3]}
    expected = sorted_ids(tied_db, **filters)
    total = queries.runs_count(tied_db, **filters)
    assert total == len(expected) > 0
    pages = -(-total // size)
    for page in sorted({1, 2, (pages + 1) // 2, pages - 1, pages} - {0}):
        offset = (page - 1) * size
        plain = queries.runs(tied_db, **filters, limit=size, offset=offset)["run_id"].tolist()
        found = queries.runs_page(tied_db, page, total, size, **filters)
        assert found["run_id"].tolist() == plain == expected[offset : offset + size], (page, total)
        assert found.equals(queries.runs(tied_db, **filters, limit=size, offset=offset))  # every column, too
    assert queries.runs_page(tied_db, pages + 1, total, size, **filters).empty


def test_the_seek_is_taken_and_checked(tied_db: Path, seeking: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Forced, a deep page is sought (a top-n over the rows finishing at or before its first row's time); a wrong
    total, or runs without finished_at (sorted last), cost the seek, never the rows."""
    where, params = queries._runs_where((), (), (), (), (), None, None)
    sql, _ = queries._page_rows(tied_db, where, params, 53, 5, 30)
    assert ("finished_at <= ?" in sql) == seeking
    expected = sorted_ids(tied_db)
    assert queries.runs_page(tied_db, 7, 40, 5)["run_id"].tolist() == expected[30:35]  # total 40, not 53
    assert queries.runs_page(tied_db, 7, 10**6, 5)["run_id"].tolist() == expected[30:35]


def test_runs_without_finished_at_page_as_offset_does(tmp_path: Path, seeking: bool) -> None:
    records = [make_record(seed=seed, finished_at=f"2026-01-0{1 + seed % 3}T00:00:00Z") for seed in range(20)]
    db = tmp_path / "harness.duckdb"
    store.build_database(records, store.Tables(), db)
    with duckdb.connect(str(db)) as con:  # no record lacks it; a store edited by hand might
        con.execute("UPDATE runs SET finished_at = NULL WHERE seed IN (3, 4, 5)")
    for page in (1, 2, 3, 4):
        found = queries.runs_page(db, page, 20, 6)["run_id"].tolist()
        assert found == queries.runs(db, limit=6, offset=(page - 1) * 6)["run_id"].tolist()
    assert queries.runs(db)["run_id"].tolist()[-3:] == [f"toy-paper.toy-mlp.full.digits.test.s{s}" for s in (3, 4, 5)]


def test_runs_page_of_a_claims_runs(leaderboard_db: Path, seeking: bool) -> None:
    claim = (TOY, "mlp-accuracy")
    expected = queries.runs(leaderboard_db, claim=claim)["run_id"].tolist()
    pages = [queries.runs_page(leaderboard_db, page, 3, 2, claim=claim)["run_id"].tolist() for page in (1, 2)]
    assert pages == [expected[:2], expected[2:]]


def test_the_overview_counts_each_scale_apart(evidence_db: Path) -> None:
    """Budget verdicts judge a direction, not the paper's number: a group of their own. A derived count is no
    evidence and a reviewed arch deviation is no reproduction: each is counted under its own name."""
    paper = toy_row(queries.overview(evidence_db))
    assert (paper["claims"], paper["reproduced"], paper["best_tier"], paper["runs"]) == (1, 1, "full", 3)
    budget = toy_row(queries.overview(evidence_db, "budget"))
    counted = {k: budget[k] for k in ("claims", "reproduced", "inconclusive", "premise-failed", "off-plan")}
    assert counted == {"claims": 5, "reproduced": 1, "inconclusive": 2, "premise-failed": 1, "off-plan": 1}
    assert (budget["best_tier"], budget["runs"]) == ("budget", 9)
    arch = toy_row(queries.overview(evidence_db, "architecture"))
    assert {k: arch[k] for k in ("claims", "reproduced", "deviation", "derived")} == {
        "claims": 2, "reproduced": 0, "deviation": 1, "derived": 1,
    }  # fmt: skip
    assert queries.counts(evidence_db, "budget", statuses=["premise-failed"])["premise-failed"] == 1


def test_paper_claims_carry_the_evidence(evidence_db: Path) -> None:
    claims = queries.paper_claims(evidence_db, TOY).set_index("claim_id")
    wide = claims.loc["wide-beats-narrow"]
    assert (wide.scale, wide.low, wide.high, wide.p_value, wide.p_holm) == ("budget", 0.9, 2.3, 0.021, 0.084)
    assert pd.isna(wide.delta) and wide.analysis == "paired t over 3 seeds"  # the sign is judged: no Δ
    assert wide.premises == [PASSED] and wide.examples == MCNEMAR and wide.plan == PLAN
    assert (wide.machines, wide.machine_ids) == (2, MACHINES)
    assert claims.loc["mlp-params", "tags"] == ["derived"] and claims.loc["mlp-params", "counted"] == "derived"
    assert claims.loc["bow-beats-mlp", "tags"] == ["premise-failed", "constructed"]
    assert claims.loc["bow-beats-mlp", "premises"] == [PASSED, FAILED]
    assert claims.loc["wide-beats-bow", "excluded"] == "a loss of more than 0.7 points"
    old = claims.loc["bow-old-judge"]  # a judge before store version 6: nulls, its scale that of its tier
    assert (old.scale, old.tags, old.premises, old.examples, old.machine_ids) == ("budget", [], [], None, [])
    assert (wide.evidence, claims.loc["mlp-accuracy", "evidence"], old.evidence) == (CONFIRMED, UNDECIDED, None)
    data = queries.reported_vs_measured(queries.paper_claims(evidence_db, TOY))
    assert sorted(data[data["layer"] == "claim"]["claim_id"]) == ["mlp-accuracy", "mlp-macs", "mlp-params"]


def test_a_delta_claims_two_arms_have_their_training_curves(evidence_db: Path) -> None:
    logs = queries.claim_logs(evidence_db, TOY, "wide-beats-narrow")
    assert logs[["model", "seed"]].values.tolist() == [[m, s] for m in ("toy-mlp", "toy-mlp-wide") for s in range(3)]
    curves = queries.arm_curves(evidence_db, logs)
    last = curves[(curves["name"] == "train_loss") & (curves["step"] == 19)].groupby("model")["value"].mean()
    assert last.to_dict() == pytest.approx({"toy-mlp": 0.42, "toy-mlp-wide": 0.30})
    assert len(queries.claim_logs(evidence_db, TOY, "wide-beats-narrow", per_model=1)) == 2  # the smallest seeds
    assert queries.claim_logs(evidence_db, TOY, "mlp-macs").empty  # an arch profile trains nothing


def test_what_a_verdict_rests_on_in_a_cell(evidence_db: Path) -> None:
    """The Evidence cell names the records' origin, machine and commit; the Other machines cell each machine whose
    own records were judged apart: confirmed where its status is the verdict's, else its status. No evidence: blank."""
    claims = queries.paper_claims(evidence_db, TOY).set_index("claim_id")
    wide, accuracy, old = (claims.loc[c, "evidence"] for c in ("wide-beats-narrow", "mlp-accuracy", "bow-old-judge"))
    assert queries.evidence_text(wide) == f"published · {MACHINES[0]} @ bcb08d8"
    assert queries.others_text(wide) == f"✓ confirmed on {MACHINES[1]} (3 seeds)"
    assert queries.evidence_text(accuracy) == f"local · {MACHINES[0]} @ 3f2c1ab +1 (dirty)"
    assert queries.others_text(accuracy) == f"re-run on {MACHINES[1]}: inconclusive (2 seeds)"
    assert queries.evidence_text(old) is None and queries.others_text(old) is None
    mixed = {"machine": None, "commits": [], "origins": ["local", PUBLISHED],  # the judged machine's records failed
             "others": [{"machine": "m", "status": "not-reproduced", "n": 6}]}  # fmt: skip
    assert queries.evidence_text(mixed) == "published + local"
    assert queries.others_text(mixed, "trend") == "re-run on m: not-reproduced (6 points)"  # a trend's n: points
