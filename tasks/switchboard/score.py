"""Official-format scorer for Hub5'00 (the 2000 Hub-5 English evaluation): word error rate on ``swb`` and ``ch``.

NIST's 2000 Hub-5 English evaluation (LDC2002S09 audio, LDC2002T43 transcripts): 40 conversations, 20 from
Switchboard (files ``sw_*``, the ``swb`` subset, "SWB") and 20 from CallHome English (files ``en_*``, the ``ch``
subset, "CH"). Papers report WER on each (SpecAugment, arXiv 1904.08779, Table 4). The official scoring is NIST's
``hubscr.pl -l english -h hub5`` with the GLM ``en20000405_hub5.glm``: ``csrfilt.sh`` (upper case, the GLM's rules,
hyphenated words split) on reference and hypothesis, then ``sclite -F -D`` against the reference STM. Kaldi's
recipe (``egs/swbd/s5c/local/score_sclite.sh``) first removes from the hypothesis the noise markers, ``<unk>``,
the hesitation words and word fragments, which the reference marks optionally deletable; the subsets are the STM
lines of ``sw_*`` and ``en_*`` files.

References: the STM file (``2000_hub5_eng_eval_tr/reference/hub5e00.english.000405.stm``), one segment a line,
``FILE CHANNEL SPEAKER BEGIN END [<LABELS>] WORDS``; ``;;`` lines are comments; a segment whose words are
``IGNORE_TIME_SEGMENT_IN_SCORING`` is left out of scoring, as sclite leaves out that stretch of time.

Predictions: one ``<segment-id> WORDS`` line per scored segment (no words: an empty hypothesis), the segment id
being Kaldi's eval2000 utterance id ``<FILE>-<CHANNEL>_<BEGIN>-<END>`` with the times in hundredths of a second,
six digits (``sw_4390-A_000098-001156``); :func:`segment_id` makes it. Not a CTM: the systems this harness trains
(LAS, seq2seq) decode one segment at a time and give no word times, so a per-segment file holds exactly what they
produce, while a CTM would need invented times for sclite's assignment of words to segments by time.

Normalisation (:func:`reference_words`, :func:`hypothesis_words`), on both sides unless stated:

- lower case; white space collapsed;
- the GLM's rules, when a GLM file is given (``--glm``), as far as they rewrite one whole word: see :class:`Glm`;
- hyphenated words split (``csrfilt.sh -dh``: ``uh-huh`` -> ``uh huh``), a fragment's own hyphen kept;
- dropped: non-lexical markers, any token in square or angle brackets (``[noise]``, ``[laughter]``,
  ``[vocalized-noise]``, ``<unk>``, ``<b_aside>``, ``<e_aside>``);
- reference words in parentheses (``(%hesitation)``, ``(mol-)``, ``( a b )`` making both optional), hesitations
  (``%hesitation`` and the GLM's hesitation family ``ach ah eee eh er ew ha hee hm huh mm oof uh um``, with or
  without ``%``, all written ``%hesitation``) and fragments (a word beginning or ending with ``-``) are optionally
  deletable;
- in the hypothesis, hesitations and fragments are removed (Kaldi's filter), so they are never errors.

Counting, as ``sclite -D -F`` counts: the reference words, optional ones included, are aligned with the hypothesis
words by ``jiwer`` (minimum edit distance, unit costs); then an optional word that the alignment deletes is
correct, and so is a fragment aligned with a word spelled like it up to its hyphen (``mold`` for ``(mol-)``).
N counts every reference word, optional ones included; WER = ``100 * (S + D + I) / N`` summed over the segments.
This gives sclite's counts on the cases of ``tests/tasks/switchboard`` (run against sclite itself). Where it can
differ from sclite: (1) sclite aligns with costs 4 (substitution) and 3 (insertion, deletion), a fragment match
costing nothing, which where alignments tie can choose another one (other S/D/I, rarely another total);
(2) sclite takes an unparenthesised hesitation or fragment in the reference as required unless the GLM maps it,
here it is optional (the hub5e00 STM parenthesises them); (3) sclite counts a bracketed marker left in the
reference (``[noise]``) as a word, here it is dropped; (4) GLM rules that are not whole-word rewrites
(alternations such as ``{he is / he has}``, multi-word left sides, other contexts) are not applied.

Bad input raises :class:`HarnessError` naming file and line: an STM line with fewer than five fields, a
non-numeric or reversed time, a channel other than ``A``/``B``, two segments with the same id; a prediction line
for a segment id the STM does not score. A scored segment without a prediction line is an empty hypothesis (all
its reference words deletions), with a warning.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from harness.errors import HarnessError

IGNORE = "ignore_time_segment_in_scoring"
HESITATIONS = frozenset("ach ah eee eh er ew ha hee hm huh mm oof uh um".split())
SUBSETS = {"swb": "sw_", "ch": "en_"}  # subset -> file-name prefix (Kaldi's score_sclite.sh)
COUNTS = ("substitutions", "deletions", "insertions", "hits", "words", "segments")
SEGMENT_ID = re.compile(r"(?P<file>\S+)-(?P<channel>[AB])_(?P<begin>\d{6,})-(?P<end>\d{6,})")


class Segment(NamedTuple):
    """One STM line: where it is, what it covers and its reference text as written (after any label field)."""

    path: Path
    number: int
    file: str
    channel: str
    begin: float
    end: float
    text: str

    @property
    def id(self) -> str:
        return segment_id(self.file, self.channel, self.begin, self.end)

    @property
    def ignored(self) -> bool:
        return self.text.strip().lower() == IGNORE


def segment_id(file: str, channel: str, begin: float, end: float) -> str:
    """Kaldi's eval2000 utterance id: ``<file>-<channel>_<begin>-<end>``, times in hundredths, six digits."""
    return f"{file}-{channel}_{round(begin * 100):06d}-{round(end * 100):06d}"


