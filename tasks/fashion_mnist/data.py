"""Fashion-MNIST (and MNIST, scikit-learn's digits) in their distributed IDX files, held in memory and served as a
Lightning data module; the data of the budget tiers (the SGD width study, CondConv's and AA's small-scale deltas).

IDX (LeCun et al., http://yann.lecun.com/exdb/mnist/, the format Fashion-MNIST re-uses; Xiao, Rasul & Vollgraf,
arXiv 1708.07747): a big-endian header of two zero bytes, a type code (0x08 ubyte, 0x09 byte, 0x0B int16, 0x0C int32,
0x0D float32, 0x0E float64) and the number of dimensions, then one uint32 per dimension, then the values in row-major
order. Files may be gzip-compressed (``.gz``), as the Debian package ``dataset-fashion-mnist`` ships them under
``/usr/share/datasets/fashion-mnist``: ``train-images-idx3-ubyte`` (60,000 x 28 x 28), ``train-labels-idx1-ubyte``,
``t10k-images-idx3-ubyte`` (10,000) and ``t10k-labels-idx1-ubyte``. CIFAR-10 is read through
``tasks.classification`` for the SGD study's ResNets.

A run trains on a fixed subset of ``train_size`` training images, the same for every run and seed (class-balanced,
drawn with ``numpy.random.default_rng(0)``; the SGD study's noise scale is defined by the training-set size ``N``).
Pixels are scaled to [0, 1] and standardised by the subset's mean and standard deviation (one scalar each). Example
ids are 0-based positions in the split, as the scorer's references (``tasks.fashion_mnist.score``).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
from pathlib import Path

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler, SequentialSampler

from harness.errors import HarnessError
from harness.predictions import Scoring

IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
IDX_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
DEFAULT_ROOTS = {"fashion-mnist": "/usr/share/datasets/fashion-mnist"}
SUBSET_SEED = 0


def read_idx(path: Path) -> np.ndarray:
    """The array stored in an IDX file (gzip-compressed or not); errors name the file."""
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise HarnessError(f"{path}: cannot read IDX file: {exc}") from exc
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] not in IDX_TYPES:
        raise HarnessError(f"{path}: not an IDX file (header {raw[:4].hex()!r})")
    ndim = raw[3]
    dims = np.frombuffer(raw, dtype=">u4", count=ndim, offset=4).astype(int)
    dtype = np.dtype(IDX_TYPES[raw[2]])
    offset, expected = 4 + 4 * ndim, int(np.prod(dims)) * dtype.itemsize
    if len(raw) - offset != expected:
        raise HarnessError(f"{path}: IDX header says {tuple(dims)} ({expected} bytes) but holds {len(raw) - offset}")
    return np.frombuffer(raw, dtype=dtype, offset=offset).reshape(dims).astype(dtype.newbyteorder("="))


def write_idx(path: Path, array: np.ndarray) -> None:
    """Write ``array`` as an IDX file (gzip-compressed when ``path`` ends in ``.gz``)."""
    code = {np.dtype(v).newbyteorder("="): k for k, v in IDX_TYPES.items()}[array.dtype.newbyteorder("=")]
    header = bytes([0, 0, code, array.ndim]) + np.asarray(array.shape, dtype=">u4").tobytes()
    data = header + array.astype(IDX_TYPES[code]).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)


def _idx_path(root: Path, name: str) -> Path:
    for candidate in (root / name, root / f"{name}.gz"):
        if candidate.exists():
            return candidate
    raise HarnessError(f"{root / name}[.gz]: missing (Fashion-MNIST: apt-get install dataset-fashion-mnist)")


def read_idx_split(root: Path, split: str) -> tuple[np.ndarray, np.ndarray]:
    """uint8 images ``(N, 1, 28, 28)`` and int64 labels ``(N,)`` of an MNIST-layout folder."""
    images_name, labels_name = IDX_FILES[split]
    images, labels = read_idx(_idx_path(root, images_name)), read_idx(_idx_path(root, labels_name))
    if images.ndim != 3 or labels.shape != images.shape[:1]:
        raise HarnessError(f"{root}: {split} images {images.shape} and labels {labels.shape} do not pair up")
    return images[:, None], labels.astype(np.int64)


def _digits(split: str) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 8x8 digits (values 0..16), the first 1,500 as train and the remaining 297 as test."""
    from sklearn.datasets import load_digits

    data = load_digits()
    images = (data.images * (255 / 16)).round().astype(np.uint8)[:, None]
    cut = slice(0, 1500) if split == "train" else slice(1500, None)
    return images[cut], data.target[cut].astype(np.int64)


