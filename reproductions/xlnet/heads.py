"""XLNet's fine-tuning heads (arXiv 1906.08237v2, Appendix A.3; the layout of the release's ``function_builder.py``
and ``modeling.py``), on the last layer's content stream ``h`` ``(B, T, D)``.

- :class:`SequenceHead`: the sequence summary, the state of the last token (where XLNet puts ``<cls>``), projected
  ``tanh(W h + b)``, dropout, then a linear layer: ``classes`` logits, or one output for regression (STS-B).
- :class:`MultipleChoiceHead`: RACE: each (passage, question + option) sequence summarised and scored with one
  logit; the options' logits ``(B, K)`` go through a softmax over the options.
- :class:`SpanHead`: SQuAD. Start logits ``w_s^T h_j``; end logits from ``[h_j; h_start]`` through ``tanh``,
  LayerNorm and a linear layer (training: the gold start; inference: each of the ``start_top`` best starts, the
  ``end_top`` best ends after it); SQuAD 2.0's answerability logit from ``[sum_j p_start(j) h_j; h_cls]`` through
  ``tanh``, dropout and a linear layer without bias ("a logistic regression loss for answerability prediction",
  A.3.2). ``p_mask`` ``(B, T)``: 1 at positions that cannot hold an answer (question, specials), masked with
  ``-1e30`` as the release does.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

NEG = 1e30


def at(h: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``h[b, index[b]]``: ``(B, D)`` from ``(B, T, D)`` and ``(B,)``."""
    return h[torch.arange(h.shape[0], device=h.device), index]


class SequenceHead(nn.Module):
    """Summary of the token at ``cls_index`` (default: the last), ``tanh`` projection, dropout, output layer."""

    def __init__(self, dim: int, outputs: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.summary = nn.Linear(dim, dim)
        self.drop = nn.Dropout(dropout)
        self.logit = nn.Linear(dim, outputs)

    def forward(self, h: torch.Tensor, cls_index: torch.Tensor | None = None) -> torch.Tensor:
        """``(B, outputs)`` (a regression head's ``(B, 1)``)."""
        state = h[:, -1] if cls_index is None else at(h, cls_index)
        return self.logit(self.drop(torch.tanh(self.summary(state))))


class MultipleChoiceHead(SequenceHead):
    """One logit per option: ``h`` ``(B * K, T, D)`` -> ``(B, K)``."""

    def __init__(self, dim: int, dropout: float = 0.1) -> None:
        super().__init__(dim, 1, dropout)

    def forward(self, h: torch.Tensor, cls_index: torch.Tensor | None = None, options: int = 4) -> torch.Tensor:
        return super().forward(h, cls_index).view(-1, options)


class SpanHead(nn.Module):
    """SQuAD start / end / answerability logits."""

    def __init__(self, dim: int, dropout: float = 0.1, eps: float = 1e-12) -> None:
        super().__init__()
        self.start = nn.Linear(dim, 1)
        self.end_0, self.end_norm, self.end_1 = nn.Linear(2 * dim, dim), nn.LayerNorm(dim, eps=eps), nn.Linear(dim, 1)
        self.answer_0, self.answer_1 = nn.Linear(2 * dim, dim), nn.Linear(dim, 1, bias=False)
        self.drop = nn.Dropout(dropout)

    def start_logits(self, h: torch.Tensor, p_mask: torch.Tensor) -> torch.Tensor:
        """``(B, T)``, impossible positions at ``-1e30``."""
        return self.start(h)[..., 0] * (1 - p_mask) - NEG * p_mask

    def end_logits(self, h: torch.Tensor, start_state: torch.Tensor, p_mask: torch.Tensor) -> torch.Tensor:
        """``(B, [S,] T)`` end logits given start states ``(B, [S,] D)``."""
        if start_state.ndim == 3:  # several starts: (B, S, T, D)
            h = h[:, None].expand(-1, start_state.shape[1], -1, -1)
            p_mask = p_mask[:, None]
        x = torch.cat([h, start_state[..., None, :].expand_as(h)], dim=-1)
        logits = self.end_1(self.end_norm(torch.tanh(self.end_0(x))))[..., 0]
        return logits * (1 - p_mask) - NEG * p_mask

    def answer_logit(self, h: torch.Tensor, start_logits: torch.Tensor, cls_index: torch.Tensor) -> torch.Tensor:
        """``(B,)``: the answerability logit (the release's ``cls_logits``,
        (trained with a logistic loss whose label is 1 for an unanswerable question)."""
        start_feature = torch.einsum("bt,btd->bd", start_logits.softmax(-1), h)
        x = torch.cat([start_feature, at(h, cls_index)], dim=-1)
        return self.answer_1(self.drop(torch.tanh(self.answer_0(x))))[..., 0]

    def loss(self, h, p_mask, cls_index, start, end, impossible=None) -> torch.Tensor:  # noqa: ANN001
        """Training loss: mean of the start and end cross-entropies (the end given the gold start), plus the
        answerability's binary cross-entropy when ``impossible`` (1 = no answer) is given (SQuAD 2.0)."""
        start_logits = self.start_logits(h, p_mask)
        end_logits = self.end_logits(h, at(h, start), p_mask)
        loss = (F.cross_entropy(start_logits, start) + F.cross_entropy(end_logits, end)) / 2
        if impossible is not None:
            cls = self.answer_logit(h, start_logits, cls_index)
            loss = loss + F.binary_cross_entropy_with_logits(cls, impossible.float())
        return loss

    def decode(self, h, p_mask, cls_index, start_top: int = 5, end_top: int = 5, max_answer: int = 64) -> tuple:  # noqa: ANN001
        """Inference: the best ``(start, end)`` ``(B,)`` each over the ``start_top x end_top`` candidates with
        ``start <= end < start + max_answer``, its log-probability ``(B,)``, and the no-answer logit ``(B,)``."""
        start_logits = self.start_logits(h, p_mask)
        start_lp, starts = start_logits.log_softmax(-1).topk(min(start_top, h.shape[1]), dim=-1)  # (B, S)
        states = torch.stack([at(h, starts[:, s]) for s in range(starts.shape[1])], dim=1)  # (B, S, D)
        end_lp = self.end_logits(h, states, p_mask).log_softmax(-1)  # (B, S, T)
        positions = torch.arange(h.shape[1], device=h.device)
        valid = (positions >= starts[..., None]) & (positions < starts[..., None] + max_answer)
        end_lp = end_lp.masked_fill(~valid, -NEG)
        end_best, ends = end_lp.topk(min(end_top, h.shape[1]), dim=-1)  # (B, S, E)
        scores = (start_lp[..., None] + end_best).flatten(1)  # (B, S * E)
        best = scores.argmax(-1)
        rows = torch.arange(h.shape[0], device=h.device)
        start = starts[rows, best // ends.shape[-1]]
        end = ends.flatten(1)[rows, best]
        return start, end, scores[rows, best], self.answer_logit(h, start_logits, cls_index)
