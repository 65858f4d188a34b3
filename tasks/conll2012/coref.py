"""The CoNLL-2012 reference coreference scorer, v8.01 (``scorer.pl`` + ``CorScorer.pm``), in Python.

Scorer: Pradhan, Luo, Recasens, Hovy, Ng & Strube, "Scoring Coreference Partitions of Predicted Mentions: A Reference
Implementation" (ACL 2014), https://github.com/conll/reference-coreference-scorers (``$VERSION = '8.01'``). Metrics:
MUC (Vilain et al. 1995, links), B³ (Bagga & Baldwin 1998, per mention), CEAFφ4 / ``ceafe`` (Luo 2005, entity
similarity 2|K∩R|/(|K|+|R|), best one-to-one alignment by Kuhn-Munkres; ``scipy.optimize.linear_sum_assignment``
here) and CEAFφ3 / ``ceafm`` (mention similarity |K∩R|). Followed step by step, quirks included:

- mentions are read from the last column of each token row: ``(N)`` one-token mentions first, then every ``(N``
  opening, then every ``N)`` closing the latest open mention of entity ``N``; ``(N+M)`` double antecedents are
  dropped; a row ``_`` holds nothing; token positions count the token rows of the document (blank lines skipped);
- a response mention with the span of an earlier matched one is dropped ("Repeated mention in the response"), and
  more than 10 of them in a file make the scorer refuse to score (:class:`HarnessError` here);
- MUC scores the chains after the scorer's adjustments (key mentions missing from the response added to it as
  singletons, response singletons that are not key mentions dropped); B³ and CEAF score the chains as read;
- numerators and denominators are summed over documents; recall = num/den, precision = num/den, F1 the harmonic
  mean, each 0 when undefined, as ``ShowRPF`` computes them. The script prints them truncated to two decimals
  (``int(x * 10000) / 100``); here they are exact percentages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError

Mention = tuple[int, int]
_DOUBLE = re.compile(r"\((\d+\+\d)\)")
_SINGLE = re.compile(r"\((\d+)\)")
_OPEN = re.compile(r"\((\d+)")
_CLOSE = re.compile(r"(\d+)\)")
MAX_REPEATED = 10


def _take_all(pattern: re.Pattern[str], cell: str) -> tuple[list[str], str]:
    """Perl's ``while ($cell =~ s/pattern//)``: the group of every match removed, first match first, and the rest."""
    taken = []
    while (found := pattern.search(cell)) is not None:
        taken.append(found.group(1))
        cell = cell[: found.start()] + cell[found.end() :]
    return taken, cell


@dataclass
class _Reading:
    entities: dict[str, list[Mention]] = field(default_factory=dict)  # in first-seen order, as GetIndex numbers them
    half: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # open (token, line) per entity

    def entity(self, number: str) -> list[Mention]:
        return self.entities.setdefault(number, [])


def _read_cell(reading: _Reading, cell: str, token: int, line: int, path: Path) -> None:
    if cell == "_":
        return
    _, cell = _take_all(_DOUBLE, cell)
    singles, cell = _take_all(_SINGLE, cell)
    for number in singles:
        reading.entity(number).append((token, token))
    opens, cell = _take_all(_OPEN, cell)
    for number in opens:
        reading.entity(number)
        reading.half.setdefault(number, []).append((token, line))
    closes, cell = _take_all(_CLOSE, cell)
    for number in closes:
        opened = reading.half.get(number)
        if not opened:
            raise HarnessError(f"{path}:{line}: a mention of entity {number} ends here without a beginning")
        reading.entity(number).append((opened.pop()[0], token))


def read_chains(cells: Sequence[tuple[int, str]], path: Path, document: str) -> list[list[Mention]]:
    """The entities of one document from its coreference cells ``(line number, last column)``, in token order."""
    reading = _Reading()
    for token, (line, cell) in enumerate(cells):
        _read_cell(reading, cell, token, line, path)
    for number, opened in reading.half.items():
        if opened:
            raise HarnessError(f"{path}:{opened[0][1]}: a mention of entity {number} opens here and never closes "
                               f"(document {document!r})")  # fmt: skip
    return list(reading.entities.values())


