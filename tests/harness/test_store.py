"""The DuckDB store: rebuild-and-swap ingest, idempotence, external and malformed records."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import duckdb
import pytest

from harness import registry, store, store_staging, store_tables
from harness.errors import HarnessError
from harness.records import write_record
from tests.conftest import TOY_SRC, make_record


def table(db: Path, sql: str) -> list[tuple]:
    with store.connect_readonly(db) as con:
        return con.execute(sql).fetchall()


@pytest.fixture
def paths(toy: Path) -> tuple[Path, Path]:
    return toy / "results" / "runs", toy / "results" / "harness.duckdb"


def test_ingest_builds_tables_and_is_idempotent(paths) -> None:
    runs, db = paths
    for seed, acc in enumerate([94.8, 95.0, 95.2]):
        write_record(make_record(seed=seed, metrics={"accuracy": acc, "error": 100 - acc}), runs)
    result = store.ingest(runs_dir=runs, db_path=db)
    assert (result.total, result.errors) == (3, [])
    dump = lambda: [table(db, f"SELECT * FROM {t} ORDER BY ALL") for t in ("runs", "metrics", "claims", "verdicts")]  # noqa: E731
    first = dump()
    assert table(db, "SELECT count(*) FROM metrics") == [(6,)]
    assert table(db, "SELECT status, n FROM verdicts WHERE claim_id = 'mlp-accuracy'") == [("reproduced", 3)]
    store.ingest(runs_dir=runs, db_path=db)
    assert dump() == first


def test_a_chained_runs_parents_are_a_column(paths) -> None:
    """The runs a later stage started from (``parents``) can be queried without decoding record JSON."""
    runs, db = paths
    parent = make_record(tier="smoke", run_id="toy-paper.toy-mlp.smoke.digits.test.s0.parent")
    child = make_record(tier="smoke", run_id="toy-paper.toy-mlp.smoke.digits.test.s0.child", parents=[parent.run_id])
    for record in (parent, child):
        write_record(record, runs)
    store.ingest(runs_dir=runs, db_path=db)
    rows = table(db, "SELECT run_id, parents FROM runs ORDER BY run_id")
    assert rows == [(child.run_id, [parent.run_id]), (parent.run_id, [])]


def test_external_and_malformed_records(paths, tmp_path: Path) -> None:
    runs, db = paths
    elsewhere = tmp_path / "elsewhere"
    good = write_record(make_record(seed=7), elsewhere)
    bad = elsewhere / "bad.json"
    bad.write_text(json.dumps({"schema": "harness.run/1", "run_id": "x"}))
    result = store.ingest([elsewhere], runs_dir=runs, db_path=db)
    assert result.total == 1 and [p.name for p in result.added] == [good.name]
    assert len(result.errors) == 1 and result.errors[0].startswith(f"{bad}: field 'paper'")
    assert (runs / good.name).read_text() == good.read_text()  # stored, so the next rebuild keeps it
    store.ingest(runs_dir=runs, db_path=db)
    assert table(db, "SELECT seed FROM runs") == [(7,)]


def test_conflicting_external_record_is_refused(paths, tmp_path: Path) -> None:
    runs, db = paths
    write_record(make_record(), runs)
    write_record(make_record(metrics={"accuracy": 1.0}), tmp_path / "other")
    result = store.ingest([tmp_path / "other"], runs_dir=runs, db_path=db)
    assert "already exists; records are immutable" in result.errors[0]
    assert table(db, "SELECT value FROM metrics") == [(95.0,)]


def dump(db: Path) -> list[list[tuple]]:
    """Every table of the database, rows sorted."""
    return [table(db, f"SELECT * FROM {name} ORDER BY ALL") for name in (*store.TABLES, "meta")]


@pytest.mark.parametrize("stage", ["judge_claims", "draw_figures"])
def test_a_failure_mid_ingest_keeps_the_old_database(paths, monkeypatch: pytest.MonkeyPatch, stage: str) -> None:
    runs, db = paths
    write_record(make_record(), runs)
    store.ingest(runs_dir=runs, db_path=db)
    before = dump(db)
    write_record(make_record(seed=1), runs)

    def crash(*args, **kwargs):
        raise RuntimeError("killed")

    monkeypatch.setattr(store, stage, crash)
    with pytest.raises(RuntimeError):
        store.ingest(runs_dir=runs, db_path=db)  # the incremental transaction: rolled back
    assert dump(db) == before
    with pytest.raises(RuntimeError):
        store.ingest(runs_dir=runs, db_path=db, rebuild=True)  # the rebuild: the temp file is never swapped in
    assert dump(db) == before
    assert [p.name for p in db.parent.iterdir() if p.name.startswith(".ingest")] == []
    monkeypatch.undo()
    assert store.ingest(runs_dir=runs, db_path=db).total == 2


def test_a_record_whose_name_disagrees_with_its_id_is_reported(paths) -> None:
    runs, db = paths
    path = write_record(make_record(), runs)
    path.rename(runs / "renamed.json")
    result = store.ingest(runs_dir=runs, db_path=db)
    assert result.total == 0 and "does not match the file name" in result.errors[0]


def test_query_without_database_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no database yet; create it with `harness ingest`"):
        store.query("SELECT 1", db_path=tmp_path / "none.duckdb")


def reported(paper: str | None = None, db_path: Path | None = None) -> list[dict]:
    """`harness report --json`'s rows (harness.report.read) as DESIGN.md's keys plus ``reason``."""
    from harness.report import read
    from harness.verdicts import REPORT_KEYS

    return [{key: row[key] for key in (*REPORT_KEYS, "reason")} for row in read(paper, db_path=db_path)]


def test_ingest_judges_once_and_the_report_reads_its_table(paths) -> None:
    """The report is the verdicts table as ingest wrote it: the same rows, in claims-file order, as judging the
    claims over the records directly; and the trend points are those the trend verdict rests on."""
    from harness.claims import registered_claims
    from harness.plans import paper_plan
    from harness.verdicts import judge_all

    runs, db = paths
    records = [make_record(seed=0, tier="arch", split="none", metrics={"params_m": 0.00121, "macs_m": 0.0012})]
    for seed, (model, width, acc) in enumerate([("toy-mlp", 16, 94.8), ("toy-mlp", 24, 95.2), ("toy-mlp-wide", 64, 96.5),
                                                ("toy-mlp-wide", 96, 97.0)]):  # fmt: skip
        records.append(make_record(model=model, seed=seed, metrics={"accuracy": acc},
                                   config={"system": {"init_args": {"hidden": width}}}))  # fmt: skip
    for record in records:
        write_record(record, runs)
    assert store.ingest(runs_dir=runs, db_path=db).errors == []
    plans = {r.id: paper_plan(r) for r in registry.reproductions().values() if r.plan_path.exists()}
    expected = [v.report() for v in judge_all(registered_claims(), records, plans)]
    assert reported(db_path=db) == expected
    assert reported("toy-paper", db_path=db) == [row for row in expected if row["paper"] == "toy-paper"]
    assert table(db, "SELECT x, y, model FROM trend_points WHERE claim_id = 'accuracy-grows-with-width'") == [
        (16.0, 94.8, "toy-mlp"), (24.0, 95.2, "toy-mlp"), (64.0, 96.5, "toy-mlp-wide"), (96.0, 97.0, "toy-mlp-wide"),
    ]  # fmt: skip
    assert table(db, "SELECT count(*) FROM figures") == [(0,)]  # the toy paper draws no figures of its own


def test_a_database_of_an_older_version_says_run_ingest(paths) -> None:
    _, db = paths
    db.parent.mkdir(parents=True)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE runs (run_id VARCHAR); CREATE TABLE meta AS SELECT 1 AS store_version")
    con.close()
    assert store.store_version(db) == 1
    with pytest.raises(
        HarnessError, match=rf"store version 1; this one reads {store.STORE_VERSION}\) .* run `harness ingest`"
    ):
        reported(db_path=db)


def toy_copy(tmp_path: Path, toy_site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the toy plugin's source, registered in place of the original (to edit it); returns its folder."""
    src = tmp_path / "src"
    shutil.copytree(TOY_SRC, src)
    for name in [m for m in sys.modules if m.split(".")[0] == "toy_paper"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(src))
    monkeypatch.syspath_prepend(str(toy_site))
    monkeypatch.chdir(tmp_path)
    registry.reproductions.cache_clear()
    return src / "toy_paper"


