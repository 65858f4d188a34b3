"""The store under real processes: concurrent writers lose nothing, a kill -9 mid-ingest loses nothing, and a
reader sees the database before or after an ingest, never between."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import store, store_staging
from tests.conftest import REPO, harness_cli, make_record

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).strip(os.pathsep)}


def write_many(folder: Path, seeds: range, paper: str = "bench-paper") -> None:
    """Valid records of a paper without claims, written plainly (no fsync: many of them, quickly)."""
    folder.mkdir(parents=True, exist_ok=True)
    for seed in seeds:
        record = make_record(paper=paper, seed=seed, metrics={"accuracy": 90.0 + seed % 7, "error": 10.0})
        (folder / f"{record.run_id}.json").write_text(record.to_json())


def counts(db: Path) -> tuple[int, int]:
    """(runs, metrics) rows, read in one connection: one snapshot."""
    with store.connect_readonly(db) as con:
        return con.execute("SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM metrics)").fetchone()


def test_concurrent_ingests_lose_no_record(tmp_path: Path) -> None:
    """Three `harness ingest FILES` processes at once on a fresh store (each would rebuild it), and a fourth that
    scans results/runs/: every record any of them stored is in the database at the end."""
    work = tmp_path / "work"
    work.mkdir()
    for index in range(3):
        write_many(tmp_path / f"batch{index}", range(index * 40, index * 40 + 40))
    env = {**ENV, "PYTHONPATH": ENV["PYTHONPATH"]}
    exe = str(Path(sys.executable).parent / "harness")
    commands = [[exe, "ingest", str(tmp_path / f"batch{index}")] for index in range(3)] + [[exe, "ingest"]]
    procs = [subprocess.Popen(c, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for c in commands]
    outputs = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0, 0], [err.decode() for _, err in outputs]
    assert counts(work / "results" / "harness.duckdb") == (120, 240)
    assert len(list((work / "results" / "runs").glob("*.json"))) == 120


@pytest.mark.parametrize(
    "delay", [pytest.param(0.0, marks=pytest.mark.slow), 0.3, pytest.param(1.0, marks=pytest.mark.slow)]
)
def test_a_kill_9_mid_ingest_leaves_the_old_database_and_the_next_ingest_completes(
    tmp_path: Path, delay: float
) -> None:
    runs, db = tmp_path / "results" / "runs", tmp_path / "results" / "harness.duckdb"
    write_many(runs, range(1))
    store.ingest(runs_dir=runs, db_path=db)
    write_many(runs, range(1, 6001))
    exe = str(Path(sys.executable).parent / "harness")
    proc = subprocess.Popen([exe, "ingest"], cwd=tmp_path, env=ENV, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not list(db.parent.glob(f"{store_staging.BUILD_PREFIX}{proc.pid}-*")) and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert counts(db) in {(1, 2), (6001, 12002)}  # the old database, or (if the commit won the race) the new one
    result = store.ingest(runs_dir=runs, db_path=db)
    assert (result.total, result.errors) == (6001, [])
    assert not list(db.parent.glob(f"{store_staging.BUILD_PREFIX}*"))
    fresh = tmp_path / "fresh.duckdb"
    store.ingest(runs_dir=runs, db_path=fresh)
    for name in ("runs", "metrics", "verdicts"):
        sql = f"SELECT * FROM {name} ORDER BY ALL"
        assert store.query(sql, db_path=db) == store.query(sql, db_path=fresh)


READER = """
import json, sys, time
from pathlib import Path
from harness import store, store_staging
db, seconds, seen = Path(sys.argv[1]), float(sys.argv[2]), []
end = time.monotonic() + seconds
while time.monotonic() < end:
    with store.connect_readonly(db) as con:
        seen.append(con.execute("SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM metrics)").fetchone())
print(json.dumps(seen))
"""


def test_a_reader_sees_whole_ingests_only(tmp_path: Path) -> None:
    """While ingests add 500 records (1,000 metric rows) at a time, a reader process querying in a loop only ever
    sees a whole number of batches, with the metrics of every run it sees."""
    runs, db = tmp_path / "results" / "runs", tmp_path / "results" / "harness.duckdb"
    write_many(runs, range(500))
    store.ingest(runs_dir=runs, db_path=db)
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(db), "6"], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    time.sleep(1.0)
    for batch in range(1, 4):
        write_many(runs, range(batch * 500, batch * 500 + 500))
        assert store.ingest(runs_dir=runs, db_path=db).total == (batch + 1) * 500
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err.decode()
    seen = [tuple(pair) for pair in json.loads(out)]
    assert seen and all(runs_seen % 500 == 0 and metrics == 2 * runs_seen for runs_seen, metrics in seen)
    assert len(set(seen)) >= 2  # it read between ingests, not only before or after all of them


def test_run_cli_ingests_and_a_second_ingest_is_a_no_op(tmp_path: Path) -> None:
    write_many(tmp_path / "results" / "runs", range(3))
    first = harness_cli("ingest", cwd=tmp_path)
    again = harness_cli("ingest", cwd=tmp_path)
    assert first.returncode == again.returncode == 0, first.stderr
    assert "holds 3 run(s)" in again.stderr
    rebuilt = harness_cli("ingest", "--rebuild", cwd=tmp_path)
    assert rebuilt.returncode == 0 and "holds 3 run(s)" in rebuilt.stderr