def subset_of(segment: str) -> str | None:
    """``"swb"`` or ``"ch"`` for a segment id (or file name), by its file's prefix; ``None`` for other files."""
    for name, prefix in SUBSETS.items():
        if segment.startswith(prefix):
            return name
    return None


# --- files ---------------------------------------------------------------------------------------------------------


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise HarnessError(f"{path}: cannot open: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise HarnessError(f"{path}:{line}: not UTF-8 text ({exc.reason})") from None
    for number, line in enumerate(text.split("\n"), start=1):
        yield number, line.rstrip("\r")


def _parse_stm_line(path: Path, number: int, line: str) -> Segment:
    fields = line.split()
    if len(fields) < 5:
        raise HarnessError(f"{path}:{number}: expected 'FILE CHANNEL SPEAKER BEGIN END [<LABELS>] WORDS'")
    file, channel, _speaker, begin, end, *words = fields
    if channel not in ("A", "B", "1", "2"):
        raise HarnessError(f"{path}:{number}: channel {channel!r} is not A or B")
    try:
        times = float(begin), float(end)
    except ValueError:
        raise HarnessError(f"{path}:{number}: begin/end times {begin!r} {end!r} are not numbers") from None
    if not all(math.isfinite(t) and t >= 0 for t in times) or times[1] <= times[0]:
        raise HarnessError(f"{path}:{number}: segment {begin}-{end} s is not a positive time span")
    if words and words[0].startswith("<") and words[0].endswith(">"):
        words = words[1:]  # the label field, e.g. <O,en,F,en-F>
    channel = {"1": "A", "2": "B"}.get(channel, channel)
    return Segment(Path(path), number, file, channel, *times, " ".join(words))


def read_stm(path: Path) -> list[Segment]:
    """Every segment of an STM file, in file order (``;;`` comments and blank lines skipped); ids must be unique."""
    segments: list[Segment] = []
    seen: dict[str, int] = {}
    for number, line in _lines(path):
        if not line.strip() or line.lstrip().startswith(";;"):
            continue
        segment = _parse_stm_line(Path(path), number, line)
        if segment.id in seen:
            raise HarnessError(f"{path}:{number}: segment {segment.id} repeats line {seen[segment.id]}")
        seen[segment.id] = number
        segments.append(segment)
    if not segments:
        raise HarnessError(f"{path}: no STM segments")
    return segments


def write_stm(path: Path, segments: Iterable[Segment]) -> Path:
    """Segments as STM lines (speaker ``<file>_<channel>``, no labels), e.g. one subset's references."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (f"{s.file} {s.channel} {s.file}_{s.channel} {s.begin:.2f} {s.end:.2f} {s.text}\n" for s in segments)
    path.write_text("".join(lines), encoding="utf-8")
    return path


def read_hypotheses(path: Path) -> dict[str, tuple[int, str]]:
    """``segment id -> (line number, words)`` from a ``<segment-id> WORDS`` file."""
    entries: dict[str, tuple[int, str]] = {}
    for number, line in _lines(path):
        if not line.strip():
            continue
        segment, _, words = line.strip().partition(" ")
        if not SEGMENT_ID.fullmatch(segment):
            raise HarnessError(
                f"{path}:{number}: expected '<file>-<channel>_<begin>-<end> WORDS' (e.g. sw_4390-A_000098-001156), "
                f"found {line.strip()[:60]!r}"
            )
        if segment in entries:
            raise HarnessError(
                f"{path}:{number}: duplicate segment id {segment!r} (first on line {entries[segment][0]})"
            )
        entries[segment] = (number, words)
    return entries


def write_hypotheses(path: Path, entries: Iterable[tuple[str, str]]) -> Path:
    """``(segment id, text)`` pairs as ``<segment-id> WORDS`` lines."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{s} {' '.join(t.split())}".rstrip() + "\n" for s, t in entries), encoding="utf-8")
    return path


