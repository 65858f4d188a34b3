"""XLNet's claims: every table value is the cell its quote prints (the second check of the transcription), every
table of v2 is covered, and the arch claims are the counts of the registered networks."""

from __future__ import annotations

import re

import pytest
import torch

from harness.claims import registered_claims
from reproductions.xlnet.model import SIZES, XLNet

CLAIMS = registered_claims("xlnet")


def printed_numbers(quote: str) -> list[float]:
    """The numbers of the quoted cell (after the column's colon)."""
    cell = quote.rsplit(": ", 1)[1]
    return [float(x) for x in re.findall(r"\d+(?:\.\d+)?", cell)]


def test_every_value_is_printed_in_its_quote() -> None:
    wrong = [c.id for c in CLAIMS if c.kind == "scalar" and c.value not in printed_numbers(c.quote)]
    assert wrong == []


def test_every_table_is_claimed() -> None:
    sources = {c.source for c in CLAIMS}
    assert {f"Table {n}" for n in range(1, 7)} <= sources
    counts = {n: sum(c.source == f"Table {n}" for c in CLAIMS) for n in range(1, 7)}
    # Table 1: 2 rows x 13 numbers; 2: 5 rows x (3 RACE + 2 ranking); 3: 6 rows x 4; 4: 42 cells less 9 dashes;
    # 5: 3 dev rows (BERT's MNLI-mm and the WNLI column are dashes) + 3 test rows of 10; 6: 8 rows x 6
    assert counts == {1: 26, 2: 25, 3: 24, 4: 33, 5: 8 + 9 + 9 + 30, 6: 48}


@pytest.mark.parametrize("model", ["xlnet-base", "xlnet-large"])
def test_arch_claim_is_the_count_of_the_configuration(model: str) -> None:
    (claim,) = [c for c in CLAIMS if c.kind == "arch" and c.model == model]
    with torch.device("meta"):
        params = sum(p.numel() for p in XLNet(SIZES[model]).parameters())
    assert abs(params / 1e6 - claim.value) <= claim.tolerance
