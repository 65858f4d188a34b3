"""ImageNet (ILSVRC-2012) as people keep it on disk, as a Lightning data module.

Russakovsky et al., "ImageNet Large Scale Visual Recognition Challenge", IJCV 2015 (arXiv 1409.0575).

Layout under ``data_root``:

- ``train/<wnid>/*.<ext>``: one folder per class, any file extension Pillow can open (ILSVRC ships ``.JPEG``);
  hidden files and folders are skipped. The class index is the position of the wnid in the sorted folder names,
  the standard order of every ImageNet code base (``n01440764`` is class 0).
- ``val/`` in one of these layouts (``val_layout``; ``"auto"`` tries them in this order):

  ``"folders"``     ``val/<wnid>/*.JPEG``, the layout most training scripts convert to;
  ``"labels-csv"``  flat ``val/`` plus ``val_labels.csv`` (``id,label``: image file stem or name, wnid) in
                    ``data_root`` or ``val/``, the same format as the scorer's references;
  ``"devkit"``      the official release: flat ``val/ILSVRC2012_val_<8 digits>.JPEG`` plus the devkit's
                    ``ILSVRC2012_validation_ground_truth.txt`` (line ``i``: ILSVRC2012_ID of image ``i``) and
                    ``meta.mat`` (whose ``synsets`` map ILSVRC2012_ID to wnid; read with ``scipy.io.loadmat``),
                    found in ``data_root/ILSVRC2012_devkit_t12/data/`` or ``data_root/``. The image number is
                    read from the file name, so a partial copy of the split still gets the right labels;
  ``"kaggle"``      flat ``val/`` plus the Kaggle challenge's ``LOC_val_solution.csv``
                    (``ImageId,PredictionString``, the first word of which is the wnid) in ``data_root``.

The test labels of ILSVRC-2012 were never released, so the test dataloader serves the validation split, as
every paper's "ImageNet top-1" does.

``verify()`` (called by the runner before training, and by ``setup``) lists both splits, resolves every
validation label, and opens and fully decodes a bounded sample of ``verify_images`` images spread evenly over
both splits (all of them when the root holds no more; ``-1``: all, ``0``: none). On the full 1.33 M images that
costs one directory listing per class plus decoding 1,000 JPEGs: seconds on a local disk. Any problem raises
:class:`~harness.errors.HarnessError` naming the path.

``data_hash`` (set by ``setup``) is the sha256 of the training list file (``<path> <wnid>`` lines, see
:mod:`tasks.imagenet.subsets`): the few-label subset's list when ``subset_percent < 100``, the whole sorted
training list otherwise. It identifies the file names, not their bytes: hashing 140 GB per run would cost more
than it protects.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import os
import re
import warnings
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
from tasks.imagenet.subsets import format_subset, sample_subset, subset_size, write_list
from tasks.imagenet.transforms import EvalTransform, TrainTransform
from tasks.loaders import make_loader

VAL_LAYOUTS = ("auto", "folders", "labels-csv", "devkit", "kaggle")
VERIFY_IMAGES = 1000
DEVKIT_DIRS = (Path("ILSVRC2012_devkit_t12") / "data", Path("."))
GROUND_TRUTH = "ILSVRC2012_validation_ground_truth.txt"
META = "meta.mat"
LABELS_CSV = "val_labels.csv"
KAGGLE_CSV = "LOC_val_solution.csv"

Item = tuple[str, str]  # (path relative to the split folder, with "/" separators; wnid)


@dataclass(frozen=True)
class ImageNetIndex:
    """What is on disk: the sorted class wnids and both splits' items, each sorted by path."""

    classes: tuple[str, ...]
    train: list[Item]
    val: list[Item]
    val_layout: str


@functools.cache
def image_extensions() -> frozenset[str]:
    """Lower-case file extensions Pillow can open (not those it can only write)."""
    Image.init()
    return frozenset(ext.lower() for ext, fmt in Image.registered_extensions().items() if fmt in Image.OPEN)


