"""Beam search over a step function, with length normalisation and optional shallow fusion with a language model.

:func:`beam_search` decodes one source; :func:`beam_search_batch` decodes several independent sources at once (the
live beams of all of them in one ``step`` call; each source's search is the one it would have alone). Both take the
search as a :class:`BeamConfig` (``bos``, ``eos``, ``beam_size``, ``max_len``, ``alpha``, ``length_norm``,
``lm_weight``) beside the model: ``step``, its ``state``, the fused language model's ``lm_step`` / ``lm_state``.
``step(prefixes, state)`` gets the live prefixes ``(K, t)`` (token ids,
starting with ``bos``) and the decoder state of each (a tensor, or a tuple / list / dict of tensors, with the beam
as dimension 0; ``None`` for a stateless scorer), and returns the next token's log-probabilities ``(K, V)`` and the
new state. Between steps the search reorders every tensor of the state along dimension 0 to follow the surviving
beams.

Scores. A hypothesis ``Y`` (the tokens after ``bos``, ending with ``eos`` unless it reached ``max_len``) is scored
``log P(Y) / lp(Y)``. With ``length_norm="gnmt"`` (the default), ``lp(Y) = ((5 + |Y|) / 6) ** alpha`` (Wu et al.
2016, "Google's Neural Machine Translation System", arXiv:1609.08144, eq. 14); with ``"power"``, ``lp(Y) = |Y| **
alpha``; ``alpha = 0`` is the plain log-probability. ``|Y|`` counts ``eos``. Shallow fusion (Gulcehre et al. 2015,
arXiv:1503.03535, as used by LAS and SpecAugment) adds ``lm_weight`` times a language model's log-probability of
each token: ``log P(Y) = sum_t log p(y_t | ...) + lm_weight * log p_LM(y_t | y_<t)``.

Coverage penalty (optional, ``coverage``): GNMT's ``cp(X; Y)`` (Wu et al. 2016, eq. 14) as tensorflow/lingvo's
beam search computes it (``lingvo/core/ops/beam_search_step_op_kernels.cc``, ``coverage_penalty`` and
``target_seq_length_ratio`` ``r``): with ``c_j`` the attention probability the decoder put on source position ``j``
summed over the steps that produced ``Y`` (``eos`` included), ``cp = r * beta * sum_j log(clip(c_j / r, 0.001,
0.5))`` over the source's valid positions, added to a finished hypothesis's score: ``log P(Y) / lp(Y) + cp``. As in
lingvo it ranks finished hypotheses only; live beams are still chosen by ``log P``. The cap at 0.5 (GNMT's is 1.0)
stops penalising a position once it is reasonably covered; the floor keeps the log finite. Without ``coverage`` the
search is exactly the one described above.

Search. Each step extends every live beam by every token and keeps the ``beam_size`` best live extensions by
``log P``; an extension ending in ``eos`` becomes a finished hypothesis instead. Live beams that reach ``max_len``
tokens finish as they are. The search stops early once ``beam_size`` hypotheses are finished and no live beam can
still beat the worst of the best ``beam_size``: a live beam's normalised score can be at most ``log P(prefix) /
lp(max_len)``, because log-probabilities only fall and ``lp`` only grows with length (plus, with a coverage
penalty, its largest value, every position covered: ``r * beta * S * log 0.5`` for ``S`` valid positions).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

StepFn = Callable[[torch.Tensor, Any], tuple[torch.Tensor, Any]]


@dataclass(frozen=True)
class Hypothesis:
    tokens: tuple[int, ...]  # after bos; ends with eos unless the search reached max_len
    log_prob: float  # log P(Y), with the fused LM term
    score: float  # log P(Y) / lp(Y), plus the coverage penalty when the search has one


@dataclass(frozen=True)
class BeamConfig:
    """What a search is, apart from the model it searches: the ``bos`` every prefix starts with, the ``eos`` that
    finishes a hypothesis, ``beam_size`` live beams, hypotheses of at most ``max_len`` tokens, the length
    normalisation ``length_norm`` (``"gnmt"`` or ``"power"``) with exponent ``alpha``, and the weight ``lm_weight`` of
    a fused language model (module docstring). ``alpha`` and ``lm_weight`` are at least 0: the early stop relies on
    scores that only fall with length."""

    bos: int
    eos: int
    beam_size: int
    max_len: int
    alpha: float = 0.0
    length_norm: str = "gnmt"
    lm_weight: float = 0.0

    def __post_init__(self) -> None:
        if self.beam_size < 1 or self.max_len < 1 or self.alpha < 0 or self.lm_weight < 0:
            given = (
                f"beam_size={self.beam_size}, max_len={self.max_len}, alpha={self.alpha}, lm_weight={self.lm_weight}"
            )
            raise ValueError(f"need beam_size, max_len >= 1 and alpha, lm_weight >= 0; got {given}")


@dataclass(frozen=True)
class Coverage:
    """The coverage penalty's inputs: ``beta`` (lingvo's ``coverage_penalty``), ``attention(state)`` giving each live
    beam's attention probabilities ``(N, S)`` of the step just taken (from the state ``step`` returned; padded
    positions are ignored), each source's valid positions ``source_lengths`` (one per source) and lingvo's
    ``target_seq_length_ratio`` ``ratio`` (default 1)."""

    beta: float
    attention: Callable[[Any], torch.Tensor]
    source_lengths: Sequence[int]
    ratio: float = 1.0

    def penalty(self, cumulative: torch.Tensor, source: int) -> float:
        """``r * beta * sum_j log(clip(c_j / r, 0.001, 0.5))`` over the valid positions of ``cumulative (S,)``."""
        covered = (cumulative[: int(self.source_lengths[source])].double() / self.ratio).clamp(0.001, 0.5)
        return self.ratio * self.beta * float(covered.log().sum())

    def largest(self, source: int) -> float:
        """The penalty when every valid position is covered (the cap): no hypothesis of ``source`` gets more."""
        return self.ratio * self.beta * int(self.source_lengths[source]) * math.log(0.5)


def length_penalty(length: int, alpha: float, norm: str = "gnmt") -> float:
    """``lp(Y)``: ``((5 + |Y|) / 6) ** alpha`` (GNMT) or ``|Y| ** alpha`` (power)."""
    if norm == "gnmt":
        return ((5 + length) / 6) ** alpha
    if norm == "power":
        return float(length) ** alpha
    raise ValueError(f"unknown length normalisation {norm!r}; known: gnmt, power")


def reorder(state: Any, index: torch.Tensor) -> Any:
    """Every tensor of ``state`` (nested tuples, lists, dicts) indexed by ``index`` along dimension 0."""
    if isinstance(state, torch.Tensor):
        return state.index_select(0, index)
    if isinstance(state, dict):
        return {key: reorder(value, index) for key, value in state.items()}
    if isinstance(state, list | tuple):
        return type(state)(reorder(value, index) for value in state)
    return state


@dataclass
class _Beams:
    prefixes: torch.Tensor  # (N, t) with bos first: the live beams of every unfinished source, grouped by source
    log_probs: torch.Tensor  # (N,)
    segments: list[tuple[int, int, int]]  # (source, first row, end row) of each unfinished source
    state: Any
    lm_state: Any
    coverage: torch.Tensor | None = None  # (N, S): each live beam's attention summed over its steps (with coverage)


@dataclass
class _Kept:
    rows: list[int]  # parent row of each kept extension
    tokens: list[int]
    segments: list[tuple[int, int, int]]


def _scores(
    beams: _Beams, step: StepFn, lm_step: StepFn | None, lm_weight: float, coverage: Coverage | None
) -> tuple[torch.Tensor, _Beams]:
    """``log P(prefix) + log p(token)`` for every live beam and token ``(N, V)``, and the beams with new states (and,
    with ``coverage``, their attention summed up to this step: what any token chosen now is finished with)."""
    token_log_probs, state = step(beams.prefixes, beams.state)
    lm_state = beams.lm_state
    if lm_step is not None:
        lm_log_probs, lm_state = lm_step(beams.prefixes, beams.lm_state)
        token_log_probs = token_log_probs + lm_weight * lm_log_probs
    total = beams.log_probs[:, None] + token_log_probs.float()
    covered = beams.coverage
    if coverage is not None:
        attention = coverage.attention(state).float()
        covered = attention if covered is None else covered + attention
    return total, _Beams(beams.prefixes, beams.log_probs, beams.segments, state, lm_state, covered)


def _select(
    total: torch.Tensor, eos: int, beam_size: int
) -> tuple[list[tuple[int, int, float]], list[tuple[int, float]]]:
    """One source's rows ``total (K, V)``: the ``K`` best candidates that do not end in ``eos`` as ``(row, token,
    log P)``, and the candidates among the ``2K`` best that end in ``eos`` as ``(row, log P)``, to be finished."""
    vocab = total.shape[1]
    values, flat = total.flatten().topk(min(2 * beam_size, total.numel()))
    keep: list[tuple[int, int, float]] = []
    ends: list[tuple[int, float]] = []
    for value, index in zip(values.tolist(), flat.tolist(), strict=True):
        beam, token = divmod(index, vocab)
        if token == eos:
            ends.append((beam, value))
        elif len(keep) < beam_size:
            keep.append((beam, token, value))
    return keep, ends


@dataclass(frozen=True)
class _Rules:
    search: BeamConfig
    coverage: Coverage | None = None

    def hypothesis(
        self, prefix: torch.Tensor, token: int, log_prob: float, source: int, covered: torch.Tensor | None
    ) -> Hypothesis:
        """``prefix`` (bos first) extended by ``token``, finished with its normalised score (plus the coverage
        penalty of ``covered``, its attention summed over its steps, when the search has one)."""
        generated = (*prefix[1:].tolist(), token)
        score = log_prob / length_penalty(len(generated), self.search.alpha, self.search.length_norm)
        if self.coverage is not None and covered is not None:
            score = score + self.coverage.penalty(covered, source)
        return Hypothesis(generated, log_prob, score)

    def cannot_improve(self, finished: list[Hypothesis], best_live: float, source: int) -> bool:
        """Whether ``beam_size`` hypotheses are finished and no live beam (the best at ``log P = best_live``) can
        reach the worst of the best of them."""
        search = self.search
        if len(finished) < search.beam_size:
            return False
        worst_kept = sorted((h.score for h in finished), reverse=True)[search.beam_size - 1]
        bound = best_live / length_penalty(search.max_len, search.alpha, search.length_norm)
        if self.coverage is not None:
            bound = bound + self.coverage.largest(source)
        return worst_kept >= bound


def _prune(beams: _Beams, total: torch.Tensor, finished: list[list[Hypothesis]], last: bool, rules: _Rules) -> _Kept:
    """Per unfinished source: finish its ``eos`` candidates, stop it when it cannot improve (or finish its live
    beams at the ``last`` length), else keep its best live extensions."""
    kept = _Kept([], [], [])
    for source, first, end in beams.segments:
        keep, ends = _select(total[first:end], rules.search.eos, rules.search.beam_size)
        prefixes = beams.prefixes[first:end]
        covered = beams.coverage[first:end] if beams.coverage is not None else [None] * (end - first)
        finished[source] += [
            rules.hypothesis(prefixes[row], rules.search.eos, value, source, covered[row]) for row, value in ends
        ]
        best_live = max((value for _, _, value in keep), default=None)
        if best_live is None or rules.cannot_improve(finished[source], best_live, source):
            continue
        if last:  # live beams finish as they are
            finished[source] += [
                rules.hypothesis(prefixes[row], token, value, source, covered[row]) for row, token, value in keep
            ]
            continue
        kept.segments.append((source, len(kept.rows), len(kept.rows) + len(keep)))
        kept.rows.extend(first + row for row, _, _ in keep)
        kept.tokens.extend(token for _, token, _ in keep)
    return kept


def _advance(beams: _Beams, kept: _Kept, total: torch.Tensor) -> _Beams:
    """The kept extensions as the new live beams; every tensor of the states follows its parent row."""
    parents = torch.tensor(kept.rows, device=total.device)
    tokens = torch.tensor(kept.tokens, device=total.device)
    prefixes = torch.cat([beams.prefixes[parents], tokens[:, None]], dim=1)
    state, lm_state = reorder(beams.state, parents), reorder(beams.lm_state, parents)
    covered = None if beams.coverage is None else beams.coverage[parents]
    return _Beams(prefixes, total[parents, tokens], kept.segments, state, lm_state, covered)


def beam_search_batch(
    step: StepFn,
    search: BeamConfig,
    *,
    sources: int,
    state: Any = None,
    lm_step: StepFn | None = None,
    lm_state: Any = None,
    coverage: Coverage | None = None,
    device: torch.device | str = "cpu",
) -> list[list[Hypothesis]]:
    """The best ``search.beam_size`` hypotheses of each of ``sources`` independent searches, best first, decoded
    together: one ``step`` call per length scores the live beams of every unfinished source (rows grouped by
    source; ``state`` starts with one row per source). Each source is searched exactly as :func:`beam_search`
    searches it alone. ``lm_step`` / ``lm_state``: the language model fused with weight ``search.lm_weight``;
    ``coverage``: the optional coverage penalty (module docstring; its ``source_lengths`` one per source);
    ``device``: where the prefixes live (the step function's device)."""
    if sources < 1:
        raise ValueError(f"need sources >= 1; got sources={sources}")
    if coverage is not None and (coverage.beta < 0 or coverage.ratio <= 0 or len(coverage.source_lengths) != sources):
        given = f"beta={coverage.beta}, ratio={coverage.ratio}, {len(coverage.source_lengths)} source lengths"
        raise ValueError(f"coverage needs beta >= 0, ratio > 0 and one source length per source; got {given}")
    finished: list[list[Hypothesis]] = [[] for _ in range(sources)]
    start = torch.full((sources, 1), search.bos, device=device)
    segments = [(source, source, source + 1) for source in range(sources)]
    beams = _Beams(start, torch.zeros(sources, device=device), segments, state, lm_state)
    rules = _Rules(search, coverage)
    for length in range(1, search.max_len + 1):
        total, beams = _scores(beams, step, lm_step, search.lm_weight, coverage)
        kept = _prune(beams, total, finished, length == search.max_len, rules)
        if not kept.rows:
            break
        beams = _advance(beams, kept, total)
    return [sorted(found, key=lambda h: h.score, reverse=True)[: search.beam_size] for found in finished]


def beam_search(
    step: StepFn,
    search: BeamConfig,
    *,
    state: Any = None,
    lm_step: StepFn | None = None,
    lm_state: Any = None,
    coverage: Coverage | None = None,
    device: torch.device | str = "cpu",
) -> list[Hypothesis]:
    """The best ``search.beam_size`` hypotheses of one source, best first (see the module docstring for the scores
    and the search): :func:`beam_search_batch` of one source (``coverage`` with one source length)."""
    fused = {"lm_step": lm_step, "lm_state": lm_state, "coverage": coverage, "device": device}
    (found,) = beam_search_batch(step, search, sources=1, state=state, **fused)
    return found
