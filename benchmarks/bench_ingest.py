"""Benchmark: `harness ingest` of N run records, against reading and parsing the same files (the floor).

    .venv/bin/python benchmarks/bench_ingest.py [N]

Prints the wall time of a full ingest (validate every record, judge the claims, rebuild the DuckDB file and
swap it in), of a second, idempotent ingest, and their ratio to the reference: json-parsing the same files.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from harness import store
from harness.records import RunRecord, write_record


def make_records(runs: Path, count: int) -> None:
    for index in range(count):
        record = RunRecord.model_validate({
            "schema": "harness.run/1", "run_id": f"bench.model-{index % 50}.full.imagenet-1k.val.s{index}",
            "paper": "bench", "model": f"model-{index % 50}", "tier": "full", "dataset": "imagenet-1k",
            "split": "val", "seed": index, "metrics": {"top1": 76.0 + index % 7 / 10, "top5": 93.0, "error": 24.0},
            "started_at": "2026-01-01T00:00:00Z", "finished_at": "2026-01-01T01:00:00Z",
            "provenance": {"git_sha": "0" * 40, "git_dirty": False, "config_hash": f"{index:016x}",
                           "versions": {"torch": "2.13.0"}, "hardware": {"cpus": 2}},
            "config": {"lr": 0.256, "epochs": 350, "index": index},
        })  # fmt: skip
        write_record(record, runs)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(count: int = 10_000) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        runs, db = Path(tmp) / "runs", Path(tmp) / "harness.duckdb"
        make_records(runs, count)
        reference = timed(lambda: [json.loads(p.read_text()) for p in sorted(runs.glob("*.json"))])
        first = timed(lambda: store.ingest(runs_dir=runs, db_path=db))
        again = timed(lambda: store.ingest(runs_dir=runs, db_path=db))
        rows = store.query("SELECT count(*) AS n FROM runs", db_path=db)[0]["n"]
    print(f"records: {count} (database rows: {rows})")
    print(f"reference (read + json.loads): {reference:.2f} s")
    print(f"ingest:                        {first:.2f} s  ratio {first / reference:.1f}x")
    print(f"ingest again (idempotent):     {again:.2f} s  ratio {again / reference:.1f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
