"""The budget tier's task model (ELMo, arXiv 1802.05365v2, README.md "Budget tier"): a text classifier with and
without ELMo, the same model otherwise, as Sec. 3.3 adds ELMo to a task model: "concatenate the ELMo vector
ELMo_k^task with x_k and pass the ELMo enhanced representation [x_k; ELMo_k^task] into the task RNN".

``x_k`` are word embeddings trained from scratch over hashed lower-cased words (``tagger.word_ids``; no pre-trained
vectors can be downloaded here); the task RNN is one biLSTM layer, max-pooled over the words, then a linear layer to
the classes (a small version of the sentence encoders of the paper's task models). ELMo is one mix of all the biLM's
layers (``-elmo``) or its top layer only (``-elmo-top``, Table 2's "Last Only"), with dropout and ``lambda ||w||^2``.

Inputs: ``chars (B, N + 2, 50)`` (``<S>``, words, ``</S>``), ``words (B, N)``; output: logits ``(B, classes)``.
"""

from __future__ import annotations

import torch
from torch import nn

from reproductions.elmo.model import BiLM, Elmo, budget_bilm, char_mask
from reproductions.elmo.tagger import WORD_BUCKETS

ELMO = {"elmo-budget-task": None, "elmo-budget-task-elmo": "all", "elmo-budget-task-elmo-top": "top"}


class TextClassifier(nn.Module):
    """``[x_k (; ELMo_k)]`` -> biLSTM -> max over words -> linear."""

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
        self.words = nn.Embedding(WORD_BUCKETS, word_dim, padding_idx=0)
        self.elmo = Elmo(bilm, n_mixes=1, dropout=dropout, l2=l2, top_only=top_only) if bilm is not None else None
        width = word_dim + (2 * bilm.token.projection.out_features if bilm is not None else 0)
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(width, hidden, batch_first=True, bidirectional=True)
        self.output = nn.Linear(2 * hidden, n_classes)

    def forward(self, chars: torch.Tensor, words: torch.Tensor) -> torch.Tensor:
        x = [self.words(words)]
        if self.elmo is not None:
            (elmo,), _ = self.elmo(chars)
            x.append(elmo)
        mask = char_mask(chars)[:, 1:-1] & (words > 0)  # (B, N)
        lengths = mask.sum(1).clamp(min=1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(self.dropout(torch.cat(x, -1)), lengths, True, False)
        out, _ = self.lstm(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=words.shape[1])
        pooled = out.masked_fill(~mask[..., None], float("-inf")).amax(dim=1)  # (B, 2 * hidden)
        return self.output(self.dropout(pooled))

    def penalty(self) -> torch.Tensor:
        return self.elmo.penalty() if self.elmo is not None else torch.zeros(())


def budget_classifier(model: str = "elmo-budget-task-elmo", n_classes: int = 45) -> TextClassifier:
    """The registered budget task model ``model`` (:data:`ELMO`) over :func:`budget_bilm`'s shape (its weights come
    from the biLM stage, ``init_from``)."""
    if model not in ELMO:
        raise KeyError(f"unknown budget task model {model!r}; known: {', '.join(ELMO)}")
    mix = ELMO[model]
    return TextClassifier(n_classes, budget_bilm() if mix else None, top_only=mix == "top")
