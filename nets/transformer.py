"""Transformer blocks and a decoder-only language model, written from the definitions.

"Attention Is All You Need" (Vaswani et al. 2017, arXiv:1706.03762): scaled dot-product attention
``softmax(Q K^T / sqrt(d_k)) V`` per head, ``MultiHead(X) = Concat(head_1, ..., head_h) W^O``, the position-wise
feed-forward network ``FFN(x) = act(x W_1 + b_1) W_2 + b_2``, and each sub-layer wrapped as
``LayerNorm(x + Dropout(Sublayer(x)))`` (post-LN, as GPT and BERT were released). Pre-LN,
``x + Dropout(Sublayer(LayerNorm(x)))``, is the option GPT-2 later used. "Improving Language Understanding by
Generative Pre-Training" (Radford et al. 2018, OpenAI GPT): a decoder-only stack of post-LN blocks with masked
(causal) self-attention, GELU, learned position embeddings, and the output layer tied to the token embedding;
weights initialised N(0, 0.02).

Shapes are batch-first: ``(B, T, D)``. A padding mask is ``(B, T)``, True where the token is padding (torch's
``key_padding_mask`` convention); the language model takes ``attention_mask`` ``(B, T)``, 1 for a real token and 0 for
padding, as tokenizers give it. Attention runs through ``F.scaled_dot_product_attention``, which harness.profile
counts as ``QK^T`` plus ``AV`` multiply-adds.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

ACTIVATIONS = {"gelu": nn.GELU, "gelu_tanh": lambda: nn.GELU(approximate="tanh"), "relu": nn.ReLU}


def allowed_keys(
    t: int, causal: bool = False, padding: torch.Tensor | None = None, device: torch.device | None = None
) -> torch.Tensor | None:
    """Boolean ``(B or 1, 1, T, T)`` mask, True where query ``i`` may attend key ``j``: ``j <= i`` when ``causal``,
    and not a padding key. Every position may always attend itself, so a padding query (whose output nobody uses)
    has one key left and gives finite values instead of NaN; a real token's own key is never masked anyway."""
    if not causal and padding is None:
        return None
    allowed = torch.ones(t, t, dtype=torch.bool, device=device)
    if causal:
        allowed = allowed.tril()
    allowed = allowed[None, None]  # (1, 1, T, T)
    if padding is not None:
        allowed = allowed & ~padding[:, None, None, :]  # (B, 1, T, T)
    return allowed | torch.eye(t, dtype=torch.bool, device=device)


class MultiHeadSelfAttention(nn.Module):
    """``Concat(head_1..head_h) W^O`` with ``head_i = softmax(Q_i K_i^T / sqrt(d/h)) V_i``; Q, K, V from one
    projection ``(D -> 3D)`` whose rows are stacked like ``nn.MultiheadAttention.in_proj_weight``."""

    def __init__(self, dim: int, heads: int, dropout: float = 0.0, bias: bool = True) -> None:
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} is not divisible by heads {heads}")
        self.heads, self.dropout = heads, dropout
        self.qkv = nn.Linear(dim, 3 * dim, bias=bias)
        self.out = nn.Linear(dim, dim, bias=bias)

    def forward(self, x: torch.Tensor, causal: bool = False, padding: torch.Tensor | None = None) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)  # 3 × (B, H, T, d/h)
        mask = allowed_keys(t, causal, padding, x.device)
        dropout = self.dropout if self.training else 0.0
        heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout)  # (B, H, T, d/h)
        return self.out(heads.transpose(1, 2).reshape(b, t, d))


class FeedForward(nn.Sequential):
    """Position-wise ``act(x W_1 + b_1) W_2 + b_2``, ``D -> hidden -> D``."""

    def __init__(self, dim: int, hidden: int, activation: str = "gelu") -> None:
        super().__init__(nn.Linear(dim, hidden), ACTIVATIONS[activation](), nn.Linear(hidden, dim))


class TransformerBlock(nn.Module):
    """Self-attention then feed-forward, each with a residual connection and LayerNorm: after the sum
    (``pre_norm=False``, post-LN, GPT/BERT as released) or on the sub-layer's input (``pre_norm=True``)."""

    def __init__(
        self,
        dim: int,
        heads: int,
        hidden: int,
        dropout: float = 0.1,
        attention_dropout: float = 0.1,
        activation: str = "gelu",
        pre_norm: bool = False,
        eps: float = 1e-5,
    ) -> None:
        super().__init__()
        self.pre_norm = pre_norm
        self.attention = MultiHeadSelfAttention(dim, heads, attention_dropout)
        self.feed_forward = FeedForward(dim, hidden, activation)
        self.norm1, self.norm2 = nn.LayerNorm(dim, eps=eps), nn.LayerNorm(dim, eps=eps)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, causal: bool = False, padding: torch.Tensor | None = None) -> torch.Tensor:
        if self.pre_norm:
            x = x + self.drop(self.attention(self.norm1(x), causal, padding))
            return x + self.drop(self.feed_forward(self.norm2(x)))
        x = self.norm1(x + self.drop(self.attention(x, causal, padding)))
        return self.norm2(x + self.drop(self.feed_forward(x)))


class LearnedPositions(nn.Embedding):
    """One learned vector per position ``0..max_len-1``, added to the token embeddings ``(B, T, D)``."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        if t > self.num_embeddings:
            raise ValueError(f"sequence length {t} exceeds the {self.num_embeddings} learned positions")
        return x + self.weight[:t]


class TransformerLM(nn.Module):
    """Decoder-only language model: token + learned position embeddings, ``layers`` causal blocks, logits from the
    tied token embedding (``h W_e^T``, no bias). GPT: ``vocab=40478, dim=768, layers=12, heads=12, hidden=3072,
    max_len=512``, post-LN, GELU, dropout 0.1. Pre-LN stacks end with a final LayerNorm."""

    def __init__(
        self,
        vocab: int,
        dim: int = 768,
        layers: int = 12,
        heads: int = 12,
        hidden: int = 3072,
        max_len: int = 512,
        dropout: float = 0.1,
        activation: str = "gelu",
        pre_norm: bool = False,
        init_std: float = 0.02,
    ) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = LearnedPositions(max_len, dim)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(dim, heads, hidden, dropout, dropout, activation, pre_norm) for _ in range(layers)
        )
        self.final_norm = nn.LayerNorm(dim) if pre_norm else nn.Identity()
        self.apply(lambda module: _init_gpt(module, init_std))

    def hidden_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The last block's states ``(B, T, D)`` for token ids ``(B, T)``."""
        padding = None if attention_mask is None else attention_mask == 0
        x = self.drop(self.positions(self.tokens(input_ids)))
        for block in self.blocks:
            x = block(x, causal=True, padding=padding)
        return self.final_norm(x)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Next-token logits ``(B, T, vocab)``."""
        return self.hidden_states(input_ids, attention_mask) @ self.tokens.weight.T


def _init_gpt(module: nn.Module, std: float) -> None:
    """GPT's initialisation: linear and embedding weights N(0, std), biases zero (LayerNorm keeps 1 and 0)."""
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, 0.0, std)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