def _entries(folder: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(folder) as it:
            return sorted((entry for entry in it if not entry.name.startswith(".")), key=lambda entry: entry.name)
    except OSError as exc:
        raise HarnessError(f"{folder}: cannot list: {exc.strerror or exc}") from None


def _image_names(folder: Path) -> list[str]:
    extensions = image_extensions()
    return [e.name for e in _entries(folder) if e.is_file() and os.path.splitext(e.name)[1].lower() in extensions]


def _split_dir(root: Path, split: str) -> Path:
    folder = root / split
    if not folder.is_dir():
        raise HarnessError(f"{folder}: missing; expected the ILSVRC-2012 {split}/ folder under {root}")
    return folder


def index_train(root: Path) -> tuple[tuple[str, ...], list[Item]]:
    """The sorted class folders of ``train/`` and every image in them."""
    folder = _split_dir(root, "train")
    classes = tuple(entry.name for entry in _entries(folder) if entry.is_dir())
    if not classes:
        raise HarnessError(f"{folder}: no class folders (expected train/<wnid>/*.JPEG)")
    items: list[Item] = []
    for wnid in classes:
        names = _image_names(folder / wnid)
        if not names:
            raise HarnessError(f"{folder / wnid}: empty class folder (no image files)")
        items.extend((f"{wnid}/{name}", wnid) for name in names)
    return classes, sorted(items)


def _find(root: Path, name: str, dirs: Sequence[Path]) -> Path | None:
    return next((root / d / name for d in dirs if (root / d / name).is_file()), None)


def detect_val_layout(root: Path) -> str:
    """The layout of ``root/val`` (see the module docstring), or an error naming what was looked for."""
    folder = _split_dir(root, "val")
    if any(entry.is_dir() for entry in _entries(folder)):
        return "folders"
    if _find(root, LABELS_CSV, (Path("."), Path("val"))):
        return "labels-csv"
    if _find(root, GROUND_TRUTH, DEVKIT_DIRS):
        return "devkit"
    if _find(root, KAGGLE_CSV, (Path("."),)):
        return "kaggle"
    raise HarnessError(
        f"{folder}: flat validation folder without labels; expected {LABELS_CSV} in {root} or {folder}, "
        f"{GROUND_TRUTH} + {META} in {root / DEVKIT_DIRS[0]} or {root}, or {KAGGLE_CSV} in {root}"
    )


def _check_class(wnid: str, classes: Sequence[str], where: str) -> str:
    if wnid not in classes:
        raise HarnessError(f"{where}: label {wnid!r} is not a class folder of train/")
    return wnid


def _val_folders(root: Path, classes: Sequence[str]) -> list[Item]:
    folder = root / "val"
    flat = _image_names(folder)
    if flat:
        raise HarnessError(f"{folder / flat[0]}: image outside a class folder in a val/<wnid>/ layout")
    items: list[Item] = []
    for entry in _entries(folder):
        if entry.is_dir():
            wnid = _check_class(entry.name, classes, str(folder / entry.name))
            items.extend((f"{wnid}/{name}", wnid) for name in _image_names(folder / wnid))
    return items


def read_devkit_meta(path: Path) -> dict[int, str]:
    """ILSVRC2012_ID -> wnid from the devkit's ``meta.mat`` (``synsets`` struct array)."""
    import scipy.io

    try:
        synsets = scipy.io.loadmat(path, squeeze_me=False)["synsets"].ravel()
        return {
            int(np.asarray(synset["ILSVRC2012_ID"]).ravel()[0]): str(np.asarray(synset["WNID"]).ravel()[0])
            for synset in synsets
        }
    except Exception as exc:  # scipy raises many kinds on a bad file; name the file instead
        raise HarnessError(f"{path}: not a devkit meta.mat with synsets(ILSVRC2012_ID, WNID): {exc}") from None


def _image_number(folder: Path, name: str) -> int:
    match = re.search(r"(\d+)$", os.path.splitext(name)[0])
    if match is None:
        raise HarnessError(f"{folder / name}: no image number in the name (expected ILSVRC2012_val_<8 digits>)")
    return int(match.group(1))


def _val_devkit(root: Path, classes: Sequence[str]) -> list[Item]:
    truth = _find(root, GROUND_TRUTH, DEVKIT_DIRS)
    meta = _find(root, META, DEVKIT_DIRS)
    if truth is None or meta is None:
        missing = GROUND_TRUTH if truth is None else META
        raise HarnessError(f"{root / DEVKIT_DIRS[0] / missing}: missing (looked there and in {root})")
    synsets = read_devkit_meta(meta)
    ids = truth.read_text().split()
    folder = root / "val"
    items: list[Item] = []
    for name in _image_names(folder):
        number = _image_number(folder, name)
        if not 1 <= number <= len(ids):
            raise HarnessError(f"{folder / name}: image number {number} is beyond the {len(ids)} lines of {truth}")
        where = f"{truth}:{number}"
        if not ids[number - 1].isdigit() or int(ids[number - 1]) not in synsets:
            raise HarnessError(f"{where}: {ids[number - 1]!r} is not an ILSVRC2012_ID of {meta}")
        items.append((name, _check_class(synsets[int(ids[number - 1])], classes, where)))
    _warn_partial(folder, len(items), len(ids), truth)
    return items


def _read_label_csv(path: Path, id_column: str, label_column: str) -> dict[str, tuple[int, str]]:
    """``id -> (line, first word of the label column)`` from a CSV with a header."""
    labels: dict[str, tuple[int, str]] = {}
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames or id_column not in reader.fieldnames or label_column not in reader.fieldnames:
            raise HarnessError(f"{path}:1: header must name the columns {id_column},{label_column}")
        for row in reader:
            words = (row[label_column] or "").split()
            if not row[id_column] or not words:
                raise HarnessError(f"{path}:{reader.line_num}: empty {id_column} or {label_column}")
            labels[row[id_column].strip()] = (reader.line_num, words[0])
    return labels


def _val_csv(root: Path, classes: Sequence[str], path: Path, id_column: str, label_column: str) -> list[Item]:
    labels = _read_label_csv(path, id_column, label_column)
    folder = root / "val"
    items: list[Item] = []
    for name in _image_names(folder):
        key = name if name in labels else os.path.splitext(name)[0]
        if key not in labels:
            raise HarnessError(f"{folder / name}: no label in {path}")
        line, wnid = labels[key]
        items.append((name, _check_class(wnid, classes, f"{path}:{line}")))
    _warn_partial(folder, len(items), len(labels), path)
    return items


def _warn_partial(folder: Path, found: int, labelled: int, source: Path) -> None:
    if found < labelled:
        warnings.warn(f"{folder}: {found} images for the {labelled} labels in {source}: a partial split", stacklevel=3)


def index_val(root: Path, classes: Sequence[str], layout: str = "auto") -> tuple[str, list[Item]]:
    """The validation layout and its ``(path relative to val/, wnid)`` items, sorted by path."""
    if layout not in VAL_LAYOUTS:
        raise HarnessError(f"unknown val_layout {layout!r}; choose one of {', '.join(VAL_LAYOUTS)}")
    layout = detect_val_layout(root) if layout == "auto" else layout
    _split_dir(root, "val")
    if layout == "folders":
        items = _val_folders(root, classes)
    elif layout == "devkit":
        items = _val_devkit(root, classes)
    else:
        name, dirs, columns = {
            "labels-csv": (LABELS_CSV, (Path("."), Path("val")), ("id", "label")),
            "kaggle": (KAGGLE_CSV, (Path("."),), ("ImageId", "PredictionString")),
        }[layout]
        path = _find(root, name, dirs)
        if path is None:
            raise HarnessError(f"{root / name}: missing; val_layout {layout!r} needs it")
        items = _val_csv(root, classes, path, *columns)
    if not items:
        raise HarnessError(f"{root / 'val'}: no validation images")
    return layout, sorted(items)


def index_imagenet(root: Path, val_layout: str = "auto") -> ImageNetIndex:
    """List ``train/`` and ``val/`` under ``root`` and resolve every validation label."""
    root = Path(root)
    if not root.is_dir():
        raise HarnessError(f"{root}: data root missing (expected train/ and val/ of ILSVRC-2012 in it)")
    classes, train = index_train(root)
    layout, val = index_val(root, classes, val_layout)
    return ImageNetIndex(classes=classes, train=train, val=val, val_layout=layout)


def _evenly(paths: list[Path], k: int) -> list[Path]:
    """``k`` paths spaced evenly through ``paths`` (the middle of each of ``k`` equal stretches)."""
    step = len(paths) / k if k else 0.0
    return [paths[int((i + 0.5) * step)] for i in range(k)]


def check_images(root: Path, index: ImageNetIndex, limit: int = VERIFY_IMAGES) -> int:
    """Open and decode a sample of ``limit`` images (all if ``limit < 0``); return how many were opened.

    The sample is spread evenly over each split in sorted order, with both splits represented in
    proportion (at least one validation image).
    """
    train = [root / "train" / path for path, _ in index.train]
    val = [root / "val" / path for path, _ in index.val]
    paths = train + val
    if 0 <= limit < len(paths):
        n_val = min(len(val), limit, max(1, round(limit * len(val) / len(paths))))
        paths = _evenly(train, limit - n_val) + _evenly(val, n_val)
    for path in paths:
        load_rgb(path)
    return len(paths)


def load_rgb(path: Path) -> Image.Image:
    """Open, decode and convert one image to RGB; an unreadable file raises a :class:`HarnessError`."""
    try:
        with Image.open(path) as img:
            return img.convert("RGB")
    except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError, ... on corrupt files
        raise HarnessError(f"{path}: unreadable image: {exc}") from None


class ImageListDataset(Dataset):
    """``(transform(image), class index)`` pairs from a list of files under ``root``.

    Paths and targets are kept in numpy arrays, not Python lists, so that forked data-loader workers do not
    copy them page by page through reference counting.
    """

    def __init__(self, root: Path, items: Sequence[Item], class_to_idx: dict[str, int], transform: Any) -> None:
        self.root = Path(root)
        self.paths = np.array([path for path, _ in items], dtype=str)
        self.targets = np.array([class_to_idx[wnid] for _, wnid in items], dtype=np.int64)
        self.transform = transform

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        img = load_rgb(self.root / str(self.paths[index]))
        return self.transform(img), int(self.targets[index])


class ImageNetDataModule(pl.LightningDataModule):
    """ILSVRC-2012 train / val from ``data_root``; batches are ``(float (N, 3, S, S), long (N,))``.

    Args:
        data_root: folder holding ``train/`` and ``val/`` (and the validation labels, see the module docstring).
        batch_size: images per batch, per device.
        image_size: side ``S`` of the square network input.
        crop_fraction: evaluation center-crop fraction (0.875 = 224/256; EfficientNet uses ``S / (S + 32)``).
        num_workers: data-loader worker processes.
        subset_percent: train on this percentage of each class (see :mod:`tasks.imagenet.subsets`).
        subset_seed: seed of the subset's ranking.
        autoaugment: False, True (the AutoAugment paper's ImageNet policy) or a policy name such as
            ``"efficientnet-v0"``.
        val_layout: ``"auto"``, ``"folders"``, ``"labels-csv"``, ``"devkit"`` or ``"kaggle"``.
        verify_images: images ``verify()`` decodes (-1: all, 0: none).
        subset_file: where to write the training list file (optional; ``data_hash`` is the same either way).
        train_min_area: smallest random-crop area fraction of training images (official: 0.08).
        train_hflip: random horizontal flips of training images.
    """

    def __init__(
        self,
        data_root: str | Path,
        batch_size: int = 256,
        image_size: int = 224,
        crop_fraction: float = 0.875,
        num_workers: int = 0,
        subset_percent: float = 100.0,
        subset_seed: int = 0,
        autoaugment: bool | str = False,
        val_layout: str = "auto",
        verify_images: int = VERIFY_IMAGES,
        subset_file: str | Path | None = None,
        train_min_area: float = 0.08,
        train_hflip: bool = True,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if val_layout not in VAL_LAYOUTS:
            raise HarnessError(f"unknown val_layout {val_layout!r}; choose one of {', '.join(VAL_LAYOUTS)}")
        subset_size(1, subset_percent)  # validates the percentage now, not after listing a million files
        self.data_root = Path(data_root)
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.subset_percent = float(subset_percent)
        self.subset_seed = subset_seed
        self.val_layout = val_layout
        self.verify_images = verify_images
        self.subset_file = Path(subset_file) if subset_file is not None else None
        self.train_transform = TrainTransform(
            image_size, crop_fraction, autoaugment, min_area=train_min_area, hflip=train_hflip
        )
        self.eval_transform = EvalTransform(image_size, crop_fraction)
        self.index: ImageNetIndex | None = None
        self._verified = False
        self.data_hash: str | None = None
        self.train_dataset: ImageListDataset | None = None
        self.val_dataset: ImageListDataset | None = None

    @property
    def classes(self) -> tuple[str, ...]:
        return self._index().classes

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def _index(self) -> ImageNetIndex:
        if self.index is None:
            self.index = index_imagenet(self.data_root, self.val_layout)
        return self.index

    def verify(self) -> None:
        """Check the layout, the labels and a sample of images; raise :class:`HarnessError` naming the path."""
        if self._verified:
            return
        check_images(self.data_root, self._index(), self.verify_images)
        self._verified = True

    def setup(self, stage: str | None = None) -> None:
        if self.train_dataset is not None:
            return
        self.verify()
        index = self._index()
        train = index.train
        if self.subset_percent < 100.0:
            train = sample_subset(index.train, self.subset_percent, self.subset_seed)
        if self.subset_file is not None:
            self.data_hash = write_list(train, self.subset_file)
        else:
            self.data_hash = hashlib.sha256(format_subset(train)).hexdigest()
        class_to_idx = {wnid: i for i, wnid in enumerate(index.classes)}
        self.train_dataset = ImageListDataset(self.data_root / "train", train, class_to_idx, self.train_transform)
        self.val_dataset = ImageListDataset(self.data_root / "val", index.val, class_to_idx, self.eval_transform)

    def _loader(self, dataset: Dataset | None, shuffle: bool) -> DataLoader:
        return make_loader(
            dataset, batch_size=self.batch_size, num_workers=self.num_workers, shuffle=shuffle,
            owner="ImageNetDataModule",
        )  # fmt: skip

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_dataset, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader(self.val_dataset, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        """The validation split: ILSVRC-2012 test labels are not public."""
        return self._loader(self.val_dataset, shuffle=False)

    def val_ids(self) -> list[str]:
        """Validation image ids (file stems) in dataloader order, as the scorer's CSV files use them."""
        return [os.path.splitext(os.path.basename(path))[0] for path, _ in self._index().val]

    def write_references(self, path: Path) -> Path:
        """Write the validation labels as the scorer's ``id,label`` references CSV (labels are wnids)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(["id", "label"])
            writer.writerows(zip(self.val_ids(), (wnid for _, wnid in self._index().val), strict=True))
        return path

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """How the test loader's predictions are scored: references written to ``folder/references.csv`` from the
        validation labels (whatever ``val_layout`` they came in), ids = file stems, labels = wnids."""
        references = self.write_references(Path(folder) / "references.csv")
        return Scoring("imagenet-1k", references, self.val_ids(), labels=self.classes)
