"""IDX reading and writing, the fixed class-balanced subset, pooling, the data module's loaders and seed, the scorer,
and the Debian Fashion-MNIST files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import pytorch_lightning as pl
import torch

from harness.errors import HarnessError
from tasks.fashion_mnist.data import (
    DEFAULT_ROOTS,
    ArrayDataModule,
    balanced_subset,
    read_idx,
    read_idx_split,
    write_digits_idx,
    write_idx,
)


@pytest.mark.parametrize("name", ["images-idx3-ubyte", "images-idx3-ubyte.gz"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32])
def test_idx_round_trip(tmp_path: Path, name: str, dtype):
    array = (np.arange(2 * 3 * 4) % 7).astype(dtype).reshape(2, 3, 4)
    write_idx(tmp_path / name, array)
    back = read_idx(tmp_path / name)
    assert back.dtype == np.dtype(dtype) and back.shape == (2, 3, 4)
    np.testing.assert_array_equal(back, array)


def test_idx_header_bytes(tmp_path: Path):
    """Magic 0x00000801 for a 1-d ubyte array, then its length big-endian, then the bytes."""
    write_idx(tmp_path / "labels", np.array([3, 1, 4], dtype=np.uint8))
    assert (tmp_path / "labels").read_bytes() == bytes([0, 0, 8, 1, 0, 0, 0, 3, 3, 1, 4])


def test_bad_idx_files_are_named(tmp_path: Path):
    (tmp_path / "junk").write_bytes(b"\x01\x02\x03\x04rest")
    with pytest.raises(HarnessError, match="junk: not an IDX file"):
        read_idx(tmp_path / "junk")
    (tmp_path / "short").write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 9, 1, 2]))
    with pytest.raises(HarnessError, match="short: IDX header says"):
        read_idx(tmp_path / "short")
    with pytest.raises(HarnessError, match="missing"):
        read_idx_split(tmp_path, "train")


def test_balanced_subset_is_fixed_and_balanced():
    labels = np.repeat(np.arange(10), [50, 60, 70, 80, 90, 100, 110, 120, 130, 140])
    chosen = balanced_subset(labels, 200)
    assert len(chosen) == 200 and len(set(chosen)) == 200
    assert np.bincount(labels[chosen]).tolist() == [20] * 10
    np.testing.assert_array_equal(chosen, balanced_subset(labels, 200))
    assert len(balanced_subset(labels, None)) == len(labels)


def test_digits_fixture_in_fashion_mnist_layout(tmp_path: Path):
    write_digits_idx(tmp_path)
    images, labels = read_idx_split(tmp_path, "train")
    assert images.shape == (1500, 1, 28, 28) and images.dtype == np.uint8 and set(labels) == set(range(10))
    data = ArrayDataModule("digits", str(tmp_path), batch_size=32, train_size=100, test_size=50, pool=2)
    data.setup()
    x, y = next(iter(data.train_dataloader()))
    assert x.shape == (32, 1, 14, 14) and y.shape == (32,) and abs(float(data.x_train.mean())) < 1e-4
    assert len(list(data.train_dataloader())) == 100 // 32  # the last incomplete batch is dropped
    assert data.data_hash and data.train_size == 100


@pytest.mark.skipif(not Path(DEFAULT_ROOTS["fashion-mnist"]).exists(), reason="apt-get install dataset-fashion-mnist")
def test_debian_fashion_mnist():
    images, labels = read_idx_split(Path(DEFAULT_ROOTS["fashion-mnist"]), "test")
    assert images.shape == (10_000, 1, 28, 28) and images.dtype == np.uint8
    assert np.bincount(labels).tolist() == [1000] * 10


def test_cifar10_through_the_classification_task(tmp_path: Path):
    fixtures = pytest.importorskip("tasks.classification.fixtures")
    fixtures.write_tiny_classification(tmp_path, "cifar-10", per_class=3)
    data = ArrayDataModule("cifar-10", str(tmp_path), batch_size=4, train_size=20, test_size=10)
    data.setup()
    x, y = next(iter(data.train_dataloader()))
    assert x.shape == (4, 3, 32, 32) and data.train_size == 20


@pytest.fixture(scope="module")
def idx_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fashion-layout")
    write_digits_idx(root)  # digits written under Fashion-MNIST's IDX file names: same reader, seconds not minutes
    return root


def test_test_loader_serves_the_whole_test_split(idx_root: Path) -> None:
    data = ArrayDataModule("digits", str(idx_root), batch_size=32, train_size=200, eval_batch_size=100)
    data.verify()
    data.setup()
    images, labels = zip(*data.test_dataloader(), strict=True)
    assert sum(len(y) for y in labels) == 297  # the digits' test split, every image once
    assert images[0].shape[1:] == (1, 28, 28)


def test_training_order_follows_the_run_seed_unless_fixed(idx_root: Path) -> None:
    data = ArrayDataModule("digits", str(idx_root), batch_size=32, train_size=200)
    data.setup()

    def first_labels(seed: int) -> torch.Tensor:
        pl.seed_everything(seed, verbose=False)
        return next(iter(data.train_dataloader()))[1]

    assert torch.equal(first_labels(0), first_labels(0))
    assert not torch.equal(first_labels(0), first_labels(1))
    assert all(len(y) == 32 for _, y in data.train_dataloader())  # last incomplete batch dropped
    fixed = ArrayDataModule("digits", str(idx_root), batch_size=32, train_size=200, seed=5)
    fixed.setup()
    pl.seed_everything(0, verbose=False)
    first = next(iter(fixed.train_dataloader()))[1]
    pl.seed_everything(1, verbose=False)
    assert torch.equal(first, next(iter(fixed.train_dataloader()))[1])


def test_verify_names_the_missing_file(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="t10k-images-idx3-ubyte|train-images-idx3-ubyte"):
        ArrayDataModule("fashion-mnist", str(tmp_path)).verify()


def test_scorer_reads_the_dataset_folder_as_references(idx_root: Path, tmp_path: Path) -> None:
    from tasks.fashion_mnist.score import score

    _, labels = read_idx_split(idx_root, "test")
    rows = ["id,prediction"] + [f"{i},{(int(y) + (i % 4 == 0)) % 10}" for i, y in enumerate(labels)]
    (tmp_path / "predictions.csv").write_text("\n".join(rows) + "\n")
    result = score(idx_root, tmp_path / "predictions.csv")
    assert result["top1"] == pytest.approx(100 * sum(i % 4 != 0 for i in range(len(labels))) / len(labels))
    assert result["error"] == pytest.approx(100 - result["top1"])
