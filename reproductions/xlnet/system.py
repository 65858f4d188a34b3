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
- :class:`XLNetTaskSystem`: the sequence summary head (:class:`~reproductions.xlnet.heads.SequenceHead`) on the
  content stream: classification (GLUE, the Debian and text-classification corpora; cross-entropy), regression
  (STS-B; squared error) or multiple choice (RACE; one logit per option, softmax over the options); AdamW with
  linear warm-up and decay (Table 8).
- :class:`XLNetSquadSystem`: the span head with SQuAD 2.0's answerability
  (:class:`~reproductions.xlnet.heads.SpanHead`).

Batches: pre-training ``(ids (B, T),)``; test ``(inputs (B, T+1), word ends (B, T), mask (B, T))``; fine-tuning
``((ids, mask, segments), labels)`` (Debian), GLUE's and SQuAD's dicts, RACE's ``(dict of (B, K, T), labels)``.
"""

from __future__ import annotations

import re
from typing import Any

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn

from harness.errors import HarnessError
from harness.evaluators import counted, per_test_loader
from reproductions.xlnet.heads import SequenceHead, SpanHead
from reproductions.xlnet.model import SIZES, XLNetLM, language_model
from reproductions.xlnet.weights import load_backbone
from tasks.debian_corpora.metric import TokenPerplexity
from tasks.metrics import accuracy_error_metrics as classification_metrics

OBJECTIVES = ("permutation", "left-to-right")
KINDS = ("classification", "regression", "multiple_choice")


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


def layer_rates(module: nn.Module, decay: float) -> dict[str, float]:
    """Appendix A.4.2's layer-wise decay: a tensor of layer ``m`` (of ``L``, from 1) learns at ``decay^(L - m)`` of
    the rate; the embeddings, the heads and everything outside the layers at the full rate (the release's rule of
    which variables decay)."""
    layer = re.compile(r"(?:^|\.)transformer\.layer\.(\d+)\.")
    found = {name: layer.search(name) for name, _ in module.named_parameters()}
    top = max((int(m[1]) for m in found.values() if m), default=-1)
    return {name: decay ** (top - int(m[1])) if m else 1.0 for name, m in found.items()}


def adam_linear(
    module: nn.Module, lr: float, warmup: float, weight_decay: float, trainer: pl.Trainer, layer_decay: float = 1.0
) -> dict:
    """AdamW (epsilon 1e-6; decay on matrices only) with linear warm-up over ``warmup`` of training, then linear
    decay to 0 (Tables 7 and 8); ``layer_decay`` < 1 scales each layer's rate (:func:`layer_rates`)."""
    total = max(1, int(trainer.estimated_stepping_batches))
    rates = layer_rates(module, layer_decay)
    groups: dict[tuple[bool, float], list[nn.Parameter]] = {}
    for name, p in module.named_parameters():
        groups.setdefault((p.ndim >= 2, rates[name]), []).append(p)
    params = [{"params": ps, "weight_decay": weight_decay if matrix else 0.0, "lr": lr * rate}
              for (matrix, rate), ps in sorted(groups.items(), key=lambda kv: (not kv[0][0], -kv[0][1]))]  # fmt: skip
    opt = torch.optim.AdamW(params, lr=lr, eps=1e-6)
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
        self.test_metrics = per_test_loader(self, lambda _: TokenPerplexity(), counted)
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
        self.test_metrics.log(self)

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        return adam_linear(self, hp.lr, hp.warmup, hp.weight_decay, self.trainer)


def task_metric(task: str, classes: int, index: int = 0) -> nn.Module:
    """The test metric of test loader ``index`` of ``task``, keeping its predictions in the task's format: GLUE's
    (``glue-mnli``: matched, then mismatched), RACE's answer accuracy (one per loader: ``race-m``, ``race-h``,
    ``race``), or accuracy / error."""
    if task.startswith("glue-"):
        from tasks.glue.data import dev_tasks
        from tasks.glue.metric import glue_metrics

        return glue_metrics(dev_tasks(task)[index])
    if task.startswith("race"):
        from tasks.text_data import AnswerAccuracy

        return AnswerAccuracy()
    return classification_metrics(classes)


