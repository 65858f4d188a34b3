"""Beam search over a step function, with length normalisation and optional shallow fusion with a language model.

The search decodes one source at a time. ``step(prefixes, state)`` gets the live prefixes ``(K, t)`` (token ids,
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

Search. Each step extends every live beam by every token and keeps the ``beam_size`` best live extensions by
``log P``; an extension ending in ``eos`` becomes a finished hypothesis instead. Live beams that reach ``max_len``
tokens finish as they are. The search stops early once ``beam_size`` hypotheses are finished and no live beam can
still beat the worst of the best ``beam_size``: a live beam's normalised score can be at most ``log P(prefix) /
lp(max_len)``, because log-probabilities only fall and ``lp`` only grows with length.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

StepFn = Callable[[torch.Tensor, Any], tuple[torch.Tensor, Any]]


@dataclass(frozen=True)
class Hypothesis:
    tokens: tuple[int, ...]  # after bos; ends with eos unless the search reached max_len
    log_prob: float  # log P(Y), with the fused LM term
    score: float  # log P(Y) / lp(Y)


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
    prefixes: torch.Tensor  # (K, t) with bos first
    log_probs: torch.Tensor  # (K,)
    state: Any
    lm_state: Any


def _scores(beams: _Beams, step: StepFn, lm_step: StepFn | None, lm_weight: float) -> tuple[torch.Tensor, _Beams]:
    """``log P(prefix) + log p(token)`` for every live beam and token ``(K, V)``, and the beams with new states."""
    token_log_probs, state = step(beams.prefixes, beams.state)
    lm_state = beams.lm_state
    if lm_step is not None:
        lm_log_probs, lm_state = lm_step(beams.prefixes, beams.lm_state)
        token_log_probs = token_log_probs + lm_weight * lm_log_probs
    total = beams.log_probs[:, None] + token_log_probs.float()
    return total, _Beams(beams.prefixes, beams.log_probs, state, lm_state)


def _extend(
    total: torch.Tensor, beams: _Beams, eos: int, beam_size: int, finish: Callable[[torch.Tensor, float], None]
) -> _Beams | None:
    """Finish the candidates that end in ``eos`` (among the ``2K`` best) and keep the ``K`` best others live."""
    vocab = total.shape[1]
    values, flat = total.flatten().topk(min(2 * beam_size, total.numel()))
    keep: list[int] = []
    for value, index in zip(values.tolist(), flat.tolist(), strict=True):
        beam, token = divmod(index, vocab)
        if token == eos:
            finish(torch.cat([beams.prefixes[beam], total.new_tensor([eos]).long()]), value)
        elif len(keep) < beam_size:
            keep.append(index)
    if not keep:
        return None
    chosen = torch.tensor(keep, device=total.device)
    parents, tokens = chosen // vocab, chosen % vocab
    prefixes = torch.cat([beams.prefixes[parents], tokens[:, None]], dim=1)
    state, lm_state = reorder(beams.state, parents), reorder(beams.lm_state, parents)
    return _Beams(prefixes, total.flatten()[chosen], state, lm_state)


def beam_search(
    step: StepFn,
    *,
    bos: int,
    eos: int,
    beam_size: int,
    max_len: int,
    state: Any = None,
    alpha: float = 0.0,
    length_norm: str = "gnmt",
    lm_step: StepFn | None = None,
    lm_state: Any = None,
    lm_weight: float = 0.0,
    device: torch.device | str = "cpu",
) -> list[Hypothesis]:
    """The best ``beam_size`` hypotheses, best first (see the module docstring for the scores and the search).
    ``alpha`` and ``lm_weight`` are at least 0: the early stop relies on scores that only fall with length.
    ``device``: where the prefixes live (the step function's device)."""
    if beam_size < 1 or max_len < 1 or alpha < 0 or lm_weight < 0:
        given = f"beam_size={beam_size}, max_len={max_len}, alpha={alpha}, lm_weight={lm_weight}"
        raise ValueError(f"need beam_size, max_len >= 1 and alpha, lm_weight >= 0; got {given}")
    finished: list[Hypothesis] = []

    def finish(tokens: torch.Tensor, log_prob: float) -> None:
        generated = tuple(tokens[1:].tolist())
        score = log_prob / length_penalty(len(generated), alpha, length_norm)
        finished.append(Hypothesis(generated, log_prob, score))

    beams: _Beams | None = _Beams(torch.tensor([[bos]], device=device), torch.zeros(1, device=device), state, lm_state)
    for length in range(1, max_len + 1):
        total, beams = _scores(beams, step, lm_step, lm_weight)
        beams = _extend(total, beams, eos, beam_size, finish)
        if beams is None or _cannot_improve(finished, beams, beam_size, max_len, alpha, length_norm):
            break
        if length == max_len:  # live beams finish as they are
            for prefix, log_prob in zip(beams.prefixes, beams.log_probs.tolist(), strict=True):
                finish(prefix, log_prob)
    return sorted(finished, key=lambda h: h.score, reverse=True)[:beam_size]


def _cannot_improve(
    finished: list[Hypothesis], beams: _Beams, beam_size: int, max_len: int, alpha: float, norm: str
) -> bool:
    """Whether ``beam_size`` hypotheses are finished and no live beam can reach the worst of the best of them."""
    if len(finished) < beam_size:
        return False
    worst_kept = sorted((h.score for h in finished), reverse=True)[beam_size - 1]
    best_possible = beams.log_probs.max().item() / length_penalty(max_len, alpha, norm)
    return worst_kept >= best_possible
