"""Judging in the store: each claim's verdict over the stored records under its paper's budget plan, the points of
trend claims, the claims and papers tables, and each paper's own figures (harness.store calls these inside its
transaction; nothing here commits).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from harness import registry
from harness.claims import Claim, claim_row, registered_claims
from harness.errors import HarnessError
from harness.plans import paper_plan
from harness.records import RunRecord
from harness.store_access import claims_digest
from harness.store_staging import IngestResult
from harness.store_tables import STORE_VERSION, Key, insert_rows
from harness.verdicts import holm, judge, trend_points

FAMILY = ("delta", "trend")  # the claims a paper's Holm correction runs over (those judged at the budget tier)


@dataclass
class LazyClaims:
    """The registered claims, parsed on first use: parsing every claims file is the slowest part of a small ingest,
    and an ingest that touches no claim's data (with the claims files unchanged) needs none of them."""

    parsed: list[Claim] | None = None

    def get(self) -> list[Claim]:
        if self.parsed is None:
            self.parsed = registered_claims()
        return self.parsed


def stored_records(con: duckdb.DuckDBPyConnection, where: str, params: Sequence[Any]) -> list[RunRecord]:
    """The stored records matching ``where``, in run id order (the order a rebuild from the files judged in)."""
    rows = con.execute(f"SELECT record FROM runs WHERE {where} ORDER BY run_id", list(params)).fetchall()
    return [RunRecord.model_validate_json(text) for (text,) in rows]


def judge_claims(
    con: duckdb.DuckDBPyConnection, claims: Sequence[Claim], chosen: Sequence[int], tmp: Path, results_dir: Path
) -> None:
    """Judge ``claims[i]`` for each ``i`` in ``chosen`` over the stored records, under their papers' budget plans;
    replace their verdicts and trend points. Claims on the same data share one read of their records. A paper's
    delta and trend claims are judged together (Holm's correction is over all of a paper's budget verdicts)."""
    papers = {claims[i].paper for i in chosen}
    chosen = sorted({*chosen, *(i for i, c in enumerate(claims) if c.paper in papers and c.kind in FAMILY)})
    plans = _plans(papers)
    origins = _origins(papers)
    groups: dict[tuple[tuple[str, ...], str, str], list[int]] = {}
    for i in chosen:
        claim = claims[i]
        sources = tuple(dict.fromkeys([claim.paper, claim.baseline_paper]))
        groups.setdefault((sources, claim.dataset, claim.split), []).append(i)
    verdicts, points = [], []
    for (sources, dataset, split), positions in groups.items():
        where = f"paper IN ({', '.join('?' * len(sources))}) AND dataset = ? AND split = ?"
        records = stored_records(con, where, [*sources, dataset, split])
        records += _premise_records(con, [claims[i] for i in positions], plans, sources, dataset, split)
        by_id = {record.run_id: record for record in records}
        for i in positions:
            verdict = judge(claims[i], records, plans.get(claims[i].paper), results_dir, origins)
            verdicts.append((i, verdict))
            if claims[i].kind == "trend":
                matched = trend_points(claims[i], [by_id[run_id] for run_id in verdict.run_ids])
                points += [{"paper": claims[i].paper, "claim_id": claims[i].id, **point} for point in matched]
    for paper in papers:
        holm([verdict for _, verdict in verdicts if verdict.paper == paper])
    verdicts = [{"position": i, **verdict.row()} for i, verdict in sorted(verdicts, key=lambda item: item[0])]
    _replace(con, "verdicts", [(claims[i].paper, claims[i].id) for i in chosen], verdicts, tmp)
    _replace(con, "trend_points", [(claims[i].paper, claims[i].id) for i in chosen], points, tmp)


def _premise_records(
    con: duckdb.DuckDBPyConnection, claims: Sequence[Claim], plans: dict[str, Any], sources: tuple[str, ...],
    dataset: str, split: str,
) -> list[Any]:  # fmt: skip
    """The records of the models and references the claims' plan premises name on other data (a fine-tuning
    claim's premise on its pre-training: the LM's perplexity against unigram's, on the LM's corpus)."""
    models = sorted({
        name
        for claim in claims
        if (entry := plans[claim.paper].entry(claim.id) if claim.paper in plans else None) is not None
        for premise in entry.premises
        for name in (premise.model, premise.reference)
        if name
    })  # fmt: skip
    if not models:
        return []
    where = (
        f"paper IN ({', '.join('?' * len(sources))}) AND model IN ({', '.join('?' * len(models))}) "
        "AND tier = 'budget' AND NOT (dataset = ? AND split = ?)"
    )
    return stored_records(con, where, [*sources, *models, dataset, split])


