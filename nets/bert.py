"""A BERT-style bidirectional encoder and sequence classifier, built from :mod:`nets.transformer`'s blocks.

Devlin, Chang, Lee & Toutanova, "BERT: Pre-training of Deep Bidirectional Transformers for Language
Understanding" (arXiv 1810.04805): token + learned position + segment embeddings, summed, layer-normalised and
dropped out; ``layers`` post-LN Transformer blocks with GELU and no causal mask; the pooler, ``tanh(W h_[CLS] + b)``
on the first token's final state; for classification a dropout and a linear layer on the pooled vector. LayerNorm
epsilon 1e-12 and initialisation N(0, 0.02) as released.

Sizes (:data:`SIZES`): BERT base (L=12, H=768, A=12, 110M parameters) and large (L=24, H=1024, A=16, 340M); the
randomly initialised Transformer of UDA (arXiv 1904.12848, Appendix E.1: BERT base's hyper-parameters with 6
layers, 8 heads, dropout 0.2); and a small encoder for CPU budget runs. Released BERT weights are read through a
``weights`` tier's converter (not part of this module).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from nets.transformer import LearnedPositions, TransformerBlock


class BertSize(NamedTuple):
    vocab: int
    dim: int
    layers: int
    heads: int
    hidden: int
    max_len: int
    dropout: float


SIZES: dict[str, BertSize] = {
    "base": BertSize(30522, 768, 12, 12, 3072, 512, 0.1),
    "large": BertSize(30522, 1024, 24, 16, 4096, 512, 0.1),
    "random-6l": BertSize(30522, 768, 6, 8, 3072, 512, 0.2),
    "budget": BertSize(8192, 64, 2, 4, 256, 64, 0.1),
}


class BertEncoder(nn.Module):
    """Token ids ``(B, T)`` (and ``token_type_ids``, ``attention_mask`` ``(B, T)``, 1 = real token) -> final states
    ``(B, T, D)`` and the pooled ``[CLS]`` vector ``(B, D)``."""

    def __init__(self, size: BertSize, type_vocab: int = 2) -> None:
        super().__init__()
        self.tokens = nn.Embedding(size.vocab, size.dim, padding_idx=0)
        self.positions = LearnedPositions(size.max_len, size.dim)
        self.segments = nn.Embedding(type_vocab, size.dim)
        self.norm = nn.LayerNorm(size.dim, eps=1e-12)
        self.drop = nn.Dropout(size.dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(size.dim, size.heads, size.hidden, size.dropout, size.dropout, "gelu", False, 1e-12)
            for _ in range(size.layers)
        )
        self.pooler = nn.Sequential(nn.Linear(size.dim, size.dim), nn.Tanh())

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        types = torch.zeros_like(input_ids) if token_type_ids is None else token_type_ids
        x = self.drop(self.norm(self.positions(self.tokens(input_ids)) + self.segments(types)))
        padding = None if attention_mask is None else attention_mask == 0
        for block in self.blocks:
            x = block(x, padding=padding)
        return x, self.pooler(x[:, 0])


class BertClassifier(nn.Module):
    """The encoder, dropout on the pooled vector and a linear layer: logits ``(B, num_classes)``."""

    def __init__(self, size: BertSize, num_classes: int) -> None:
        super().__init__()
        self.encoder = BertEncoder(size)
        self.drop = nn.Dropout(size.dropout)
        self.classifier = nn.Linear(size.dim, num_classes)
        self.apply(_init_bert)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        if attention_mask is None:
            attention_mask = (input_ids != 0).long()  # id 0 is [PAD]
        _, pooled = self.encoder(input_ids, attention_mask)
        return self.classifier(self.drop(pooled))


def _init_bert(module: nn.Module) -> None:
    """BERT's initialisation: linear and embedding weights N(0, 0.02), biases 0 (LayerNorm keeps 1 and 0)."""
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, 0.0, 0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def bert_classifier(size: str = "base", num_classes: int = 2, vocab_size: int | None = None) -> BertClassifier:
    """A classifier on the encoder of :data:`SIZES` ``[size]`` (``vocab_size`` replaces its vocabulary size)."""
    row = SIZES[size]
    return BertClassifier(row._replace(vocab=vocab_size) if vocab_size else row, num_classes)


def encoder_parameter_count(size: BertSize, type_vocab: int = 2) -> int:
    """Parameters of the encoder with its pooler, counted from the configuration: embeddings (tokens, positions,
    segments, LayerNorm), per layer attention (4 D x D + 4 D), feed-forward (2 D F + F + D) and two LayerNorms
    (4 D), and the pooler (D x D + D)."""
    d, f = size.dim, size.hidden
    embeddings = (size.vocab + size.max_len + type_vocab) * d + 2 * d
    layer = 4 * d * d + 4 * d + 2 * d * f + f + d + 4 * d
    return embeddings + size.layers * layer + d * d + d
