"""The store's tables: their columns, ``STORE_VERSION``, and the bulk inserts that fill them (harness.store).

A record goes into ``runs`` and ``metrics`` in one parse: DuckDB reads NDJSON lines of validated records and takes
every column out of each line's JSON (:func:`insert_records`); the derived tables (claims, verdicts, trend points,
figures, papers) are inserted from rows through an NDJSON file too (:func:`insert_rows`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb

from harness import dotted
from harness.records import MAX_RECORD_BYTES

STORE_VERSION = 8  # 3: runs.parents; 4: incremental ingest (rows taken from each record's JSON by DuckDB); 5: papers;

# 6: verdicts' evidence (scale, analysis, interval, p-values, premises, plan, machines, tags) and claims' judging
# fields;
# 7: verdicts.evidence (the machine, commits and published set a verdict rests on; other machines judged apart)
# 8: a claim its plan marks untestable is judged untestable (and a planned claim budget-scale) with no records
MAX_OBJECT_BYTES = 2 * MAX_RECORD_BYTES  # the largest record line DuckDB's JSON reader is asked to take

Key = tuple[str, str, str]  # (paper, dataset, split): what a claim's records are looked up by


RUN_COLUMNS = {
    "run_id": "VARCHAR", "paper": "VARCHAR", "model": "VARCHAR", "tier": "VARCHAR", "dataset": "VARCHAR",
    "split": "VARCHAR", "seed": "BIGINT", "status": "VARCHAR", "protocol": "VARCHAR",
    "started_at": "TIMESTAMP", "finished_at": "TIMESTAMP", "git_sha": "VARCHAR", "git_dirty": "BOOLEAN",
    "config_hash": "VARCHAR", "data_hash": "VARCHAR", "hardware": "JSON", "versions": "JSON", "config": "JSON",
    "claim_ids": "VARCHAR[]", "parents": "VARCHAR[]", "artifacts": "JSON", "record": "JSON",
}  # fmt: skip

METRIC_COLUMNS = {"run_id": "VARCHAR", "name": "VARCHAR", "value": "DOUBLE"}

CLAIM_COLUMNS = {
    "paper": "VARCHAR", "claim_id": "VARCHAR", "arxiv": "VARCHAR", "source": "VARCHAR", "kind": "VARCHAR",
    "model": "VARCHAR", "dataset": "VARCHAR", "split": "VARCHAR", "metric": "VARCHAR", "value": "DOUBLE",
    "unit": "VARCHAR", "higher_is_better": "BOOLEAN", "tolerance": "DOUBLE", "statement": "VARCHAR",
    "rule": "JSON", "baseline": "VARCHAR", "baseline_paper": "VARCHAR", "baseline_conditions": "JSON",
    "conditions": "JSON", "quote": "VARCHAR", "protocol": "VARCHAR", "notes": "VARCHAR", "url": "VARCHAR",
    "accessed": "DATE", "sha256": "VARCHAR", "analysis": "VARCHAR", "replicate": "VARCHAR", "equivalence": "JSON",
    "counting": "VARCHAR", "deviation": "JSON", "derived": "BOOLEAN", "constructed": "BOOLEAN",
}  # fmt: skip

VERDICT_COLUMNS = {
    "position": "BIGINT", "paper": "VARCHAR", "claim_id": "VARCHAR", "kind": "VARCHAR", "model": "VARCHAR",
    "dataset": "VARCHAR", "split": "VARCHAR", "metric": "VARCHAR", "reported": "DOUBLE", "tolerance": "DOUBLE",
    "status": "VARCHAR", "tier": "VARCHAR", "mean": "DOUBLE", "std": "DOUBLE", "n": "BIGINT", "delta": "DOUBLE",
    "reason": "VARCHAR", "run_ids": "VARCHAR[]", "scale": "VARCHAR", "analysis": "VARCHAR", "low": "DOUBLE",
    "high": "DOUBLE", "p_value": "DOUBLE", "p_holm": "DOUBLE", "excluded": "VARCHAR", "seeds_needed": "BIGINT",
    "machines": "BIGINT", "machine_ids": "VARCHAR[]", "tags": "VARCHAR[]", "premises": "JSON", "plan": "VARCHAR",
    "examples": "JSON", "off_plan": "BIGINT", "evidence": "JSON",
}  # fmt: skip

TREND_POINT_COLUMNS = {
    "paper": "VARCHAR", "claim_id": "VARCHAR", "x": "DOUBLE", "y": "DOUBLE", "model": "VARCHAR", "seed": "BIGINT",
    "run_id": "VARCHAR",
}  # fmt: skip

FIGURE_COLUMNS = {"paper": "VARCHAR", "position": "BIGINT", "title": "VARCHAR", "spec": "JSON"}

PAPER_COLUMNS = {"paper": "VARCHAR", "title": "VARCHAR", "link": "VARCHAR"}

TABLES = {
    "runs": RUN_COLUMNS, "metrics": METRIC_COLUMNS, "claims": CLAIM_COLUMNS, "verdicts": VERDICT_COLUMNS,
    "trend_points": TREND_POINT_COLUMNS, "figures": FIGURE_COLUMNS, "papers": PAPER_COLUMNS,
}  # fmt: skip

# where a runs column is in the record's JSON (default: the top-level key of the column's name)
RUN_PATHS = {
    name: f"provenance.{name}" for name in ("git_sha", "git_dirty", "config_hash", "data_hash", "hardware", "versions")
}


def create_tables(con: duckdb.DuckDBPyConnection) -> None:
    for name, columns in TABLES.items():
        con.execute(f"CREATE TABLE {name} ({', '.join(f'{col} {kind}' for col, kind in columns.items())})")
    con.execute("CREATE TABLE meta (store_version BIGINT, claims_digest VARCHAR)")


def _record_shape() -> str:
    """The ``json_transform`` structure that takes every ``runs`` column (and ``metrics``) out of a record's JSON in
    one parse; timestamps are read as text and cast after."""
    shape: dict[str, Any] = {"metrics": "MAP(VARCHAR, DOUBLE)"}
    for name, kind in RUN_COLUMNS.items():
        if name == "record":
            continue
        dotted.assign(shape, RUN_PATHS.get(name, name), "VARCHAR" if kind == "TIMESTAMP" else kind, create=True)
    return json.dumps(shape)


def _column_sql(name: str, kind: str) -> str:
    """The SQL that takes column ``name`` of ``runs`` out of ``t``, the record's transformed JSON (``r``: as it is)."""
    if name == "record":
        return "r"
    expr = "t." + ".".join(f'"{part}"' for part in dotted.parts(RUN_PATHS.get(name, name)))
    if kind == "JSON":
        return f"nullif({expr}, 'null')"
    return f"{expr}::TIMESTAMP" if kind == "TIMESTAMP" else expr