def _plans(papers: set[str]) -> dict[str, Any]:
    """The committed budget plan of each paper that has one; a broken plan is a warning naming its file, and that
    paper's budget claims are judged without a plan (off-plan: shown, never judged)."""
    found, registered = {}, registry.reproductions()
    for paper in sorted(papers & set(registered)):
        try:
            plan = paper_plan(registered[paper])
        except HarnessError as exc:
            print(f"harness: warning: {exc}; its budget claims are judged off-plan", file=sys.stderr)
            continue
        if plan is not None:
            found[paper] = plan
    return found


def _origins(papers: set[str]) -> dict[str, str]:
    """Run id -> the published record set that ships it, for the given papers (harness.published)."""
    from harness.published import origins

    registered = registry.reproductions()
    return origins(registered[paper] for paper in sorted(papers & set(registered)))


def _replace(con: duckdb.DuckDBPyConnection, table: str, keys: list[tuple[str, str]], rows: list[dict], tmp: Path):
    """Delete the rows of ``table`` for the (paper, claim_id) ``keys`` and insert ``rows``."""
    if keys:
        papers, ids = [list(column) for column in zip(*keys, strict=True)]
        con.execute(
            f"DELETE FROM {table} WHERE EXISTS (SELECT 1 FROM (SELECT unnest(?::VARCHAR[]) AS p, "
            "unnest(?::VARCHAR[]) AS c) WHERE p = paper AND c = claim_id)",
            [papers, ids],
        )
    insert_rows(con, table, rows, tmp)


def draw_figures(con: duckdb.DuckDBPyConnection, papers: set[str] | None, tmp: Path, result: IngestResult) -> None:
    """Redraw the figures of ``papers`` (None: every registered paper) over their stored records. A figures
    function that fails is reported as an error; the rest of the database is still written."""
    rows: list[dict[str, Any]] = []
    for repro in registry.reproductions().values():
        if repro.figures is None or (papers is not None and repro.id not in papers):
            continue
        con.execute("DELETE FROM figures WHERE paper = ?", [repro.id])
        mine = con.execute("SELECT record FROM runs WHERE paper = ? ORDER BY run_id", [repro.id]).fetchall()
        if not mine:
            continue
        try:
            drawn = list(registry.load_object(repro.figures)([json.loads(text) for (text,) in mine]))
        except Exception as exc:  # plugin code: name it, keep the verdicts
            result.errors.append(f"paper {repro.id!r}: its figures function {repro.figures!r} failed: {exc}")
            continue
        rows += [{"paper": repro.id, "position": i, "title": t, "spec": spec} for i, (t, spec) in enumerate(drawn)]
    insert_rows(con, "figures", rows, tmp)


def write_claims(con: duckdb.DuckDBPyConnection, claims: Sequence[Claim], tmp: Path) -> None:
    """Replace the ``claims`` and ``papers`` tables and the stored claims digest."""
    con.execute("DELETE FROM claims; DELETE FROM papers")
    insert_rows(con, "claims", [claim_row(c) for c in claims], tmp)
    papers = [{"paper": r.id, "title": r.title, "link": r.link} for r in registry.reproductions().values()]
    insert_rows(con, "papers", papers, tmp)
    con.execute("DELETE FROM meta")
    con.execute("INSERT INTO meta VALUES (?, ?)", [STORE_VERSION, claims_digest()])


def touched_claims(con: duckdb.DuckDBPyConnection, touched: set[Key]) -> list[int]:
    """The positions of the stored claims whose records (or baseline's) may be among the (paper, dataset, split)
    ``touched``: read from the ``claims`` table, so that no claims file is parsed when there are none."""
    if not touched:
        return []
    rows = con.execute(
        "SELECT v.position, c.paper, c.baseline_paper, c.dataset, c.split "
        "FROM verdicts v JOIN claims c USING (paper, claim_id) ORDER BY v.position"
    ).fetchall()
    return [
        position
        for position, paper, baseline_paper, dataset, split in rows
        if (paper, dataset, split) in touched or (baseline_paper, dataset, split) in touched
    ]
