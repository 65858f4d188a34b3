"""Pieces ELMo's task models share (arXiv 1802.05365v2, Sec. 3.3): the hashed word ids, the token input
``x_k = [word; char CNN; ELMo_k]`` with an optional second ELMo mix for the task RNN's output, an LSTM run over
padded batches, and masked softmax and pooling.

Word embeddings are trained from scratch over lower-cased words hashed into :data:`WORD_BUCKETS` rows, because no
pre-trained vectors (GloVe, Senna) can be downloaded here (README.md, "What differs and why").

Shapes: characters ``(B, N + 2, 50)`` as ``tasks.tokenizers.elmo.batch_char_ids`` makes them (``<S>``, words,
``</S>``), word ids ``(B, N)`` (0 past a sentence's end), masks ``(B, N)`` bool.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import torch
from torch import nn

from reproductions.elmo.model import BiLM, CharCNN, Elmo, char_mask, released_bilm

WORD_BUCKETS = 2**15


def word_ids(sentences: Sequence[Sequence[str]], buckets: int = WORD_BUCKETS) -> torch.Tensor:
    """Long ``(B, N)``: each lower-cased word hashed (sha1) into ``[1, buckets)``; 0 past a sentence's end."""
    width = max([len(words) for words in sentences] + [1])
    ids = torch.zeros(len(sentences), width, dtype=torch.long)
    for row, words in enumerate(sentences):
        for col, word in enumerate(words):
            ids[row, col] = 1 + int(hashlib.sha1(word.lower().encode()).hexdigest()[:8], 16) % (buckets - 1)
    return ids


def tiny_bilm() -> BiLM:
    """A small random biLM for smoke runs only (never a paper number)."""
    return BiLM(lstm_dim=32, projection_dim=16, filters=((1, 8), (2, 8), (3, 16)), char_dim=8)


def task_bilm(bilm: str) -> BiLM:
    """``"released"``: the released biLM's shape (its weights are loaded by the system); ``"tiny"``: smoke runs."""
    return released_bilm() if bilm == "released" else tiny_bilm()


class TokenInput(nn.Module):
    """``x_k = [word_k; char CNN_k; ELMo_k]`` (Sec. 3.3) and, with ``elmo_output``, a second ELMo mix (its own
    weights) for the task RNN's output. ``dropout`` applies to the word and character parts; ELMo has its own
    (``elmo_dropout``), so that no part of ``x_k`` is dropped twice. ``l2`` is ELMo's ``lambda`` (Sec. 3.3).

    ``forward(chars, words)`` -> ``x (B, N, dim)``, the output mix ``(B, N, elmo_dim)`` or ``None``, the mask
    ``(B, N)``.
    """

    def __init__(
        self,
        word_dim: int,
        char_filters: int = 0,
        bilm: BiLM | None = None,
        elmo_input: bool = True,
        elmo_output: bool = False,
        top_only: bool = False,
        dropout: float = 0.5,
        elmo_dropout: float = 0.5,
        l2: float = 0.0,
    ) -> None:
        super().__init__()
        self.words = nn.Embedding(WORD_BUCKETS, word_dim, padding_idx=0)
        self.chars = None  # a character CNN of char_filters filters of width 3 (NER's), or none
        if char_filters:
            self.chars = CharCNN(filters=((3, char_filters),), n_highway=0, projection_dim=char_filters)
        n_mixes = int(elmo_input) + int(elmo_output) if bilm is not None else 0
        self.elmo = Elmo(bilm, n_mixes, elmo_dropout, l2=l2, top_only=top_only) if n_mixes else None
        self.elmo_input, self.elmo_output = elmo_input and n_mixes > 0, elmo_output and n_mixes > 0
        self.elmo_dim = 2 * bilm.token.projection.out_features if n_mixes else 0
        self.dim = word_dim + char_filters + (self.elmo_dim if self.elmo_input else 0)
        self.dropout = nn.Dropout(dropout)

    def forward(
        self, chars: torch.Tensor, words: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        x = [self.dropout(self.words(words))]
        if self.chars is not None:
            x.append(self.dropout(self.chars(chars[:, 1:-1])))
        mixes = self.elmo(chars)[0] if self.elmo is not None else []
        if self.elmo_input:
            x.append(mixes[0])
        output = mixes[-1] if self.elmo_output else None
        mask = char_mask(chars)[:, 1:-1] & (words > 0)
        return torch.cat(x, dim=-1), output, mask

    def penalty(self) -> torch.Tensor:
        """ELMo's ``lambda ||w||^2`` over its mixes (0 without ELMo)."""
        return self.elmo.penalty() if self.elmo is not None else torch.zeros(())


def packed_lstm(lstm: nn.LSTM, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """A batch-first (bi)LSTM over each sentence's own length: ``(B, N, D)`` -> ``(B, N, H)``, zeros past the end, so
    that padding changes no output. ``mask`` is a prefix of each row."""
    lengths = mask.sum(1).clamp(min=1).cpu()
    packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    out, _ = lstm(packed)
    out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    return out


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor, dim: int) -> torch.Tensor:
    """``softmax`` along ``dim`` over the positions ``mask`` (broadcast to ``scores``) keeps."""
    return scores.masked_fill(~mask, torch.finfo(scores.dtype).min).softmax(dim=dim)


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(B, N, D)``, ``(B, N)`` -> the mean over each sentence's positions ``(B, D)``."""
    m = mask[..., None].to(x.dtype)
    return (x * m).sum(1) / m.sum(1).clamp(min=1)


def masked_max(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``(B, N, D)``, ``(B, N)`` -> the maximum over each sentence's positions ``(B, D)`` (0 for an empty one)."""
    best = x.masked_fill(~mask[..., None], float("-inf")).amax(1)
    return torch.where(mask.any(1, keepdim=True), best, torch.zeros_like(best))
