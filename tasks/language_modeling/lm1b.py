"""The One Billion Word benchmark (Chelba et al., arXiv 1312.3005) as a Lightning data module.

Layout under ``data_root`` (the folder ``1-billion-word-language-modeling-benchmark-r13output`` the archive unpacks
to, or its parent): ``training-monolingual.tokenized.shuffled/news.en-000NN-of-00100`` (NN = 01..99; shard 00000
became the held-out set) and ``heldout-monolingual.tokenized.shuffled/news.en.heldout-000NN-of-00050``
(NN = 00..49). Each is UTF-8, one sentence a line, already tokenised (tokens separated by spaces).

- **Splits.** ``train``: the first ``train_shards`` training shards (all 99 by default); ``test``: heldout shard
  00000, the benchmark's test set as ELMo (arXiv 1802.05365) and the models it compares with report it;
  ``valid``: heldout shard ``valid_shard`` (00001 by default; the benchmark names no validation shard).
- **Stream.** Each sentence's words then ``</S>`` (blank lines, of which the release has none, are skipped): the
  tokens the scorer counts. The ``</S>`` ending one sentence is the context the next is predicted from, standing
  for its ``<S>``, as Jozefowicz et al. (arXiv 1602.02410) feed sentences one after another without padding; the
  first sentence of a file is predicted after one ``</S>``.
- **Vocabulary.** The training stream's words seen at least ``min_count`` times (3, the benchmark's rule; its
  published vocabulary of 793,471 entries also holds ``<S>``, which is never predicted here), most frequent first
  (ties by the word), plus ``</S>`` and ``<UNK>``; every other word, in every split, is ``<UNK>``. The
  vocabulary spells the ids (``vocab``: word -> id); a model with its own tokenizer (ELMo's characters) reads
  the words from it.
- **Batches** are those of :class:`tasks.language_modeling.wikitext.WikiTextDataModule` (``Windows``): training
  ``(batch_size, bptt)`` windows of the stream cut into equal rows; validation and test one row predicting every
  token of the file once, in order.

``data_hash`` (after ``setup``): :func:`tasks.text_files.files_hash` of the shards read, named relative to the
archive folder, in the order train shards, valid shard, test shard. ``setup`` reads the training shards twice, one at
a time (count, then encode); all 99 (0.8 B words) take about 6.4 GB as ids; a budget run caps ``train_shards``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.language_modeling.score import (
    HELDOUT_SHARDS,
    LM1B_EOS,
    LM1B_FOLDER,
    LM1B_HELDOUT,
    LM1B_UNK,
    TRAINING,
    heldout_shard,
    text_lines,
    train_shard,
)
from tasks.language_modeling.wikitext import encode, window_loader
from tasks.text_files import files_hash

TRAIN_SHARDS = 99
MIN_COUNT = 3


def archive_folder(root: Path) -> Path:
    """``root/1-billion-word-language-modeling-benchmark-r13output`` when there, else ``root``."""
    inside = Path(root) / LM1B_FOLDER
    return inside if inside.is_dir() else Path(root)


def read_sentences(path: Path) -> list[list[str]]:
    """The sentences (lists of words) of one shard; blank lines skipped; a shard without any is an error."""
    if not Path(path).is_file():
        raise HarnessError(f"{path}: missing (the One Billion Word archive's layout: {TRAINING}/, {LM1B_HELDOUT}/)")
    sentences = [words for words in (line.split() for line in text_lines(path)) if words]
    if not sentences:
        raise HarnessError(f"{path}: no sentences")
    return sentences


def sentence_stream(sentences: list[list[str]]) -> list[str]:
    """Each sentence's words followed by ``</S>``: the tokens the scorer counts, in order."""
    return [token for words in sentences for token in (*words, LM1B_EOS)]


