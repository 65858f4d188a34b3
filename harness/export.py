"""``harness export``: the store's runs with one real column per metric (CSV or Parquet, written by DuckDB), or
the Papers-with-Code ``model-index`` YAML layout (Collections of papers; Models with Results of Task, Dataset and
Metrics). Reads the database ``harness ingest`` wrote, read-only."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from harness import registry
from harness.errors import HarnessError
from harness.store_access import DB_PATH, connect_readonly, query, require_current

FORMATS = ("csv", "parquet", "model-index")
RUN_FIELDS = ("run_id", "paper", "model", "tier", "dataset", "split", "seed", "protocol", "status", "git_sha",
              "config_hash", "data_hash", "finished_at")  # fmt: skip


def wide_query(paper: str | None = None) -> tuple[str, list[Any]]:
    """SQL for one row per run: the run's fields, then one DOUBLE column per metric name (NULL where not measured)."""
    names = [row["name"] for row in query("SELECT DISTINCT name FROM metrics ORDER BY name", db_path=DB_PATH)]
    pivot = ", ".join(
        f"max(value) FILTER (WHERE name = '{name.replace(chr(39), chr(39) * 2)}') AS \"{name.replace(chr(34), '')}\""
        for name in names
    )
    metrics = f"(SELECT run_id{', ' + pivot if pivot else ''} FROM metrics GROUP BY run_id)"
    where, params = ("WHERE r.paper = ?", [paper]) if paper else ("", [])
    columns = ", ".join(f"r.{field}" for field in RUN_FIELDS)
    extra = ", m.* EXCLUDE (run_id)" if names else ""
    order = "r.paper, r.model, r.tier, r.dataset, r.split, r.seed, r.run_id"
    sql = f"SELECT {columns}{extra} FROM runs r LEFT JOIN {metrics} m USING (run_id) {where} ORDER BY {order}"
    return sql, params


def export_table(out: Path, fmt: str, paper: str | None = None) -> int:
    """Write the wide table to ``out`` as CSV or Parquet; returns the number of runs written."""
    require_current(DB_PATH)
    sql, params = wide_query(paper)
    options = "FORMAT csv, HEADER true" if fmt == "csv" else "FORMAT parquet"
    with connect_readonly(DB_PATH) as con:
        count = con.execute(f"SELECT count(*) FROM ({sql})", params).fetchone()[0]
        try:
            con.execute(f"COPY ({sql}) TO '{_quoted(out)}' ({options})", params)
        except Exception as exc:  # duckdb.IOException and friends: name the file
            raise HarnessError(f"{out}: cannot write the export: {exc}") from None
    return int(count)


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")


def model_index(paper: str | None = None) -> dict[str, Any]:
    """The model-index document: a Collection per paper (title and link when registered) and a Model per model id,
    with one Result per (dataset, split, tier, protocol): each metric's mean over the seeds run. Smoke runs prove the
    pipeline only and are left out (docs/verdicts.md)."""
    require_current(DB_PATH)
    where, params = ("AND r.paper = ?", [paper]) if paper else ("", [])
    rows = query(
        "SELECT r.paper, r.model, r.dataset, r.split, r.tier, r.protocol, m.name, avg(m.value) AS value, "
        "count(DISTINCT r.seed) AS seeds FROM runs r JOIN metrics m USING (run_id) "
        f"WHERE r.tier <> 'smoke' {where} GROUP BY ALL ORDER BY ALL",
        params, db_path=DB_PATH,
    )  # fmt: skip
    results: dict[tuple[str, str], dict[tuple, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        key = (row["dataset"], row["split"], row["tier"], row["protocol"])
        entry = results[(row["paper"], row["model"])].setdefault(key, _result(row))
        entry["Metrics"][row["name"]] = row["value"]
    models = [
        {"Name": model, "In Collection": paper_id, "Results": list(found.values())}
        for (paper_id, model), found in results.items()
    ]
    return {"Collections": [_collection(p) for p in sorted({p for p, _ in results})], "Models": models}


def _result(row: dict[str, Any]) -> dict[str, Any]:
    metadata = {"Split": row["split"], "Tier": row["tier"], "Protocol": row["protocol"], "Seeds": row["seeds"]}
    return {"Task": _task(row["dataset"]), "Dataset": row["dataset"], "Metrics": {}, "Metadata": metadata}


def _task(dataset: str) -> str:
    """The registered task whose id is the dataset id (most are), else the dataset id itself."""
    task = registry.tasks().get(dataset)
    return task.id if task is not None else dataset


def _collection(paper: str) -> dict[str, Any]:
    repro = registry.reproductions().get(paper)
    if repro is None:  # records of a paper not registered here
        return {"Name": paper}
    return {"Name": paper, "Paper": {"Title": repro.title, "URL": repro.link}}


def export(out: Path, fmt: str, paper: str | None = None) -> int:
    """Write ``fmt`` to ``out``; returns how many runs (table formats) or models (model-index) it holds."""
    import yaml

    if fmt != "model-index":
        return export_table(out, fmt, paper)
    document = model_index(paper)
    try:
        out.write_text(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), encoding="utf-8")
    except OSError as exc:
        raise HarnessError(f"{out}: cannot write the export: {exc.strerror}") from None
    return len(document["Models"])
