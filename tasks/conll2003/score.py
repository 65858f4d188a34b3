"""``conlleval`` (CoNLL-2000/2003 chunk and NER evaluation, Erik Tjong Kim Sang, version 2004-01-26) in Python.

The script reads lines ``token ... gold guess``; a blank line (or one whose first item is ``-X-``) is a sentence
boundary. A chunk starts and ends by the rules of its ``startOfChunk``/``endOfChunk``, which read IOB1, IOB2 and
IOE tags alike (an ``I-X`` after ``O`` or after another type starts a chunk; a ``B-X`` always does). A guessed chunk
is correct when it starts and ends where a gold chunk does, with the same type. Precision, recall and FB1 are over
chunks, accuracy over token tags (boundaries not counted); all percentages, 0 when undefined. The port follows the
script's default mode (no ``-r``, ``-d`` or ``-o``), its per-line state machine step by step, down to its quirks
(a type ``0`` counts as no type, as in Perl).

Checked against ``conlleval.pl`` itself: tests/tasks/conll2003/test_conll2003_score.py holds cases written for the
test (IOB1 and IOB2 starts, ``I-`` after ``O``, type changes, ``B-`` of another type, empty sentences, no
predictions) with the counts and percentages the Perl script printed for them.

Here the predictions file must be the references file with one predicted tag appended to every token line (see
``tasks.conll2003``); a line that differs from its reference line, a missing or extra line, or a predicted tag that
is not ``O``, ``B-TYPE`` or ``I-TYPE`` raises :class:`HarnessError` naming the file, line and field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError

BOUNDARY = "-X-"
DOCSTART = "-DOCSTART-"
FIELDS = ("word", "POS tag", "chunk tag", "NER tag")
_TAG = re.compile(r"^([^-]*)-(.*)$")
_VALID_TAG = re.compile(r"^(O|[BI]-\S+)$")


def split_tag(tag: str) -> tuple[str, str]:
    """``"B-PER"`` -> ``("B", "PER")``; a tag without ``-`` has type ``""`` (and so has type ``"0"``, Perl-false)."""
    match = _TAG.match(tag)
    prefix, kind = (match.group(1), match.group(2)) if match else (tag, "")
    return prefix, "" if kind in ("", "0") else kind


def end_of_chunk(prev_tag: str, tag: str, prev_type: str, kind: str) -> bool:
    """Whether a chunk ended between the previous and the current token (conlleval's ``endOfChunk``)."""
    pairs = {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
    ended = (prev_tag, tag) in pairs
    if prev_tag not in ("O", ".") and prev_type != kind:
        ended = True
    return ended or prev_tag in ("]", "[")


def start_of_chunk(prev_tag: str, tag: str, prev_type: str, kind: str) -> bool:
    """Whether a chunk started between the previous and the current token (conlleval's ``startOfChunk``)."""
    pairs = {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}
    started = (prev_tag, tag) in pairs
    if tag not in ("O", ".") and prev_type != kind:
        started = True
    return started or tag in ("[", "]")


@dataclass
class ChunkCounts:
    """What conlleval counts: correct chunks, gold chunks, guessed chunks, correct tags, tokens."""

    correct: int = 0
    gold: int = 0
    guessed: int = 0
    correct_tags: int = 0
    tokens: int = 0

    def __add__(self, other: ChunkCounts) -> ChunkCounts:
        return ChunkCounts(*(a + b for a, b in zip(self.astuple(), other.astuple(), strict=True)))

    def astuple(self) -> tuple[int, int, int, int, int]:
        return self.correct, self.gold, self.guessed, self.correct_tags, self.tokens

    def scores(self) -> dict[str, float]:
        """``precision``, ``recall``, ``f1`` (FB1) and ``accuracy`` as conlleval computes them (percentages)."""
        precision = 100.0 * self.correct / self.guessed if self.guessed else 0.0
        recall = 100.0 * self.correct / self.gold if self.gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        accuracy = 100.0 * self.correct_tags / self.tokens if self.tokens else 0.0
        return {"precision": precision, "recall": recall, "f1": f1, "accuracy": accuracy}


def count_chunks(rows: Iterable[tuple[str, str, str] | None]) -> ChunkCounts:
    """conlleval's main loop over ``(first item, gold tag, guessed tag)`` rows; ``None`` is a sentence boundary."""
    counts = ChunkCounts()
    in_correct = False
    last_correct, last_guessed, last_correct_type, last_guessed_type = "O", "O", "", ""
    for row in rows:
        first, gold_tag, guess_tag = (BOUNDARY, "O", "O") if row is None or row[0] == BOUNDARY else row
        correct, correct_type = split_tag(gold_tag)
        guessed, guessed_type = split_tag(guess_tag)
        ended_c = end_of_chunk(last_correct, correct, last_correct_type, correct_type)
        ended_g = end_of_chunk(last_guessed, guessed, last_guessed_type, guessed_type)
        if in_correct:
            if ended_c and ended_g and last_guessed_type == last_correct_type:
                in_correct = False
                counts.correct += 1
            elif ended_c != ended_g or guessed_type != correct_type:
                in_correct = False
        started_c = start_of_chunk(last_correct, correct, last_correct_type, correct_type)
        started_g = start_of_chunk(last_guessed, guessed, last_guessed_type, guessed_type)
        in_correct = in_correct or (started_c and started_g and guessed_type == correct_type)
        counts.gold += started_c
        counts.guessed += started_g
        if first != BOUNDARY:
            counts.correct_tags += correct == guessed and guessed_type == correct_type
            counts.tokens += 1
        last_correct, last_guessed, last_correct_type, last_guessed_type = (
            correct, guessed, correct_type, guessed_type)  # fmt: skip
    counts.correct += in_correct
    return counts


def sentence_counts(words: Sequence[str], gold: Sequence[str], guessed: Sequence[str]) -> ChunkCounts:
    """The counts one sentence adds to a file (it is read between two boundaries, so files add up by sentence)."""
    if not len(words) == len(gold) == len(guessed):
        raise ValueError(f"{len(words)} words, {len(gold)} gold tags and {len(guessed)} guessed tags")
    return count_chunks([None, *zip(words, gold, guessed, strict=True), None])


# --- the official files ------------------------------------------------------------------------------------------


def read_lines(path: Path, what: str) -> list[str]:
    """The lines of a CoNLL-2003 file (UTF-8; the English files are ASCII), without line ends."""
    try:
        return Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise HarnessError(f"{path}: {what} file not found") from None
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: {what} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None


def reference_rows(path: Path) -> Iterator[tuple[int, list[str] | None]]:
    """``(line number, [word, POS, chunk, NER])`` of every line of a references file; ``None`` for a blank line."""
    for number, line in enumerate(read_lines(path, "CoNLL-2003 references"), start=1):
        if not line.strip():
            yield number, None
            continue
        fields = line.split(" ")
        if len(fields) != len(FIELDS) or "" in fields:
            raise HarnessError(
                f"{path}:{number}: expected {len(FIELDS)} fields separated by single spaces "
                f"({', '.join(FIELDS)}), found {line!r}"
            )
        yield number, fields


def _prediction_row(path: Path, number: int, line: str, reference: list[str] | None) -> tuple[str, str, str] | None:
    if reference is None:
        if line.strip():
            raise HarnessError(f"{path}:{number}: expected a blank line (a sentence boundary in the references)")
        return None
    fields = line.split(" ")
    if len(fields) != len(FIELDS) + 1 or "" in fields:
        raise HarnessError(
            f"{path}:{number}: expected the references line {' '.join(reference)!r} and a predicted tag, "
            f"separated by single spaces; found {line!r}"
        )
    for name, mine, theirs in zip(FIELDS, fields, reference, strict=False):
        if mine != theirs:
            raise HarnessError(f"{path}:{number}: field {name!r} is {mine!r}, the references have {theirs!r}")
    if not _VALID_TAG.match(fields[-1]):
        raise HarnessError(f"{path}:{number}: predicted tag {fields[-1]!r} is not O, B-TYPE or I-TYPE")
    return fields[0], fields[3], fields[4]


def read_rows(references: Path, predictions: Path) -> list[tuple[str, str, str] | None]:
    """``(word, gold, guess)`` of every token line, ``None`` for boundaries, after checking the two files agree."""
    lines = read_lines(predictions, "CoNLL-2003 predictions")
    rows: list[tuple[str, str, str] | None] = []
    count = 0
    for number, reference in reference_rows(references):
        count = number
        if number > len(lines):
            raise HarnessError(
                f"{predictions}: ends at line {len(lines)}, the references ({references}) continue to line {number}"
                f"{'' if reference is None else ' (' + ' '.join(reference) + ')'}: truncated predictions"
            )
        rows.append(_prediction_row(predictions, number, lines[number - 1], reference))
    extra = [n for n, line in enumerate(lines[count:], start=count + 1) if line.strip()]
    if extra:
        raise HarnessError(
            f"{predictions}:{extra[0]}: a line beyond the {count} lines of the references ({references})"
        )
    return rows


def score(references: Path | str, predictions: Path | str) -> dict[str, float]:
    """conlleval's ``precision``, ``recall``, ``FB1`` (as ``f1``) and ``accuracy`` of a predictions file."""
    return count_chunks(read_rows(Path(references), Path(predictions))).scores()