def test_the_report_notes_claims_changed_since_the_ingest(
    toy_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """...and the next ingest judges every claim again: the tables equal a rebuild's, a removed claim's verdict gone."""
    claims = toy_copy(tmp_path, toy_site, monkeypatch) / "claims.yaml"
    db, runs = tmp_path / "harness.duckdb", tmp_path / "runs"
    for seed, accuracy in enumerate([94.0, 95.5]):
        write_record(make_record(seed=seed, metrics={"accuracy": accuracy}), runs)
    try:
        store.ingest(runs_dir=runs, db_path=db)
        assert not store.claims_changed(db)
        text = claims.read_text().replace("tolerance: 2.0", "tolerance: 0.5")
        claims.write_text("".join(line for line in text.splitlines(True) if "id: mlp-macs" not in line))
        assert store.claims_changed(db)
        store.ingest(runs_dir=runs, db_path=db)
        assert not store.claims_changed(db)
        store.ingest(runs_dir=runs, db_path=tmp_path / "fresh.duckdb")
        assert dump(db) == dump(tmp_path / "fresh.duckdb")
        assert table(db, "SELECT count(*) FROM verdicts WHERE claim_id = 'mlp-macs'") == [(0,)]
        assert table(db, "SELECT tolerance FROM verdicts WHERE claim_id = 'mlp-accuracy'") == [(0.5,)]
    finally:
        registry.reproductions.cache_clear()


def test_a_failing_figures_function_is_an_error_and_the_verdicts_still_go_in(
    toy_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = toy_copy(tmp_path, toy_site, monkeypatch).parent
    init = src / "toy_paper" / "__init__.py"
    init.write_text(
        init.read_text().replace('package="toy_paper",', 'package="toy_paper", figures="toy_paper.fig:draw",')
    )
    (src / "toy_paper" / "fig.py").write_text("def draw(records):\n    raise ValueError('no axis to draw on')\n")
    runs, db = tmp_path / "runs", tmp_path / "harness.duckdb"
    write_record(make_record(), runs)
    try:
        result = store.ingest(runs_dir=runs, db_path=db)
    finally:
        registry.reproductions.cache_clear()
    assert result.errors == ["paper 'toy-paper': its figures function 'toy_paper.fig:draw' failed: no axis to draw on"]
    assert table(db, "SELECT count(*) FROM figures") == [(0,)]
    assert table(db, "SELECT status FROM verdicts WHERE claim_id = 'mlp-accuracy'") == [("inconclusive",)]


def test_incremental_ingest_gives_the_tables_of_a_rebuild(paths, tmp_path: Path) -> None:
    """Records added in steps (new files found in runs/, files given by path, a file removed) leave the same
    tables, verdicts and trend points included, as one ingest from scratch."""
    runs, db = paths
    steps = [[("toy-mlp", 16, 94.8, 0)], [("toy-mlp", 24, 95.2, 1), ("toy-mlp-wide", 64, 96.5, 2)]]
    steps += [[("toy-mlp-wide", 96, 97.0, 3), ("toy-mlp", 32, 95.0, 4)]]
    for i, step in enumerate(steps):
        written = [
            write_record(make_record(model=m, seed=s, metrics={"accuracy": a}, config={"system": {"init_args": {"hidden": w}}}), runs)
            for m, w, a, s in step
        ]  # fmt: skip
        result = store.ingest(written if i == 1 else (), runs_dir=runs, db_path=db)
        assert result.errors == []
    assert table(db, "SELECT n FROM verdicts WHERE claim_id = 'accuracy-grows-with-width'") == [(5,)]
    (runs / "toy-paper.toy-mlp.full.digits.test.s4.json").unlink()  # a record moved out of the store
    assert store.ingest(runs_dir=runs, db_path=db).total == 4
    fresh = tmp_path / "fresh.duckdb"
    store.ingest(runs_dir=runs, db_path=fresh)
    assert dump(db) == dump(fresh)
    assert table(db, "SELECT status, n FROM verdicts WHERE claim_id = 'mlp-accuracy'") == [("inconclusive", 2)]


def test_an_unchanged_store_judges_nothing_again(paths, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the claims on the (paper, dataset, split) of changed records are judged again."""
    runs, db = paths
    write_record(make_record(), runs)
    store.ingest(runs_dir=runs, db_path=db)
    judged: list[list[int]] = []
    real = store.judge_claims

    def spy(con, claims, chosen, tmp, results_dir) -> None:
        judged.append(list(chosen))
        real(con, claims, chosen, tmp, results_dir)

    monkeypatch.setattr(store, "judge_claims", spy)
    monkeypatch.setattr(store.LazyClaims, "get", lambda self: pytest.fail("no claims file needs parsing"))
    store.ingest(runs_dir=runs, db_path=db)
    write_record(make_record(paper="other-paper", seed=3), runs)  # a paper without claims
    assert store.ingest(runs_dir=runs, db_path=db).total == 2
    monkeypatch.undo()
    monkeypatch.setattr(store, "judge_claims", spy)
    write_record(make_record(seed=1), runs)
    store.ingest(runs_dir=runs, db_path=db)
    from harness.claims import registered_claims

    claims = registered_claims()
    assert len(judged) == 1
    assert {claims[i].id for i in judged[0]} == {"mlp-accuracy", "wide-beats-narrow", "accuracy-grows-with-width"}


def test_stale_ingest_folders_are_removed(paths) -> None:
    runs, db = paths
    write_record(make_record(), runs)
    stale = db.parent / f"{store_staging.BUILD_PREFIX}4242-abc"
    stale.mkdir(parents=True)
    (stale / "harness.duckdb").write_bytes(b"\0" * 1000)
    store.ingest(runs_dir=runs, db_path=db)
    assert sorted(p.name for p in db.parent.iterdir()) == [".harness.duckdb.lock", "harness.duckdb", "runs"]


def test_a_record_the_database_refuses_is_named_and_the_others_go_in(paths, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever validation lets through but DuckDB refuses (here: a seed beyond a seed column narrowed to INTEGER
    for the test) is named, every other record is stored, and later ingests still work."""
    runs, db = paths
    write_record(make_record(), runs)
    store.ingest(runs_dir=runs, db_path=db)
    monkeypatch.setitem(store_tables.RUN_COLUMNS, "seed", "INTEGER")
    big = write_record(make_record(seed=1 << 40), runs)
    for seed in (2, 3):
        write_record(make_record(seed=seed), runs)
    for rebuild in (False, True):
        result = store.ingest(runs_dir=runs, db_path=db, rebuild=rebuild)
        assert len(result.errors) == 1 and result.errors[0].startswith(f"{big}: the database cannot hold this record")
        assert table(db, "SELECT seed FROM runs ORDER BY seed") == [(0,), (2,), (3,)]
        assert "1099511627776" in result.errors[0].split(": the database cannot hold")[1]
    monkeypatch.undo()  # the rebuild above made a narrow seed column: build anew with the real one
    assert store.ingest(runs_dir=runs, db_path=db, rebuild=True).errors == []
    assert table(db, "SELECT count(*) FROM runs") == [(4,)]


def test_a_seed_or_record_the_store_cannot_hold_fails_validation(paths, tmp_path: Path) -> None:
    """A seed of 1e30 (no BIGINT) or a record of megabytes is refused before it is copied into runs/, by name."""
    runs, db = paths
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    good = write_record(make_record(seed=5), elsewhere)
    data = json.loads(good.read_text())
    (elsewhere / "seed.json").write_text(json.dumps({**data, "run_id": "x.seed", "seed": 1e30}))
    (elsewhere / "big.json").write_text(json.dumps({**data, "run_id": "x.big", "config": {"blob": "x" * (5 << 20)}}))
    result = store.ingest([elsewhere], runs_dir=runs, db_path=db)
    assert sorted(e.split(": ")[0] for e in result.errors) == [
        str(elsewhere / "big.json"),
        str(elsewhere / "seed.json"),
    ]
    assert "field 'seed'" in " ".join(result.errors) and "at most" in " ".join(result.errors)
    assert sorted(p.name for p in runs.iterdir()) == [good.name]
    assert store.ingest(runs_dir=runs, db_path=db).errors == []
    (runs / "x.seed.json").write_text((elsewhere / "seed.json").read_text())  # put there by hand: named, skipped
    result = store.ingest(runs_dir=runs, db_path=db)
    assert result.total == 1 and result.errors[0].startswith(f"{runs / 'x.seed.json'}: field 'seed'")


def test_a_premise_on_another_datasets_records_is_checked_in_the_store(
    toy_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fine-tuning claim's plan premise about its pre-training (the LM's perplexity against a unigram's, on the
    LM's corpus): ingest reads those records too, though the claim's own are on another dataset."""
    from harness.plans import recipe_hash

    folder = toy_copy(tmp_path, toy_site, monkeypatch)
    db, runs = tmp_path / "harness.duckdb", tmp_path / "runs"
    arms = [
        make_record(model=model, seed=seed, tier="budget", metrics={"accuracy": value}, config={"model": model},
                    started_at="2026-01-02T00:00:00Z")
        for model, values in (("toy-mlp", [90.0, 90.4, 89.8]), ("toy-mlp-wide", [93.0, 93.5, 92.8]))
        for seed, value in enumerate(values)
    ]  # fmt: skip
    upstream = [
        make_record(model="toy-lm", seed=0, tier="budget", dataset="toy-text", metrics={"perplexity": 100.0}),
        # a smoke run of the same LM (as dvc repro makes) is no evidence about the budget regime: not counted
        make_record(model="toy-lm", seed=0, tier="smoke", dataset="toy-text", metrics={"perplexity": 5000.0}),
        make_record(
            model="reference-unigram", seed=0, tier="budget", dataset="toy-text", metrics={"perplexity": 300.0}
        ),
    ]
    for record in arms + upstream:
        write_record(record, runs)
    recipes = {f"r{i}": h for i, h in enumerate(sorted({recipe_hash(r.config) for r in arms}))}
    (folder / "plan.yaml").write_text(
        "paper: toy-paper\nfixed_at: 2026-01-01T00:00:00Z\nclaims:\n  - claim: wide-beats-narrow\n"
        f"    recipes: {json.dumps(recipes)}\n    seeds: [0, 1, 2]\n    smallest_effect: 1.0\n"
        "    stopping: all seeds\n    premises:\n"
        "      - {id: lm-beats-unigram, check: beats, model: toy-lm, reference: reference-unigram,\n"
        "         metric: perplexity, higher_is_better: false, factor: 2}\n"
    )
    try:
        assert store.ingest(runs_dir=runs, db_path=db).errors == []
        (row,) = [r for r in reported("toy-paper", db_path=db) if r["claim_id"] == "wide-beats-narrow"]
        (premise,) = table(db, "SELECT premises FROM verdicts WHERE claim_id = 'wide-beats-narrow'")[0]
        assert json.loads(premise)[0]["passed"] is True and "3x" in json.loads(premise)[0]["detail"]
        assert row["status"] == "reproduced"
    finally:
        registry.reproductions.cache_clear()