def build_vocabulary(counts: Counter, min_count: int = MIN_COUNT) -> dict[str, int]:
    """Word -> id: words seen at least ``min_count`` times, most frequent first (ties by the word), then the
    markers ``</S>`` and ``<UNK>`` at their own counts' places."""
    kept = {word: count for word, count in counts.items() if count >= min_count}
    for special in (LM1B_EOS, LM1B_UNK):
        kept.setdefault(special, 0)
    ordered = sorted(kept.items(), key=lambda item: (-item[1], item[0]))
    return {word: index for index, (word, _) in enumerate(ordered)}


class Lm1bDataModule(pl.LightningDataModule):
    """``lm1b`` from ``data_root`` (the archive folder or its parent).

    Args:
        data_root: where the archive was unpacked.
        batch_size: rows of the training stream (and of each training batch).
        bptt: tokens per window.
        train_shards: read training shards 01..``train_shards`` (at most 99).
        valid_shard: the heldout shard served for validation (not 0, the test shard).
        min_count: training count a word needs to be in the vocabulary.
    """

    def __init__(
        self,
        data_root: str | Path,
        batch_size: int = 32,
        bptt: int = 20,
        train_shards: int = TRAIN_SHARDS,
        valid_shard: int = 1,
        min_count: int = MIN_COUNT,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if not 1 <= train_shards <= TRAIN_SHARDS or not 1 <= valid_shard < HELDOUT_SHARDS:
            raise HarnessError(f"lm1b: train_shards must be in 1..{TRAIN_SHARDS}, valid_shard in 1..49")
        self.folder = archive_folder(Path(data_root))
        self.vocab: dict[str, int] | None = None
        self.ids: dict[str, torch.Tensor] = {}
        self.data_hash: str | None = None

    def shards(self) -> dict[str, list[str]]:
        """Split -> its shard names, relative to the archive folder."""
        hp = self.hparams
        train = [train_shard(n) for n in range(1, hp.train_shards + 1)]
        return {"train": train, "valid": [heldout_shard(hp.valid_shard)], "test": [heldout_shard(0)]}

    def stream(self, name: str) -> list[str]:
        """One shard's token stream."""
        return sentence_stream(read_sentences(self.folder / name))

    def verify(self) -> None:
        """Every shard the module reads is there, UTF-8 and holds sentences (errors name the file)."""
        for names in self.shards().values():
            for name in names:
                read_sentences(self.folder / name)

    def setup(self, stage: str | None = None) -> None:
        """Two passes over the training shards, one shard in memory at a time: count the words, then encode."""
        if self.vocab is not None:
            return
        shards = self.shards()
        counts: Counter = Counter()
        for name in shards["train"]:
            counts.update(self.stream(name))
        self.vocab = build_vocabulary(counts, self.hparams.min_count)
        self.ids = {
            split: torch.cat([encode(self.stream(name), self.vocab, LM1B_UNK) for name in names])
            for split, names in shards.items()
        }
        self.data_hash = files_hash(self.folder, [name for names in shards.values() for name in names])

    @property
    def vocab_size(self) -> int:
        if self.vocab is None:
            raise HarnessError("Lm1bDataModule: call setup() first")
        return len(self.vocab)

    def _loader(self, split: str) -> DataLoader:
        return window_loader("Lm1bDataModule", self.ids, split, self.hparams, lambda: self.vocab[LM1B_EOS])

    def train_dataloader(self) -> DataLoader:
        return self._loader("train")

    def val_dataloader(self) -> DataLoader:
        return self._loader("valid")

    def test_dataloader(self) -> DataLoader:
        return self._loader("test")

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """The test loader scores against heldout shard 00000: ids = token positions, labels = the vocabulary (an
        out-of-vocabulary word is written ``<UNK>``, which the scorer takes for any word)."""
        if self.vocab is None:
            raise HarnessError("Lm1bDataModule: call setup() before scoring")
        return Scoring("lm1b", self.folder / heldout_shard(0), range(len(self.ids["test"])), list(self.vocab))