@functools.lru_cache(maxsize=8)
def load_split(dataset: str, split: str, root: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """uint8 images ``(N, C, H, W)`` and int64 labels of ``dataset``'s ``split`` (``train`` or ``test``)."""
    if split not in IDX_FILES:
        raise HarnessError(f"unknown split {split!r}: use 'train' or 'test'")
    if dataset == "digits" and root is None:
        return _digits(split)
    if dataset in ("fashion-mnist", "mnist", "digits"):  # digits with a root: the smoke tier's IDX copy
        folder = root or DEFAULT_ROOTS.get(dataset)
        if folder is None:
            raise HarnessError(f"{dataset}: give the folder of its IDX files (data root)")
        return read_idx_split(Path(folder), split)
    if dataset == "cifar-10":
        from tasks.classification.data import load_split as load_classification

        arrays = load_classification("cifar-10", Path(root or "data/cifar-10"), split)
        return arrays.images, arrays.labels.astype(np.int64)
    from harness.suggest import did_you_mean

    known = ("fashion-mnist", "mnist", "digits", "cifar-10")
    raise HarnessError(f"unknown dataset {dataset!r}{did_you_mean(dataset, known)}; known: {', '.join(known)}")


def balanced_subset(labels: np.ndarray, size: int | None, seed: int = SUBSET_SEED) -> np.ndarray:
    """Indices of ``size`` examples with (as nearly as possible) equal counts per class, in a fixed random order."""
    order = np.random.default_rng(seed).permutation(len(labels))
    if size is None or size >= len(labels):
        return np.sort(order)
    classes = np.unique(labels)
    rank = np.empty(len(labels), dtype=np.int64)  # position of each example among its class in the random order
    for c in classes:
        members = order[labels[order] == c]
        rank[members] = np.arange(len(members))
    chosen = sorted(order, key=lambda i: (rank[i], labels[i]))[:size]
    return np.sort(np.asarray(chosen, dtype=np.int64))


def arrays_hash(*arrays: np.ndarray) -> str:
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(str(array.shape).encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def write_digits_idx(root: Path) -> None:
    """Smoke-tier data: scikit-learn's digits upscaled to 28x28 and written as Fashion-MNIST-named IDX files.

    Each 8x8 digit is enlarged 3x (24x24) and padded by 2 pixels; idempotent (existing files are kept).
    """
    root = Path(root)
    for split, (images_name, labels_name) in IDX_FILES.items():
        images_path, labels_path = root / f"{images_name}.gz", root / f"{labels_name}.gz"
        if images_path.exists() and labels_path.exists():
            continue
        images, labels = _digits(split)
        large = np.kron(images[:, 0], np.ones((3, 3), dtype=np.uint8))
        write_idx(images_path, np.pad(large, ((0, 0), (2, 2), (2, 2))))
        write_idx(labels_path, labels.astype(np.uint8))


@functools.lru_cache(maxsize=4)
def prepare_tensors(dataset: str, root: str | None, train_size: int | None, test_size: int | None, pool: int = 1):
    """Standardised float32 train/test tensors and the data hash: ``(x_train, y_train, x_test, y_test, hash)``.

    ``pool > 1`` averages ``pool x pool`` pixel blocks first (28x28 -> 14x14 for 2): cheaper conv nets for the budget
    tier. Cached per process: an executor's worker reads each dataset once for all its runs.
    """
    x_train, y_train = load_split(dataset, "train", root)
    x_test, y_test = load_split(dataset, "test", root)
    keep_train, keep_test = balanced_subset(y_train, train_size), balanced_subset(y_test, test_size)
    x_train, y_train, x_test, y_test = x_train[keep_train], y_train[keep_train], x_test[keep_test], y_test[keep_test]
    data_hash = arrays_hash(x_train, y_train, x_test, y_test)
    x_train, x_test = _pooled(x_train, pool), _pooled(x_test, pool)
    mean, std = float(x_train.mean()), float(x_train.std()) or 1.0

    def tensor(images: np.ndarray) -> torch.Tensor:
        return torch.from_numpy((images - mean) / std)

    return tensor(x_train), torch.from_numpy(y_train), tensor(x_test), torch.from_numpy(y_test), data_hash


def _pooled(images: np.ndarray, pool: int) -> np.ndarray:
    """uint8 ``(N, C, H, W)`` -> float32 in [0, 1], averaged over ``pool x pool`` blocks."""
    scaled = images.astype(np.float32) / 255
    if pool == 1:
        return scaled
    n, c, h, w = scaled.shape
    return scaled[:, :, : h - h % pool, : w - w % pool].reshape(n, c, h // pool, pool, w // pool, pool).mean((3, 5))


class TensorBatches(Dataset):
    """Index with a list of positions, get the whole batch: one gather per batch instead of one per example."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor) -> None:
        self.images, self.labels = images, labels

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.as_tensor(indices)
        return self.images[index], self.labels[index]


class ArrayDataModule(pl.LightningDataModule):
    """In-memory train subset and test set. Training batches are drawn without replacement in a fresh random order
    every epoch and the last incomplete batch is dropped, so every step uses exactly ``batch_size`` examples.
    ``seed`` fixes that order; ``None`` takes the run's seed (the one the runner gave ``pl.seed_everything``), so
    seeds differ in batch order as well as in initialisation. The validation and test loaders both serve the test
    set: these datasets have no validation split, and the SGD study defines its optimum by test accuracy."""

    def __init__(
        self,
        dataset: str = "fashion-mnist",
        data_root: str | None = None,
        batch_size: int = 64,
        train_size: int | None = 10_000,
        test_size: int | None = None,
        eval_batch_size: int = 1000,
        seed: int | None = None,
        pool: int = 1,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.data_hash: str | None = None

    def setup(self, stage: str | None = None) -> None:
        if self.data_hash is not None:
            return
        hp = self.hparams
        self.x_train, self.y_train, self.x_test, self.y_test, self.data_hash = prepare_tensors(
            hp.dataset, hp.data_root, hp.train_size, hp.test_size, hp.pool
        )
        if hp.batch_size > len(self.y_train):
            raise HarnessError(f"batch size {hp.batch_size} exceeds the {len(self.y_train)} training examples")

    @property
    def train_size(self) -> int:
        return len(self.y_train)

    def verify(self) -> None:
        """Both splits' files are there and readable (errors name the file)."""
        hp = self.hparams
        for split in IDX_FILES:
            load_split(hp.dataset, split, hp.data_root)

    def train_dataloader(self) -> DataLoader:
        run_seed = self.hparams.seed is None
        generator = torch.Generator().manual_seed(torch.initial_seed() if run_seed else self.hparams.seed)
        data = TensorBatches(self.x_train, self.y_train)
        batches = BatchSampler(RandomSampler(data, generator=generator), self.hparams.batch_size, drop_last=True)
        # With the run's seed the loader also takes the generator, as ``DataLoader(shuffle=True, generator=...)``
        # does (it draws its worker base seed from it first): the order the CondConv and AA budget runs were
        # measured with. A fixed ``seed`` (the SGD sweep) leaves the loader on the global generator.
        return DataLoader(data, sampler=batches, batch_size=None, generator=generator if run_seed else None)

    def val_dataloader(self) -> DataLoader:
        data = TensorBatches(self.x_test, self.y_test)
        batches = BatchSampler(SequentialSampler(data), self.hparams.eval_batch_size, drop_last=False)
        return DataLoader(data, sampler=batches, batch_size=None)

    def test_dataloader(self) -> DataLoader:
        return self.val_dataloader()

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """How the test loader's predictions are scored: references ``folder/references.csv``, the labels of the
        test examples served (``test_size`` may pick a subset), ids = their positions in the full test split."""
        hp = self.hparams
        _, labels = load_split(hp.dataset, "test", hp.data_root)
        ids = [str(i) for i in balanced_subset(labels, hp.test_size)]
        references = Path(folder) / "references.csv"
        references.write_text("id,label\n" + "".join(f"{i},{int(labels[int(i)])}\n" for i in ids), encoding="utf-8")
        task = "cifar-10" if hp.dataset == "cifar-10" else "fashion-mnist"  # mnist and digits: the same format
        return Scoring(task, references, ids)
