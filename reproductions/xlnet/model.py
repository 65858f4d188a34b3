"""XLNet: Generalized Autoregressive Pretraining for Language Understanding (Yang, Dai, Yang, Carbonell,
Salakhutdinov & Le; arXiv 1906.08237v2).

The network of Section 2.3-2.5 and Appendix A.2, with the details the released code (zihangdai/xlnet,
``modeling.py``) fixes where the paper is silent:

- **Transformer-XL backbone** (Section 2.4): post-LN layers ``h^ = LN(h + RelAttn(h, [mem, h]))``,
  ``h = LN(h^ + PosFF(h^))`` (A.2); the feed-forward is ``layer_2(drop(act(layer_1(x))))``, GELU (the release's tanh
  approximation, ``activation="gelu_tanh"``; ``"gelu"`` is the exact one), LayerNorm epsilon 1e-12.
- **Relative attention**: per head, ``q``, ``k``, ``v``, ``r`` and ``o`` projections of shape ``(D, n, d)`` without
  biases; the score of query ``i`` and key ``j`` is ``(q_i + r_w_bias)^T k_j`` (content) ``+ (q_i + r_r_bias)^T
  W_r R_{i-j}`` (position: sinusoids of the relative distance, ``R = [sin, cos]`` of ``distance / 10000^(2k/D)``)
  ``+ (q_i + r_s_bias)^T s_ij`` (relative segments, Section 2.5: ``s_ij = seg_embed[0]`` if ``i`` and ``j`` lie in
  the same segment, ``seg_embed[1]`` otherwise; memory counts as segment 0), times ``1/sqrt(d)``. A masked key
  gets ``-1e30`` added (as the release does: a query with no visible key attends uniformly, not NaN).
- **Two-stream attention** (Section 2.3): the content stream ``h`` starts at the word embedding ``e(x_i)`` and may
  see itself; the query stream ``g`` starts at one trainable vector ``w`` (``mask_emb``) and sees the same keys
  (the content stream, memory first) but not its own position's content. Both use one set of weights.
  ``perm_mask`` ``(B, T, T)``: 1 where query ``i`` may not see token ``j`` (``j`` comes at or after ``i`` in the
  factorisation order ``z``); the content stream's mask is ``perm_mask`` with the diagonal cleared.
  ``target_mapping`` ``(B, M, T)``: row ``m`` one-hot at the position of the ``m``-th predicted token, so only
  ``M`` query rows are computed (partial prediction, Eq. 5: about ``T / K`` targets).
- **Recurrence** (Section 2.4): each layer's input content states of a segment are cached (the last ``mem_len``,
  or the first ``reuse_len`` of the segment), with no gradient into them, and prefixed to the next segment's keys
  and values; relative positions make this independent of the previous segment's factorisation order.
- **Bidirectional data** (Section 3.1): with ``bi_data`` the first half of a batch reads relative distances
  forward, the second half backward (negated).
- The LM head is tied to the word embedding, plus a bias (``lm_loss/bias``), Eq. 4 evaluated on ``g^(M)``.

The fine-tuning heads (sequence summary, RACE, SQuAD with answerability) are :mod:`reproductions.xlnet.heads`.

Shapes are batch-first: ``(B, T, D)``; heads ``n``, head size ``d``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from nets.transformer import ACTIVATIONS

NEG = 1e30  # what a masked score loses (modeling.py: ``attn_score - 1e30 * attn_mask``)


@dataclass(frozen=True)
class XLNetConfig:
    """One row per size: the release's ``n_token``, ``d_model``, ``n_layer``, ``n_head``, ``d_head``, ``d_inner``."""

    vocab: int = 32000  # SentencePiece pieces
    dim: int = 1024
    layers: int = 24
    heads: int = 16
    head_dim: int = 64
    inner: int = 4096
    dropout: float = 0.1
    attention_dropout: float = 0.1
    activation: str = "gelu_tanh"
    eps: float = 1e-12
    mem_len: int = 0  # states cached per layer (0: no memory returned)
    reuse_len: int | None = None  # cache only the first tokens of a segment (pre-training)
    clamp_len: int = -1  # relative distances clamped to this (-1: none)
    bi_data: bool = False
    init_std: float = 0.02


# Appendix A.4.1 Table 7 (XLNet-Large) and Section 3.4 ("the same model hyper-parameters as BERT-Base").
XLNET_LARGE = XLNetConfig()
XLNET_BASE = XLNetConfig(dim=768, layers=12, heads=12, head_dim=64, inner=3072)
# The budget tier's model (README.md): a 4,000-piece SentencePiece vocabulary of debian-lm, 4 layers.
XLNET_BUDGET = XLNetConfig(vocab=4000, dim=128, layers=4, heads=4, head_dim=32, inner=512, mem_len=32)
SIZES = {"xlnet-large": XLNET_LARGE, "xlnet-base": XLNET_BASE, "xlnet-budget": XLNET_BUDGET}


