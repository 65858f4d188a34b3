"""The DuckDB store: rebuild-and-swap ingest, idempotence, external and malformed records."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from harness import store
from harness.records import write_record
from tests.conftest import make_record


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


def test_crash_mid_ingest_keeps_the_old_database(paths, monkeypatch: pytest.MonkeyPatch) -> None:
    runs, db = paths
    write_record(make_record(), runs)
    store.ingest(runs_dir=runs, db_path=db)
    before = db.read_bytes()
    write_record(make_record(seed=1), runs)
    real = store._load_table

    def crash_on_verdicts(con, name, *args):
        if name == "verdicts":
            raise RuntimeError("killed")
        return real(con, name, *args)

    monkeypatch.setattr(store, "_load_table", crash_on_verdicts)
    with pytest.raises(RuntimeError):
        store.ingest(runs_dir=runs, db_path=db)
    assert db.read_bytes() == before
    assert [p.name for p in db.parent.iterdir() if p.name.startswith(".ingest")] == []


def test_a_reader_keeps_its_snapshot_while_ingest_swaps_the_file(paths) -> None:
    runs, db = paths
    write_record(make_record(), runs)
    store.ingest(runs_dir=runs, db_path=db)
    reader = duckdb.connect(str(db), read_only=True)
    try:
        write_record(make_record(seed=1), runs)
        store.ingest(runs_dir=runs, db_path=db)  # no lock conflict with the open reader
        assert reader.execute("SELECT count(*) FROM runs").fetchall() == [(1,)]
    finally:
        reader.close()
    assert table(db, "SELECT count(*) FROM runs") == [(2,)]


def test_a_record_whose_name_disagrees_with_its_id_is_reported(paths) -> None:
    runs, db = paths
    path = write_record(make_record(), runs)
    path.rename(runs / "renamed.json")
    result = store.ingest(runs_dir=runs, db_path=db)
    assert result.total == 0 and "does not match the file name" in result.errors[0]


def test_query_without_database_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="no database yet; create it with `harness ingest`"):
        store.query("SELECT 1", db_path=tmp_path / "none.duckdb")
