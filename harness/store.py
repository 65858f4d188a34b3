"""The DuckDB store: ``results/harness.duckdb``, derived from the run records and the registered claims.

Ingest is where claims are judged, once: it writes each claim's verdict (``verdicts``), the points each trend
claim was judged on (``trend_points``) and each paper's own figures as Vega-Lite JSON (``figures``, drawn by the
paper's ``Reproduction.figures`` function). ``harness report``, the leaderboard and any export read these tables
and never judge, re-read claims files or import reproduction code. A database of an older ``STORE_VERSION``
(one without these tables) is refused with "run `harness ingest`".

``results/runs/`` is the source of truth; the database is rebuilt from it in a temp file and swapped in with
a rename, so a reader never sees half a database and a crash mid-ingest leaves the old one whole. Records
ingested from elsewhere are validated and copied into ``results/runs/`` first (immutably), so they survive
the next rebuild. Connections are opened per call and closed at once: DuckDB allows one writer or many
readers, and the leaderboard must be able to read while an ingest swaps the file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from harness.errors import HarnessError
from harness.records import RUNS_DIR, RunRecord, read_record, record_path, write_record

if TYPE_CHECKING:
    from harness.claims import Claim

DB_PATH = Path("results/harness.duckdb")
STORE_VERSION = 3  # 3: runs.parents

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
    "accessed": "DATE", "sha256": "VARCHAR",
}  # fmt: skip
VERDICT_COLUMNS = {
    "position": "BIGINT", "paper": "VARCHAR", "claim_id": "VARCHAR", "kind": "VARCHAR", "model": "VARCHAR",
    "dataset": "VARCHAR", "split": "VARCHAR", "metric": "VARCHAR", "reported": "DOUBLE", "tolerance": "DOUBLE",
    "status": "VARCHAR", "tier": "VARCHAR", "mean": "DOUBLE", "std": "DOUBLE", "n": "BIGINT", "delta": "DOUBLE",
    "reason": "VARCHAR", "run_ids": "VARCHAR[]",
}  # fmt: skip
TREND_POINT_COLUMNS = {
    "paper": "VARCHAR", "claim_id": "VARCHAR", "x": "DOUBLE", "y": "DOUBLE", "model": "VARCHAR", "seed": "BIGINT",
    "run_id": "VARCHAR",
}  # fmt: skip
FIGURE_COLUMNS = {"paper": "VARCHAR", "position": "BIGINT", "title": "VARCHAR", "spec": "JSON"}


@dataclass
class IngestResult:
    """What an ingest did: records stored, records in the rebuilt database, and per-file errors."""

    added: list[Path] = field(default_factory=list)
    total: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class Tables:
    """The derived tables ingest writes beside ``runs`` and ``metrics``: one list of rows each."""

    claims: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    trend_points: list[dict[str, Any]] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    digest: str | None = None  # claims_digest() of the claims judged


@contextlib.contextmanager
def connect_readonly(db_path: Path = DB_PATH) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived read-only connection; raises HarnessError when there is no database yet."""
    if not db_path.exists():
        raise HarnessError(f"{db_path}: no database yet; create it with `harness ingest`")
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        yield con
    finally:
        con.close()


def query(sql: str, params: Sequence[Any] = (), db_path: Path = DB_PATH) -> list[dict[str, Any]]:
    """Run one read-only query and return its rows as dicts (the connection is closed before returning)."""
    with connect_readonly(db_path) as con:
        cursor = con.execute(sql, list(params))
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def store_version(db_path: Path = DB_PATH) -> int | None:
    """The ``STORE_VERSION`` that wrote the database (None when it is not a harness database at all)."""
    try:
        return int(query("SELECT store_version FROM meta", db_path=db_path)[0]["store_version"])
    except (duckdb.Error, IndexError, TypeError, ValueError):
        return None


