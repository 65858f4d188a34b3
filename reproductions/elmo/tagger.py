"""The NER task model of ELMo (arXiv 1802.05365v2, Sec. 4 "Named entity extraction"): a biLSTM-CRF, with and without
ELMo at its input.

The paper: "the baseline model uses pre-trained word embeddings, a character-based CNN representation, two biLSTM
layers and a conditional random field (CRF) loss (Lafferty et al., 2001)", and ELMo enters as ``[x_k; ELMo_k]``
(Sec. 3.3) with the weighted average of all biLM layers. The sizes below are this reproduction's choices (the
supplemental material, which gives the paper's, was not read): 50-dim word embeddings, a 16-dim character CNN with
128 filters of width 3, 2 biLSTM layers of 200 units per direction, dropout 0.5. Word embeddings are trained from
scratch over hashed lower-cased words (:func:`layers.word_ids`; no pre-trained vectors can be downloaded here). The
input layer is :class:`layers.TokenInput`, which ESIM and BCN share.

Inputs: ``chars (B, N + 2, 50)`` as ``tasks.tokenizers.elmo.batch_char_ids`` makes them (``<S>``, words, ``</S>``)
and ``words (B, N)`` hashed word ids; output: tag scores ``(B, N, n_tags)`` for :class:`CRF`.
"""

from __future__ import annotations

import torch
from torch import nn

from reproductions.elmo.layers import WORD_BUCKETS, TokenInput, packed_lstm, task_bilm, tiny_bilm, word_ids
from reproductions.elmo.model import BiLM, Elmo

__all__ = ["CRF", "WORD_BUCKETS", "BiLSTMCRFTagger", "tagger", "tiny_bilm", "word_ids"]


class CRF(nn.Module):
    """Linear-chain CRF: ``score(y) = start[y_1] + sum_t (emit[t, y_t] + trans[y_{t-1}, y_t]) + end[y_N]``."""

    def __init__(self, n_tags: int) -> None:
        super().__init__()
        self.transitions = nn.Parameter(torch.zeros(n_tags, n_tags))  # [from, to]
        self.start = nn.Parameter(torch.zeros(n_tags))
        self.end = nn.Parameter(torch.zeros(n_tags))

    def nll(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Mean over sentences of ``log Z - score(gold)``; ``mask (B, N)`` is a prefix of each row."""
        return (self.log_partition(emissions, mask) - self._score(emissions, tags, mask)).mean()

    def _score(self, emissions: torch.Tensor, tags: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        m = mask.to(emissions.dtype)
        emit = emissions.gather(2, tags[..., None]).squeeze(2) * m  # (B, N)
        trans = self.transitions[tags[:, :-1], tags[:, 1:]] * m[:, 1:]
        last = tags.gather(1, (mask.sum(1) - 1)[:, None]).squeeze(1)
        return self.start[tags[:, 0]] + emit.sum(1) + trans.sum(1) + self.end[last]

    def log_partition(self, emissions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        alpha = self.start + emissions[:, 0]  # (B, K)
        for t in range(1, emissions.shape[1]):
            step = torch.logsumexp(alpha[:, :, None] + self.transitions + emissions[:, t, None, :], dim=1)
            alpha = torch.where(mask[:, t, None], step, alpha)
        return torch.logsumexp(alpha + self.end, dim=1)

    def decode(self, emissions: torch.Tensor, mask: torch.Tensor) -> list[list[int]]:
        """Viterbi: the best tag sequence of each sentence (its own length)."""
        score, back = self.start + emissions[:, 0], []
        for t in range(1, emissions.shape[1]):
            best, index = (score[:, :, None] + self.transitions).max(dim=1)  # (B, K) over the previous tag
            back.append(index)
            score = torch.where(mask[:, t, None], best + emissions[:, t], score)
        lengths, paths = mask.sum(1).tolist(), []
        for b, length in enumerate(lengths):
            tag = int((score[b] + self.end).argmax())
            path = [tag]
            for t in range(length - 1, 0, -1):
                tag = int(back[t - 1][b, tag])
                path.append(tag)
            paths.append(path[::-1])
        return paths


class BiLSTMCRFTagger(nn.Module):
    """``[word; char CNN (; ELMo)]`` -> 2-layer biLSTM -> tag scores; ``crf`` scores and decodes them."""

    def __init__(
        self, n_tags: int = 9, bilm: BiLM | None = None, word_dim: int = 50, hidden: int = 200, dropout: float = 0.5
    ) -> None:
        super().__init__()
        self.input = TokenInput(word_dim, char_filters=128, bilm=bilm, dropout=dropout, elmo_dropout=dropout)
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(self.input.dim, hidden, num_layers=2, batch_first=True, bidirectional=True, dropout=dropout)
        self.output = nn.Linear(2 * hidden, n_tags)
        self.crf = CRF(n_tags)

    @property
    def elmo(self) -> Elmo | None:
        return self.input.elmo

    def forward(self, chars: torch.Tensor, words: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``chars (B, N + 2, 50)``, ``words (B, N)`` -> tag scores ``(B, N, n_tags)`` and the CRF's ``log Z (B,)``."""
        x, _, mask = self.input(chars, words)
        scores = self.output(self.dropout(packed_lstm(self.lstm, x, mask)))
        return scores, self.crf.log_partition(scores, mask)

    def penalty(self) -> torch.Tensor:
        return self.input.penalty()


def tagger(elmo: bool = False, bilm: str = "released", n_tags: int = 9) -> BiLSTMCRFTagger:
    """``bilstm-crf`` (``elmo=False``) or ``bilstm-crf-elmo`` with the released biLM's shape (weights loaded by the
    system) or, for smoke runs, ``bilm="tiny"``."""
    return BiLSTMCRFTagger(n_tags, bilm=task_bilm(bilm) if elmo else None)
