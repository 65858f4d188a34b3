"""UDA's training batches (arXiv 1904.12848v6): a few labelled examples and many unlabelled ones with their
augmented copies in one batch, and what every UDA data module shares (:class:`UDADataModule`).

Every training step draws ``batch_size`` labelled examples and ``unlabelled_ratio * batch_size`` unlabelled ones
(the paper: 64 labelled and 448 unlabelled for Wide-ResNet-28-2, 32 and 224 for BERT, 512 and 15,360 for ImageNet
10%; ratio 7, 7 and 30), each list a fresh random permutation walked in order and begun again when used up. A batch
is a dict: ``labelled`` and ``labels``; with unlabelled data also ``original`` (the unlabelled examples with the
labelled data's simple augmentation, the paper's target side) and ``augmented`` (their strongly augmented copies:
RandAugment for images, TF-IDF word replacement, SwitchOut or back-translation for text). The supervised baseline
(``unlabelled_ratio = 0``) gets ``labelled`` and ``labels`` only.

Labelled subsets: ``per_class`` examples of every class, ranked within the class by ``sha256("<label_seed>:<id>")``
(:func:`tasks.debian_corpora.data.per_class_subset`), so the UDA run and its supervised baseline with the same
``label_seed`` see the same labelled set. Unlabelled set: the first ``unlabelled_size`` of a fixed permutation of
the training split (seed 0; labels never read), or the ids a domain-relevance filter kept (``unlabelled_ids``,
written by :func:`write_ids`).
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, IterableDataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.debian_corpora.data import per_class_subset

UNLABELLED_SEED = 0


def write_ids(ids: Sequence[Any], path: Path) -> Path:
    """One id per line (the ``unlabelled_ids`` file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{i}\n" for i in ids), encoding="utf-8")
    return path


def read_ids(path: Path) -> list[str]:
    try:
        ids = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: cannot read the unlabelled ids: {exc}") from None
    if not ids:
        raise HarnessError(f"{path}: no ids")
    return ids


class Cycle:
    """Endless walk over ``0..n-1`` in fresh random permutations; ``take(k)`` the next ``k`` positions."""

    def __init__(self, n: int, rng: random.Random) -> None:
        self.n, self.rng, self.order = n, rng, []

    def take(self, k: int) -> list[int]:
        out: list[int] = []
        while len(out) < k:
            if not self.order:
                self.order = self.rng.sample(range(self.n), self.n)
            out.append(self.order.pop())
        return out


class UDABatches(IterableDataset):
    """``steps`` batches per epoch from ``labelled(positions)`` and ``unlabelled(positions) -> (original,
    augmented)``; the order is drawn from ``seed`` (a new stream every epoch)."""

    def __init__(self, owner: Any, steps: int, seed: int) -> None:
        self.owner, self.steps, self.seed, self.epoch = owner, steps, seed, 0

    def __len__(self) -> int:
        return self.steps

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        owner = self.owner
        rng = random.Random(f"{self.seed}:{self.epoch}")
        self.epoch += 1
        labelled, unlabelled = Cycle(owner.num_labelled, rng), Cycle(owner.num_unlabelled, rng)
        size, extra = owner.hparams.batch_size, round(owner.hparams.batch_size * owner.hparams.unlabelled_ratio)
        for _ in range(self.steps):
            inputs, labels = owner.labelled_batch(labelled.take(size), rng)
            batch = {"labelled": inputs, "labels": labels}
            if extra:
                batch["original"], batch["augmented"] = owner.unlabelled_batch(unlabelled.take(extra), rng)
            yield batch


class UDADataModule(pl.LightningDataModule):
    """What the image and text data modules share: the training batches, the test loader and the scoring."""

    task: str
    test_inputs: torch.Tensor
    test_labels: torch.Tensor
    test_ids: list[str]

    num_labelled: int
    num_unlabelled: int

    def labelled_batch(self, positions: list[int], rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def unlabelled_batch(self, positions: list[int], rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def train_dataloader(self) -> DataLoader:
        seed = self.hparams.seed if self.hparams.seed is not None else torch.initial_seed()
        if self.hparams.unlabelled_ratio and not self.num_unlabelled:
            raise HarnessError("unlabelled_ratio > 0 but the unlabelled set is empty")
        return DataLoader(UDABatches(self, self.hparams.steps_per_epoch, seed), batch_size=None)

    def test_dataloader(self) -> DataLoader:
        data = torch.utils.data.TensorDataset(self.test_inputs, self.test_labels)
        return DataLoader(data, batch_size=self.hparams.eval_batch_size, shuffle=False)

    def val_dataloader(self) -> DataLoader:
        return self.test_dataloader()

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """References ``folder/references.csv`` (the test labels, ``id,label``), ids as the task's scorer reads them."""
        references = Path(folder) / "references.csv"
        rows = "".join(f"{i},{int(y)}\n" for i, y in zip(self.test_ids, self.test_labels.tolist(), strict=True))
        references.write_text("id,label\n" + rows, encoding="utf-8")
        return Scoring(self.task, references, list(self.test_ids))


def labelled_positions(labels: Sequence[int], ids: Sequence[str], per_class: int | None, seed: int) -> list[int]:
    """Positions of the labelled subset (``per_class`` per class by the sha256 ranking; ``None``: all)."""
    if per_class is None:
        return list(range(len(labels)))
    kept = {
        item for item, _ in per_class_subset([(i, str(y)) for i, y in zip(ids, labels, strict=True)], per_class, seed)
    }
    return [p for p, i in enumerate(ids) if i in kept]


def unlabelled_positions(ids: Sequence[str], size: int | None, kept_file: str | None) -> list[int]:
    """Positions of the unlabelled set: the ids of ``kept_file``, else a fixed permutation's first ``size``."""
    if kept_file is not None:
        wanted = set(read_ids(Path(kept_file)))
        unknown = wanted - set(ids)
        if unknown:
            raise HarnessError(f"{kept_file}: ids not in the training split, e.g. {sorted(unknown)[:3]}")
        return [p for p, i in enumerate(ids) if i in wanted]
    order = np.random.default_rng(UNLABELLED_SEED).permutation(len(ids))
    return sorted(order[: size if size is not None else len(ids)].tolist())
