"""The budget tier's task model (ELMo, arXiv 1802.05365v2, README.md "Budget tier"): a text classifier with and
without ELMo, the same model otherwise, as Sec. 3.3 adds ELMo to a task model: "concatenate the ELMo vector
ELMo_k^task with x_k and pass the ELMo enhanced representation [x_k; ELMo_k^task] into the task RNN".

``x_k`` are word embeddings trained from scratch over hashed lower-cased words (``layers.word_ids``; no pre-trained
vectors can be downloaded here); the task RNN is one biLSTM layer, max-pooled over the words, then a linear layer to
the classes (a small version of the sentence encoders of the paper's task models). ELMo is one mix of all the biLM's
layers (``-elmo``) or its top layer only (``-elmo-top``, Table 2's "Last Only"), with dropout and ``lambda ||w||^2``.

Inputs: ``chars (B, N + 2, 50)`` (``<S>``, words, ``</S>``), ``words (B, N)``; output: logits ``(B, classes)``.
"""

from __future__ import annotations

import torch
from torch import nn

from reproductions.elmo.layers import TokenInput, masked_max, packed_lstm
from reproductions.elmo.model import BiLM, budget_bilm

ELMO = {"elmo-budget-task": None, "elmo-budget-task-elmo": "all", "elmo-budget-task-elmo-top": "top"}


class TextClassifier(nn.Module):
    """``x_k = [word_k (; ELMo_k)]`` (``layers.TokenInput``: dropout on the words, ELMo's own dropout on ELMo) ->
    biLSTM -> max over the words -> dropout -> linear."""

    def __init__(
        self,
        n_classes: int,
        bilm: BiLM | None = None,
        top_only: bool = False,
        word_dim: int = 64,
        hidden: int = 64,
        dropout: float = 0.5,
        l2: float = 0.001,
    ) -> None:
        super().__init__()
        self.input = TokenInput(word_dim, bilm=bilm, top_only=top_only, dropout=dropout, elmo_dropout=dropout, l2=l2)
        self.lstm = nn.LSTM(self.input.dim, hidden, batch_first=True, bidirectional=True)
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(2 * hidden, n_classes)

    def forward(self, chars: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
        x, _, mask = self.input(chars, words)  # (B, N, D), (B, N)
        pooled = masked_max(packed_lstm(self.lstm, x, mask), mask)  # (B, 2 * hidden)
        return self.output(self.dropout(pooled))

    def penalty(self) -> torch.Tensor:
        return self.input.penalty()


def budget_classifier(model: str = "elmo-budget-task-elmo", n_classes: int = 45) -> TextClassifier:
    """The registered budget task model ``model`` (:data:`ELMO`) over :func:`budget_bilm`'s shape (its weights come
    from the biLM stage, ``init_from``)."""
    if model not in ELMO:
        raise KeyError(f"unknown budget task model {model!r}; known: {', '.join(ELMO)}")
    mix = ELMO[model]
    return TextClassifier(n_classes, budget_bilm() if mix else None, top_only=mix == "top")
