"""``srl-eval.pl`` (CoNLL-2005 shared task evaluation, Carreras & Màrquez, last modified 2005/04/21) in Python.

How the script reads one predicate's argument column (Start-End format, ``(ARG0*``, ``*``, ``*)``, ``(V*)``):

- phrases open at ``(TYPE`` and close at ``)`` (the latest open one); a phrase closed inside another becomes its
  sub-phrase; the phrase set keeps one phrase per (start, end), the last stored, and lists them by start, longest
  first, sub-phrases included;
- in that order each phrase becomes an argument, except a ``C-TYPE`` phrase, which continues the latest ``TYPE``
  argument (it becomes discontinuous, its pieces the head phrase and the continuations); a ``C-`` phrase with no
  such argument becomes a plain ``TYPE`` argument. ``R-`` arguments are ordinary types of their own. An argument is
  "single" when it has no pieces (a phrase with nested phrases counts as not single, its pieces those phrases);
- a predicted argument is correct when a gold one has the same start and end, both are single or both are not,
  the types are equal and (discontinuous) the pieces' spans are the same; each gold argument matches once;
- ``V`` arguments are excluded from the counts; precision, recall and F1 come from correct, excess and missed
  arguments over all propositions (percentages, 0 when undefined); a proposition is perfect with no excess and no
  missed argument;
- propositions are paired by predicate position; a predicted one without a gold one is skipped, a gold one without
  a predicted one has all its arguments missed.

For CoNLL-2012 files (:mod:`tasks.conll2012.score`) the predicate of each argument column is the first token of its
``V`` argument, and the "verb" compared is the word there, which the response shares with the key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from harness.errors import HarnessError

_OPEN = re.compile(r"^\(((?:\\\*|[^*(])+)")
_CLOSE = re.compile(r"^([^)]*)\)")
EXCLUDED = frozenset({"V"})


@dataclass(eq=False)
class Phrase:
    start: int
    end: int
    type: str
    phrases: list[Phrase] = field(default_factory=list)

    @property
    def single(self) -> bool:
        return not self.phrases

    def dfs(self) -> Iterable[Phrase]:
        yield self
        for sub in self.phrases:
            yield from sub.dfs()


def _open_phrases(tag: str, word: int, started: list[Phrase], where: str) -> str:
    while not tag.startswith("*"):
        found = _OPEN.match(tag)
        if found is None:
            raise HarnessError(f"{where}: argument tag {tag!r} is not in Start-End format (e.g. '(ARG0*', '*', '*)')")
        started.append(Phrase(word, -1, found.group(1)))
        tag = tag[found.end() :]
    return tag[1:]


def read_phrases(tags: Sequence[str], where: str = "") -> list[Phrase]:
    """The phrase set of one Start-End column (``phrase_set->load_SE_tagging``), in the set's order."""
    table: dict[tuple[int, int], Phrase] = {}
    started: list[Phrase] = []
    for word, tag in enumerate(tags):
        rest = _open_phrases(tag, word, started, f"{where} token {word + 1}")
        while rest:
            found = _CLOSE.match(rest)
            if found is None or not started:
                raise HarnessError(f"{where} token {word + 1}: argument tag {tag!r} closes a phrase that is not open")
            phrase = started.pop()
            if found.group(1) and found.group(1) != phrase.type:
                raise HarnessError(
                    f"{where} token {word + 1}: {tag!r} closes {found.group(1)!r} but {phrase.type!r} is open"
                )
            phrase.end, rest = word, rest[found.end() :]
            if started:
                started[-1].phrases.append(phrase)
            else:
                table.update({(p.start, p.end): p for p in phrase.dfs()})
    if started:
        raise HarnessError(
            f"{where}: argument {started[-1].type!r} opened at token {started[-1].start + 1} never closes"
        )
    return [table[key] for key in sorted(table, key=lambda se: (se[0], -se[1]))]