def require_current(db_path: Path = DB_PATH) -> None:
    """Raise, saying to run ``harness ingest``, unless the database exists and this version wrote it."""
    found = store_version(db_path)  # raises when there is no file
    if found != STORE_VERSION:
        written = f"store version {found}" if found is not None else "no store version"
        raise HarnessError(
            f"{db_path}: written by another harness version ({written}; this one reads {STORE_VERSION}) and "
            "holds no verdicts table it can read: run `harness ingest` to rebuild it from results/runs/"
        )


def claims_digest() -> str:
    """sha256 over every registered paper's id and claims file bytes: ingest stores it, so ``harness report`` can
    tell that claims changed since (without parsing them)."""
    import hashlib

    from harness import registry

    digest = hashlib.sha256()
    for repro in registry.reproductions().values():
        path = repro.claims_path
        digest.update(repro.id.encode() + b"\0" + (path.read_bytes() if path.exists() else b"") + b"\0")
    return digest.hexdigest()


def claims_changed(db_path: Path = DB_PATH) -> bool:
    """Whether the registered papers' claims files differ from those the database's verdicts were judged from."""
    stored = query("SELECT claims_digest FROM meta", db_path=db_path)[0]["claims_digest"]
    return stored != claims_digest()


def read_report(paper: str | None = None, db_path: Path = DB_PATH) -> list[dict[str, Any]]:
    """The ``harness report`` rows (DESIGN.md's keys plus ``reason``) as ingest judged them, in claims-file order."""
    from harness.verdicts import REPORT_KEYS

    require_current(db_path)
    where, params = (" WHERE paper = ?", [paper]) if paper else ("", [])
    columns = ", ".join(f'"{key}"' for key in (*REPORT_KEYS, "reason"))
    return query(f"SELECT {columns} FROM verdicts{where} ORDER BY position", params, db_path=db_path)


