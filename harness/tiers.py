"""The tiers a run can be at, and what each may support (DESIGN.md, "Tiers"): the one table every part reads.

Rows are in the order one climbs them, cheapest first (``harness list``, ``--tier`` choices, ``dvc repro``).
``rank`` orders them by strength of evidence instead: a verdict rests on the highest-ranked tier that may judge
its claim and has results (training from scratch outranks evaluating released weights). Standard library only:
the CLI imports this at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Tier:
    """One tier. ``judges``: the claim kinds its results may judge (docs/verdicts.md); ``deterministic``: no seed
    noise, so one result decides; ``needs_config``: runs from the paper's ``configs/<tier>.yaml``; ``reads_data``:
    reads the paper's dataset from ``--data-root``; ``cpu``: runs on a CPU in minutes, so ``dvc repro`` runs it by
    default; ``per_seed``: the pipeline runs it once per seed it is given (arch profiles, smoke only proves the
    pipeline: once is enough)."""

    name: str
    rank: int
    description: str
    judges: tuple[str, ...]
    deterministic: bool = False
    needs_config: bool = True
    reads_data: bool = False
    cpu: bool = False
    per_seed: bool = True


TABLE = (
    Tier("arch", 1, "architecture claims: parameter count, multiply-adds, shapes (no data, seconds on a CPU)",
         judges=("arch",), deterministic=True, needs_config=False, cpu=True, per_seed=False),
    Tier("smoke", 2, "tiny data in the real format: the pipeline runs end to end; never a paper number",
         judges=(), cpu=True, per_seed=False),
    Tier("budget", 3, "small real data on a CPU or one GPU: trends and the sign of deltas at small scale",
         judges=("delta", "trend"), cpu=True),
    Tier("full", 5, "the paper's dataset at --data-root, trained from scratch: the paper's numbers",
         judges=("scalar", "delta", "trend"), reads_data=True),
    Tier("weights", 4, "released or given weights evaluated on the paper's dataset: the paper's evaluation numbers",
         judges=("scalar", "delta", "trend"), deterministic=True, reads_data=True),
)  # fmt: skip
CLAIM_KINDS = ("scalar", "delta", "trend", "arch")

BY_NAME = {tier.name: tier for tier in TABLE}
TIERS = tuple(tier.name for tier in TABLE)  # cheapest first
TIER_ORDER = tuple(sorted(TIERS, key=lambda name: -BY_NAME[name].rank))  # strongest evidence first
JUDGING_TIERS = {kind: tuple(name for name in TIER_ORDER if kind in BY_NAME[name].judges) for kind in CLAIM_KINDS}
# The tier a claim with no judging result yet is first run at: the cheapest that may judge its kind.
FIRST_TIER = {kind: next(name for name in TIERS if kind in BY_NAME[name].judges) for kind in CLAIM_KINDS}
DETERMINISTIC_TIERS = tuple(name for name in TIERS if BY_NAME[name].deterministic)
DATA_TIERS = tuple(name for name in TIERS if BY_NAME[name].reads_data)
CPU_TIERS = tuple(name for name in TIERS if BY_NAME[name].cpu)
