"""BERT's pre-training objectives on :mod:`nets.bert`'s encoder: the masked LM and next-sentence prediction.

Devlin, Chang, Lee & Toutanova, "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding"
(arXiv 1810.04805), Section 3.1 and Appendix A.1, as google-research/bert's released code runs them
(``create_pretraining_data.py``, ``run_pretraining.py``; facts only, no code copied):

- Masked LM (Task #1): of a sequence's ``L`` real tokens (``[CLS]`` and ``[SEP]`` counted),
  ``n = min(max_predictions, max(1, round(0.15 L)))`` positions are chosen uniformly among its WordPieces (never
  ``[CLS]``, ``[SEP]`` or padding); a chosen position becomes ``[MASK]`` with probability 0.8, a token drawn
  uniformly from the whole vocabulary with 0.1, and stays unchanged with 0.1 (:func:`mask_tokens`). The loss is the
  cross-entropy of the original token at the chosen positions only, averaged over every chosen position of the batch.
- The MLM head (the release's ``cls/predictions``): ``dense (D -> D) + GELU + LayerNorm``, then the output
  projection *tied* to the word embeddings ``(V, D)`` plus an output bias ``(V,)`` (:class:`MaskedLMHead`).
- Next-sentence prediction (Task #2, the release's ``cls/seq_relationship``): a ``D -> 2`` layer on the pooled
  ``[CLS]`` vector; label 0 = segment B follows A in the text, 1 = B is from a random text (the release's order).
  :func:`sentence_pair` builds one ``[CLS] A [SEP] B [SEP]`` example as ``create_pretraining_data.py`` does.

Masks are drawn from a ``torch.Generator`` on the CPU (:func:`step_generator`: the run's seed and the step), so the
same seed gives the same masks on any device and with any number of data-loader workers.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from nets.bert import BertEncoder, BertSize, _init_bert

IGNORE = -100  # the label of a position that is not predicted (cross_entropy's ignore_index)
MASK_RATE, MASK_TOKEN, RANDOM_TOKEN = 0.15, 0.8, 0.1  # of the chosen: 80% [MASK], 10% random, 10% unchanged


class Masked(NamedTuple):
    inputs: torch.Tensor  # (B, T) the ids with the chosen positions replaced
    labels: torch.Tensor  # (B, T) the original id at a chosen position, IGNORE elsewhere


def step_generator(*keys: int) -> torch.Generator:
    """A CPU generator seeded from ``keys`` (e.g. seed, rank, step) mixed by NumPy's ``SeedSequence``, so nearby
    keys give unrelated streams and no two key tuples share one by arithmetic accident."""
    state = np.random.SeedSequence([int(k) for k in keys]).generate_state(1, dtype=np.uint64)[0]
    return torch.Generator().manual_seed(int(state) & (2**63 - 1))


def mask_tokens(
    input_ids: torch.Tensor,
    candidates: torch.Tensor,
    generator: torch.Generator,
    mask_id: int,
    vocab_size: int,
    pad_id: int = 0,
    rate: float = MASK_RATE,
    max_predictions: int | None = None,
) -> Masked:
    """BERT's masking of ``input_ids`` ``(B, T)``: ``candidates`` ``(B, T)`` bool marks the positions that may be
    chosen (the WordPieces, not ``[CLS]``/``[SEP]``/padding); each row gets ``min(max_predictions, max(1,
    round(rate L)))`` of them (``L``: its tokens other than ``pad_id``, at most its candidates), uniformly without
    replacement, then 80% ``[MASK]``, 10% a uniform token of ``[0, vocab_size)``, 10% unchanged. Draws on the CPU."""
    ids, allowed = input_ids.cpu(), candidates.cpu().bool()
    lengths = (ids != pad_id).sum(1).double()
    count = torch.round(lengths * rate).clamp(min=1).long()  # torch.round, as Python's round: half to even
    cap = allowed.sum(1) if max_predictions is None else allowed.sum(1).clamp(max=max_predictions)
    count = torch.minimum(count, cap)
    scores = torch.rand(ids.shape, generator=generator).masked_fill(~allowed, 2.0)  # non-candidates sort last
    rank = scores.argsort(1).argsort(1)  # (B, T) each position's place in its row's random order
    chosen = (rank < count[:, None]) & allowed
    draw = torch.rand(ids.shape, generator=generator)
    random_ids = torch.randint(0, vocab_size, ids.shape, generator=generator)
    inputs = torch.where(chosen & (draw < MASK_TOKEN), torch.full_like(ids, mask_id), ids)
    inputs = torch.where(chosen & (draw >= MASK_TOKEN) & (draw < MASK_TOKEN + RANDOM_TOKEN), random_ids, inputs)
    labels = torch.where(chosen, ids, torch.full_like(ids, IGNORE))
    return Masked(inputs.to(input_ids.device), labels.to(input_ids.device))


class MaskedLMHead(nn.Module):
    """The release's ``cls/predictions``: ``transform = LayerNorm(GELU(dense(h)))``, then ``transform @ E^T + b``
    with ``E`` the encoder's word embeddings ``(V, D)`` (tied: passed in, not held) and ``b`` the output bias."""

    def __init__(self, dim: int, vocab: int) -> None:
        super().__init__()
        self.transform = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.LayerNorm(dim, eps=1e-12))
        self.bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, states: torch.Tensor, word_embeddings: torch.Tensor) -> torch.Tensor:
        return F.linear(self.transform(states), word_embeddings, self.bias)  # (N, D) -> (N, V)


