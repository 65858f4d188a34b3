"""CIFAR-10, CIFAR-100, SVHN and ImageNet 32x32 in their distributed formats, as a Lightning data module.

The files and their layouts are listed in ``tasks.classification`` (``LAYOUTS``). Every split is read whole into
memory as uint8 (N, 3, 32, 32) images and int64 (N,) class indices (ImageNet 32x32's training set is 3.9 GB, as
in every code base that uses it). ``data_root`` is the folder holding the dataset's files or folders
(``cifar-10-batches-py/``, ``train_32x32.mat``, ``Imagenet32_train/`` ...); the parent of ``cifar-10-batches-py``
or ``cifar-100-python`` may also be given as that folder itself.

ImageNet 32x32 is read from its pickle batches or, when those are absent, from the npz distribution of the same
batches (``Imagenet32_train_npz/train_data_batch_<i>.npz``, ``Imagenet32_val_npz/val_data.npz``).

Pickles are read with an unpickler that only rebuilds numpy arrays (``numpy``'s ``_reconstruct``,
``_frombuffer``, ``ndarray``, ``dtype``, ``scalar`` and ``_codecs.encode``): a dataset file cannot run code.
CIFAR's pickles were written by Python 2, so they are decoded as latin-1 (numpy's advice for such files) and
their keys are read as text.

Example ids are 0-based positions in the split (training: over ``data_batch_1`` .. ``5`` / ``train_data_batch_1``
.. ``10`` in file order), as strings: the scorer's references use the same ids for the test split. A few-label
subset (``subset_percent < 100``) keeps ``ceil(k% * n_class)`` images of every class, ranked by hash of the id,
with :mod:`tasks.imagenet.subsets` (its list file is ``<id> <class index>`` lines). ``data_hash`` is that list
file's sha256 (the whole training list when no subset is taken).

Batches are ``(float (N, 3, 32, 32), long (N,))``: pixels / 255, then normalised by the per-channel mean and
standard deviation of the whole training split (``normalize=True``). Training augmentation (``augment=True``)
is the standard one for these datasets (He et al., arXiv 1512.03385, section 4.2): a random 32x32 crop of the
image zero-padded by 4 pixels, and a horizontal flip with probability 1/2 except for SVHN's digits. Stronger
policies (AutoAugment, RandAugment) are the reproduction's.

CIFAR and SVHN have no official validation split and ImageNet 32x32's validation set is its test set, so the
validation and test dataloaders both serve the test split, as the papers' numbers do.
"""

from __future__ import annotations

import hashlib
import importlib.util
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from torch import Tensor
from torch.utils.data import DataLoader, Dataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.classification import LAYOUTS, ArrayLayout
from tasks.imagenet.subsets import format_subset, sample_subset, subset_size, write_list
from tasks.loaders import make_loader