class XLNetOutput(NamedTuple):
    h: torch.Tensor  # content stream (B, T, D)
    g: torch.Tensor | None  # query stream (B, M, D) when a target mapping was given
    mems: list[torch.Tensor] | None  # per layer (B, mem, D), detached


def positional_encoding(qlen: int, klen: int, dim: int, clamp_len: int = -1) -> torch.Tensor:
    """``R`` ``(qlen + klen, D)``: ``[sin, cos]`` of relative distances ``klen, klen - 1, ..., -qlen + 1``."""
    distance = torch.arange(klen, -qlen, -1.0)
    if clamp_len > 0:
        distance = distance.clamp(-clamp_len, clamp_len)
    inv_freq = 1 / 10000 ** (torch.arange(0, dim, 2.0) / dim)
    angles = distance[:, None] * inv_freq  # (P, D/2)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


def relative_gather(scores: torch.Tensor, qlen: int, klen: int) -> torch.Tensor:
    """Scores over relative-distance rows ``(B, n, I, P)`` -> over keys ``(B, n, I, J)``: query ``i`` (position
    ``mlen + i``) and key ``j`` are ``mlen + i - j`` apart, row ``qlen - i + j`` of :func:`positional_encoding`."""
    rows = qlen - torch.arange(qlen, device=scores.device)[:, None] + torch.arange(klen, device=scores.device)
    return scores.gather(-1, rows.expand(*scores.shape[:2], qlen, klen))