class PreTrainingOutput(NamedTuple):
    mlm_logits: torch.Tensor  # (N, V) at the N chosen positions, in row-major order
    mlm_targets: torch.Tensor  # (N,) their original ids
    nsp_logits: torch.Tensor | None  # (B, 2), or None without next-sentence prediction


class BertPreTraining(nn.Module):
    """:class:`nets.bert.BertEncoder` with the masked-LM head and (``next_sentence``) the next-sentence layer;
    initialised N(0, 0.02) as BERT (the output bias at 0), before any released weights are loaded."""

    def __init__(self, size: BertSize, next_sentence: bool = True) -> None:
        super().__init__()
        self.encoder = BertEncoder(size)
        self.mlm = MaskedLMHead(size.dim, size.vocab)
        self.next_sentence = nn.Linear(size.dim, 2) if next_sentence else None
        self.apply(_init_bert)

    def forward(
        self,
        input_ids: torch.Tensor,
        labels: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> PreTrainingOutput:
        states, pooled = self.encoder(input_ids, attention_mask, token_type_ids)  # (B, T, D), (B, D)
        chosen = labels != IGNORE  # the head runs on the chosen positions only, as the release gathers them
        logits = self.mlm(states[chosen], self.encoder.tokens.weight)
        nsp = self.next_sentence(pooled) if self.next_sentence is not None else None
        return PreTrainingOutput(logits, labels[chosen], nsp)


def masked_lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy averaged over every chosen position of the batch (0 when none is)."""
    if targets.numel() == 0:
        return logits.sum() * 0.0
    return F.cross_entropy(logits.float(), targets)


# --- examples: create_pretraining_data.py's sentence pairs -------------------------------------------------------


class PairExample(NamedTuple):
    tokens_a: list[int]
    tokens_b: list[int]
    is_random_next: bool  # the next-sentence label: 1 = B from a random text


def sentence_pair(
    sentences: Sequence[Sequence[int]],
    random_text: Callable[[], Sequence[Sequence[int]]],
    max_tokens: int,
    rng: random.Random,
    short_seq_prob: float = 0.1,
) -> PairExample:
    """One example from a text's first sentences (their WordPiece ids), as ``create_pretraining_data.py`` makes its
    first: the target length is ``max_tokens - 3`` (or, with ``short_seq_prob``, uniform in ``[2, max_tokens - 3]``);
    sentences are taken until it is reached; A is the first ``a_end`` of them (``a_end`` uniform in ``[1, k - 1]``
    for ``k`` sentences, 1 for one); with probability 0.5, or always when the text has one sentence, B is drawn from
    ``random_text()`` from a random sentence on (label 1), else B is the rest (label 0); the pair is then cut to
    ``max_tokens - 3`` tokens, one token at a time from the longer side, at its front or back with probability 0.5."""
    budget = max_tokens - 3
    target = rng.randint(2, budget) if rng.random() < short_seq_prob else budget
    chunk, length = [], 0
    for sentence in sentences:
        if length >= target and chunk:
            break
        chunk.append(list(sentence))
        length += len(sentence)
    a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
    tokens_a = [t for s in chunk[:a_end] for t in s]
    is_random = len(chunk) == 1 or rng.random() < 0.5
    if is_random:
        other = [list(s) for s in random_text()] or [[]]
        tokens_b = []
        for sentence in other[rng.randint(0, len(other) - 1) :]:
            tokens_b += sentence
            if len(tokens_b) >= target - len(tokens_a):
                break
    else:
        tokens_b = [t for s in chunk[a_end:] for t in s]
    truncate_pair(tokens_a, tokens_b, budget, rng)
    return PairExample(tokens_a, tokens_b, is_random)


def truncate_pair(tokens_a: list[int], tokens_b: list[int], budget: int, rng: random.Random) -> None:
    """Cut the pair in place to ``budget`` tokens: one token at a time off the longer, at the front or the back."""
    while len(tokens_a) + len(tokens_b) > budget:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        del longer[0 if rng.random() < 0.5 else -1]
