"""Official-format scorer for LibriSpeech: corpus-level word error rate (WER), in percent.

Panayotov et al., "Librispeech: an ASR corpus based on public domain audio books", ICASSP 2015. WER as the
papers report it (e.g. SpecAugment, arXiv 1904.08779, Table 3) and as Kaldi's ``compute-wer`` computes it:
``100 * (S + D + I) / N`` over the whole split, S/D/I summed over utterances from a minimum-edit-distance word
alignment of each one, N the number of reference words. The alignment counts are ``jiwer.process_words``'s.

Files (UTF-8, a byte-order mark tolerated, ``\\n`` or ``\\r\\n`` line ends, blank lines skipped):

- references: a LibriSpeech split folder (``<split>/<speaker>/<chapter>/<speaker>-<chapter>.trans.txt``, every
  transcript file below it is read), or one transcript file in that format;
- predictions: one ``<utterance-id> WORDS`` line per utterance, the format of the ``trans.txt`` files (an id with
  no words is an empty hypothesis: all its reference words are deletions).

An utterance id is ``<speaker>-<chapter>-<utterance>``, three dash-separated integers (``1272-128104-0000``).

Normalisation, the same on both sides: the text is upper-cased and split on white space (any run of spaces or
tabs is one word boundary). LibriSpeech transcripts are upper case without punctuation, so case can never be a
recognition error under the corpus's own convention, while systems often emit lower case (lower-cased word-piece
vocabularies). Nothing else is changed: punctuation is not stripped and numbers or contractions are not
expanded, because the references contain none of them and rewriting predictions would hide an output-format bug
behind a good number. Predicted words with characters outside the corpus's alphabet (A-Z and ``'``) are scored
as written, with one warning that counts them.

Bad input raises :class:`HarnessError` naming the file and line: a line whose first token is not an utterance
id, a reference line without words, a duplicate id (within one file or across the split's files), a transcript
line whose id does not belong to its ``<speaker>-<chapter>.trans.txt`` file, a prediction for an id the
references do not have, or a predictions file without any line. A reference utterance without a prediction line
is scored as an empty hypothesis (every reference word a deletion), as an ASR system that emitted nothing would
be, and reported with a warning: leaving it out would lower the WER by shrinking N.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from harness.errors import HarnessError

UTTERANCE_ID = re.compile(r"\d+-\d+-\d+")
ALPHABET_WORD = re.compile(r"[A-Z']+")
TRANSCRIPT_SUFFIX = ".trans.txt"


class Line(NamedTuple):
    """One transcript line: where it is, and its normalised words joined by single spaces."""

    path: Path
    number: int
    text: str


def normalize(text: str) -> str:
    """Upper case, words separated by single spaces (see the module docstring for why nothing more)."""
    return " ".join(text.upper().split())


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HarnessError(f"{path}: cannot open: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise HarnessError(f"{path}:{line}: not UTF-8 text ({exc.reason})") from None
    for number, line in enumerate(text.split("\n"), start=1):
        yield number, line.rstrip("\r")


def read_transcripts(path: Path, allow_empty: bool = False) -> dict[str, Line]:
    """``utterance id -> Line`` from a file of ``<utterance-id> WORDS`` lines (a ``trans.txt`` or predictions)."""
    path = Path(path)
    entries: dict[str, Line] = {}
    for number, line in _lines(path):
        if not line.strip():
            continue
        utterance, *words = line.split()
        if not UTTERANCE_ID.fullmatch(utterance):
            raise HarnessError(
                f"{path}:{number}: expected '<speaker>-<chapter>-<utterance> WORDS', found {line.strip()[:60]!r}"
            )
        if utterance in entries:
            raise HarnessError(
                f"{path}:{number}: duplicate utterance id {utterance!r} (first on line {entries[utterance].number})"
            )
        if not words and not allow_empty:
            raise HarnessError(f"{path}:{number}: utterance {utterance!r} has no transcript")
        entries[utterance] = Line(path, number, normalize(" ".join(words)))
    return entries


def transcript_files(folder: Path) -> list[Path]:
    """Every ``*.trans.txt`` below a split folder, sorted (speaker/chapter order is then path order)."""
    files = sorted(path for path in Path(folder).rglob(f"*{TRANSCRIPT_SUFFIX}") if path.is_file())
    if not files:
        raise HarnessError(
            f"{folder}: no transcript files (expected <speaker>/<chapter>/<speaker>-<chapter>{TRANSCRIPT_SUFFIX})"
        )
    return files


def read_split(folder: Path) -> dict[str, Line]:
    """``utterance id -> Line`` of every transcript of a LibriSpeech split folder, in path order."""
    entries: dict[str, Line] = {}
    for path in transcript_files(folder):
        prefix = path.name.removesuffix(TRANSCRIPT_SUFFIX) + "-"
        for utterance, line in read_transcripts(path).items():
            if not utterance.startswith(prefix):
                raise HarnessError(f"{path}:{line.number}: utterance {utterance!r} does not belong to {path.name}")
            if utterance in entries:
                first = entries[utterance]
                raise HarnessError(
                    f"{path}:{line.number}: duplicate utterance id {utterance!r} (first in {first.path}:{first.number})"
                )
            entries[utterance] = line
    return entries


def read_references(path: Path) -> dict[str, Line]:
    """References from a split folder or a single transcript file; an empty result is an error."""
    path = Path(path)
    entries = read_split(path) if path.is_dir() else read_transcripts(path)
    if not entries:
        raise HarnessError(f"{path}: no transcript lines")
    return entries


def write_transcripts(path: Path, entries: Iterable[tuple[str, str]]) -> Path:
    """Write ``(utterance id, text)`` pairs as ``<utterance-id> WORDS`` lines (references' and predictions' format)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (f"{utterance} {normalize(text)}".rstrip() + "\n" for utterance, text in entries)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def word_counts(references: Sequence[str], hypotheses: Sequence[str]) -> dict[str, int]:
    """Summed alignment counts of normalised reference/hypothesis pairs (``jiwer.process_words``)."""
    import jiwer

    if len(references) != len(hypotheses):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    references = [normalize(text) for text in references]
    hypotheses = [normalize(text) for text in hypotheses]
    if not references:
        return dict.fromkeys(("substitutions", "deletions", "insertions", "hits", "words", "utterances"), 0)
    out = jiwer.process_words(references, hypotheses)
    return {
        "substitutions": out.substitutions,
        "deletions": out.deletions,
        "insertions": out.insertions,
        "hits": out.hits,
        "words": out.substitutions + out.deletions + out.hits,
        "utterances": len(references),
    }


