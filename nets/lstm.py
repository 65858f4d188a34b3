"""LSTM variants for the language-model papers, written from their definitions.

- AWD-LSTM ("Regularizing and Optimizing LSTM Language Models", Merity et al. 2017, arXiv:1708.02182), as ULMFiT
  uses it: DropConnect on the hidden-to-hidden weights (:class:`WeightDropLSTM`: one mask per weight matrix and
  forward pass, so the same for every time step), variational "locked" dropout (:class:`LockedDropout`: one mask
  per sequence, shared over time, Gal & Ghahramani 2016) and embedding dropout (:class:`DroppedEmbedding`: whole
  word types dropped, i.e. rows of the embedding matrix).
- ELMo's biLM as released ("Deep contextualized word representations", Peters et al. 2018, arXiv:1802.05365):
  LSTM cells with a projection of the hidden state and clipping of the cell and of the projection
  (:class:`LSTMPCell`, :class:`LSTMP`): ``c_t = clip(f ⊙ c_{t-1} + i ⊙ g, ±cell_clip)``,
  ``h_t = clip(W_hr (o ⊙ tanh c_t), ±proj_clip)``, gates from ``[x_t, h_{t-1}]``. Gates are in torch's order
  (i, f, g, o), so with no clipping and ``forget_bias=0`` the cell is ``nn.LSTM(proj_size=...)``; TensorFlow's cell,
  which ELMo was trained with, adds ``forget_bias=1.0`` to the forget gate's pre-activation.

Shapes are batch-first: ``(B, T, D)``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call
from torch.nn import functional as F


class LockedDropout(nn.Module):
    """Dropout with one mask per sequence, shared over time: ``(B, T, D) * mask(B, 1, D) / (1 - p)``."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        mask = x.new_empty(x.shape[0], 1, x.shape[2]).bernoulli_(1 - self.p) / (1 - self.p)
        return x * mask


class DroppedEmbedding(nn.Embedding):
    """An embedding whose word types are dropped during training: each row of the matrix is zeroed with
    probability ``dropout`` (the others scaled by ``1 / (1 - dropout)``), so every occurrence of a dropped word in
    the batch is zero. ``weight`` stays the plain matrix, so it can be tied to a softmax layer."""

    def __init__(self, num_embeddings: int, embedding_dim: int, dropout: float = 0.1, **kwargs: object) -> None:
        super().__init__(num_embeddings, embedding_dim, **kwargs)
        self.dropout = dropout

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        weight = self.weight
        if self.training and self.dropout > 0:
            keep = weight.new_empty(weight.shape[0], 1).bernoulli_(1 - self.dropout) / (1 - self.dropout)
            weight = weight * keep
        return F.embedding(ids, weight, self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq)


class WeightDropLSTM(nn.Module):
    """``nn.LSTM`` (batch-first) with DropConnect on its hidden-to-hidden matrices ``weight_hh_l*``: during training
    each is multiplied by a fresh Bernoulli(1 - p) / (1 - p) mask per forward pass, which every time step shares.
    The module keeps torch's fused kernel (cuDNN on GPU); with ``weight_dropout=0`` or in eval it is the plain LSTM."""

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, weight_dropout: float = 0.5) -> None:
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.weight_dropout = weight_dropout

    def forward(
        self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """``(B, T, I)`` -> outputs ``(B, T, H)`` and the final ``(h, c)``, each ``(layers, B, H)``."""
        if not self.training or self.weight_dropout == 0:
            return self.lstm(x, state)
        dropped = {
            name: F.dropout(weight, self.weight_dropout, training=True)
            for name, weight in self.lstm.named_parameters()
            if name.startswith("weight_hh")
        }
        return functional_call(self.lstm, dropped, (x, state), strict=False)


class LSTMPCell(nn.Module):
    """One step of an LSTM with a projected, clipped hidden state (ELMo's biLM cell, see the module docstring)."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        proj_size: int,
        cell_clip: float | None = None,
        proj_clip: float | None = None,
        forget_bias: float = 0.0,
    ) -> None:
        super().__init__()
        self.input_gates = nn.Linear(input_size, 4 * hidden_size)  # W_i x + b for gates i, f, g, o
        self.hidden_gates = nn.Linear(proj_size, 4 * hidden_size, bias=False)  # U h_{t-1}
        self.projection = nn.Linear(hidden_size, proj_size, bias=False)  # W_hr
        self.cell_clip, self.proj_clip, self.forget_bias = cell_clip, proj_clip, forget_bias

    def forward(
        self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """``x (B, I)``, ``state = (h (B, P), c (B, H))`` -> ``h_t`` and the new state."""
        h, c = state
        i, f, g, o = (self.input_gates(x) + self.hidden_gates(h)).chunk(4, dim=-1)
        c = torch.sigmoid(f + self.forget_bias) * c + torch.sigmoid(i) * torch.tanh(g)
        if self.cell_clip is not None:
            c = c.clamp(-self.cell_clip, self.cell_clip)
        h = self.projection(torch.sigmoid(o) * torch.tanh(c))
        if self.proj_clip is not None:
            h = h.clamp(-self.proj_clip, self.proj_clip)
        return h, (h, c)


def reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each sequence of ``x (B, T, ...)`` within its length; padding positions stay where they are."""
    t = x.shape[1]
    steps = torch.arange(t, device=x.device)[None, :]  # (1, T)
    index = torch.where(steps < lengths[:, None], lengths[:, None] - 1 - steps, steps)  # (B, T)
    return x.gather(1, index.view(*index.shape, *([1] * (x.dim() - 2))).expand_as(x))


class LSTMP(nn.Module):
    """An :class:`LSTMPCell` run over a batch of sequences, left to right or (``reverse``) right to left within each
    sequence's length, as ELMo's backward LM reads. Steps past a sequence's length output zeros and keep its state."""

    def __init__(self, input_size: int, hidden_size: int, proj_size: int, reverse: bool = False, **cell: float) -> None:
        super().__init__()
        self.cell = LSTMPCell(input_size, hidden_size, proj_size, **cell)
        self.hidden_size, self.proj_size, self.reverse = hidden_size, proj_size, reverse

    def forward(
        self, x: torch.Tensor, lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """``x (B, T, I)``, ``lengths (B,)`` (default: all ``T``) -> outputs ``(B, T, P)`` and the final ``(h, c)``."""
        b, t, _ = x.shape
        lengths = torch.full((b,), t, device=x.device) if lengths is None else lengths.to(x.device)
        if self.reverse:
            x = reverse_padded(x, lengths)
        state = (x.new_zeros(b, self.proj_size), x.new_zeros(b, self.hidden_size))
        outputs = []
        for step in range(t):
            out, new = self.cell(x[:, step], state)
            live = (step < lengths)[:, None]  # (B, 1)
            state = (torch.where(live, new[0], state[0]), torch.where(live, new[1], state[1]))
            outputs.append(out * live)
        outputs = torch.stack(outputs, dim=1)
        return (reverse_padded(outputs, lengths) if self.reverse else outputs), state
