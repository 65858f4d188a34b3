"""Benchmark: `harness ingest` of N run records from scratch, and of one new record into a store of N (and of BIG)
records, each against reading and parsing the same files (the floor), measured in the same run.

    .venv/bin/python benchmarks/bench_ingest.py [N] [--big BIG]

Prints the machine's load average, then for each step the wall time and its ratio to the reference (read +
json.loads of the N files): the first ingest (validate every record, judge the claims, build the DuckDB file and
rename it into place), an ingest with nothing new (a comparison of file names with stored run ids), and one new
record ingested by path (`harness ingest FILE`) and by a scan of results/runs/ (`harness ingest`, what `harness
run` does). With ``--big``, the same one-record steps on a store of BIG records (e.g. 1,000,000; built first from
as many files, which takes minutes and ~4 GB of disk).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from harness import store
from harness.records import RunRecord


def record(index: int) -> RunRecord:
    return RunRecord.model_validate({
        "schema": "harness.run/1", "run_id": f"bench.model-{index % 50}.full.imagenet-1k.val.s{index}",
        "paper": "bench", "model": f"model-{index % 50}", "tier": "full", "dataset": "imagenet-1k",
        "split": "val", "seed": index, "metrics": {"top1": 76.0 + index % 7 / 10, "top5": 93.0, "error": 24.0},
        "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T01:00:00Z",
        "provenance": {"git_sha": "0" * 40, "git_dirty": False, "config_hash": f"{index:016x}",
                       "versions": {"torch": "2.13.0"}, "hardware": {"cpus": 2}},
        "config": {"lr": 0.256, "epochs": 350, "index": index},
    })  # fmt: skip


def make_records(runs: Path, indices: range) -> list[Path]:
    """Record files as ``write_record`` writes them, without its fsync per file (the benchmark makes many); files
    already there (a kept ``--big-dir``) are left as they are."""
    runs.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in indices:
        path = runs / f"bench.model-{index % 50}.full.imagenet-1k.val.s{index}.json"
        if not path.exists():
            path.write_text(record(index).to_json())
        paths.append(path)
    return paths


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def one_more(runs: Path, db: Path, index: int) -> dict[str, float]:
    """One new record ingested by path, then another found by the scan of ``runs``; both checked in the database."""
    by_path = make_records(runs, range(index, index + 1))
    times = {"one new record, by path": timed(lambda: store.ingest(by_path, runs_dir=runs, db_path=db))}
    make_records(runs, range(index + 1, index + 2))
    times["one new record, by scan"] = timed(lambda: store.ingest(runs_dir=runs, db_path=db))
    rows = store.query("SELECT count(*) AS n FROM runs", db_path=db)[0]["n"]
    assert rows == index + 2, f"the database holds {rows} runs, not {index + 2}"
    return times


def report(title: str, times: dict[str, float], reference: float) -> None:
    print(title)
    for name, seconds in times.items():
        print(f"  {name:<34} {seconds:7.2f} s  ratio {seconds / reference:6.3f}x")


def main(count: int, big: int, big_dir: Path | None = None) -> None:
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"load average {load}; {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        runs, db = Path(tmp) / "runs", Path(tmp) / "harness.duckdb"
        make_records(runs, range(count))
        reference = timed(lambda: [json.loads(p.read_bytes()) for p in sorted(runs.glob("*.json"))])
        print(f"reference: read + json.loads of {count} records: {reference:.2f} s")
        times = {"ingest from scratch": timed(lambda: store.ingest(runs_dir=runs, db_path=db))}
        times["ingest again (nothing new)"] = timed(lambda: store.ingest(runs_dir=runs, db_path=db))
        times["rebuild (--rebuild)"] = timed(lambda: store.ingest(runs_dir=runs, db_path=db, rebuild=True))
        times.update(one_more(runs, db, count))
        report(f"store of {count} records:", times, reference)
    if big:
        with tempfile.TemporaryDirectory(dir=big_dir) as tmp:
            runs, db = Path(big_dir or tmp) / "runs", Path(tmp) / "harness.duckdb"
            make_records(runs, range(big))
            for extra in runs.glob("*.json"):  # one_more's records of an earlier run in a kept folder
                if int(extra.stem.rsplit(".s", 1)[1]) >= big:
                    extra.unlink()
            built = timed(lambda: store.ingest(runs_dir=runs, db_path=db))
            report(f"store of {big} records (built from scratch in {built:.1f} s):", one_more(runs, db, big), reference)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", nargs="?", type=int, default=100_000)
    parser.add_argument("--big", type=int, default=0, help="also one new record into a store of this many")
    parser.add_argument("--big-dir", type=Path, help="keep the big store's record files here (made once, reused)")
    args = parser.parse_args()
    main(args.count, args.big, args.big_dir)
