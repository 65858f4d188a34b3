"""ELMo's SST-5 task model (arXiv 1802.05365v2, Sec. 4 "Sentiment analysis", Table 1): the biattentive
classification network (BCN) of McCann, Bradbury, Xiong & Socher, "Learned in Translation: Contextualized Word
Vectors", NIPS 2017 (arXiv 1708.00107, Sec. 5), with ELMo in place of CoVe, and without it.

BCN as McCann et al. define it, for the two inputs ``w^x`` and ``w^y`` (for a one-sentence task both are the same
sentence):

- ``X = biLSTM(f(w^x))``, ``Y = biLSTM(f(w^y))``, ``f`` a feed-forward layer with ReLU (one encoder for both);
- biattention: affinity ``A = X Y^T``; ``A_x = softmax(A)``, ``A_y = softmax(A^T)`` column-wise; context summaries
  ``C_x = A_x^T X``, ``C_y = A_y^T Y``;
- integration: ``X|y = biLSTM([X; X - C_y; X ⊙ C_y])`` (and ``Y|x`` alike, one integrator);
- pooling: ``x_pool = [max(X|y); mean(X|y); min(X|y); x_self]`` with self-attentive pooling
  ``beta = softmax(X|y v + d)``, ``x_self = X|y^T beta``;
- a three-layer maxout network on the pooled representations.

With one sentence ``X = Y``, so ``A`` is symmetric, ``C_x = C_y`` and ``Y|x = X|y``: the second side repeats the
first, and only one is computed and pooled (as in AllenNLP's ``bcn``, the code ELMo's authors released).

ELMo: the paper says only "replacing CoVe with ELMo in the BCN model"; CoVe enters BCN at its input, ``[GloVe(w);
CoVe(w)]`` into ``f``, so ELMo enters there too, ``[x_k; ELMo_k]`` with one mix of all layers (``bcn-elmo``), as in
AllenNLP's ``biattentive_classification_network_elmo.jsonnet`` (``use_input_elmo``, not at the integrator's output;
test accuracy 54.7 in its header). The supplement, which may say more, was not read (README.md).

Sizes and dropouts (AllenNLP's released configuration; McCann et al. do not print theirs): ``h = 300`` for ``f``,
the encoder and the integrator; dropout 0.5 on the word vectors and on ELMo, 0.25 after ``f``, 0.1 on the
integrator's output; maxout layers of 1200, 600 and 5 units with 4 pieces each, dropout 0.2 and 0.3 after the first
two. McCann et al.'s maxout network is batch-normalized; AllenNLP's is not, and neither is this one. The word
vectors are 300-dim embeddings of hashed lower-cased words trained from scratch (no GloVe here).

Inputs: ``chars (B, N + 2, 50)``, ``words (B, N)``; output: logits ``(B, 5)`` over ``tasks.sst.LABELS``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from reproductions.elmo.layers import TokenInput, masked_max, masked_mean, masked_softmax, packed_lstm, task_bilm
from reproductions.elmo.model import BiLM

VARIANTS = {"bcn": False, "bcn-elmo": True}  # model id -> ELMo at the input


class Maxout(nn.Module):
    """Layers ``x -> max over pieces of (W x + b)``, each followed by its dropout."""

    def __init__(self, in_dim: int, dims: Sequence[int], pieces: int, dropouts: Sequence[float]) -> None:
        super().__init__()
        widths = [in_dim, *dims]
        self.layers = nn.ModuleList(nn.Linear(widths[i], widths[i + 1] * pieces) for i in range(len(dims)))
        self.pieces, self.dropouts = pieces, tuple(dropouts)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer, p in zip(self.layers, self.dropouts, strict=True):
            x = layer(x).unflatten(-1, (-1, self.pieces)).amax(-1)
            x = F.dropout(x, p, self.training)
        return x


class BCN(nn.Module):
    """See the module docstring; ``bilm=None`` is the baseline."""

    def __init__(
        self,
        bilm: BiLM | None = None,
        word_dim: int = 300,
        hidden: int = 300,
        n_classes: int = 5,
        dropout: float = 0.5,
        feedforward_dropout: float = 0.25,
        integrator_dropout: float = 0.1,
        maxout: Sequence[int] = (1200, 600),
        maxout_dropouts: Sequence[float] = (0.2, 0.3, 0.0),
        pieces: int = 4,
    ) -> None:
        super().__init__()
        self.input = TokenInput(word_dim, bilm=bilm, dropout=dropout, elmo_dropout=dropout)
        self.feedforward = nn.Sequential(nn.Linear(self.input.dim, hidden), nn.ReLU(), nn.Dropout(feedforward_dropout))
        self.encoder = nn.LSTM(hidden, hidden, batch_first=True, bidirectional=True)
        self.integrator = nn.LSTM(6 * hidden, hidden, batch_first=True, bidirectional=True)
        self.integrator_dropout = nn.Dropout(integrator_dropout)
        self.self_attention = nn.Linear(2 * hidden, 1)  # v, d
        self.classifier = Maxout(8 * hidden, (*maxout, n_classes), pieces, maxout_dropouts)

    def forward(self, chars: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
        w, _, mask = self.input(chars, words)
        x = packed_lstm(self.encoder, self.feedforward(w), mask)  # X = Y (B, N, 2h)
        affinity = x @ x.transpose(1, 2)  # A = X Y^T (B, N, N)
        context = masked_softmax(affinity, mask[:, None, :], dim=2) @ x  # C_y: for each x_i, over the y_j (B, N, 2h)
        integrated = packed_lstm(self.integrator, torch.cat([x, x - context, x * context], dim=-1), mask)  # X|y
        integrated = self.integrator_dropout(integrated)
        beta = masked_softmax(self.self_attention(integrated).squeeze(-1), mask, dim=1)  # (B, N)
        pooled = [
            masked_max(integrated, mask),
            masked_mean(integrated, mask),
            -masked_max(-integrated, mask),  # min
            (beta[..., None] * integrated).sum(1),  # x_self
        ]
        return self.classifier(torch.cat(pooled, dim=-1))  # (B, n_classes)

    def penalty(self) -> torch.Tensor:
        return self.input.penalty()


def bcn(variant: str = "bcn", bilm: str = "released") -> BCN:
    """``bcn`` or ``bcn-elmo``, with the released biLM's shape (weights loaded by the system) or ``bilm="tiny"``."""
    return BCN(task_bilm(bilm) if VARIANTS[variant] else None)
