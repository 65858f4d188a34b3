"""Lightning systems for XLNet (arXiv 1906.08237v2): permutation-LM pre-training (Eq. 5, Section 2.3-2.4, 3.1),
then fine-tuning with a task head, as two stages of a chain (``init_from``, docs/plugins.md).

- :class:`XLNetPretrainSystem`: for each sequence, the prediction targets (about ``1/K`` of the tokens; Section 3.1's
  span-based prediction: a span length ``L`` drawn uniformly from ``1..max_span``, then ``L`` consecutive targets at a
  random place within a context of ``K L`` tokens, repeated along the sequence) and a factorisation order ``z``
  (every non-target first, the targets in a random order: partial prediction, ``z_{>c}`` are the targets) are
  sampled; ``perm_mask`` and ``target_mapping`` encode them (:func:`permutation_inputs`), and the loss is the
  cross-entropy of Eq. 4 at the targets, read off the query stream. ``span=False`` draws single tokens instead
  (Table 6's "- span-based pred"); ``objective="left-to-right"`` trains a plain left-to-right LM on the same
  network (the content stream under a causal mask, next-token targets): the budget tier's baseline. The memory of
  the previous segment (``memory=True``) carries across training steps, detached (the data module reads parallel
  streams in order). Adam with linear warm-up and linear decay (Table 7), weight decay 0.01 on matrices.
  Test: ``debian-lm``'s word-level perplexity under the left-to-right factorisation order (a valid order of Eq. 3;
  for the permutation LM the query stream at ``t`` sees ``x_{<t}``).
- :class:`XLNetClassifierSystem`: the sequence summary head (:class:`~reproductions.xlnet.heads.SequenceHead`) on
  the content stream; cross-entropy; Adam with linear decay (Table 8).

Batches: pre-training ``(ids (B, T),)``; test ``(inputs (B, T+1), word ends (B, T), mask (B, T))``; fine-tuning
``((ids, mask, segments), labels)``.
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn
from torchmetrics.classification import MulticlassAccuracy

from harness.errors import HarnessError
from reproductions.xlnet.heads import SequenceHead
from reproductions.xlnet.model import SIZES, XLNetLM, language_model
from tasks.debian_corpora.metric import TokenPerplexity
from tasks.imagenet.metric import ClassificationMetrics, GuessKeepingAccuracy

OBJECTIVES = ("permutation", "left-to-right")


def size_of(model: str) -> str:
    """The size (a key of :data:`~reproductions.xlnet.model.SIZES`) a model id names: ``xlnet-budget-*`` ids are
    the budget size."""
    for size in sorted(SIZES, key=len, reverse=True):
        if model == size or model.startswith(size + "-"):
            return size
    raise HarnessError(f"unknown XLNet model id {model!r}; its size must be one of {', '.join(SIZES)}")


def span_targets(length: int, k: int, max_span: int, generator: torch.Generator) -> torch.Tensor:
    """Section 3.1's span-based prediction: bool ``(length,)``, about ``length / k`` targets in spans."""
    targets = torch.zeros(length, dtype=torch.bool)
    start, goal = 0, max(1, length // k)
    while start < length and int(targets.sum()) < goal:
        span = int(torch.randint(1, max_span + 1, (), generator=generator))
        span = min(span, goal - int(targets.sum()))
        context = span * k
        offset = int(torch.randint(0, context - span + 1, (), generator=generator))
        targets[start + offset : start + offset + span] = True
        start += context
    return targets


def token_targets(length: int, k: int, generator: torch.Generator) -> torch.Tensor:
    """Single-token partial prediction: ``length // k`` targets drawn uniformly (no spans)."""
    targets = torch.zeros(length, dtype=torch.bool)
    targets[torch.randperm(length, generator=generator)[: max(1, length // k)]] = True
    return targets


def factorisation_mask(targets: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``perm_mask`` ``(T, T)`` float, 1 where ``i`` may not see ``j``, for an order ``z`` with every non-target
    first (they see each other, no target) and the targets after them in a random order (each sees the
    non-targets and the targets before it; the content stream adds itself)."""
    rank = torch.full(targets.shape, -1, dtype=torch.long)
    rank[targets] = torch.randperm(int(targets.sum()), generator=generator)
    return (targets[None, :] & (rank[None, :] >= rank[:, None])).float()


def permutation_inputs(
    ids: torch.Tensor, k: int, max_span: int, span: bool, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(perm_mask (B, T, T), target_mapping (B, M, T), labels (B, M), weights (B, M))`` for a batch of ``ids``;
    ``M`` the most targets of any row (shorter rows padded with weight 0)."""
    b, t = ids.shape
    rows = [span_targets(t, k, max_span, generator) if span else token_targets(t, k, generator) for _ in range(b)]
    m = max(int(r.sum()) for r in rows)
    perm = torch.stack([factorisation_mask(r, generator) for r in rows])
    mapping, labels, weights = torch.zeros(b, m, t), torch.zeros(b, m, dtype=torch.long), torch.zeros(b, m)
    for row, targets in enumerate(rows):
        where = targets.nonzero()[:, 0]
        mapping[row, torch.arange(len(where)), where] = 1.0
        labels[row, : len(where)], weights[row, : len(where)] = ids[row, where], 1.0
    return perm.to(ids.device), mapping.to(ids.device), labels.to(ids.device), weights.to(ids.device)


def left_to_right_inputs(length: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``perm_mask`` ``(T+1, T+1)`` and ``target_mapping`` ``(T, T+1)`` of the identity order over a row led by one
    context token: target ``t`` (position ``t``) sees positions ``< t``."""
    perm = torch.ones(length + 1, length + 1, device=device).triu()
    perm[:, 0] = 0.0  # the leading context token is no target: everyone sees it
    return perm, torch.eye(length + 1, device=device)[1:]


def adam_linear(module: nn.Module, lr: float, warmup: float, weight_decay: float, trainer: pl.Trainer) -> dict:
    """AdamW (epsilon 1e-6; decay on matrices only) with linear warm-up over ``warmup`` of training, then linear
    decay to 0 (Tables 7 and 8)."""
    total = max(1, int(trainer.estimated_stepping_batches))
    decay = [p for p in module.parameters() if p.ndim >= 2]
    rest = [p for p in module.parameters() if p.ndim < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": rest, "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=lr, eps=1e-6)
    steps = max(1, int(warmup * total))

    def schedule(step: int) -> float:
        return step / steps if step < steps else max(0.0, (total - step) / max(1, total - steps))

    scheduler = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    return {"optimizer": opt, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


def word_log_probs(
    pieces: torch.Tensor, ends: torch.Tensor, partial: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each completed word's log-probability (the sum of its pieces'), and the part of a word still open."""
    totals = pieces.double().cumsum(0)
    at_ends = totals[ends]
    words = at_ends - torch.cat([at_ends.new_zeros(1), at_ends[:-1]])
    if not len(words):
        return words, partial + (totals[-1] if len(totals) else 0)
    words[0] += partial
    return words, totals[-1] - at_ends[-1]


class XLNetPretrainSystem(pl.LightningModule):
    """Permutation-LM (or left-to-right LM) pre-training of the XLNet ``model`` (an id of a budget or paper size)."""

    def __init__(
        self,
        model: str = "xlnet-budget-lm",
        objective: str = "permutation",
        k: int = 6,
        max_span: int = 5,
        span: bool = True,
        memory: bool = True,
        lr: float = 4e-4,
        warmup: float = 0.08,
        weight_decay: float = 0.01,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if objective not in OBJECTIVES:
            raise HarnessError(f"objective is one of {', '.join(OBJECTIVES)}; got {objective!r}")
        if k < 2 or max_span < 1:
            raise HarnessError(f"K must be at least 2 and max_span at least 1; got K={k}, max_span={max_span}")
        size = size_of(model)
        self.model: XLNetLM = language_model(size, **({} if memory else {"mem_len": 0}))
        self.generator = torch.Generator().manual_seed(seed)
        self._mems: list[torch.Tensor] | None = None
        self._partial, self._words = torch.zeros((), dtype=torch.float64), 0

    def training_step(self, batch: tuple[torch.Tensor], batch_idx: int) -> torch.Tensor:
        (ids,) = batch
        if self._mems is not None and self._mems[0].shape[0] != ids.shape[0]:
            self._mems = None  # a last, smaller batch continues no stream of the memory
        hp = self.hparams
        if hp.objective == "permutation":
            perm, mapping, labels, weights = permutation_inputs(ids, hp.k, hp.max_span, hp.span, self.generator)
            logits, self._mems = self.model(ids, mems=self._mems, perm_mask=perm, target_mapping=mapping)
        else:
            logits, self._mems = self.model(ids, mems=self._mems, causal=True)
            logits, labels = logits[:, :-1], ids[:, 1:]
            weights = torch.ones_like(labels, dtype=logits.dtype)
        losses = F.cross_entropy(logits.transpose(1, 2), labels, reduction="none")
        loss = (losses * weights).sum() / weights.sum()
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def on_test_start(self) -> None:
        self.test_metrics = nn.ModuleList([TokenPerplexity()]).to(self.device)
        self._partial, self._words = torch.zeros((), dtype=torch.float64), 0

    def piece_log_probs(self, inputs: torch.Tensor) -> torch.Tensor:
        """``(B, T)`` log-probabilities of ``inputs[:, 1:]`` under the left-to-right order."""
        targets = inputs[:, 1:]
        if self.hparams.objective == "left-to-right":
            logits, _ = self.model(inputs, causal=True)
            logits = logits[:, :-1]
        else:
            perm, mapping = left_to_right_inputs(targets.shape[1], inputs.device)
            b = inputs.shape[0]
            logits, _ = self.model(inputs, perm_mask=perm.expand(b, -1, -1), target_mapping=mapping.expand(b, -1, -1))
        return logits.log_softmax(-1).gather(-1, targets[..., None])[..., 0]

    def test_step(self, batch: tuple[torch.Tensor, ...], batch_idx: int, dataloader_idx: int = 0) -> None:
        inputs, ends, mask = batch
        log_probs = self.piece_log_probs(inputs)
        words, self._partial = word_log_probs(log_probs[mask], ends[mask], self._partial)
        ids = torch.arange(self._words, self._words + len(words), device=words.device)
        self._words += len(words)
        self.test_metrics[dataloader_idx].update(words, targets=ids)

    def on_test_epoch_end(self) -> None:
        for key, value in self.test_metrics[0].counts().items():
            self.log(f"test/{key}", value)

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        return adam_linear(self, hp.lr, hp.warmup, hp.weight_decay, self.trainer)


def classification_metrics(classes: int) -> ClassificationMetrics:
    """``accuracy`` and ``error`` in percent, the predictions kept (the Debian classification scorer's keys)."""
    accuracy = GuessKeepingAccuracy(num_classes=classes, top_k=1, average="micro")  # keeps the predictions
    top1 = MulticlassAccuracy(num_classes=classes, top_k=1, average="micro")  # its own instance: updated once
    return ClassificationMetrics({"accuracy": 100 * accuracy, "error": 100 - 100 * top1}, prefix="test/",
                                 compute_groups=False)  # fmt: skip


class XLNetClassifierSystem(pl.LightningModule):
    """Fine-tuning the XLNet ``model`` with the sequence summary head and ``classes`` outputs."""

    def __init__(
        self, model: str = "xlnet-budget", classes: int = 2, lr: float = 2e-5, warmup: float = 0.1,
        weight_decay: float = 0.01,
    ) -> None:  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.model = language_model(size_of(model), mem_len=0)
        self.head = SequenceHead(self.model.config.dim, classes, self.model.config.dropout)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, segments: torch.Tensor) -> torch.Tensor:
        h = self.model.transformer(ids, token_type_ids=segments, attention_mask=mask).h
        return self.head(h, mask.sum(1) - 1)  # <cls>, the last real token

    def training_step(self, batch, batch_idx: int) -> torch.Tensor:  # noqa: ANN001
        (ids, mask, segments), labels = batch
        loss = F.cross_entropy(self(ids, mask, segments), labels)
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def on_test_start(self) -> None:
        self.test_metrics = nn.ModuleList([classification_metrics(self.hparams.classes)]).to(self.device)

    def test_step(self, batch, batch_idx: int) -> None:  # noqa: ANN001
        (ids, mask, segments), labels = batch
        self.test_metrics[0].update(self(ids, mask, segments), labels)
        self.log_dict(self.test_metrics[0])

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        return adam_linear(self, hp.lr, hp.warmup, hp.weight_decay, self.trainer)