@dataclass
class Counts:
    """Numerators and denominators of recall and precision, summed over documents."""

    recall_num: float = 0.0
    recall_den: float = 0.0
    precision_num: float = 0.0
    precision_den: float = 0.0

    def add(self, other: tuple[float, float, float, float]) -> None:
        self.recall_num += other[0]
        self.recall_den += other[1]
        self.precision_num += other[2]
        self.precision_den += other[3]

    def scores(self, prefix: str) -> dict[str, float]:
        precision = self.precision_num / self.precision_den if self.precision_den else 0.0
        recall = self.recall_num / self.recall_den if self.recall_den else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {f"{prefix}_recall": 100 * recall, f"{prefix}_precision": 100 * precision, f"{prefix}_f1": 100 * f1}


@dataclass
class Identified:
    """One document after ``IdentifMentions``: chains of mention ids, as read and as adjusted for MUC."""

    keys: list[list[int]]
    response: list[list[int]]
    muc_keys: list[list[int]]
    muc_response: list[list[int]]
    mentions: tuple[int, int, int, int]  # recall num, recall den, precision num, precision den
    repeated: int


def _response_ids(response: list[list[Mention]], ids: dict[Mention, int], repeated: int, limit: int | None, where: str):
    mapping: dict[Mention, int] = {}
    assigned: set[int] = set()
    kept_entities = []
    for entity in response:
        kept = []
        for mention in entity:
            if mention in mapping:
                repeated += 1
                if limit is not None and repeated > limit:
                    raise HarnessError(f"{where}: more than {limit} repeated mentions in the response; the "
                                       "reference scorer refuses to score it")  # fmt: skip
                continue
            if mention in ids and ids[mention] not in assigned:
                assigned.add(ids[mention])
                mapping[mention] = ids[mention]
            kept.append(mention)
        if kept:
            kept_entities.append(kept)
    return mapping, len(assigned), kept_entities, repeated


def identify(
    keys: list[list[Mention]],
    response: list[list[Mention]],
    repeated: int = 0,
    where: str = "",
    limit: int | None = MAX_REPEATED,
) -> Identified:
    """``IdentifMentions``: number the key mentions, match response mentions by exact span, adjust for MUC.
    ``repeated``: repeats dropped so far in the file; more than ``limit`` raise (``None``: no limit)."""
    ids: dict[Mention, int] = {}
    count = 0
    for entity in keys:
        for mention in entity:
            ids[mention] = count  # a repeated key mention keeps its last number, as in the script
            count += 1
    mapping, exact, response, repeated = _response_ids(response, ids, repeated, limit, where)
    for entity in response:
        for mention in entity:
            if mention not in mapping:
                mapping[mention] = count
                count += 1
    key_chains = [[ids[m] for m in entity] for entity in keys]
    response_chains = [[mapping[m] for m in entity] for entity in response]
    muc_response = _adjust_for_muc(key_chains, response_chains, len(ids) - exact, count - len(ids))
    mentions = (exact, len(ids), exact, len(mapping))
    return Identified(key_chains, response_chains, key_chains, muc_response, mentions, repeated)


def _adjust_for_muc(keys: list[list[int]], response: list[list[int]], missed: int, invented: int) -> list[list[int]]:
    """Steps 1 and 2 of ``IdentifMentions``: missed key mentions join the response as singletons; response
    singletons that are not key mentions go; empty chains go."""
    in_response = {m for chain in response for m in chain}
    in_keys = {m for chain in keys for m in chain}
    chains = [list(chain) for chain in response]
    if missed > 0:
        chains += [[m] for chain in keys for m in chain if m not in in_response]
    if invented > 0:
        chains = [[] if len(chain) == 1 and chain[0] not in in_keys else chain for chain in chains]
    return [chain for chain in chains if chain]


def _index(chains: list[list[int]]) -> dict[int, int]:
    return {m: i for i, chain in enumerate(chains) for m in chain}


def muc(keys: list[list[int]], response: list[list[int]]) -> tuple[float, float, float, float]:
    """Correct links (a response mention counts when a later one of its chain shares its key chain), key links,
    correct links, response links."""
    key_of = _index(keys)
    correct = 0
    for chain in response:
        later: set[int] = set()
        for m in reversed(chain):
            k = key_of.get(m)
            correct += k is not None and k in later
            if k is not None:
                later.add(k)
    key_links = sum(len(chain) - 1 for chain in keys if chain)
    response_links = sum(len(chain) - 1 for chain in response if chain)
    return correct, key_links, correct, response_links