def insert_records(con: duckdb.DuckDBPyConnection, files: Sequence[Path]) -> None:
    """Insert the records of NDJSON ``files`` into ``runs`` and ``metrics``: DuckDB parses each line once."""
    source = (
        "SELECT json AS r FROM read_json(?, format='newline_delimited', records=false, columns={json: 'JSON'}, "
        f"maximum_object_size={MAX_OBJECT_BYTES})"
    )
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE staged AS SELECT r, json_transform_strict(r, ?) AS t FROM ({source})",
        [_record_shape(), [str(path) for path in files]],
    )
    columns = ", ".join(_column_sql(name, kind) for name, kind in RUN_COLUMNS.items())
    con.execute(f"INSERT INTO runs SELECT {columns} FROM staged")
    con.execute(
        "INSERT INTO metrics SELECT t.run_id, unnest(map_keys(t.metrics)), unnest(map_values(t.metrics)) FROM staged"
    )
    con.execute("DROP TABLE staged")


def insert_rows(con: duckdb.DuckDBPyConnection, name: str, rows: Sequence[dict[str, Any]], tmp: Path) -> None:
    """Bulk-insert ``rows`` (dicts) into table ``name`` through an NDJSON file (far faster than row by row)."""
    if not rows:
        return
    columns = TABLES[name]
    ndjson = tmp / f"{name}.ndjson"
    with ndjson.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps({col: row.get(col) for col in columns}) + "\n")
    spec = ", ".join(f"{col}: '{'VARCHAR' if kind == 'JSON' else kind}'" for col, kind in columns.items())
    con.execute(
        f"INSERT INTO {name} SELECT * FROM read_json(?, format='newline_delimited', columns={{{spec}}})", [str(ndjson)]
    )
