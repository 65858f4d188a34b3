"""Figure 2 (right) of "Improving Language Understanding by Generative Pre-Training" (Radford et al. 2018; no arXiv
id): the generative model's zero-shot behaviour over pre-training. "We designed a series of heuristic solutions that
use the underlying generative model to perform tasks without supervised finetuning" (Section 5), each as the report
describes it:

- **SST-2** (sentiment): "we append the token very to each example and restrict the language model's output
  distribution to only the words positive and negative and guess the token it assigns higher probability to". A
  word is scored by its whole BPE sequence (the sum of its symbols' log-probabilities after ``text very``); for a
  word of one symbol that is the restricted distribution exactly.
- **CoLA** (acceptability): "examples are scored as the average token log-probability the generative model assigns
  and predictions are made by thresholding". The threshold is not given: it is chosen here on CoLA's *training* set
  as the one that maximises its Matthews correlation (:func:`best_threshold`), then applied to the dev set.
- **RACE** (question answering): "we pick the answer the generative model assigns the highest average token
  log-probability when conditioned on the document and question": ``article question answer`` as plain text, the
  answer's symbols averaged; the article's end is cut when the three exceed the LM's positions (as fine-tuning
  cuts it, ``finetune.GPTInputs``).
- **DPRD** (Winograd schemas): "we replace the definite pronoun with the two possible referrents and predict the
  resolution that the generative model assigns higher average token log-probability to the rest of the sequence
  after the substitution": the pronoun's first occurrence is replaced; the symbols after the candidate are averaged.

Every text is read as the pre-training corpus reads (WikiText-style tokens, ``tasks.debian_corpora.tokenize``) and
BPE-encoded with the pre-training's vocabulary; a sequence starts after the corpus's line break (``<eos>``, when the
vocabulary has one, as every pre-training line follows one), so its first symbol is scored too. Every candidate of an
example is one row of a ``(B, K, T)`` batch whose scored symbols are a suffix of the row (:class:`ZeroShotInputs`).

Figure 2 normalises each task "between a random guess baseline and the current state-of-the-art with a single
model": ``relative_performance = (metric - chance) / (ceiling - chance)`` (:data:`CHANCE`, :data:`CEILING`). The
report names no ceiling; :data:`CEILING` says which single-model results are used. A rank correlation over
pre-training updates (the claims' rule) does not depend on them.

Over pre-training: :class:`GPTZeroShotSystem` pre-trains exactly as :class:`~reproductions.gpt.system.
GPTPretrainSystem` with the learning-rate schedule laid over the whole run (``trainer.max_epochs`` of the corpus)
while ``trainer.max_steps`` stops it after N updates, so a run is the full pre-training's state after N updates (same
seed, same batches); then it tests the heuristics. The ``gpt-updates-N`` models of ``configs/full-zero-shot.yaml`` are
Figure 2's x-axis. With ``checkpoint`` (``fit: false``) it evaluates given weights, e.g. the released ones.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader

from harness.errors import HarnessError
from harness.evaluators import per_test_loader
from harness.predictions import Scoring
from nets.schedules import warmup_cosine
from tasks.debian_corpora.tokenize import tokenize
from tasks.loaders import make_loader

TASKS = ("glue-sst2", "glue-cola", "race", "dprd")
METRIC = {"glue-sst2": "accuracy", "glue-cola": "mcc", "race": "accuracy", "dprd": "accuracy"}
CHANCE = {"glue-sst2": 50.0, "glue-cola": 0.0, "race": 25.0, "dprd": 50.0}  # a random guess: 2 or 4 answers; MCC 0
# The "current state-of-the-art with a single model" (not named by the report): SST-2, the best single model of
# Table 4 (sparse byte mLSTM, 93.2); CoLA and RACE, the report's own fine-tuned model (45.4, Table 4; 59.0, Table 3:
# no single model before it is printed); DPRD, Rahman & Ng (2012)'s resolver (73.05%, as recalled from that paper).
CEILING = {"glue-sst2": 93.2, "glue-cola": 45.4, "race": 59.0, "dprd": 73.05}
SENTIMENT = ("negative", "positive")  # SST-2's labels 0 and 1
Row = tuple[list[int], int]  # a candidate's ids and where its scored suffix starts


# --- scoring candidates with the LM --------------------------------------------------------------------------------


def sequence_scores(
    hidden: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    project: Callable[[torch.Tensor], torch.Tensor],
    ids: torch.Tensor,
    mask: torch.Tensor,
    scored: torch.Tensor,
    mean: bool = True,
) -> torch.Tensor:
    """Each row's log-probability of its scored symbols, summed or (``mean``) averaged: ``(B, K)`` for ids, mask and
    scored ``(B, K, T)``. ``hidden(ids, mask)`` gives the LM's last states ``(N, T, D)`` and ``project(h)`` their
    next-symbol logits; symbol ``t`` is scored by the state at ``t - 1`` (the first symbol of a row never is). Only
    the scored positions are projected onto the vocabulary (a RACE batch's every position would not fit a GPU)."""
    shape = ids.shape
    flat = ids.reshape(-1, shape[-1])
    states = hidden(flat, mask.reshape(-1, shape[-1]))[:, :-1]  # (N, T - 1, D): each predicts the next symbol
    chosen = scored.reshape(-1, shape[-1])[:, 1:].bool()
    log_probs = project(states[chosen]).float().log_softmax(-1)  # (S, V) for the S scored symbols
    picked = log_probs.gather(-1, flat[:, 1:][chosen][:, None])[:, 0]
    total = torch.zeros(chosen.shape, dtype=picked.dtype, device=picked.device).masked_scatter(chosen, picked).sum(-1)
    if mean:
        total = total / chosen.sum(-1).clamp(min=1)
    return total.view(shape[:-1])


def best_threshold(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """The threshold ``c`` whose predictions ``scores > c`` (1: acceptable) have the highest Matthews correlation with
    ``labels``: among the midpoints of consecutive distinct scores and one below them all, the first best."""
    values = torch.unique(scores.double())
    candidates = torch.cat([values[:1] - 1, (values[1:] + values[:-1]) / 2])
    predicted = scores.double()[None, :] > candidates[:, None]  # (C, N)
    truth = labels.bool()[None, :]
    tp, tn = (predicted & truth).sum(1).double(), (~predicted & ~truth).sum(1).double()
    fp, fn = (predicted & ~truth).sum(1).double(), (~predicted & truth).sum(1).double()
    denominator = ((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)).sqrt()
    mcc = torch.where(denominator > 0, (tp * tn - fp * fn) / denominator.clamp(min=1e-12), torch.zeros_like(tp))
    return float(candidates[int(mcc.argmax())])


def relative_performance(task: str, value: float) -> float:
    """Figure 2's normalisation: 0 at a random guess, 1 at :data:`CEILING`."""
    return (value - CHANCE[task]) / (CEILING[task] - CHANCE[task])


# --- the heuristics' inputs ----------------------------------------------------------------------------------------


class ZeroShotInputs:
    """Raw examples -> each task's candidate rows (see the module docstring), padded: ``(ids, mask, scored)``.

    ``encode(text)``: BPE ids of text as the corpus reads it; ``context``: ids every row starts with (the corpus's
    ``<eos>``, or none); ``n_ctx``: the LM's positions (RACE's article is cut to fit)."""

    def __init__(self, encode: Callable[[str], list[int]], context: Sequence[int], n_ctx: int) -> None:
        self.encode, self.context, self.n_ctx = encode, list(context), n_ctx

    def _row(self, prefix: list[int], scored: list[int]) -> Row:
        ids = [*self.context, *prefix, *scored]
        return ids[: self.n_ctx], len(self.context) + len(prefix)

    def sst2(self, text: str) -> list[Row]:
        prefix = self.encode(f"{text} very")
        return [self._row(prefix, self.encode(word)) for word in SENTIMENT]

    def cola(self, text: str) -> list[Row]:
        ids, start = self._row([], self.encode(text))
        return [(ids, max(start, 1))]  # without a context symbol the first symbol cannot be scored

    def race(self, article: str, question: str, options: Sequence[str]) -> list[Row]:
        asked, answers = self.encode(question), [self.encode(option) for option in options]
        room = self.n_ctx - len(self.context) - len(asked) - max(map(len, answers))
        context = self.encode(article)[: max(room, 0)] + asked
        return [self._row(context, answer) for answer in answers]

    def dprd(self, sentence: str, pronoun: str, candidates: Sequence[str]) -> list[Row]:
        from tasks.dprd.data import pronoun_span

        start, end = pronoun_span(sentence, pronoun)
        rest = self.encode(sentence[end:])
        return [self._row(self.encode(sentence[:start] + candidate), rest) for candidate in candidates]

    def rows(self, task: str, fields: Sequence[Any]) -> list[Row]:
        return getattr(self, task.removeprefix("glue-"))(*fields)

    def __call__(self, task: str, examples: Sequence[tuple[Sequence[Any], int]]) -> tuple[tuple, torch.Tensor]:
        """``examples``: (raw fields, label) -> ``((ids, mask, scored), labels)``, ids etc. long ``(B, K, T)``."""
        groups = [self.rows(task, fields) for fields, _ in examples]
        length = max(len(ids) for rows in groups for ids, _ in rows)
        shape = (len(groups), len(groups[0]), length)
        ids, mask, scored = (torch.zeros(shape, dtype=torch.long) for _ in range(3))
        for b, rows in enumerate(groups):
            for k, (row, start) in enumerate(rows):
                ids[b, k, : len(row)] = torch.tensor(row, dtype=torch.long)
                mask[b, k, : len(row)] = 1
                scored[b, k, start : len(row)] = 1
        return (ids, mask, scored), torch.tensor([label for _, label in examples], dtype=torch.long)


# --- the data: the pre-training corpus and the four tasks' evaluation sets -------------------------------------------


class _Source:
    """One task's evaluation set (and CoLA's training set, for its threshold), read by its family's reader."""

    def __init__(self, folder: Path, task: str, split: str | None) -> None:
        self.task = task
        if task.startswith("glue-"):
            from tasks.glue.data import GlueDataModule

            self.module = GlueDataModule(folder, task)
            self.split = self.module.dev_splits[0]
        else:
            from tasks.text_data import TextTaskDataModule

            self.module = TextTaskDataModule(task, folder, test_splits=[split] if split else None)
            self.split = self.module.test_splits[0]

    def examples(self, split: str | None = None) -> list[tuple[tuple, int]]:
        split = split or self.split
        if self.task.startswith("glue-"):
            return [((e.text_a,), int(e.label)) for e in self.module.examples(split)]
        return [(r.fields, r.label) for r in self.module.records(split)]

    def data_hash(self) -> str:
        self.module.setup()
        return self.module.data_hash

    def scoring(self, folder: Path) -> Scoring:
        return self.module.scoring(0, folder)


class ZeroShotDataModule(pl.LightningDataModule):
    """The pre-training corpus (training) and one test loader per zero-shot task of :data:`TASKS`.

    Args:
        data_root: the folder holding the corpus (``corpus/``, its BPE kept beside it) and the tasks' folders.
        tasks: the tasks tested, in order (the config's ``evaluate`` order).
        task_folders: each task's folder under ``data_root`` (default: ``glue`` for GLUE, ``race``, ``dprd``).
        race_split: RACE's split tested (``test``; the report does not say which).
        corpus, vocab, n_ctx, batch_size, train_lines: the pre-training data, as :class:`~reproductions.gpt.data.
            GPTLMDataModule` (``n_ctx`` also bounds the zero-shot rows).
        test_batch_size: examples per zero-shot batch.
        released_bpe: the released model folder: its vocabulary, and no training data (evaluating given weights).
    """

    def __init__(
        self,
        data_root: str | Path,
        tasks: Sequence[str] = TASKS,
        task_folders: dict[str, str] | None = None,
        race_split: str = "test",
        corpus: str = "bookscorpus",
        vocab: int = 40478,
        n_ctx: int = 512,
        batch_size: int = 64,
        train_lines: int | None = None,
        test_batch_size: int = 8,
        released_bpe: str | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        unknown = [task for task in tasks if task not in TASKS]
        if unknown or not tasks:
            raise HarnessError(f"tasks: {unknown or 'none'}; the zero-shot heuristics are for {', '.join(TASKS)}")
        self.data_root, self.test_tasks = Path(data_root), tuple(tasks)
        folders = {"glue-sst2": "glue", "glue-cola": "glue", "race": "race", "dprd": "dprd", **(task_folders or {})}
        self.sources = {t: _Source(self.data_root / folders[t], t, race_split if t == "race" else None) for t in tasks}
        self.lm = None
        self.inputs: ZeroShotInputs | None = None
        self.data_hash: str | None = None

    def verify(self) -> None:
        for source in self.sources.values():
            source.module.verify()

    def setup(self, stage: str | None = None) -> None:
        if self.data_hash is not None:
            return
        hp = self.hparams
        if hp.released_bpe is None:
            from reproductions.gpt.data import GPTLMDataModule, budget_tokenizer
            from tasks.tokenizers import register

            self.lm = GPTLMDataModule(hp.data_root, hp.vocab, hp.n_ctx, hp.batch_size, train_lines=hp.train_lines,
                                      test_lines=1, corpus=hp.corpus)  # fmt: skip
            self.lm.setup(stage)
            tokenizer, lm_hash = budget_tokenizer(hp.data_root, hp.vocab, hp.corpus), self.lm.data_hash
            register(self, tokenizer)  # the records cite it (results/tokenizers/<sha256>.json)
        else:
            from reproductions.gpt.data import released_tokenizer

            tokenizer = released_tokenizer(hp.released_bpe)
            lm_hash = tokenizer.digest
        context = [] if getattr(tokenizer, "eos_token_id", None) is None else [tokenizer.eos_token_id]
        self.inputs = ZeroShotInputs(_encoder(tokenizer), context, hp.n_ctx)
        hashes = [lm_hash, *(source.data_hash() for source in self.sources.values())]
        self.data_hash = hashlib.sha256("\n".join(hashes).encode()).hexdigest()

    def train_dataloader(self) -> DataLoader:
        if self.lm is None:
            raise HarnessError("released_bpe: the zero-shot data module then has no training data (fit: false)")
        return self.lm.train_dataloader()

    def _loader(self, task: str, examples: list) -> DataLoader:
        return make_loader(
            examples if self.data_hash is not None else None,
            batch_size=self.hparams.test_batch_size,
            num_workers=0,
            shuffle=False,
            owner=type(self).__name__,
            collate_fn=lambda batch: self.inputs(task, batch),
        )

    def test_dataloader(self) -> DataLoader | list[DataLoader]:
        loaders = [self._loader(task, self.sources[task].examples()) for task in self.test_tasks]
        return loaders[0] if len(loaders) == 1 else loaders

    def calibration_dataloader(self, task: str) -> DataLoader:
        """CoLA's training set, whose scores choose the threshold (:func:`best_threshold`)."""
        return self._loader(task, self.sources[task].examples("train"))

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        return self.sources[self.test_tasks[dataloader_idx]].scoring(folder)


def _encoder(tokenizer: Any) -> Callable[[str], list[int]]:
    def encode(text: str) -> list[int]:
        words = " ".join(tokenize(text.replace("\\n", " ")))
        return tokenizer.encode(words, special_tokens=False).ids if words else []

    return encode


# --- the system: pre-training for N updates, then the heuristics ----------------------------------------------------


def _metric(task: str) -> Any:  # noqa: ANN401 (a torchmetrics Metric or MetricCollection)
    if task.startswith("glue-"):
        from tasks.glue.metric import glue_metrics

        return glue_metrics(task)
    from tasks.text_data import AnswerAccuracy

    return AnswerAccuracy()


class GPTZeroShotSystem(pl.LightningModule):
    """The LM ``model`` pre-trained as :class:`~reproductions.gpt.system.GPTPretrainSystem` (the schedule spans
    ``trainer.max_epochs`` even when ``trainer.max_steps`` stops the run earlier), tested with the zero-shot
    heuristics of the data module's tasks. ``checkpoint``: LM weights to start from (the released ones, converted by
    ``python -m reproductions.gpt.weights``)."""

    def __init__(
        self,
        model: str = "gpt",
        lr: float = 2.5e-4,
        warmup_steps: int = 2000,
        l2: float = 0.01,
        checkpoint: str | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        from reproductions.gpt.model import language_model
        from reproductions.gpt.system import variant

        self.model = language_model(variant(model).size)
        if checkpoint is not None:
            from nets.weights import load_state

            load_state(self.model, checkpoint)

    def training_step(self, batch: tuple[torch.Tensor], batch_idx: int) -> torch.Tensor:
        (ids,) = batch
        loss = F.cross_entropy(self.model(ids[:, :-1]).transpose(1, 2), ids[:, 1:])
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def _total_updates(self) -> int:
        """The updates of the whole pre-training: ``max_epochs`` passes over the corpus, whatever ``max_steps``."""
        trainer = self.trainer
        _ = trainer.estimated_stepping_batches  # sets up the training data
        return int(trainer.max_epochs * trainer.num_training_batches // trainer.accumulate_grad_batches)

    def on_fit_start(self) -> None:
        total, steps = self._total_updates(), self.trainer.max_steps
        if steps > total:
            raise HarnessError(f"trainer.max_steps {steps} is past the pre-training's end ({total} updates)")

    def configure_optimizers(self) -> dict:
        from reproductions.gpt.system import optimizer

        total = self._total_updates()
        schedule = warmup_cosine(total, self.hparams.warmup_steps / total)
        return optimizer(self, self.hparams.lr, self.hparams.l2, lambda _: schedule, self.trainer)

    def scores(self, batch: tuple[torch.Tensor, ...], task: str) -> torch.Tensor:
        """Each candidate's score ``(B, K)``: SST-2 a word's log-probability, the others a mean per symbol."""
        ids, mask, scored = batch
        embedding = self.model.embedding_matrix()
        hidden = functools.partial(self.model.hidden_states, embedding=embedding)
        return sequence_scores(hidden, lambda h: h @ embedding.T, ids, mask, scored, mean=task != "glue-sst2")

    def on_test_start(self) -> None:
        self.tested = list(self.trainer.datamodule.test_tasks)
        self.test_metrics = per_test_loader(self, lambda index: _metric(self.tested[index]), self.results)
        self.threshold = self._threshold() if "glue-cola" in self.tested else math.nan

    @torch.no_grad()
    def _threshold(self) -> float:
        scores, labels = [], []
        for batch, label in self.trainer.datamodule.calibration_dataloader("glue-cola"):
            scores.append(self.scores(tuple(t.to(self.device) for t in batch), "glue-cola")[:, 0].cpu())
            labels.append(label)
        return best_threshold(torch.cat(scores), torch.cat(labels))

    def test_step(self, batch, batch_idx: int, dataloader_idx: int = 0) -> None:  # noqa: ANN001
        inputs, labels = batch
        task = self.tested[dataloader_idx]
        scores = self.scores(inputs, task)
        if task == "glue-cola":
            predictions = (scores[:, 0] > self.threshold).long()
        else:
            predictions = scores.argmax(-1) if task == "glue-sst2" else scores
        self.test_metrics[dataloader_idx].update(predictions, labels)

    def results(self, metric: nn.Module, index: int) -> dict[str, float]:
        """Test loader ``index``'s task metric, its relative performance (Figure 2) and, for CoLA, the threshold."""
        task = self.tested[index]
        values = {key.split("/")[-1]: float(value) for key, value in metric.compute().items()}
        values["relative_performance"] = relative_performance(task, values[METRIC[task]])
        if task == "glue-cola":
            values["threshold"] = self.threshold
        return values

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)