def bcubed(keys: list[list[int]], response: list[list[int]]) -> tuple[float, float, float, float]:
    """Per response mention: |R∩K|/|R| to precision, |R∩K|/|K| to recall; over key and response mention counts."""
    key_of = _index(keys)
    precision = recall = 0.0
    for chain in response:
        for m in chain:
            key_chain = keys[key_of[m]] if m in key_of else []
            members = set(key_chain)
            common = sum(1 for other in chain if other in members)
            precision += common / len(chain)
            if key_chain:
                recall += common / len(key_chain)
    return recall, sum(map(len, keys)), precision, sum(map(len, response))


def _similarity(key: list[int], response: list[int], entity_based: bool) -> float:
    members = set(response)
    common = sum(1 for m in key if m in members)
    if not entity_based:
        return common
    return 2 * common / (len(key) + len(response)) if key or response else 0.0


def ceaf(keys: list[list[int]], response: list[list[int]], entity_based: bool) -> tuple[float, float, float, float]:
    """CEAF with φ4 (``entity_based``) or φ3: the best one-to-one alignment's total similarity over the key's and
    the response's entity (φ4) or mention (φ3) counts."""
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    total = 0.0
    if keys and response:
        sim = np.array([[_similarity(k, r, entity_based) for r in response] for k in keys], dtype=np.float64)
        rows, cols = linear_sum_assignment(sim, maximize=True)
        total = float(sum(sim[i, j] for i, j in zip(rows, cols, strict=True)))
    if entity_based:
        return total, sum(1 for k in keys if k), total, sum(1 for r in response if r)
    return total, sum(map(len, keys)), total, sum(map(len, response))


METRICS = ("muc", "bcub", "ceafe", "ceafm")


def document_counts(doc: Identified) -> dict[str, tuple[float, float, float, float]]:
    """The four metrics' numerators and denominators of one document, and ``mentions``' (identification)."""
    return {
        "muc": muc(doc.muc_keys, doc.muc_response),
        "bcub": bcubed(doc.keys, doc.response),
        "ceafe": ceaf(doc.keys, doc.response, entity_based=True),
        "ceafm": ceaf(doc.keys, doc.response, entity_based=False),
        "mentions": tuple(float(x) for x in doc.mentions),
    }


def conll_scores(totals: dict[str, Counts]) -> dict[str, float]:
    """Recall, precision and F1 of each metric and of mention identification, and ``f1``: the mean of the MUC, B³
    and CEAFφ4 F1s (the CoNLL-2012 average)."""
    scores: dict[str, float] = {}
    for name in (*METRICS, "mentions"):
        scores.update(totals[name].scores(name))
    scores["f1"] = (scores["muc_f1"] + scores["bcub_f1"] + scores["ceafe_f1"]) / 3
    return scores


def cells(chains: Sequence[Sequence[Mention]], length: int) -> list[str]:
    """The last-column cells of ``length`` tokens holding ``chains`` (entity ``i`` written as ``i``): ``(i`` where a
    mention opens, ``i)`` where it closes, ``(i)`` for a one-token mention, ``|`` between, ``-`` for none."""
    opens: list[list[tuple[int, str]]] = [[] for _ in range(length)]
    closes: list[list[str]] = [[] for _ in range(length)]
    for number, chain in enumerate(chains):
        for start, end in chain:
            if not 0 <= start <= end < length:
                raise ValueError(f"mention ({start}, {end}) outside a document of {length} tokens")
            if start == end:
                opens[start].append((0, f"({number})"))
            else:
                opens[start].append((end - start, f"({number}"))
                closes[end].append(f"{number})")
    out = []
    for here, there in zip(opens, closes, strict=True):
        parts = [text for _, text in sorted(here, key=lambda item: -item[0])] + there
        out.append("|".join(parts) or "-")
    return out


def normalised(chains: Sequence[Sequence[Mention]], length: int) -> list[list[Mention]]:
    """``chains`` as the scorer reads them back from :func:`cells` (its order of entities and mentions)."""
    return read_chains(list(enumerate(cells(chains, length))), Path("<chains>"), "")