def arguments(phrases: Sequence[Phrase]) -> list[Phrase]:
    """``prop->load_SE_tagging``: the phrases as arguments, ``C-`` phrases continuing their argument."""
    args: list[Phrase] = []
    latest: dict[str, Phrase] = {}
    for phrase in phrases:
        if phrase.type.startswith("C-") and phrase.type[2:] in latest:
            arg = latest[phrase.type[2:]]
            if arg.single:
                arg.phrases.append(Phrase(arg.start, arg.end, phrase.type[2:]))
            arg.phrases.append(phrase)
            arg.end = phrase.end
            continue
        if phrase.type.startswith("C-"):
            phrase.type = phrase.type[2:]
        args.append(phrase)
        latest[phrase.type] = phrase
    return args


@dataclass
class Outcome:
    """Correct, excess and missed arguments per type (``V`` among them), and perfect propositions."""

    ok: dict[str, int] = field(default_factory=dict)
    op: dict[str, int] = field(default_factory=dict)
    ms: dict[str, int] = field(default_factory=dict)
    propositions: int = 0
    perfect: int = 0

    def count(self, which: dict[str, int], kind: str) -> None:
        which[kind] = which.get(kind, 0) + 1

    def totals(self) -> tuple[int, int, int]:
        """Correct, excess, missed over the types that count (``V`` excluded)."""
        return tuple(sum(v for k, v in d.items() if k not in EXCLUDED) for d in (self.ok, self.op, self.ms))

    def merge(self, other: Outcome) -> None:
        for mine, theirs in ((self.ok, other.ok), (self.op, other.op), (self.ms, other.ms)):
            for kind, n in theirs.items():
                mine[kind] = mine.get(kind, 0) + n
        self.propositions += other.propositions
        self.perfect += other.perfect

    def scores(self) -> dict[str, float]:
        ok, op, ms = self.totals()
        precision = 100.0 * ok / (ok + op) if ok + op else 0.0
        recall = 100.0 * ok / (ok + ms) if ok + ms else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        perfect = 100.0 * self.perfect / self.propositions if self.propositions else 0.0
        return {"precision": precision, "recall": recall, "f1": f1, "perfect_props": perfect,
                "correct": ok, "excess": op, "missed": ms, "propositions": self.propositions}  # fmt: skip


def _same_pieces(gold: Phrase, arg: Phrase) -> bool:
    pieces = {(p.start, p.end) for p in gold.phrases}
    for piece in arg.phrases:
        if (piece.start, piece.end) not in pieces:
            return False
        pieces.discard((piece.start, piece.end))
    return not pieces


def _matches(gold: Phrase, arg: Phrase) -> bool:
    if gold.single != arg.single or gold.type != arg.type:
        return False
    return gold.single or _same_pieces(gold, arg)


def evaluate_proposition(gold: Sequence[Phrase], predicted: Sequence[Phrase]) -> Outcome:
    """``discriminate_args`` and ``evaluate_proposition`` of one predicate's gold and predicted arguments."""
    remaining = {(a.start, a.end): a for a in gold}
    outcome = Outcome(propositions=1)
    for arg in predicted:
        match = remaining.get((arg.start, arg.end))
        if match is not None and _matches(match, arg):
            outcome.count(outcome.ok, arg.type)
            del remaining[(arg.start, arg.end)]
        else:
            outcome.count(outcome.op, arg.type)
    for arg in remaining.values():
        outcome.count(outcome.ms, arg.type)
    ok, op, ms = outcome.totals()
    outcome.perfect = int(not op and not ms)
    return outcome


def evaluate_sentence(gold: dict[int, list[Phrase]], predicted: dict[int, list[Phrase]]) -> Outcome:
    """Every gold proposition (by predicate position) against the predicted one there, or none."""
    outcome = Outcome()
    for position in sorted(gold):
        outcome.merge(evaluate_proposition(gold[position], predicted.get(position, [])))
    return outcome


def start_end_column(spans: Iterable[tuple[str, int, int]], length: int) -> list[str]:
    """A Start-End column of ``length`` tokens holding the labelled spans ``(type, first, last)`` (inclusive)."""
    opens, closes = [""] * length, [""] * length
    for kind, start, end in sorted(spans, key=lambda s: (s[1], -s[2])):
        if not 0 <= start <= end < length:
            raise ValueError(f"span {kind} ({start}, {end}) outside a sentence of {length} tokens")
        opens[start] += f"({kind}"
        closes[end] += ")"
    return [f"{o}*{c}" for o, c in zip(opens, closes, strict=True)]