# --- the GLM -------------------------------------------------------------------------------------------------------

GLM_RULE = re.compile(r"^(?P<lhs>.+?)\s*=>\s*(?P<rhs>.*?)\s*(?:/\s*(?P<left>.*?)\s*__\s*(?P<right>.*?))?\s*$")
SECTION = re.compile(r'^;;\s+INPUT_DEPENDENT_APPLICATION\s*=\s*"([^"]*)"', re.IGNORECASE)


def _glm_string(text: str) -> str:
    """A GLM field without its ``[...]`` or quote delimiters."""
    text = text.strip()
    if len(text) >= 2 and (text[0], text[-1]) in (("[", "]"), ("'", "'"), ('"', '"')):
        return text[1:-1]
    return text


@dataclass
class Glm:
    """The whole-word rules of a NIST GLM (global mapping file), per side.

    Applied: rules ``WORD => WORDS`` whose left side is one word and whose right side has no alternation
    (``{ / }``), with no context or the word-boundary context ``/ [ ] __ [ ]``; matching is case-insensitive, as
    the Hub-5 GLMs declare. A rule in an ``;; INPUT_DEPENDENT_APPLICATION = "REGEXP"`` section applies to the
    reference when the regexp matches ``stm`` or ``ref`` and to the hypothesis when it matches ``ctm`` or ``hyp``
    (csrfilt.sh's rule); the first rule for a word wins (rfilter1 searches top to bottom). Skipped (counted in
    ``skipped``): alternations, multi-word left sides, other contexts. A context-free rule rewrites substrings for
    rfilter1 (``fundrais => fund rais`` inside ``fundraiser``); here it rewrites whole words only.
    """

    path: Path | None = None
    reference: dict[str, tuple[str, ...]] = field(default_factory=dict)
    hypothesis: dict[str, tuple[str, ...]] = field(default_factory=dict)
    skipped: int = 0

    @classmethod
    def read(cls, path: Path) -> Glm:
        glm = cls(Path(path))
        ref, hyp = True, True
        for number, line in _lines(path):
            section = SECTION.match(line.strip())
            if section:
                pattern = re.compile(section.group(1), re.IGNORECASE)
                ref, hyp = (any(pattern.search(k) for k in keys) for keys in (("stm", "ref"), ("ctm", "hyp")))
                continue
            rule = line.split(";;", 1)[0].strip()
            if rule and not rule.startswith("*"):
                glm._add(path, number, rule, ref, hyp)
        return glm

    def _add(self, path: Path, number: int, rule: str, ref: bool, hyp: bool) -> None:
        match = GLM_RULE.match(rule)
        if match is None:
            raise HarnessError(f"{path}:{number}: not a GLM rule 'FROM => TO [/ LEFT __ RIGHT]': {rule[:60]!r}")
        lhs, rhs = _glm_string(match["lhs"]).lower().split(), _glm_string(match["rhs"]).lower()
        contexts = (_glm_string(match["left"] or ""), _glm_string(match["right"] or ""))
        if len(lhs) != 1 or any(c in rhs for c in "{}/") or any(c.strip() for c in contexts):
            self.skipped += 1
            return
        for wanted, table in ((ref, self.reference), (hyp, self.hypothesis)):
            if wanted:
                table.setdefault(lhs[0], tuple(rhs.split()))

    def apply(self, words: Sequence[str], side: str) -> list[str]:
        table = self.reference if side == "ref" else self.hypothesis
        return [out for word in words for out in table.get(word, (word,))]


