"""Opening the store: short read-only connections that wait out a writer, queries, the version and claims checks
readers make, and the writers' lock (harness.store writes; ``harness report``, the leaderboard and exports read).

DuckDB allows one writer or many readers: a reader opens a short read-only connection and waits while a writer holds
the file, so it sees the database before or after an ingest, never between. A database of an older ``STORE_VERSION``
is refused with "run `harness ingest`".
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb

from harness.errors import HarnessError
from harness.records import file_lock
from harness.store_tables import STORE_VERSION

DB_PATH = Path("results/harness.duckdb")

LOCK_WAIT_S = 120.0  # how long a connection waits for another process's lock on the database


@contextlib.contextmanager
def connect_readonly(db_path: Path = DB_PATH) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short-lived read-only connection; raises HarnessError when there is no database yet."""
    if not db_path.exists():
        raise HarnessError(f"{db_path}: no database yet; create it with `harness ingest`")
    con = connect(db_path, read_only=True)
    try:
        yield con
    finally:
        con.close()


def connect(db_path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open the database, waiting (up to ``LOCK_WAIT_S``) while another process holds it: DuckDB lets one process
    write or several read, and an incremental ingest holds the file for the moments of its transaction."""
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            return duckdb.connect(str(db_path), read_only=read_only)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise
            if time.monotonic() > deadline:
                raise HarnessError(f"{db_path}: still locked by another process after {LOCK_WAIT_S:.0f} s") from exc
            time.sleep(0.02)


def query(sql: str, params: Sequence[Any] = (), db_path: Path = DB_PATH) -> list[dict[str, Any]]:
    """Run one read-only query and return its rows as dicts (the connection is closed before returning)."""
    with connect_readonly(db_path) as con:
        try:
            cursor = con.execute(sql, list(params))
            names = [column[0] for column in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        except duckdb.Error as exc:  # a damaged file (e.g. truncated): its header reads, a table does not
            why = str(exc).splitlines()[0]
            fix = "run `harness ingest --rebuild` to build it again from results/runs/"
            raise UnreadableDatabase(f"{db_path}: cannot read the database ({why}); {fix}") from exc


class UnreadableDatabase(HarnessError):
    """A database file that opens but cannot be read (a damaged file)."""


def store_version(db_path: Path = DB_PATH) -> int | None:
    """The ``STORE_VERSION`` that wrote the database (None when it is not a harness database at all)."""
    try:
        return int(query("SELECT store_version FROM meta", db_path=db_path)[0]["store_version"])
    except (duckdb.Error, UnreadableDatabase, IndexError, TypeError, ValueError):
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
    """sha256 over every registered paper's id, title, claims file and budget plan bytes: ingest stores it, so
    ``harness report`` can tell that claims, plans (or titles) changed since (without parsing them)."""
    from harness import registry  # here, not at the top: the leaderboard reads the store without the registry

    digest = hashlib.sha256()
    for repro in registry.reproductions().values():
        for path in (repro.claims_path, repro.plan_path):  # a plan judges the budget claims too
            data = path.read_bytes() if path.exists() else b""
            digest.update(f"{repro.id}\0{repro.title}\0".encode() + data + b"\0")
    return digest.hexdigest()


def claims_changed(db_path: Path = DB_PATH) -> bool:
    """Whether the registered papers' claims files differ from those the database's verdicts were judged from."""
    stored = query("SELECT claims_digest FROM meta", db_path=db_path)[0]["claims_digest"]
    return stored != claims_digest()


@contextlib.contextmanager
def writer_lock(db_path: Path = DB_PATH) -> Iterator[None]:
    """Hold the exclusive ``flock`` on ``.<db name>.lock`` beside the database: one writer at a time, so two ingests
    (or runs) at once cannot drop each other's records. The lock goes with the process, however it ends."""
    with file_lock(db_path.with_name(f".{db_path.name}.lock")):
        yield
