"""Word-level perplexity as a torchmetrics ``Metric``: accumulate per batch, compute once.

The scorer's definition (``tasks.debian_corpora.score``): ``exp`` of the mean negative log-likelihood over every
scored token. ``update(log_probs, mask=None)`` takes the natural-log probabilities the model gave the target
tokens (any shape; ``mask`` marks the tokens that count, e.g. not padding) and sums them in float64; ``compute()``
returns the perplexity and :meth:`TokenPerplexity.counts` the scorer's keys (``perplexity``, ``nll``, ``tokens``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric


class TokenPerplexity(Metric):
    """Perplexity over all tokens seen (lower is better)."""

    is_differentiable = False
    higher_is_better = False
    full_state_update = False

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("nll_sum", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("tokens", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, log_probs: Tensor, mask: Tensor | None = None) -> None:
        log_probs = log_probs.detach().double()
        if mask is not None:
            log_probs = log_probs[mask.bool()]
        self.nll_sum = self.nll_sum - log_probs.sum()
        self.tokens = self.tokens + log_probs.numel()

    def compute(self) -> Tensor:
        return torch.exp(self.nll_sum / self.tokens)

    def counts(self) -> dict[str, float]:
        """The scorer's keys, synchronised across processes."""
        with self.sync_context():
            nll, tokens = float(self.nll_sum), int(self.tokens)
        return {
            "perplexity": float(torch.exp(torch.tensor(nll / tokens, dtype=torch.float64))),
            "nll": nll / tokens,
            "tokens": float(tokens),
        }