def wer_percent(counts: dict[str, int]) -> float:
    """``100 * (S + D + I) / N``; an error when there are no reference words."""
    if counts["words"] == 0:
        raise HarnessError("WER is undefined without reference words")
    return 100.0 * (counts["substitutions"] + counts["deletions"] + counts["insertions"]) / counts["words"]


def _check_ids(references: Path, predictions: Path, refs: dict[str, Line], preds: dict[str, Line]) -> None:
    if not preds:
        raise HarnessError(f"{predictions}: no prediction lines")
    unknown = [utterance for utterance in preds if utterance not in refs]
    if unknown:
        raise HarnessError(
            f"{predictions}:{preds[unknown[0]].number}: utterance {unknown[0]!r} is not in {references}"
            + (f" ({len(unknown) - 1} more unknown ids)" if len(unknown) > 1 else "")
        )
    missing = [utterance for utterance in refs if utterance not in preds]
    if missing:
        warnings.warn(
            f"{predictions}: {len(missing)} of {len(refs)} utterances in {references} have no prediction line "
            f"(first: {missing[0]}); scored as empty hypotheses, all their words deletions",
            stacklevel=3,
        )


def _warn_alphabet(predictions: Path, preds: dict[str, Line]) -> None:
    odd = [(line.number, word) for line in preds.values() for word in line.text.split()]
    odd = [(number, word) for number, word in odd if not ALPHABET_WORD.fullmatch(word)]
    if odd:
        number, word = odd[0]
        warnings.warn(
            f"{predictions}: {len(odd)} predicted words have characters outside LibriSpeech's alphabet (A-Z and "
            f"apostrophe), e.g. {word!r} on line {number}; they are scored as written",
            stacklevel=3,
        )


def score(references: Path, predictions: Path) -> dict[str, float]:
    """Corpus WER (percent) and its counts of ``predictions`` against a split folder or transcript file."""
    references, predictions = Path(references), Path(predictions)
    refs = read_references(references)
    preds = read_transcripts(predictions, allow_empty=True)
    _check_ids(references, predictions, refs, preds)
    _warn_alphabet(predictions, preds)
    ids = list(refs)
    empty = Line(predictions, 0, "")
    counts = word_counts([refs[i].text for i in ids], [preds.get(i, empty).text for i in ids])
    return {"wer": wer_percent(counts), **counts}