class RelativeAttention(nn.Module):
    """Multi-head relative attention (Transformer-XL) with XLNet's relative segment term and two streams."""

    def __init__(self, c: XLNetConfig) -> None:
        super().__init__()
        shape = (c.dim, c.heads, c.head_dim)
        self.q, self.k, self.v, self.o, self.r = (nn.Parameter(torch.empty(shape)) for _ in range(5))
        self.r_w_bias, self.r_r_bias, self.r_s_bias = (nn.Parameter(torch.empty(c.heads, c.head_dim)) for _ in "wrs")
        self.seg_embed = nn.Parameter(torch.empty(2, c.heads, c.head_dim))  # s_+ (same segment), s_- (other)
        self.layer_norm = nn.LayerNorm(c.dim, eps=c.eps)
        self.drop, self.drop_attention = nn.Dropout(c.dropout), nn.Dropout(c.attention_dropout)
        self.scale = 1 / math.sqrt(c.head_dim)

    def scores(
        self, q: torch.Tensor, k: torch.Tensor, k_r: torch.Tensor, other_segment: torch.Tensor | None
    ) -> torch.Tensor:
        """``(B, n, I, J)`` unnormalised scores of queries ``q`` ``(B, I, n, d)`` at keys ``k`` ``(B, J, n, d)``;
        ``k_r`` ``(B|1, P, n, d)`` the projected relative encodings; ``other_segment`` ``(B, I, J)`` bool."""
        ac = torch.einsum("bind,bjnd->bnij", q + self.r_w_bias, k)
        bd = relative_gather(torch.einsum("bind,bpnd->bnip", q + self.r_r_bias, k_r), q.shape[1], k.shape[1])
        score = ac + bd
        if other_segment is not None:
            ef = torch.einsum("bind,snd->bnis", q + self.r_s_bias, self.seg_embed)  # (B, n, I, 2)
            score = score + torch.where(other_segment[:, None], ef[..., 1:], ef[..., :1])
        return score * self.scale

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, k_r: torch.Tensor, seg, mask) -> torch.Tensor:  # noqa: ANN001
        """Heads ``(B, I, n, d)``: softmax over the keys of :meth:`scores`, ``mask`` ``(B, I, J)`` True = hidden."""
        score = self.scores(q, k, k_r, seg)
        if mask is not None:
            score = score - NEG * mask[:, None].to(score.dtype)
        probs = self.drop_attention(score.softmax(-1))
        return torch.einsum("bnij,bjnd->bind", probs, v)

    def output(self, x: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
        """``LN(x + drop(heads W_o))``: the residual of A.2."""
        return self.layer_norm(x + self.drop(torch.einsum("bind,hnd->bih", heads, self.o)))

    def forward(self, h, g, r, seg, mem, mask_h, mask_g, target_mapping):  # noqa: ANN001, ANN201
        """One layer's attention of both streams: ``h`` ``(B, T, D)``, ``g`` ``(B, M, D)`` or None, ``r`` ``(B|1, P,
        D)``, ``mem`` ``(B, mlen, D)`` or None; returns ``(h, g)``."""
        context = h if mem is None else torch.cat([mem, h], dim=1)  # (B, J, D)
        k = torch.einsum("bjh,hnd->bjnd", context, self.k)
        v = torch.einsum("bjh,hnd->bjnd", context, self.v)
        k_r = torch.einsum("bph,hnd->bpnd", r, self.r)
        q_h = torch.einsum("bih,hnd->bind", h, self.q)
        h = self.output(h, self.attend(q_h, k, v, k_r, seg, mask_h))
        if g is None:
            return h, None
        q_g = torch.einsum("bmh,hnd->bmnd", g, self.q)
        if target_mapping is not None:  # the m-th query stands at its target's position
            q_g = torch.einsum("bmnd,bmt->btnd", q_g, target_mapping)
        heads = self.attend(q_g, k, v, k_r, seg, mask_g)
        if target_mapping is not None:
            heads = torch.einsum("btnd,bmt->bmnd", heads, target_mapping)
        return h, self.output(g, heads)


class PositionwiseFF(nn.Module):
    """``LN(x + drop(layer_2(drop(act(layer_1(x))))))``."""

    def __init__(self, c: XLNetConfig) -> None:
        super().__init__()
        self.layer_1, self.layer_2 = nn.Linear(c.dim, c.inner), nn.Linear(c.inner, c.dim)
        self.activation = ACTIVATIONS[c.activation]()
        self.drop = nn.Dropout(c.dropout)
        self.layer_norm = nn.LayerNorm(c.dim, eps=c.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer_norm(x + self.drop(self.layer_2(self.drop(self.activation(self.layer_1(x))))))


class XLNetLayer(nn.Module):
    def __init__(self, c: XLNetConfig) -> None:
        super().__init__()
        self.rel_attn, self.ff = RelativeAttention(c), PositionwiseFF(c)

    def forward(self, h, g, r, seg, mem, mask_h, mask_g, target_mapping):  # noqa: ANN001, ANN201
        h, g = self.rel_attn(h, g, r, seg, mem, mask_h, mask_g, target_mapping)
        return self.ff(h), None if g is None else self.ff(g)


class XLNet(nn.Module):
    """The Transformer-XL encoder with two-stream attention (no output layer)."""

    def __init__(self, config: XLNetConfig = XLNET_LARGE) -> None:
        super().__init__()
        self.config = c = config
        self.word_embedding = nn.Embedding(c.vocab, c.dim)  # e(x)
        self.mask_emb = nn.Parameter(torch.empty(1, 1, c.dim))  # w, the query stream's start
        self.layer = nn.ModuleList(XLNetLayer(c) for _ in range(c.layers))
        self.drop = nn.Dropout(c.dropout)
        self.apply(self._init)

    def _init(self, module: nn.Module) -> None:
        """N(0, init_std) for every weight and the attention biases, zero linear biases, LayerNorm 1 and 0."""
        std = self.config.init_std
        if isinstance(module, nn.Linear | nn.Embedding):
            nn.init.normal_(module.weight, 0.0, std)
        if isinstance(module, nn.Linear):
            nn.init.zeros_(module.bias)
        if isinstance(module, RelativeAttention):
            for p in (module.q, module.k, module.v, module.o, module.r, module.r_w_bias, module.r_r_bias,
                      module.r_s_bias, module.seg_embed):  # fmt: skip
                nn.init.normal_(p, 0.0, std)
        if isinstance(module, XLNet):
            nn.init.normal_(module.mask_emb, 0.0, std)

    def masks(self, b: int, qlen: int, mlen: int, perm_mask, attention_mask, causal: bool, device):  # noqa: ANN001, ANN201
        """``(mask_h, mask_g)`` ``(B, qlen, mlen + qlen)`` bool, True where a query may not see a key: the
        permutation mask, padding keys and (``causal``) later positions; memory is always visible. The content
        stream may always see itself."""
        mask = torch.zeros(b, qlen, mlen + qlen, dtype=torch.bool, device=device)
        if perm_mask is not None:
            mask[:, :, mlen:] |= perm_mask.bool()
        if attention_mask is not None:
            mask[:, :, mlen:] |= (attention_mask == 0)[:, None, :]
        if causal:
            mask[:, :, mlen:] |= torch.ones(qlen, qlen, dtype=torch.bool, device=device).triu(1)
        if perm_mask is None and attention_mask is None and not causal:
            return None, None
        self_key = F.pad(torch.eye(qlen, dtype=torch.bool, device=device), (mlen, 0))
        return mask & ~self_key, mask

    def relative_positions(self, b: int, qlen: int, klen: int, device: torch.device) -> torch.Tensor:
        """``(B|1, P, D)``: forward distances, or with ``bi_data`` forward for the first half, backward for the rest."""
        c = self.config
        forward = positional_encoding(qlen, klen, c.dim, c.clamp_len).to(device)
        if not c.bi_data:
            return forward[None]
        backward = torch.cat([(-forward[:, : c.dim // 2]), forward[:, c.dim // 2 :]], dim=-1)  # sin(-x), cos(-x)
        return torch.cat([forward[None].expand(b // 2, -1, -1), backward[None].expand(b - b // 2, -1, -1)])

    def cache(self, h: torch.Tensor, mem: torch.Tensor | None) -> torch.Tensor:
        """The memory for the next segment: the last ``mem_len`` of ``[mem, h]`` (``h`` cut to ``reuse_len``)."""
        c = self.config
        h = h if c.reuse_len is None else h[:, : c.reuse_len]
        states = h if mem is None else torch.cat([mem, h], dim=1)
        return states[:, -c.mem_len :].detach()

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        mems: list[torch.Tensor] | None = None,
        perm_mask: torch.Tensor | None = None,
        target_mapping: torch.Tensor | None = None,
        causal: bool = False,
    ) -> XLNetOutput:
        """``input_ids`` ``(B, T)``; ``token_type_ids`` segment ids; ``attention_mask`` 1 real / 0 padding;
        ``perm_mask`` ``(B, T, T)``; ``target_mapping`` ``(B, M, T)`` (runs the query stream); ``causal``: a
        left-to-right LM's mask instead of a permutation's."""
        b, qlen = input_ids.shape
        mlen = 0 if mems is None else mems[0].shape[1]
        device = input_ids.device
        mask_h, mask_g = self.masks(b, qlen, mlen, perm_mask, attention_mask, causal, device)
        seg = None
        if token_type_ids is not None:  # True where i and j lie in different segments; memory is segment 0
            keys = F.pad(token_type_ids, (mlen, 0))
            seg = token_type_ids[:, :, None] != keys[:, None, :]
        h = self.drop(self.word_embedding(input_ids))
        g = None
        if target_mapping is not None:
            g = self.drop(self.mask_emb.repeat(b, target_mapping.shape[1], 1))  # a copy: the profiler rejects a view
        r = self.drop(self.relative_positions(b, qlen, mlen + qlen, device))
        new_mems = [] if self.config.mem_len > 0 else None
        for index, layer in enumerate(self.layer):
            mem = None if mems is None else mems[index]
            if new_mems is not None:
                new_mems.append(self.cache(h, mem))
            h, g = layer(h, g, r, seg, mem, mask_h, mask_g, target_mapping)
        return XLNetOutput(self.drop(h), None if g is None else self.drop(g), new_mems)


class XLNetLM(nn.Module):
    """XLNet with Eq. 4's output layer: logits ``g^(M) e(x)^T + b`` (``h`` without a target mapping)."""

    def __init__(self, config: XLNetConfig = XLNET_LARGE) -> None:
        super().__init__()
        self.config = config
        self.transformer = XLNet(config)
        self.lm_bias = nn.Parameter(torch.zeros(config.vocab))

    def logits(self, states: torch.Tensor) -> torch.Tensor:
        return states @ self.transformer.word_embedding.weight.T + self.lm_bias

    def forward(self, input_ids: torch.Tensor, **kwargs) -> tuple[torch.Tensor, list[torch.Tensor] | None]:  # noqa: ANN003
        """``(logits, mems)``: logits ``(B, M, V)`` of the query stream, or ``(B, T, V)`` of the content stream."""
        out = self.transformer(input_ids, **kwargs)
        return self.logits(out.h if out.g is None else out.g), out.mems


def language_model(size: str = "xlnet-large", **overrides) -> XLNetLM:  # noqa: ANN003
    """The pre-training network of ``size`` (a key of :data:`SIZES`), config fields overridden by ``overrides``."""
    return XLNetLM(replace(SIZES[size], **overrides))


def encoder(size: str = "xlnet-large", **overrides) -> XLNet:  # noqa: ANN003
    """The bare encoder of ``size`` (profiled as the arch records' network)."""
    return XLNet(replace(SIZES[size], **overrides))
