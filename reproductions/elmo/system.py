"""Lightning system for ELMo's NER task model (arXiv 1802.05365v2, Sec. 4): the biLSTM-CRF of ``tagger.py``
trained on CoNLL-2003 (``tasks.conll2003``) with and without ELMo.

Batches are lists of ``tasks.conll2003.data.NerSentence``; the tags are learnt as written (IOB1) and scored by
``ConllNerMetric`` (conlleval). With ELMo, ``bilm_options`` and ``bilm_weights`` name the released biLM's files
(``convert.load_released``); the biLM stays frozen. Optimiser: Adam (the paper's supplement, which gives its
settings, was not read; README.md). The loss adds ELMo's ``lambda ||w||^2``.
"""

from __future__ import annotations

import pytorch_lightning as pl
import torch
from torch import nn

from reproductions.elmo.convert import load_released
from reproductions.elmo.tagger import tagger, word_ids
from tasks.conll2003.data import LABELS
from tasks.conll2003.metric import ConllNerMetric
from tasks.tokenizers.elmo import batch_char_ids

MODELS = {"bilstm-crf": False, "bilstm-crf-elmo": True}


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
        if self.model.elmo is not None:
            if bilm_weights is not None:
                self.model.elmo.bilm = load_released(bilm_options, bilm_weights).requires_grad_(False)
            for mix in self.model.elmo.mixes:
                mix.l2 = l2
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
        loaders = self.trainer.test_dataloaders
        count = len(loaders) if isinstance(loaders, list | tuple) else 1
        self.test_metrics = nn.ModuleList(ConllNerMetric() for _ in range(count))

    def test_step(self, batch: list, batch_idx: int, dataloader_idx: int = 0) -> None:
        scores, mask = self._scores(batch)
        paths = self.model.crf.decode(scores, mask)
        self.test_metrics[dataloader_idx].update([[LABELS[i] for i in p] for p in paths], [s.tags for s in batch])

    def on_test_epoch_end(self) -> None:
        for index, metric in enumerate(self.test_metrics):
            suffix = f"/dataloader_idx_{index}" if len(self.test_metrics) > 1 else ""
            for key, value in metric.compute().items():
                self.log(f"test/{key}{suffix}", float(value), add_dataloader_idx=False)
            metric.reset()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam([p for p in self.parameters() if p.requires_grad], lr=self.hparams.lr)
