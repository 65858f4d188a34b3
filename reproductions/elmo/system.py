"""Lightning systems for ELMo's task models (arXiv 1802.05365v2, Sec. 4), with and without ELMo:

- :class:`TaggerSystem`: the NER biLSTM-CRF of ``tagger.py`` on CoNLL-2003 (``tasks.conll2003``). Batches are lists
  of ``tasks.conll2003.data.NerSentence``; the tags are learnt as written (IOB1) and scored by ``ConllNerMetric``
  (conlleval).
- :class:`ClassifierSystem`: ESIM (``esim.py``) on SNLI and BCN (``bcn.py``) on SST-5, read by
  ``tasks.text_data.TextTaskDataModule`` (batches ``(fields, labels)`` of raw text); cross-entropy, and accuracy
  with the predictions kept by ``AnswerAccuracy`` (one metric per test loader: SNLI's dev and test).

With ELMo, ``bilm_options`` and ``bilm_weights`` name the released biLM's files (``convert.load_released``); the biLM
stays frozen, and ``l2`` is ELMo's ``lambda`` (Sec. 3.3), added to the loss as ``lambda ||w||^2``. Optimiser: Adam
(the paper's supplement, which gives its settings, was not read; README.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytorch_lightning as pl
import torch
from torch import nn
from torch.nn import functional as F

from harness.evaluators import floats, per_test_loader
from reproductions.elmo import bcn, esim
from reproductions.elmo.convert import load_released
from reproductions.elmo.layers import TokenInput, word_ids
from reproductions.elmo.tagger import tagger
from tasks.conll2003.data import LABELS
from tasks.conll2003.metric import ConllNerMetric
from tasks.text_data import AnswerAccuracy
from tasks.tokenizers.elmo import batch_char_ids

MODELS = {"bilstm-crf": False, "bilstm-crf-elmo": True}
CLASSIFIERS = {**dict.fromkeys(esim.VARIANTS, esim.esim), **dict.fromkeys(bcn.VARIANTS, bcn.bcn)}
_PTB_WORD = re.compile(r"\w+(?=n't)|n't|'\w+|\w+|[^\w\s]")  # "don't." -> do n't .


def ptb_words(text: str) -> list[str]:
    """Raw text (SNLI's sentences) as Penn-Treebank-like tokens: punctuation and clitics split off."""
    return _PTB_WORD.findall(text)


# task id -> (the record fields that are the model's inputs, in its forward's order; how a field's text is split)
TASK_INPUTS: dict[str, tuple[tuple[str, ...], Callable[[str], list[str]]]] = {
    "snli": (("premise", "hypothesis"), ptb_words),
    "sst-5": (("text",), str.split),  # SST's leaves: already tokenized
}


def use_bilm(token_input: TokenInput, options: str | None, weights: str | None, l2: float) -> None:
    """The released biLM's weights (when given) into a task model's ELMo, and ``lambda`` into its mixes."""
    if token_input.elmo is None:
        return
    if weights is not None:
        token_input.elmo.bilm = load_released(options, weights).requires_grad_(False)
    for mix in token_input.elmo.mixes:
        mix.l2 = l2


class TaggerSystem(pl.LightningModule):
    def __init__(
        self,
        model: str = "bilstm-crf",
        lr: float = 1e-3,
        bilm: str = "released",
        bilm_options: str | None = None,
        bilm_weights: str | None = None,
        l2: float = 0.0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.model = tagger(elmo=MODELS[model], bilm=bilm, n_tags=len(LABELS))
        use_bilm(self.model.input, bilm_options, bilm_weights, l2)
        self.test_metrics = nn.ModuleList()

    def forward(self, chars: torch.Tensor, words: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.model(chars, words)

    def _scores(self, batch: list) -> tuple[torch.Tensor, torch.Tensor]:
        sentences = [s.words for s in batch]
        words = word_ids(sentences).to(self.device)
        scores, _ = self(batch_char_ids(sentences).to(self.device), words)
        return scores, words > 0

    def training_step(self, batch: list, batch_idx: int) -> torch.Tensor:
        scores, mask = self._scores(batch)
        width = mask.shape[1]
        tags = torch.tensor([[LABELS.index(t) for t in s.tags] + [0] * (width - len(s.tags)) for s in batch])
        loss = self.model.crf.nll(scores, tags.to(self.device), mask) + self.model.penalty()
        self.log("train/loss", loss, batch_size=len(batch))
        return loss

    def on_test_start(self) -> None:
        self.test_metrics = per_test_loader(self, lambda _: ConllNerMetric(), floats)

    def test_step(self, batch: list, batch_idx: int, dataloader_idx: int = 0) -> None:
        scores, mask = self._scores(batch)
        paths = self.model.crf.decode(scores, mask)
        self.test_metrics[dataloader_idx].update([[LABELS[i] for i in p] for p in paths], [s.tags for s in batch])

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=self.hparams.lr)


class ClassifierSystem(pl.LightningModule):
    """ESIM (``esim*``) on SNLI or BCN (``bcn*``) on SST-5; ``task`` says which fields feed the model and how their
    text is split into words (:data:`TASK_INPUTS`)."""

    def __init__(
        self,
        model: str = "esim",
        task: str = "snli",
        lr: float = 4e-4,
        bilm: str = "released",
        bilm_options: str | None = None,
        bilm_weights: str | None = None,
        l2: float = 0.0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.model = CLASSIFIERS[model](model, bilm)
        use_bilm(self.model.input, bilm_options, bilm_weights, l2)
        self.test_metrics = nn.ModuleList()

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        return self.model(*inputs)

    def inputs(self, fields: dict[str, list[str]]) -> list[torch.Tensor]:
        """Characters and word ids of each input field, in the model's order: ``[chars, words, ...]``."""
        names, split = TASK_INPUTS[self.hparams.task]
        tensors = []
        for name in names:
            sentences = [split(text) for text in fields[name]]
            tensors += [batch_char_ids(sentences).to(self.device), word_ids(sentences).to(self.device)]
        return tensors

    def training_step(self, batch: tuple[dict, torch.Tensor], batch_idx: int) -> torch.Tensor:
        fields, labels = batch
        loss = F.cross_entropy(self(*self.inputs(fields)), labels) + self.model.penalty()
        self.log("train/loss", loss, batch_size=len(labels))
        return loss

    def on_test_start(self) -> None:
        self.test_metrics = per_test_loader(self, lambda _: AnswerAccuracy(), floats)

    def test_step(self, batch: tuple[dict, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        fields, labels = batch
        self.test_metrics[dataloader_idx].update(self(*self.inputs(fields)), labels)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=self.hparams.lr)