SPLITS = ("train", "test", "extra")
PIXELS = 3 * 32 * 32
_NUMPY_CORE = "numpy._core" if importlib.util.find_spec("numpy._core") else "numpy.core"
_ALLOWED_GLOBALS = {
    (f"{_NUMPY_CORE}.multiarray", "_reconstruct"),
    (f"{_NUMPY_CORE}.multiarray", "scalar"),
    (f"{_NUMPY_CORE}.numeric", "_frombuffer"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("_codecs", "encode"),
}


@dataclass(frozen=True)
class ImageArrays:
    """One split: uint8 images (N, 3, 32, 32) and int64 class indices (N,)."""

    images: np.ndarray
    labels: np.ndarray


def layout(task_id: str) -> ArrayLayout:
    if task_id not in LAYOUTS:
        raise HarnessError(f"unknown small-image dataset {task_id!r}; known: {', '.join(LAYOUTS)}")
    return LAYOUTS[task_id]


# --- reading the files -------------------------------------------------------------------------------------------


class _ArrayUnpickler(pickle.Unpickler):
    """Rebuilds dicts, lists and numpy arrays only; any other global is refused."""

    def find_class(self, module: str, name: str) -> Any:
        if module.startswith(("numpy.core", "numpy._core")):
            module = _NUMPY_CORE + module.split("core", 1)[1]
        if (module, name) not in _ALLOWED_GLOBALS:
            raise pickle.UnpicklingError(f"global {module}.{name} is not allowed in a dataset pickle")
        return super().find_class(module, name)


def unpickle(path: Path) -> dict[str, Any]:
    """A dataset pickle as a dict with text keys (Python 2 byte-string keys decoded as latin-1)."""
    try:
        with open(path, "rb") as handle:
            data = _ArrayUnpickler(handle, encoding="latin1").load()
    except FileNotFoundError:
        raise HarnessError(f"{path}: missing") from None
    except Exception as exc:  # UnpicklingError, EOFError, ValueError, ... on a corrupt or foreign file
        raise HarnessError(f"{path}: unreadable pickle: {exc}") from None
    if not isinstance(data, dict):
        raise HarnessError(f"{path}: expected a pickled dict, found {type(data).__name__}")
    return {key.decode("latin-1") if isinstance(key, bytes) else key: value for key, value in data.items()}


def _field(path: Path, data: dict[str, Any], key: str) -> Any:
    if key not in data:
        raise HarnessError(f"{path}: no {key!r} entry (found {', '.join(map(str, data)) or 'none'})")
    return data[key]


def npz_variant(path: Path) -> Path:
    """Downsampled ImageNet also ships as npz batches: ``Imagenet32_train_npz/train_data_batch_1.npz`` for
    ``Imagenet32_train/train_data_batch_1`` (same keys ``data``, ``labels``, ``mean``)."""
    return path.parent.with_name(path.parent.name + "_npz") / (path.name + ".npz")


def _read_npz(path: Path) -> dict[str, Any]:
    try:
        with np.load(path, allow_pickle=False) as data:  # no object arrays: a data file cannot run code
            return {key: data[key] for key in data.files}
    except (OSError, ValueError) as exc:
        raise HarnessError(f"{path}: unreadable npz file: {exc}") from None


def _read_pickle(path: Path, spec: ArrayLayout) -> ImageArrays:
    if spec.format == "imagenet32-pickle" and not path.exists() and npz_variant(path).is_file():
        path = npz_variant(path)
    data = _read_npz(path) if path.suffix == ".npz" else unpickle(path)
    rows = np.asarray(_field(path, data, "data"))
    labels = np.asarray(_field(path, data, spec.label_key))
    if rows.dtype != np.uint8 or rows.ndim != 2 or rows.shape[1] != PIXELS:
        raise HarnessError(f"{path}: 'data' is {rows.dtype} {rows.shape}; expected uint8 (N, {PIXELS})")
    return ImageArrays(rows.reshape(-1, 3, 32, 32), labels.reshape(-1))  # rows: 1024 R, 1024 G, 1024 B values


def _read_svhn(path: Path, spec: ArrayLayout) -> ImageArrays:
    import scipy.io

    if not path.is_file():
        raise HarnessError(f"{path}: missing")
    try:
        data = scipy.io.loadmat(path)
    except Exception as exc:  # scipy raises ValueError, MatReadError, ... on a bad file
        raise HarnessError(f"{path}: unreadable MATLAB file: {exc}") from None
    images = np.asarray(_field(path, data, "X"))
    labels = np.asarray(_field(path, data, "y")).reshape(-1)
    if images.dtype != np.uint8 or images.ndim != 4 or images.shape[:3] != (32, 32, 3):
        raise HarnessError(f"{path}: 'X' is {images.dtype} {images.shape}; expected uint8 (32, 32, 3, N)")
    if labels.size and (labels.min() < 1 or labels.max() > 10):
        raise HarnessError(f"{path}: 'y' holds labels outside 1..10 ({labels.min()}..{labels.max()})")
    labels = np.where(labels == 10, 0, labels)  # the digit '0' has label 10
    return ImageArrays(np.ascontiguousarray(images.transpose(3, 2, 0, 1)), labels)  # (H, W, C, N) -> (N, C, H, W)


def read_file(path: Path, spec: ArrayLayout) -> ImageArrays:
    """One dataset file as ``ImageArrays`` with 0-based class indices; errors name the file."""
    arrays = _read_svhn(path, spec) if spec.format == "svhn-mat" else _read_pickle(path, spec)
    if len(arrays.labels) != len(arrays.images):
        raise HarnessError(f"{path}: {len(arrays.images)} images but {len(arrays.labels)} labels")
    labels = arrays.labels.astype(np.int64) - spec.label_offset
    if labels.size and (labels.min() < 0 or labels.max() >= spec.num_classes):
        first, last = labels.min() + spec.label_offset, labels.max() + spec.label_offset
        raise HarnessError(f"{path}: labels {first}..{last} outside the {spec.num_classes} classes of {spec.task_id}")
    return ImageArrays(arrays.images, labels)


def resolve_root(root: Path, spec: ArrayLayout) -> Path:
    """The folder the layout's paths are relative to: ``root`` itself or, for a dataset folder, its parent."""
    root = Path(root)
    first = Path(spec.test[0])
    if not (root / first).exists() and len(first.parts) > 1 and root.name == first.parts[0]:
        return root.parent
    return root


def load_split(task_id: str, root: Path, split: str) -> ImageArrays:
    """Read one split (``train``, ``test``; SVHN also ``extra``) of ``task_id`` under ``root``."""
    spec = layout(task_id)
    names = {"train": spec.train, "test": spec.test, "extra": spec.extra}.get(split)
    if not names:
        raise HarnessError(f"{task_id} has no split {split!r}; it has: train, test" + (", extra" if spec.extra else ""))
    base = resolve_root(root, spec)
    parts = [read_file(base / name, spec) for name in names]
    return ImageArrays(np.concatenate([p.images for p in parts]), np.concatenate([p.labels for p in parts]))


def channel_stats(images: np.ndarray, chunk: int = 4096) -> tuple[list[float], list[float]]:
    """Per-channel mean and standard deviation of uint8 (N, 3, H, W) images scaled to [0, 1], in chunks."""
    total = np.zeros(3)
    squares = np.zeros(3)
    for start in range(0, len(images), chunk):
        block = images[start : start + chunk].astype(np.float64) / 255.0
        total += block.sum(axis=(0, 2, 3))
        squares += np.square(block).sum(axis=(0, 2, 3))
    count = images.shape[0] * images.shape[2] * images.shape[3]
    mean = total / count
    return mean.tolist(), np.sqrt(np.maximum(squares / count - mean**2, 0.0)).tolist()


# --- datasets and the data module ---------------------------------------------------------------------------------


class ImageTransform:
    """uint8 (3, H, W) -> float (3, H, W): scale, optional pad-and-crop and flip, normalise."""

    def __init__(self, mean: list[float], std: list[float], pad: int = 0, flip: bool = False) -> None:
        self.mean = torch.tensor(mean).view(3, 1, 1)
        self.std = torch.tensor(std).view(3, 1, 1)
        self.pad = pad
        self.flip = flip

    def __call__(self, image: Tensor) -> Tensor:
        x = image.float().div(255.0)
        if self.pad:
            height, width = x.shape[-2:]
            x = torch.nn.functional.pad(x, (self.pad,) * 4)  # zeros: black borders
            top, left = torch.randint(0, 2 * self.pad + 1, (2,)).tolist()
            x = x[:, top : top + height, left : left + width]
        if self.flip and torch.rand(()) < 0.5:
            x = x.flip(-1)
        return (x - self.mean) / self.std


class ArrayDataset(Dataset):
    """``(transform(image), class index)`` for the chosen positions of an in-memory split."""

    def __init__(self, arrays: ImageArrays, indices: np.ndarray, transform: ImageTransform) -> None:
        self.arrays = arrays
        self.indices = np.asarray(indices, dtype=np.int64)
        self.transform = transform

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index: int) -> tuple[Tensor, int]:
        position = int(self.indices[index])
        image = torch.from_numpy(self.arrays.images[position])
        return self.transform(image), int(self.arrays.labels[position])