def _expand(paths: Sequence[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        found.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    return found


def _store_external(files: Sequence[Path], runs_dir: Path, result: IngestResult) -> None:
    """Validate records given by path and copy those from elsewhere into ``runs_dir``; errors are collected."""
    for path in _expand(files):
        if path.resolve().parent == runs_dir.resolve():
            continue  # already in the store: validated with the rest of it
        try:
            record = read_record(path)
            is_new = not record_path(record.run_id, runs_dir).exists()
            target = write_record(record, runs_dir)
        except HarnessError as exc:
            result.errors.append(str(exc))
            continue
        if is_new:
            result.added.append(target)


def _load_store(runs_dir: Path, result: IngestResult) -> list[tuple[RunRecord, Path]]:
    records = []
    for path in sorted(runs_dir.glob("*.json")) if runs_dir.is_dir() else []:
        try:
            record = read_record(path)
        except HarnessError as exc:
            result.errors.append(str(exc))
            continue
        if path.stem != record.run_id:
            result.errors.append(f"{path}: field 'run_id': {record.run_id!r} does not match the file name")
            continue
        records.append((record, path))
    return records


def _run_row(record: RunRecord) -> dict[str, Any]:
    data = record.model_dump(mode="json", by_alias=True)
    prov = data["provenance"]
    row = {name: data.get(name) for name in RUN_COLUMNS if name in data}
    row.update(
        git_sha=prov["git_sha"], git_dirty=prov["git_dirty"], config_hash=prov["config_hash"],
        data_hash=prov.get("data_hash"), hardware=prov.get("hardware"), versions=prov.get("versions"),
        record=data,
    )  # fmt: skip
    return row


def _load_table(con: duckdb.DuckDBPyConnection, name: str, columns: dict[str, str], rows: list[dict], tmp: Path):
    """Create ``name`` and bulk-load ``rows`` through an NDJSON file (far faster than row-by-row inserts)."""
    con.execute(f"CREATE TABLE {name} ({', '.join(f'{col} {kind}' for col, kind in columns.items())})")
    if not rows:
        return
    ndjson = tmp / f"{name}.ndjson"
    with ndjson.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps({col: row.get(col) for col in columns}) + "\n")
    spec = ", ".join(f"{col}: '{'VARCHAR' if kind == 'JSON' else kind}'" for col, kind in columns.items())
    con.execute(
        f"INSERT INTO {name} SELECT * FROM read_json(?, format='newline_delimited', columns={{{spec}}})", [str(ndjson)]
    )


def build_database(records: list[RunRecord], tables: Tables, db_path: Path = DB_PATH) -> None:
    """Write a complete database to a temp file beside ``db_path`` and rename it into place."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=db_path.parent, prefix=".ingest-") as tmp_name:
        tmp = Path(tmp_name)
        tmp_db = tmp / "harness.duckdb"
        con = duckdb.connect(str(tmp_db))
        try:
            metric_rows = [{"run_id": r.run_id, "name": k, "value": v} for r in records for k, v in r.metrics.items()]
            _load_table(con, "runs", RUN_COLUMNS, [_run_row(r) for r in records], tmp)
            _load_table(con, "metrics", METRIC_COLUMNS, metric_rows, tmp)
            _load_table(con, "claims", CLAIM_COLUMNS, tables.claims, tmp)
            _load_table(con, "verdicts", VERDICT_COLUMNS, tables.verdicts, tmp)
            _load_table(con, "trend_points", TREND_POINT_COLUMNS, tables.trend_points, tmp)
            _load_table(con, "figures", FIGURE_COLUMNS, tables.figures, tmp)
            con.execute(
                "CREATE TABLE meta AS SELECT ? AS store_version, ? AS claims_digest", [STORE_VERSION, tables.digest]
            )
            con.execute("CHECKPOINT")
        finally:
            con.close()
        with open(tmp_db, "rb") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp_db, db_path)


def _figure_rows(records: Sequence[RunRecord], result: IngestResult) -> list[dict[str, Any]]:
    """Each registered paper's own figures (``Reproduction.figures``) over its records, as Vega-Lite specs. A
    figures function that fails is reported as an error; the rest of the database is still built."""
    from harness import registry

    rows: list[dict[str, Any]] = []
    for repro in registry.reproductions().values():
        mine = [r.model_dump(mode="json", by_alias=True) for r in records if r.paper == repro.id]
        if repro.figures is None or not mine:
            continue
        try:
            drawn = list(registry.load_object(repro.figures)(mine))
        except Exception as exc:  # plugin code: name it, keep the verdicts
            result.errors.append(f"paper {repro.id!r}: its figures function {repro.figures!r} failed: {exc}")
            continue
        rows += [{"paper": repro.id, "position": i, "title": t, "spec": spec} for i, (t, spec) in enumerate(drawn)]
    return rows


def judged_tables(claims: Sequence[Claim], records: Sequence[RunRecord], result: IngestResult) -> Tables:
    """Judge ``claims`` over ``records`` and draw every registered paper's figures: the tables ingest writes."""
    from harness.claims import claim_row
    from harness.verdicts import judge_all, trend_points

    verdicts = judge_all(claims, records)
    by_id = {record.run_id: record for record in records}
    points = [
        {"paper": claim.paper, "claim_id": claim.id, **point}
        for claim, verdict in zip(claims, verdicts, strict=True)
        if claim.kind == "trend"
        for point in trend_points(claim, [by_id[run_id] for run_id in verdict.run_ids])
    ]
    return Tables(
        digest=claims_digest(),
        claims=[claim_row(c) for c in claims],
        verdicts=[{"position": i, **v.row()} for i, v in enumerate(verdicts)],
        trend_points=points,
        figures=_figure_rows(records, result),
    )


def ingest(files: Sequence[Path] = (), runs_dir: Path = RUNS_DIR, db_path: Path = DB_PATH) -> IngestResult:
    """Store the given records (default: none beyond ``runs_dir``), then rebuild the database from ``runs_dir``:
    the records, every registered claim's verdict, the trend points and the papers' figures."""
    from harness.claims import registered_claims

    claims = registered_claims()  # a broken claims file stops here, before anything is touched
    result = IngestResult()
    _store_external(files, runs_dir, result)
    records = [record for record, _ in _load_store(runs_dir, result)]
    build_database(records, judged_tables(claims, records, result), db_path)
    result.total = len(records)
    return result