NO_GLM = Glm()


# --- normalisation -------------------------------------------------------------------------------------------------


def _split_hyphens(word: str) -> list[str]:
    """csrfilt.sh -dh: a hyphen with a letter on both sides becomes a space; a fragment's edge hyphen stays."""
    return re.sub(r"(?<=[^\s(])-(?=[^\s)])", " ", word).split()


def _is_marker(word: str) -> bool:
    return (word[0], word[-1]) in (("[", "]"), ("<", ">"))


def is_hesitation(word: str) -> bool:
    return word == "%hesitation" or word.removeprefix("%") in HESITATIONS


def is_fragment(word: str) -> bool:
    return len(word) > 1 and (word.endswith("-") or word.startswith("-"))


def _tokens(text: str) -> Iterator[str]:
    """Words and parentheses as separate tokens: ``(%hesitation)`` -> ``(``, ``%hesitation``, ``)``."""
    yield from re.sub(r"([()])", r" \1 ", text.lower()).split()


def _mark_optional(text: str) -> list[tuple[str, bool]]:
    """``(word, inside parentheses)`` pairs; an unclosed ``(`` lasts to the segment's end, a stray ``)`` is ignored."""
    depth, words = 0, []
    for token in _tokens(text):
        if token == "(":
            depth += 1
        elif token == ")":
            depth = max(0, depth - 1)
        else:
            words.append((token, depth > 0))
    return words


def reference_words(text: str, glm: Glm = NO_GLM) -> list[tuple[str, bool]]:
    """A reference segment's scored words, each with whether it is optionally deletable; hesitations become
    ``%hesitation`` (as the GLM maps them)."""
    words = []
    for token, in_parens in _mark_optional(text):
        if _is_marker(token):
            continue
        for word in _split_hyphens(" ".join(glm.apply([token], "ref"))):
            if is_hesitation(word):
                words.append(("%hesitation", True))
            elif not _is_marker(word):
                words.append((word, in_parens or is_fragment(word)))
    return words


def hypothesis_words(text: str, glm: Glm = NO_GLM) -> list[str]:
    """A hypothesis's scored words: lower case, GLM, hyphens split; markers, hesitations and fragments removed."""
    tokens = [t for t in text.lower().replace("(", " ").replace(")", " ").split() if not _is_marker(t)]
    words = [part for token in tokens for word in glm.apply([token], "hyp") for part in _split_hyphens(word)]
    return [w for w in words if not (_is_marker(w) or is_hesitation(w) or is_fragment(w))]


# --- counting ------------------------------------------------------------------------------------------------------


def zero_counts() -> dict[str, int]:
    return dict.fromkeys(COUNTS, 0)


def _fragment_match(reference: str, hypothesis: str) -> bool:
    """sclite -F: a fragment is matched by a word spelled like it up to its hyphen (``mold`` for ``mol-``)."""
    stem = reference.strip("-")
    return bool(stem) and (hypothesis.startswith(stem) if reference.endswith("-") else hypothesis.endswith(stem))


def _relabel(chunks: Sequence, ref: Sequence[tuple[str, bool]], hyp: Sequence[str], counts: dict[str, int]) -> None:
    """Add one segment's alignment to ``counts``, as sclite -D -F scores it: an optional word left unmatched is
    correct, and so is a fragment aligned with a word that matches it up to its hyphen."""
    for chunk in chunks:
        refs, hyps = ref[chunk.ref_start_idx : chunk.ref_end_idx], hyp[chunk.hyp_start_idx : chunk.hyp_end_idx]
        if chunk.type == "equal":
            counts["hits"] += len(refs)
        elif chunk.type == "insert":
            counts["insertions"] += len(hyps)
        elif chunk.type == "delete":
            optional = sum(opt for _, opt in refs)
            counts["hits"] += optional
            counts["deletions"] += len(refs) - optional
        else:  # substitute: one hypothesis word per reference word
            matched = sum(opt and _fragment_match(word, h) for (word, opt), h in zip(refs, hyps, strict=True))
            counts["hits"] += matched
            counts["substitutions"] += len(refs) - matched