class ClassificationDataModule(pl.LightningDataModule):
    """One of ``cifar-10``, ``cifar-100``, ``svhn``, ``imagenet-32`` from ``data_root``.

    Args:
        dataset: the task id.
        data_root: folder holding the dataset's files (see the module docstring).
        batch_size: images per batch.
        num_workers: data-loader worker processes.
        subset_percent: train on this percentage of each class (see :mod:`tasks.imagenet.subsets`).
        subset_seed: seed of the subset's ranking.
        augment: pad-4 random crop, plus a horizontal flip where the dataset allows it.
        normalize: subtract the training split's channel mean and divide by its standard deviation.
        include_extra: SVHN only: train on ``train`` + ``extra`` (604,388 images), as many SVHN papers do.
        subset_file: where to write the training list file (optional; ``data_hash`` is the same either way).
    """

    def __init__(
        self,
        dataset: str,
        data_root: str | Path,
        batch_size: int = 128,
        num_workers: int = 0,
        subset_percent: float = 100.0,
        subset_seed: int = 0,
        augment: bool = True,
        normalize: bool = True,
        include_extra: bool = False,
        subset_file: str | Path | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.spec = layout(dataset)
        if include_extra and not self.spec.extra:
            raise HarnessError(f"{dataset} has no extra split; include_extra is for svhn")
        subset_size(1, subset_percent)  # validates the percentage now
        self.data_root = Path(data_root)
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.subset_percent = float(subset_percent)
        self.subset_seed = subset_seed
        self.augment = augment
        self.normalize = normalize
        self.include_extra = include_extra
        self.subset_file = Path(subset_file) if subset_file is not None else None
        self.arrays: dict[str, ImageArrays] = {}
        self.data_hash: str | None = None
        self.train_indices: np.ndarray | None = None
        self.train_dataset: ArrayDataset | None = None
        self.test_dataset: ArrayDataset | None = None

    @property
    def num_classes(self) -> int:
        return self.spec.num_classes

    def split(self, name: str) -> ImageArrays:
        """The ``train`` (with ``extra`` when asked) or ``test`` arrays, read once."""
        if name not in self.arrays:
            arrays = load_split(self.spec.task_id, self.data_root, name)
            if name == "train" and self.include_extra:
                extra = load_split(self.spec.task_id, self.data_root, "extra")
                arrays = ImageArrays(
                    np.concatenate([arrays.images, extra.images]), np.concatenate([arrays.labels, extra.labels])
                )
            self.arrays[name] = arrays
        return self.arrays[name]

    def verify(self) -> None:
        """Read and check every file of both splits; raise :class:`HarnessError` naming the file."""
        self.split("train")
        self.split("test")

    def setup(self, stage: str | None = None) -> None:
        if self.train_dataset is not None:
            return
        train, test = self.split("train"), self.split("test")
        items = [(str(i), str(int(label))) for i, label in enumerate(train.labels)]
        if self.subset_percent < 100.0:
            items = sample_subset(items, self.subset_percent, self.subset_seed)
        if self.subset_file is not None:
            self.data_hash = write_list(items, self.subset_file)
        else:
            self.data_hash = hashlib.sha256(format_subset(items)).hexdigest()
        self.train_indices = np.sort(np.array([int(item_id) for item_id, _ in items], dtype=np.int64))
        mean, std = channel_stats(train.images) if self.normalize else ([0.0] * 3, [1.0] * 3)
        pad, flip = (4, self.spec.flip) if self.augment else (0, False)
        self.train_dataset = ArrayDataset(train, self.train_indices, ImageTransform(mean, std, pad, flip))
        self.test_dataset = ArrayDataset(test, np.arange(len(test.labels)), ImageTransform(mean, std))

    def _loader(self, dataset: Dataset | None, shuffle: bool) -> DataLoader:
        return make_loader(
            dataset, batch_size=self.batch_size, num_workers=self.num_workers, shuffle=shuffle,
            owner="ClassificationDataModule",
        )  # fmt: skip

    def train_dataloader(self) -> DataLoader:
        return self._loader(self.train_dataset, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        """The test split: there is no official validation split (see the module docstring)."""
        return self._loader(self.test_dataset, shuffle=False)

    def test_dataloader(self) -> DataLoader:
        return self._loader(self.test_dataset, shuffle=False)

    def write_references(self, path: Path) -> Path:
        """Write the test labels as the scorer's ``id,label`` references CSV (ids = positions, labels = indices)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        labels = self.split("test").labels
        path.write_text("id,label\n" + "".join(f"{i},{int(label)}\n" for i, label in enumerate(labels)))
        return path

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """How the test loader's predictions are scored: references ``folder/references.csv`` (the test labels),
        ids = positions in the test split, labels = class indices."""
        references = self.write_references(Path(folder) / "references.csv")
        return Scoring(self.spec.task_id, references, [str(i) for i in range(len(self.split("test").labels))])
