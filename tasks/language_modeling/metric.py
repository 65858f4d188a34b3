"""Word-level perplexity as a torchmetrics ``Metric``: accumulate per batch, compute once, keep the predictions.

The scorer's definition (``tasks.language_modeling.score``): ``exp`` of the mean negative log-likelihood over every
scored token. ``update(log_probs, targets=None, mask=None)`` takes the natural-log probabilities the model gave
the target tokens (any shape; ``mask`` marks the tokens that count, e.g. not padding) and sums them in float64;
``compute()`` returns the perplexity and :meth:`TokenPerplexity.counts` the scorer's keys (``perplexity``,
``nll``, ``tokens``). Given the target ids too, it keeps both, in the order seen, and
:meth:`TokenPerplexity.write_predictions` writes them in the scorer's format (``<token><TAB><log-probability>``
lines, the tokens spelled by ``Scoring.labels``, the vocabulary): ``WikiTextDataModule``'s and ``Lm1bDataModule``'s
test loaders serve the file's tokens in order, one each, so a run's kept predictions re-score to its numbers
(``harness.predictions``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric

from harness.errors import HarnessError
from harness.predictions import KeptLists, Scoring, check_count
from tasks.language_modeling.score import write_log_probs


class TokenPerplexity(KeptLists, Metric):
    """Perplexity over all tokens seen (lower is better)."""

    is_differentiable = False
    higher_is_better = False
    full_state_update = False
    kept_lists = ("kept_log_probs", "kept_targets")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_state("nll_sum", default=torch.tensor(0.0, dtype=torch.float64), dist_reduce_fx="sum")
        self.add_state("tokens", default=torch.tensor(0, dtype=torch.long), dist_reduce_fx="sum")
        self.kept_log_probs: list[Tensor] = []
        self.kept_targets: list[Tensor] = []

    def update(self, log_probs: Tensor, targets: Tensor | None = None, mask: Tensor | None = None) -> None:
        log_probs = log_probs.detach().double()
        if mask is not None:
            log_probs = log_probs[mask.bool()]
            targets = targets[mask.bool()] if targets is not None else None
        self.nll_sum = self.nll_sum - log_probs.sum()
        self.tokens = self.tokens + log_probs.numel()
        if targets is not None:
            if targets.numel() != log_probs.numel():
                raise ValueError(f"{targets.numel()} targets for {log_probs.numel()} log-probabilities")
            self.kept_log_probs.append(log_probs.reshape(-1).cpu())
            self.kept_targets.append(targets.detach().reshape(-1).cpu())

    def compute(self) -> Tensor:
        return torch.exp(self.nll_sum / self.tokens)

    def counts(self) -> dict[str, float]:
        """The scorer's keys, synchronised across processes."""
        with self.sync_context():
            nll, tokens = float(self.nll_sum), int(self.tokens)
        mean = nll / tokens
        return {
            "perplexity": float(torch.exp(torch.tensor(mean, dtype=torch.float64))),
            "nll": mean,
            "tokens": float(tokens),
        }

    def write_predictions(self, folder: Path, scoring: Scoring) -> dict[str, Path]:
        """``folder/log_probs.tsv``: one ``<token><TAB><log-probability>`` line per kept target, in order."""
        if not self.kept_targets:
            raise HarnessError("TokenPerplexity: no predictions kept (pass the target ids to update())")
        targets = torch.cat(self.kept_targets).tolist()
        check_count(len(targets), scoring, "token log-probabilities")
        tokens = [scoring.label(target) for target in targets]
        log_probs = torch.cat(self.kept_log_probs).tolist()
        return {"predictions": write_log_probs(Path(folder) / "log_probs.tsv", tokens, log_probs)}