def segment_counts(references: Sequence[str], hypotheses: Sequence[str], glm: Glm = NO_GLM) -> dict[str, int]:
    """Summed counts of reference texts (as the STM writes them) against hypothesis texts."""
    import jiwer

    if len(references) != len(hypotheses):
        raise ValueError(f"{len(hypotheses)} hypotheses for {len(references)} references")
    counts = zero_counts()
    pairs = []
    for reference, hypothesis in zip(references, hypotheses, strict=True):
        ref, hyp = reference_words(reference, glm), hypothesis_words(hypothesis, glm)
        counts["words"] += len(ref)
        counts["segments"] += 1
        if ref:
            pairs.append((ref, hyp))
        else:
            counts["insertions"] += len(hyp)  # nothing to align with: every hypothesis word is inserted
    if pairs:
        out = jiwer.process_words([" ".join(w for w, _ in r) for r, _ in pairs], [" ".join(h) for _, h in pairs])
        for (ref, hyp), chunks in zip(pairs, out.alignments, strict=True):
            _relabel(chunks, ref, hyp, counts)
    return counts


def wer_percent(counts: dict[str, int]) -> float:
    """``100 * (S + D + I) / N``; NaN when there are no reference words (e.g. a subset absent from the STM)."""
    if counts["words"] == 0:
        return math.nan
    return 100.0 * (counts["substitutions"] + counts["deletions"] + counts["insertions"]) / counts["words"]


def scores(per_subset: dict[str | None, dict[str, int]]) -> dict[str, float]:
    """The scorer's keys from counts per subset (``None``: files of neither subset): all, then swb and ch."""
    total = zero_counts()
    for counts in per_subset.values():
        for name in COUNTS:
            total[name] += counts[name]
    result: dict[str, float] = {"wer": wer_percent(total)}
    for subset in SUBSETS:
        result[f"wer_{subset}"] = wer_percent(per_subset.get(subset, zero_counts()))
    return {**result, **total}


# --- the scorer ----------------------------------------------------------------------------------------------------


def _check_ids(references: Path, predictions: Path, scored: dict[str, Segment], ignored: set[str], preds: dict) -> None:
    if not preds:
        raise HarnessError(f"{predictions}: no prediction lines")
    unknown = [s for s in preds if s not in scored and s not in ignored]
    if unknown:
        raise HarnessError(
            f"{predictions}:{preds[unknown[0]][0]}: segment {unknown[0]!r} is not a segment of {references}"
            + (f" ({len(unknown) - 1} more unknown ids)" if len(unknown) > 1 else "")
        )
    missing = [s for s in scored if s not in preds]
    if missing:
        warnings.warn(
            f"{predictions}: {len(missing)} of {len(scored)} segments in {references} have no prediction line "
            f"(first: {missing[0]}); scored as empty hypotheses, all their words deletions",
            stacklevel=3,
        )


def score(references: Path, predictions: Path, glm: Path | None = None) -> dict[str, float]:
    """Hub5'00 WER (percent) overall, on ``swb`` and on ``ch``, with the summed counts; ``glm``: a GLM file."""
    references, predictions = Path(references), Path(predictions)
    mapping = Glm.read(glm) if glm is not None else NO_GLM
    segments = read_stm(references)
    scored = {s.id: s for s in segments if not s.ignored}
    preds = read_hypotheses(predictions)
    _check_ids(references, predictions, scored, {s.id for s in segments if s.ignored}, preds)
    per_subset: dict[str | None, dict[str, int]] = {}
    for subset in {subset_of(s) for s in scored} | set(SUBSETS):
        ids = [s for s in scored if subset_of(s) == subset]
        hyps = [preds.get(s, (0, ""))[1] for s in ids]
        per_subset[subset] = segment_counts([scored[s].text for s in ids], hyps, mapping)
    return scores(per_subset)
