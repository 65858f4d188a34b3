"""Toy two-input model: token ids and an attention mask -> class logits, for the harness's multi-input tests.

Each token's embedding goes through one linear layer; the mean over the real tokens (attention_mask 1) is classified.
Params: vocab·d + d·d + d + d·classes + classes; multiply-adds at batch 1 and length T: T·d·d + d·classes.
"""

import torch
from torch import nn


class ToyBagOfWords(nn.Module):
    def __init__(self, vocab: int = 100, dim: int = 16, num_classes: int = 10):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.token = nn.Linear(dim, dim)
        self.classify = nn.Linear(dim, num_classes)

    def forward(self, token_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``token_ids`` and ``attention_mask`` ``(B, T)`` -> logits ``(B, classes)``."""
        mask = attention_mask.unsqueeze(-1).float()  # (B, T, 1)
        tokens = torch.relu(self.token(self.embed(token_ids)))  # (B, T, d)
        return self.classify((tokens * mask).sum(1) / mask.sum(1).clamp(min=1))