def unpack(batch: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(ids, mask, segments, labels)`` of the Debian (``((ids, mask, segments), labels)``), GLUE (a dict) or
    RACE (``(dict, labels)``) batches; GLUE's segments are counted from ``<sep>`` (A, then B, then ``<cls>``)."""
    if isinstance(batch, dict):
        ids, mask, labels = batch["input_ids"], batch["attention_mask"], batch["labels"]
        return ids, mask, None, labels
    inputs, labels = batch
    if isinstance(inputs, dict):
        return inputs["input_ids"], inputs["attention_mask"], inputs["token_type_ids"], labels
    ids, mask, segments = inputs
    return ids, mask, segments, labels


def last_index(mask: torch.Tensor) -> torch.Tensor:
    """``(B,)`` the position of each row's last real token (``<cls>``), padded on the left (the release) or right."""
    return mask.shape[-1] - 1 - mask.flip(-1).argmax(-1)


def segments_from_sep(ids: torch.Tensor, sep: int) -> torch.Tensor:
    """Segment ids of ``A <sep> B <sep> <cls>``: the number of ``<sep>`` strictly before each position."""
    is_sep = (ids == sep).long()
    return is_sep.cumsum(-1) - is_sep


class XLNetTaskSystem(pl.LightningModule):
    """Fine-tuning the XLNet ``model`` with a sequence head: ``kind`` ``classification`` (``classes`` logits),
    ``regression`` (one score, squared error: STS-B) or ``multiple_choice`` (one logit per option: RACE); the
    summary reads ``<cls>``, the last real token. ``task``: the evaluated task id (its metrics); ``sep_id``: the
    ``<sep>`` id GLUE's segments are counted from; ``checkpoint``: pre-trained weights of the backbone (the released
    ones converted by ``python -m reproductions.xlnet.weights``) loaded before fine-tuning; ``layer_decay``: Appendix
    A.4.2's layer-wise rate decay."""

    def __init__(
        self,
        model: str = "xlnet-budget",
        task: str = "wordnet-lexname",
        kind: str = "classification",
        classes: int = 2,
        lr: float = 2e-5,
        warmup: float = 0.1,
        weight_decay: float = 0.01,
        sep_id: int = 4,
        layer_decay: float = 1.0,
        checkpoint: str | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if kind not in KINDS:
            raise HarnessError(f"kind is one of {', '.join(KINDS)}; got {kind!r}")
        self.model = language_model(size_of(model), mem_len=0)
        if checkpoint is not None:
            load_backbone(self.model, checkpoint)
        c = self.model.config
        self.head = SequenceHead(c.dim, 1 if kind != "classification" else classes, c.dropout)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, segments: torch.Tensor | None) -> torch.Tensor:
        """Logits ``(B, classes)``, scores ``(B,)`` or option logits ``(B, K)``."""
        shape = ids.shape
        ids, mask = ids.reshape(-1, shape[-1]), mask.reshape(-1, shape[-1])
        segments = segments_from_sep(ids, self.hparams.sep_id) if segments is None else segments.reshape(ids.shape)
        h = self.model.transformer(ids, token_type_ids=segments, attention_mask=mask).h
        out = self.head(h, last_index(mask))  # <cls>, the last real token
        if self.hparams.kind == "multiple_choice":
            return out.view(shape[0], shape[1])
        return out[:, 0] if self.hparams.kind == "regression" else out

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        ids, mask, segments, labels = unpack(batch)
        out = self(ids, mask, segments)
        loss = F.mse_loss(out, labels.float()) if self.hparams.kind == "regression" else F.cross_entropy(out, labels)
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def on_test_start(self) -> None:
        self.test_metrics = per_test_loader(self, lambda i: task_metric(self.hparams.task, self.hparams.classes, i))

    def test_step(self, batch: Any, batch_idx: int, dataloader_idx: int = 0) -> None:
        ids, mask, segments, labels = unpack(batch)
        out = self(ids, mask, segments)
        preds = out.argmax(-1) if self.hparams.task.startswith("glue-") and out.ndim == 2 else out
        self.test_metrics[dataloader_idx].update(preds, labels)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        return adam_linear(self, hp.lr, hp.warmup, hp.weight_decay, self.trainer, hp.layer_decay)


class XLNetSquadSystem(pl.LightningModule):
    """Fine-tuning the XLNet ``model`` with the SQuAD span head (:class:`~reproductions.xlnet.heads.SpanHead`);
    ``version`` ``2.0`` adds the answerability loss and answers "" when the no-answer logit is positive. A
    question's windows are consecutive in the loader; its best span over them is its answer. ``checkpoint`` and
    ``layer_decay`` as :class:`XLNetTaskSystem`'s (Table 8: 0.75 for SQuAD)."""

    def __init__(
        self, model: str = "xlnet-budget", version: str = "1.1", lr: float = 3e-5, warmup: float = 0.1,
        weight_decay: float = 0.01, start_top: int = 5, end_top: int = 5, max_answer: int = 64,
        layer_decay: float = 1.0, checkpoint: str | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.model = language_model(size_of(model), mem_len=0)
        if checkpoint is not None:
            load_backbone(self.model, checkpoint)
        self.head = SpanHead(self.model.config.dim, self.model.config.dropout)
        self._pending: dict[str, tuple[float, str, float, int]] = {}  # qid -> best (score, text, p(no answer), example)

    def states(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(h, p_mask, cls_index)``: only context tokens may hold an answer; ``<cls>`` is the first token."""
        ids, mask = batch["input_ids"], batch["attention_mask"]
        h = self.model.transformer(ids, token_type_ids=batch["token_type_ids"], attention_mask=mask).h
        p_mask = (batch["offsets"][..., 0] < 0).float()
        return h, p_mask, torch.zeros(len(ids), dtype=torch.long, device=ids.device)

    def training_step(self, batch: dict[str, Any], batch_idx: int) -> torch.Tensor:
        h, p_mask, cls = self.states(batch)
        start, end = batch["start_positions"], batch["end_positions"]
        impossible = (start == 0).long() if self.hparams.version == "2.0" else None
        p_mask = p_mask.clone()
        p_mask[:, 0] = 0.0  # a window without the answer points at <cls>, as BERT's windows do
        loss = self.head.loss(h, p_mask, cls, start, end, impossible)
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def on_test_start(self) -> None:
        from tasks.squad.metric import SquadMetric

        self.test_metrics = per_test_loader(self, lambda _: SquadMetric(self.hparams.version))
        self._pending = {}

    def test_step(self, batch: dict[str, Any], batch_idx: int) -> None:
        from tasks.squad.data import span_text

        h, p_mask, cls = self.states(batch)
        hp = self.hparams
        start, end, score, no_answer = self.head.decode(h, p_mask, cls, hp.start_top, hp.end_top, hp.max_answer)
        examples = self.trainer.datamodule.examples("dev")
        for row, (qid, index) in enumerate(zip(batch["qids"], batch["example_index"].tolist(), strict=True)):
            if self._pending and qid not in self._pending:
                self._flush(examples)
            text = span_text(examples[index].context, batch["offsets"][row].tolist(), int(start[row]), int(end[row]))
            best = self._pending.get(qid)
            if best is None or float(score[row]) > best[0]:
                self._pending[qid] = (float(score[row]), text, float(torch.sigmoid(no_answer[row])), index)
        if batch_idx == self.trainer.num_test_batches[0] - 1:
            self._flush(examples)

    def _flush(self, examples: list) -> None:  # noqa: ANN001
        """Score the questions whose windows are all seen."""
        qids = list(self._pending)
        answers, golds, probs = [], [], []
        for qid in qids:
            _, text, na_prob, index = self._pending.pop(qid)
            no_answer = self.hparams.version == "2.0" and na_prob > 0.5
            answers.append("" if no_answer else text)
            golds.append([a for a, _ in examples[index].answers] if not examples[index].is_impossible else [])
            probs.append(na_prob)
        na_probs = probs if self.hparams.version == "2.0" else None
        self.test_metrics[0].update(answers, golds, ids=qids, na_probs=na_probs)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        return adam_linear(self, hp.lr, hp.warmup, hp.weight_decay, self.trainer, hp.layer_decay)
