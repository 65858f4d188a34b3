"""ELMo: "Deep contextualized word representations" (Peters et al., NAACL 2018, arXiv 1802.05365).

Section 3.4 of the paper and the released configuration (allenai/bilm-tf, ``bin/train_elmo.py`` options and the
inference graph of ``bilm/model.py``), written from their definitions:

- :class:`CharCNN`, the context-insensitive token representation ``x_k^LM``: 16-dim character embeddings (id 0 is
  padding and embeds to zeros), convolutions of widths 1..7 with 32, 32, 64, 128, 256, 512, 1024 filters (2048 in
  all) over a token's 50 character ids, max-pooled over the characters, ReLU, two highway layers
  ``y = t * relu(W_h x) + (1 - t) * x``, ``t = sigmoid(W_t x)``, and a linear projection to 512.
- :class:`BiLM`: two layers of forward and two of backward LSTMs with 4096 cells and 512-dim projections, cell and
  projection clipping at 3 and TensorFlow's ``forget_bias = 1`` (:class:`nets.lstm.LSTMP`), a residual connection
  from the first to the second layer (added to the layer's output, not to its recurrent state, as TF's
  ``ResidualWrapper``), one token representation and one softmax shared by both directions (Eq. of Sec. 3.1).
  Its layers ``R_k = {h_k,0, h_k,1, h_k,2}`` are ``h_k,0 = [x_k; x_k]`` and ``h_k,j = [->h_k,j; <-h_k,j]`` (1024).
- :class:`ScalarMix`, Eq. (1): ``ELMo_k = gamma * sum_j softmax(w)_j h_k,j``, optional layer normalisation of each
  layer (as released: one mean and variance per layer over all unmasked positions and features) and the penalty
  ``lambda * ||w||^2`` (``w`` starts at 0, so it pulls the weights toward the average of the layers).

Shapes: characters ``(B, T, 50)`` long (0 past each sentence's end; sentences framed by ``<S>`` and ``</S>`` as
``tasks.tokenizers.elmo.batch_char_ids`` writes them), representations ``(B, T, D)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from nets.lstm import LSTMP

FILTERS = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024))  # (width, count): 2048 filters
N_CHARACTERS = 262  # 261 ids + the padding id 0 (bilm-tf: "set n_characters to 262 after training")


class Highway(nn.Module):
    """``y = t * relu(W_h x + b_h) + (1 - t) * x`` with ``t = sigmoid(W_t x + b_t)``; ``b_t`` starts at -2 (carry)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.gate = nn.Linear(dim, dim)  # bilm-tf's W_carry / b_carry
        self.transform = nn.Linear(dim, dim)  # W_transform / b_transform
        nn.init.constant_(self.gate.bias, -2.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = torch.sigmoid(self.gate(x))
        return t * F.relu(self.transform(x)) + (1 - t) * x


class CharCNN(nn.Module):
    """Characters ``(B, T, C)`` -> token representations ``(B, T, projection_dim)``."""

    def __init__(
        self,
        n_characters: int = N_CHARACTERS,
        char_dim: int = 16,
        filters: Sequence[Sequence[int]] = FILTERS,
        n_highway: int = 2,
        projection_dim: int = 512,
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(n_characters, char_dim, padding_idx=0)
        self.convolutions = nn.ModuleList(nn.Conv1d(char_dim, count, width) for width, count in filters)
        n_filters = sum(count for _, count in filters)
        self.highways = nn.ModuleList(Highway(n_filters) for _ in range(n_highway))
        self.projection = nn.Linear(n_filters, projection_dim)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        b, t, c = chars.shape
        x = self.embedding(chars.reshape(b * t, c)).transpose(1, 2)  # (BT, char_dim, C)
        x = torch.cat([conv(x).amax(dim=2) for conv in self.convolutions], dim=1)  # max over characters (BT, 2048)
        x = F.relu(x)
        for highway in self.highways:
            x = highway(x)
        return self.projection(x).view(b, t, -1)


def char_mask(chars: torch.Tensor) -> torch.Tensor:
    """Bool ``(B, T)``: positions holding a token (any non-zero character id)."""
    return (chars > 0).any(dim=-1)


class BiLM(nn.Module):
    """The character-CNN biLM; ``forward`` gives its ``L + 1`` layers ``(B, L + 1, T, 2 * projection_dim)``.

    ``vocab_size > 0`` adds the softmax shared by both directions (training: :meth:`lm_loss`); the released weights
    have none (bilm-tf does not dump it), so the model the harness profiles has ``vocab_size=0``.
    """

    def __init__(
        self,
        lstm_dim: int = 4096,
        projection_dim: int = 512,
        n_layers: int = 2,
        cell_clip: float | None = 3.0,
        proj_clip: float | None = 3.0,
        skip_connections: bool = True,
        dropout: float = 0.1,
        vocab_size: int = 0,
        char_dim: int = 16,
        filters: Sequence[Sequence[int]] = FILTERS,
        n_highway: int = 2,
    ) -> None:
        super().__init__()
        self.token = CharCNN(N_CHARACTERS, char_dim, filters, n_highway, projection_dim)
        clips = {"cell_clip": cell_clip, "proj_clip": proj_clip, "forget_bias": 1.0}
        self.forward_lstms = nn.ModuleList(
            LSTMP(projection_dim, lstm_dim, projection_dim, **clips) for _ in range(n_layers)
        )
        self.backward_lstms = nn.ModuleList(
            LSTMP(projection_dim, lstm_dim, projection_dim, reverse=True, **clips) for _ in range(n_layers)
        )
        self.skip_connections, self.dropout = skip_connections, dropout
        self.softmax = nn.Linear(projection_dim, vocab_size) if vocab_size else None

    def directions(self, chars: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """``x (B, T, P)``, the forward layers' and the backward layers' outputs (each ``(B, T, P)``, 0 past ends)."""
        mask = char_mask(chars)
        lengths = mask.sum(dim=1)
        x = self.token(chars) * mask[..., None]
        return x, self._run(self.forward_lstms, x, lengths), self._run(self.backward_lstms, x, lengths)

    def _run(self, lstms: nn.ModuleList, x: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        outputs, inputs = [], x
        for index, lstm in enumerate(lstms):
            out, _ = lstm(F.dropout(inputs, self.dropout, self.training), lengths)  # bilm-tf: dropout on inputs
            if self.skip_connections and index > 0:
                out = out + inputs  # residual from layer j-1 to layer j's output (not from the token layer)
            outputs.append(out)
            inputs = out
        return outputs

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        """``chars (B, T, C)`` -> ``(B, L + 1, T, 2P)``, bilm-tf's ``lm_embeddings``: [x; x], [->h_j; <-h_j]."""
        x, forward, backward = self.directions(chars)
        layers = [torch.cat([x, x], dim=-1)] + [torch.cat(pair, dim=-1) for pair in zip(forward, backward, strict=True)]
        return torch.stack(layers, dim=1)

    def lm_loss(
        self, chars: torch.Tensor, ids: torch.Tensor, softmax: nn.Module | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean negative log-likelihood of the forward and of the backward LM, each over its predicted tokens.

        ``ids (B, T)`` are the word ids of the same positions (``<S>`` and ``</S>`` included, ignored past the end):
        the forward top layer at position k predicts ``ids[k + 1]``, the backward one ``ids[k - 1]``. ``softmax``
        (default: the model's own) is the output layer both directions share; a training system may hold it beside
        the biLM, so that the biLM's weights alone are what a task model loads.
        """
        softmax = softmax if softmax is not None else self.softmax
        mask = char_mask(chars)
        _, forward, backward = self.directions(chars)
        top_f = F.dropout(forward[-1], self.dropout, self.training)
        top_b = F.dropout(backward[-1], self.dropout, self.training)
        valid = mask[:, 1:] & mask[:, :-1]  # (B, T - 1): pairs of adjacent tokens
        nll_f = F.cross_entropy(softmax(top_f[:, :-1][valid]), ids[:, 1:][valid])
        nll_b = F.cross_entropy(softmax(top_b[:, 1:][valid]), ids[:, :-1][valid])
        return nll_f, nll_b


def released_bilm() -> BiLM:
    """The released biLM (``elmo_2x4096_512_2048cnn_2xhighway``) without its softmax: 93.6M parameters."""
    return BiLM()


class ScalarMix(nn.Module):
    """Eq. (1): ``gamma * sum_j softmax(w)_j LN(h_j)`` over ``L + 1`` layers; ``top_only`` uses ``gamma * h_L``.

    ``layer_norm`` normalises each layer with one mean and variance over its unmasked positions and features (as
    bilm-tf's ``weight_layers``); :meth:`penalty` is ``l2 * ||w||^2`` (Sec. 3.3), 0 for ``top_only`` (whose unused ``w``
    is frozen, so that it is no trained parameter without a gradient).
    """

    def __init__(self, n_layers: int, layer_norm: bool = False, l2: float = 0.0, top_only: bool = False) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(n_layers), requires_grad=not top_only)  # w; softmax(0): the average
        self.gamma = nn.Parameter(torch.ones(1))
        self.layer_norm, self.l2, self.top_only = layer_norm, l2, top_only

    def forward(self, layers: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``layers (B, L + 1, T, D)``, ``mask (B, T)`` -> ``(B, T, D)``."""
        if self.top_only:
            return self.gamma * layers[:, -1]
        if self.layer_norm:
            layers = torch.stack([masked_layer_norm(layers[:, j], mask) for j in range(layers.shape[1])], dim=1)
        s = torch.softmax(self.weights, dim=0)
        return self.gamma * torch.einsum("l,bltd->btd", s, layers)

    def penalty(self) -> torch.Tensor:
        return self.weights.new_zeros(()) if self.top_only else self.l2 * (self.weights**2).sum()


def masked_layer_norm(x: torch.Tensor, mask: torch.Tensor, eps: float = 1e-12) -> torch.Tensor:
    """``(x - mean) / sqrt(var + eps)`` with one mean and variance over the unmasked entries of ``x (B, T, D)``."""
    m = mask[..., None].to(x.dtype)
    n = m.sum() * x.shape[-1]
    mean = (x * m).sum() / n
    variance = (((x - mean) * m) ** 2).sum() / n
    return (x - mean) / torch.sqrt(variance + eps)


def strip_boundaries(layers: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Drop the ``<S>`` and ``</S>`` positions: ``(B, L + 1, T, D)``, ``(B, T)`` -> ``(B, L + 1, T - 2, D)``, mask."""
    lengths = mask.sum(dim=1) - 2  # words per sentence
    inner = torch.arange(mask.shape[1] - 2, device=mask.device)[None, :] < lengths[:, None]
    return layers[:, :, 1:-1] * inner[:, None, :, None], inner


BUDGET_FILTERS = ((1, 32), (2, 32), (3, 64), (4, 64), (5, 64))  # 256 filters


def budget_bilm(vocab_size: int = 0) -> BiLM:
    """The budget tier's biLM (README.md, "Budget tier"): the released structure (char CNN, 2 highways, 2
    residual LSTMP layers per direction, clipping) at 1/8 of its widths: 256 filters, 512 cells, 64-dim projections."""
    return BiLM(lstm_dim=512, projection_dim=64, filters=BUDGET_FILTERS, vocab_size=vocab_size)


class Elmo(nn.Module):
    """ELMo for a task model (Sec. 3.3): a frozen biLM and ``n_mixes`` task-specific :class:`ScalarMix` es (one for
    the task RNN's input; a second, with its own weights, for its output as for SNLI and SQuAD), with dropout.

    ``forward(chars)`` -> a list of ``n_mixes`` tensors ``(B, N, 2P)`` for the N words between ``<S>`` and ``</S>``, and
    the word mask ``(B, N)``; :meth:`penalty` sums the mixes' ``lambda ||w||^2``. The biLM stays in eval mode (no
    dropout) and gets no gradient, whatever mode the task model is in.

    ``cache`` (a dict, or ``None``: off) keeps each training sentence's biLM layers: frozen and without dropout, the
    biLM gives a sentence the same layers every epoch, so a task model trained for many epochs on few examples (the
    budget tier) computes them once. Only while training: test sets are read once, and would only fill memory.
    """

    def __init__(
        self,
        bilm: BiLM,
        n_mixes: int = 1,
        dropout: float = 0.5,
        layer_norm: bool = False,
        l2: float = 0.0,
        top_only: bool = False,
    ) -> None:
        super().__init__()
        self.bilm = bilm.requires_grad_(False)
        n_layers = len(bilm.forward_lstms) + 1
        self.mixes = nn.ModuleList(ScalarMix(n_layers, layer_norm, l2, top_only) for _ in range(n_mixes))
        self.dropout = nn.Dropout(dropout)
        self.cache: dict[bytes, torch.Tensor] | None = None

    def forward(self, chars: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
        self.bilm.eval()
        with torch.no_grad():
            if self.cache is not None and self.training:
                layers, mask = self._cached_layers(chars)
            else:
                layers, mask = strip_boundaries(self.bilm(chars), char_mask(chars))
        return [self.dropout(mix(layers, mask)) for mix in self.mixes], mask

    def _cached_layers(self, chars: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:func:`strip_boundaries` of the biLM's layers, each sentence's ``(L + 1, n, D)`` computed once (the
        sentences not seen yet, as one batch) and kept in :attr:`cache` under its character ids."""
        lengths = char_mask(chars).sum(dim=1)  # words + 2
        keys = [chars[b, : int(n)].cpu().numpy().tobytes() for b, n in enumerate(lengths)]
        new = [b for b, key in enumerate(keys) if key not in self.cache]
        if new:
            width = int(lengths[new].max())
            layers, inner = strip_boundaries(self.bilm(chars[new, :width]), char_mask(chars[new, :width]))
            for row, b in enumerate(new):
                self.cache[keys[b]] = layers[row, :, : int(inner[row].sum())].clone()
        words = lengths - 2
        shape = (len(keys), len(self.bilm.forward_lstms) + 1, chars.shape[1] - 2, self.cache[keys[0]].shape[-1])
        out = chars.new_zeros(shape, dtype=torch.float)  # (B, L + 1, N, D)
        for b, key in enumerate(keys):
            out[b, :, : int(words[b])] = self.cache[key]
        mask = torch.arange(chars.shape[1] - 2, device=chars.device)[None, :] < words[:, None]
        return out, mask

    def penalty(self) -> torch.Tensor:
        return sum((mix.penalty() for mix in self.mixes), torch.zeros(()))
