"""Readers and the data module for CIFAR-10/100, SVHN and ImageNet 32x32 on files in their exact formats."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import torch

from harness.errors import HarnessError
from tasks.classification import LAYOUTS
from tasks.classification.data import ClassificationDataModule, load_split, read_file, unpickle
from tasks.classification.fixtures import write_tiny_classification
from tasks.imagenet.subsets import read_subset

DATASETS = sorted(LAYOUTS)


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("small-images")
    return {name: write_tiny_classification(base / name, name, classes=10) for name in DATASETS}


@pytest.mark.parametrize("dataset", DATASETS)
def test_one_batch_from_the_real_format(roots: dict[str, Path], dataset: str) -> None:
    dm = ClassificationDataModule(dataset, roots[dataset], batch_size=8)
    dm.verify()
    dm.setup("fit")
    images, labels = next(iter(dm.train_dataloader()))
    assert images.shape == (8, 3, 32, 32) and images.dtype == torch.float32 and labels.dtype == torch.long
    assert 0 <= int(labels.min()) and int(labels.max()) < 10
    assert len(dm.train_dataset) == 30 and len(dm.test_dataset) == 20
    assert dm.num_classes == LAYOUTS[dataset].num_classes and len(dm.data_hash) == 64
    test_images, _ = next(iter(dm.test_dataloader()))
    assert abs(float(test_images.mean())) < 0.2  # normalised by the training split's statistics


@pytest.mark.parametrize("dataset", DATASETS)
def test_every_class_present_in_both_splits(roots: dict[str, Path], dataset: str) -> None:
    train, test = (load_split(dataset, roots[dataset], split) for split in ("train", "test"))
    assert np.bincount(train.labels).tolist() == [3] * 10 and np.bincount(test.labels).tolist() == [2] * 10
    assert train.images.shape == (30, 3, 32, 32) and train.images.dtype == np.uint8


def test_cifar_rows_are_red_then_green_then_blue_planes(tmp_path: Path) -> None:
    row = np.zeros(3072, dtype=np.uint8)
    row[:1024], row[1024:2048], row[2048:] = 10, 20, 30
    row[1] = 99  # red, first image row, second column
    path = tmp_path / "batch"
    path.write_bytes(pickle.dumps({b"data": row[None], b"labels": [7]}, protocol=2))
    arrays = read_file(path, LAYOUTS["cifar-10"])
    assert arrays.images.shape == (1, 3, 32, 32) and arrays.labels.tolist() == [7]
    assert arrays.images[0, :, 5, 5].tolist() == [10, 20, 30] and arrays.images[0, 0, 0, 1] == 99


def test_svhn_label_10_is_the_digit_zero_and_x_is_hwcn(tmp_path: Path) -> None:
    images = np.zeros((32, 32, 3, 2), dtype=np.uint8)
    images[0, 1, 2, 1] = 77  # image 1, row 0, column 1, blue
    scipy.io.savemat(tmp_path / "test_32x32.mat", {"X": images, "y": np.array([[10], [3]], dtype=np.uint8)})
    arrays = read_file(tmp_path / "test_32x32.mat", LAYOUTS["svhn"])
    assert arrays.labels.tolist() == [0, 3] and arrays.images[1, 2, 0, 1] == 77


def test_imagenet32_labels_count_from_one(roots: dict[str, Path]) -> None:
    raw = unpickle(roots["imagenet-32"] / "Imagenet32_val" / "val_data")
    assert set(raw) == {"data", "labels"} and min(raw["labels"]) == 1
    assert load_split("imagenet-32", roots["imagenet-32"], "test").labels.tolist() == [y - 1 for y in raw["labels"]]
    train_keys = unpickle(roots["imagenet-32"] / "Imagenet32_train" / "train_data_batch_10")
    assert set(train_keys) == {"data", "labels", "mean"}


def test_cifar_keys_are_read_from_python2_byte_strings(roots: dict[str, Path]) -> None:
    with open(roots["cifar-100"] / "cifar-100-python" / "test", "rb") as handle:
        raw = pickle.load(handle, encoding="bytes")
    assert {b"data", b"fine_labels", b"coarse_labels", b"filenames", b"batch_label"} <= set(raw)
    assert set(unpickle(roots["cifar-100"] / "cifar-100-python" / "test")) >= {"data", "fine_labels"}


def test_data_root_may_be_the_dataset_folder_itself(roots: dict[str, Path]) -> None:
    inner = load_split("cifar-10", roots["cifar-10"] / "cifar-10-batches-py", "test")
    assert inner.labels.tolist() == load_split("cifar-10", roots["cifar-10"], "test").labels.tolist()


def test_svhn_extra_split(roots: dict[str, Path]) -> None:
    dm = ClassificationDataModule("svhn", roots["svhn"], include_extra=True)
    dm.setup()
    assert len(dm.train_dataset) == 60
    with pytest.raises(HarnessError, match=r"cifar-10 has no extra split"):
        ClassificationDataModule("cifar-10", roots["cifar-10"], include_extra=True)


def test_subsets_are_deterministic_nested_and_hashed(roots: dict[str, Path], tmp_path: Path) -> None:
    root = write_tiny_classification(tmp_path / "c10", "cifar-10", per_class=10)
    kept = {}
    for percent in (20.0, 50.0):
        dm = ClassificationDataModule("cifar-10", root, subset_percent=percent, subset_file=tmp_path / f"{percent}.txt")
        dm.setup()
        kept[percent] = set(dm.train_indices.tolist())
        labels = dm.split("train").labels[dm.train_indices]
        assert np.bincount(labels).tolist() == [int(percent // 10)] * 10
        listed = read_subset(tmp_path / f"{percent}.txt")
        assert sorted(int(i) for i, _ in listed) == sorted(kept[percent])
        assert all(int(label) == dm.split("train").labels[int(i)] for i, label in listed)
        again = ClassificationDataModule("cifar-10", root, subset_percent=percent)
        again.setup()
        assert again.data_hash == dm.data_hash
    assert kept[20.0] < kept[50.0]


def test_verify_names_missing_and_corrupt_files(roots: dict[str, Path], tmp_path: Path) -> None:
    root = tmp_path / "copy"
    shutil.copytree(roots["cifar-10"], root)
    (root / "cifar-10-batches-py" / "data_batch_3").write_bytes(b"\x80\x02garbage")
    with pytest.raises(HarnessError, match=r"data_batch_3: unreadable pickle"):
        ClassificationDataModule("cifar-10", root).verify()
    (root / "cifar-10-batches-py" / "data_batch_3").unlink()
    with pytest.raises(HarnessError, match=r"data_batch_3: missing"):
        ClassificationDataModule("cifar-10", root).verify()
    with pytest.raises(HarnessError, match=r"train_32x32\.mat: missing"):
        ClassificationDataModule("svhn", tmp_path).verify()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"data": np.zeros((2, 3072), np.uint8), "labels": [0]}, r"2 images but 1 labels"),
        (
            {"data": np.zeros((1, 3072), np.uint8), "labels": [10]},
            r"labels 10\.\.10 outside the 10 classes of cifar-10",
        ),
        (
            {"data": np.zeros((1, 100), np.uint8), "labels": [0]},
            r"'data' is uint8 \(1, 100\); expected uint8 \(N, 3072\)",
        ),
        ({"labels": [0]}, r"no 'data' entry"),
        ([1, 2], r"expected a pickled dict, found list"),
    ],
)
def test_malformed_batches_are_named(tmp_path: Path, data: object, message: str) -> None:
    path = tmp_path / "test_batch"
    path.write_bytes(pickle.dumps(data, protocol=2))
    with pytest.raises(HarnessError, match=message):
        read_file(path, LAYOUTS["cifar-10"])


class _Exploit:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_pickles_cannot_run_code(tmp_path: Path) -> None:
    path = tmp_path / "test_batch"
    path.write_bytes(pickle.dumps({"data": _Exploit(), "labels": [0]}, protocol=2))
    with pytest.raises(HarnessError, match=r"global (posix|os)\.system is not allowed"):
        read_file(path, LAYOUTS["cifar-10"])


def test_augmentation_flips_only_where_labels_allow(roots: dict[str, Path]) -> None:
    svhn = ClassificationDataModule("svhn", roots["svhn"])
    svhn.setup()
    cifar = ClassificationDataModule("cifar-10", roots["cifar-10"], augment=False, normalize=False)
    cifar.setup()
    assert svhn.train_dataset.transform.flip is False and svhn.train_dataset.transform.pad == 4
    image, _ = cifar.train_dataset[0]
    raw = cifar.split("train").images[int(cifar.train_indices[0])]
    assert torch.equal(image, torch.from_numpy(raw).float() / 255)


def test_imagenet32_npz_batches_read_like_the_pickles(roots: dict[str, Path], tmp_path: Path) -> None:
    """The npz distribution of Downsampled ImageNet (``Imagenet32_train_npz/train_data_batch_1.npz`` ...)."""
    import numpy as np

    from tasks.classification import LAYOUTS
    from tasks.classification.data import npz_variant

    source, spec = roots["imagenet-32"], LAYOUTS["imagenet-32"]
    for name in (*spec.train, *spec.test):
        data = unpickle(source / name)
        target = npz_variant(tmp_path / name)
        target.parent.mkdir(parents=True, exist_ok=True)
        np.savez(target, data=data["data"], labels=np.asarray(data["labels"]))
    for split in ("train", "test"):
        from_npz, from_pickle = load_split("imagenet-32", tmp_path, split), load_split("imagenet-32", source, split)
        assert np.array_equal(from_npz.images, from_pickle.images)
        assert np.array_equal(from_npz.labels, from_pickle.labels)
