"""What ``harness report`` shows: the verdicts ingest wrote, the paper's numbers apart from the direction at budget
scale (docs/verdicts.md). It judges nothing and reads only the ``verdicts`` and ``claims`` tables.

A paper-scale verdict (full, weights, arch) is about the paper's number: reported, tolerance, Δ. A budget verdict
judges the sign of a difference at small scale: its interval, p and Holm p, never a Δ to the paper's value. A
derived claim (the value follows from the stated configuration) is no evidence of fidelity, and an arch deviation
(a reviewed difference from the paper's count) is not a reproduction: both are counted apart.

Columns the judge of store version 6 writes may be null in a database (a judge before it): the scale is then that of
the tier (budget, else the paper's), tags and premises are empty lists, the rest null.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from harness.store_access import DB_PATH, claims_changed, query, require_current
from harness.tables import table
from harness.verdicts import REPORT_KEYS, STATUSES

SCALES = {"paper": "The paper's numbers", "budget": "Direction at budget scale"}
EVIDENCE_KEYS = (
    "reason", "scale", "analysis", "low", "high", "p_value", "p_holm", "excluded", "seeds_needed", "machines",
    "machine_ids", "tags", "premises", "plan", "examples", "off_plan", "evidence",
)  # fmt: skip
ALWAYS_COUNTED = ("reproduced", "not-reproduced", "inconclusive", "not-run")  # in the summary even at 0
NO_EVIDENCE = "derived (no evidence)"
STALE = "claims files changed since the last ingest; run `harness ingest` to judge them anew"
# the human tables: the paper's numbers keep reported / tolerance / delta; budget rows show the interval and p-values
PAPER_COLUMNS = ["paper", "claim_id", "kind", "metric", "reported", "tolerance", "status", "tags", "tier", "mean",
                 "std", "n", "delta", "machines"]  # fmt: skip
BUDGET_COLUMNS = ["paper", "claim_id", "kind", "metric", "status", "tags", "tier", "mean", "interval", "p", "p_holm",
                  "n", "machines", "analysis"]  # fmt: skip
SQL = (
    "SELECT {columns}, c.derived AS claim_derived, c.constructed AS claim_constructed FROM verdicts v "
    "LEFT JOIN claims c ON c.paper = v.paper AND c.claim_id = v.claim_id{where} ORDER BY v.position"
)


def read(paper: str | None = None, db_path: Path | None = None) -> list[dict[str, Any]]:
    """The report's rows, in claims-file order: DESIGN.md's keys, then ``EVIDENCE_KEYS``, nulls filled in
    (:func:`complete`)."""
    db_path = db_path or DB_PATH
    require_current(db_path)
    columns = ", ".join(f'v."{key}"' for key in dict.fromkeys((*REPORT_KEYS, *EVIDENCE_KEYS)))
    where, params = (" WHERE v.paper = ?", [paper]) if paper else ("", [])
    return [complete(row) for row in query(SQL.format(columns=columns, where=where), params, db_path=db_path)]


def complete(row: dict[str, Any]) -> dict[str, Any]:
    """One verdict row as the report gives it: the scale (else the tier's), the tags with the claim's ``derived``
    and ``constructed`` flags, premises and examples parsed from JSON, and no Δ at budget scale (sign only)."""
    derived, constructed = row.pop("claim_derived", None), row.pop("claim_constructed", None)
    row["scale"] = row["scale"] or ("budget" if row["tier"] == "budget" or row["plan"] else "paper")
    flags = ["derived"] * bool(derived) + ["constructed"] * bool(constructed)
    row["tags"] = list(dict.fromkeys([*(row["tags"] or []), *flags]))
    row["machine_ids"] = list(row["machine_ids"] or [])
    row["premises"] = _parsed(row["premises"]) or []
    row["examples"] = _parsed(row["examples"])
    row["evidence"] = _parsed(row.get("evidence"))
    row["machines"] = row["machines"] or len(row["machine_ids"])
    row["off_plan"] = row["off_plan"] or 0
    if row["scale"] == "budget":
        row["delta"] = None
    return row


def _parsed(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def counted_as(row: dict[str, Any]) -> str:
    """What a verdict counts as in a summary: a derived claim is no evidence, an arch deviation is not reproduced."""
    if "derived" in row["tags"]:
        return NO_EVIDENCE
    return "deviation" if "deviation" in row["tags"] else row["status"]


def summary(rows: list[dict[str, Any]]) -> str:
    """``N claim(s). The paper's numbers (n): ... Direction at budget scale (m): ...``, counts per status."""
    parts = [f"{len(rows)} claim(s)."]
    for scale, title in SCALES.items():
        mine = [row for row in rows if row["scale"] == scale]
        found = Counter(counted_as(row) for row in mine)
        shown = [*ALWAYS_COUNTED, *sorted(set(found) - set(ALWAYS_COUNTED), key=_order)]
        counts = ", ".join(f"{found[status]} {status}" for status in shown) if mine else "none"
        parts.append(f"{title.removeprefix('The ').capitalize()} ({len(mine)}): {counts}.")
    return " ".join(parts)


def _order(status: str) -> int:
    return STATUSES.index(status) if status in STATUSES else len(STATUSES)


def sections(rows: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]], list[str]]]:
    """The human report's tables: (heading, rows, columns) of each scale that has verdicts."""
    found = []
    for scale, title in SCALES.items():
        mine = [_shown(row) for row in rows if row["scale"] == scale]
        if mine:
            heading = title if scale == "paper" else f"{title} (the sign of each difference, never its size)"
            found.append((heading, mine, PAPER_COLUMNS if scale == "paper" else BUDGET_COLUMNS))
    return found


def _shown(row: dict[str, Any]) -> dict[str, Any]:
    low, high = row["low"], row["high"]
    interval = f"[{low:.4g}, {high:.4g}]" if low is not None and high is not None else None
    return row | {"interval": interval, "p": row["p_value"], "tags": row["tags"] or None}


def text(rows: list[dict[str, Any]]) -> str:
    """The human report: a table per scale (:func:`sections`), then the :func:`summary`."""
    return "".join(f"{heading}\n{table(shown, columns)}\n\n" for heading, shown, columns in sections(rows)) + summary(
        rows
    )


def stale_note(db_path: Path | None = None) -> str | None:
    """The note a report opens with when the claims files changed since the verdicts were judged, else None."""
    return STALE if claims_changed(db_path or DB_PATH) else None


def run_verdicts(db_path: Path | None = None) -> list[dict[str, Any]]:
    """Every verdict with the runs it rests on, as the last ingest wrote them (what ``harness run`` shows)."""
    return query("SELECT claim_id, metric, reported, status, run_ids FROM verdicts", db_path=db_path or DB_PATH)
