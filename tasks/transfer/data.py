"""Transfer datasets (CIFAR-10/100, Food-101, Oxford-IIIT Pets) through the ImageNet input pipeline.

Fine-tuning an ImageNet model feeds the target images at the model's ImageNet resolution with its ImageNet
preprocessing: GPipe (arXiv 1811.06965, Section 4) resized its transfer inputs to its ImageNet size, 480 x 480, and
EfficientNet's first author used "big image sizes (same as ImageNet: for B0, it is 224x224)" for Table 5
(tensorflow/tpu issue #476). So every image, CIFAR's 32 x 32 ones included, goes through
``tasks.imagenet.transforms``: for training an Inception-style random crop resized (bicubic) to ``image_size``, a
horizontal flip and optional AutoAugment; for evaluation the shorter side resized to ``image_size / crop_fraction``
and the central ``image_size`` square; both normalised with the ImageNet channel statistics the pretrained weights
expect.

Files and formats: see ``tasks.transfer`` (Food-101, Pets) and ``tasks.classification`` (CIFAR). ``data_root`` is
the dataset's folder (``food-101/``, the Pets folder holding ``images/`` and ``annotations/``, the folder holding
``cifar-10-batches-py/``) or, for Food-101 and Pets, its parent. Example ids are the official list entries (CIFAR:
positions in the test file), as the scorer's references. ``data_hash`` (after ``setup``) is the sha256 of the
training list (``<id> <class index>`` lines, :mod:`tasks.imagenet.subsets`' format).

None of these datasets has an official validation split in Table 5's protocol (Pets' ``trainval`` is the training
set), so the validation dataloader serves the test split, for monitoring only; nothing is selected on it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.imagenet.data import load_rgb
from tasks.imagenet.subsets import format_subset
from tasks.imagenet.transforms import EvalTransform, TrainTransform
from tasks.loaders import make_loader
from tasks.transfer import ARRAY_DATASETS, DATASETS, LIST_DATASETS, ListDataset

VERIFY_IMAGES = 1000


@dataclass(frozen=True)
class Listing:
    """One split of a list dataset: official ids, image files and 0-based class indices, in list order."""

    ids: list[str]
    paths: list[Path]
    labels: list[int]


def _lines(path: Path) -> list[tuple[int, str]]:
    """``(line number, stripped text)`` of the non-blank, non-comment (``#``) lines of a list file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HarnessError(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: unreadable list file: {exc}") from None
    lines = [(number, line.strip()) for number, line in enumerate(text.splitlines(), start=1)]
    return [(number, line) for number, line in lines if line and not line.startswith("#")]


def dataset_dir(root: Path, spec: ListDataset) -> Path:
    """The dataset's own folder: ``root`` itself when it holds the lists, else ``root/<official folder>``."""
    root = Path(root)
    first = spec.lists[0][1]
    if not (root / first).is_file() and (root / spec.folder / first).is_file():
        return root / spec.folder
    return root


def _food101(base: Path, list_file: Path) -> Listing:
    lines = _lines(list_file)
    classes_file = base / "meta" / "classes.txt"
    index = {name: i for i, (_, name) in enumerate(_lines(classes_file))}
    if len(index) != 101:
        raise HarnessError(f"{classes_file}: {len(index)} class names; Food-101 has 101")
    listing = Listing([], [], [])
    for number, entry in lines:
        name = entry.partition("/")[0]
        if name not in index:
            raise HarnessError(f"{list_file}:{number}: class {name!r} is not in {classes_file}")
        listing.ids.append(entry)
        listing.paths.append(base / "images" / f"{entry}.jpg")
        listing.labels.append(index[name])
    return listing


def _pets(base: Path, list_file: Path) -> Listing:
    listing = Listing([], [], [])
    for number, line in _lines(list_file):
        fields = line.split()
        if len(fields) != 4 or not fields[1].isdigit() or not 1 <= int(fields[1]) <= 37:
            raise HarnessError(f"{list_file}:{number}: expected '<image> <CLASS-ID 1..37> <SPECIES> <BREED ID>'")
        listing.ids.append(fields[0])
        listing.paths.append(base / "images" / f"{fields[0]}.jpg")
        listing.labels.append(int(fields[1]) - 1)
    return listing


def read_listing(task_id: str, root: Path, split: str) -> Listing:
    """The ``train`` or ``test`` list of ``food-101`` or ``oxford-pets`` under ``root``; errors name file and line."""
    if task_id not in LIST_DATASETS:
        raise HarnessError(f"unknown list dataset {task_id!r}; known: {', '.join(LIST_DATASETS)}")
    spec = LIST_DATASETS[task_id]
    lists = dict(spec.lists)
    if split not in lists:
        raise HarnessError(f"{task_id} has no split {split!r}; it has: {', '.join(lists)}")
    base = dataset_dir(root, spec)
    list_file = base / lists[split]
    listing = _food101(base, list_file) if task_id == "food-101" else _pets(base, list_file)
    if not listing.ids:
        raise HarnessError(f"{list_file}: no images listed")
    return listing


def _evenly(count: int, k: int) -> list[int]:
    """``k`` positions spread evenly over ``range(count)`` (all of them when ``k < 0`` or ``k >= count``)."""
    if k < 0 or k >= count:
        return list(range(count))
    return [int((i + 0.5) * count / k) for i in range(k)]


def check_listing(listing: Listing, decode: int) -> None:
    """Every listed file must exist; ``decode`` of them, spread evenly, are opened and decoded."""
    for path in listing.paths:
        if not path.is_file():
            raise HarnessError(f"{path}: listed image missing")
    for position in _evenly(len(listing.paths), decode):
        load_rgb(listing.paths[position])


class ArrayImageDataset(Dataset):
    """``(transform(PIL image), class index)`` from uint8 ``(N, 3, H, W)`` images held in memory (CIFAR)."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, transform: Any) -> None:
        self.images = images
        self.labels = np.asarray(labels, dtype=np.int64)
        self.transform = transform

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        image = Image.fromarray(np.ascontiguousarray(self.images[index].transpose(1, 2, 0)))  # (3,H,W) -> (H,W,3)
        return self.transform(image), int(self.labels[index])


class FileImageDataset(Dataset):
    """``(transform(image file), class index)``; paths kept in a numpy array (no copy-on-read in workers)."""

    def __init__(self, paths: Sequence[Path], labels: Sequence[int], transform: Any) -> None:
        self.paths = np.array([str(path) for path in paths], dtype=str)
        self.labels = np.asarray(labels, dtype=np.int64)
        self.transform = transform

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        return self.transform(load_rgb(Path(str(self.paths[index])))), int(self.labels[index])


class TransferDataModule(pl.LightningDataModule):
    """One of ``cifar-10``, ``cifar-100``, ``food-101``, ``oxford-pets`` as ``(float (N, 3, S, S), long (N,))``.

    Args:
        dataset: the task id.
        data_root: the dataset's folder (see the module docstring).
        batch_size: images per batch, per device.
        image_size: side ``S`` of the network input (the model's ImageNet resolution).
        crop_fraction: evaluation center-crop fraction (EfficientNet: ``S / (S + 32)``).
        num_workers: data-loader worker processes.
        autoaugment: False, True (the AutoAugment paper's ImageNet policy) or a policy name.
        verify_images: images ``verify()`` decodes per split (-1: all, 0: none); every listed file is checked.
    """

    def __init__(
        self,
        dataset: str,
        data_root: str | Path,
        batch_size: int = 256,
        image_size: int = 224,
        crop_fraction: float = 0.875,
        num_workers: int = 0,
        autoaugment: bool | str = False,
        verify_images: int = VERIFY_IMAGES,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if dataset not in DATASETS:
            raise HarnessError(f"unknown transfer dataset {dataset!r}; known: {', '.join(DATASETS)}")
        self.dataset = dataset
        self.data_root = Path(data_root)
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.verify_images = verify_images
        self.train_transform = TrainTransform(image_size, crop_fraction, autoaugment)
        self.eval_transform = EvalTransform(image_size, crop_fraction)
        self.data_hash: str | None = None
        self.train_dataset: Dataset | None = None
        self.test_dataset: Dataset | None = None

    @property
    def num_classes(self) -> int:
        if self.dataset in LIST_DATASETS:
            return LIST_DATASETS[self.dataset].num_classes
        from tasks.classification import LAYOUTS

        return LAYOUTS[self.dataset].num_classes

    def _split(self, split: str) -> tuple[list[str], list[int], Dataset]:
        """Ids, labels and the dataset of one split, with the transform for that split."""
        transform = self.train_transform if split == "train" else self.eval_transform
        if self.dataset in ARRAY_DATASETS:
            from tasks.classification.data import load_split

            arrays = load_split(self.dataset, self.data_root, split)
            ids = [str(i) for i in range(len(arrays.labels))]
            return ids, arrays.labels.tolist(), ArrayImageDataset(arrays.images, arrays.labels, transform)
        listing = read_listing(self.dataset, self.data_root, split)
        return listing.ids, listing.labels, FileImageDataset(listing.paths, listing.labels, transform)

    def verify(self) -> None:
        """Read both splits' lists (or files), check every listed image exists and decode a sample."""
        for split in ("train", "test"):
            if self.dataset in ARRAY_DATASETS:
                self._split(split)  # reads and checks every pickle
            else:
                check_listing(read_listing(self.dataset, self.data_root, split), self.verify_images)

    def setup(self, stage: str | None = None) -> None:
        if self.train_dataset is not None:
            return
        ids, labels, self.train_dataset = self._split("train")
        _, _, self.test_dataset = self._split("test")
        items = [(item_id, str(label)) for item_id, label in zip(ids, labels, strict=True)]
        self.data_hash = hashlib.sha256(format_subset(items)).hexdigest()

    def _loader(self, dataset: Dataset | None, shuffle: bool) -> DataLoader:
        return make_loader(
            dataset, batch_size=self.batch_size, num_workers=self.num_workers, shuffle=shuffle,
            owner="TransferDataModule",
        )  # fmt: skip

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_dataset, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        """The test split, for monitoring only (see the module docstring)."""
        return self._loader(self.test_dataset, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.test_dataset, shuffle=False)

    def write_references(self, path: Path) -> Path:
        """The test labels as the scorer's ``id,label`` references CSV."""
        ids, labels, _ = self._split("test")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("id,label\n" + "".join(f"{i},{label}\n" for i, label in zip(ids, labels, strict=True)))
        return path

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """How the test loader's predictions are scored: references ``folder/references.csv`` (the test labels),
        ids = the official list entries (CIFAR: positions), labels = class indices."""
        references = self.write_references(Path(folder) / "references.csv")
        return Scoring(self.dataset, references, self._split("test")[0])
