"""Tiny CIFAR-10, CIFAR-100, SVHN and ImageNet 32x32 copies written in each dataset's exact file format.

:func:`write_tiny_classification` writes, under ``root``, the files ``tasks.classification.LAYOUTS`` names:

- CIFAR-10: ``cifar-10-batches-py/data_batch_1`` .. ``5``, ``test_batch`` and ``batches.meta``, pickled dicts with
  byte-string keys (as Python 2's cPickle wrote them): ``batch_label``, ``labels``, ``data`` (uint8 (N, 3072)),
  ``filenames``; ``batches.meta`` holds ``label_names`` (the real ten), ``num_cases_per_batch`` and ``num_vis``;
- CIFAR-100: ``cifar-100-python/train``, ``test`` (``fine_labels`` and ``coarse_labels`` instead of ``labels``) and
  ``meta`` (``fine_label_names``, ``coarse_label_names``; placeholder names, coarse class = fine class // 5);
- SVHN: ``train_32x32.mat``, ``test_32x32.mat`` and ``extra_32x32.mat`` (``scipy.io.savemat``: ``X`` uint8
  (32, 32, 3, N), ``y`` uint8 (N, 1), the digit 0 stored as 10);
- ImageNet 32x32: ``Imagenet32_train/train_data_batch_1`` .. ``10`` (str keys ``data``, ``labels`` counted from 1,
  ``mean``: the float64 mean training row) and ``Imagenet32_val/val_data`` (``data``, ``labels``).

Images are deterministic (``numpy.random.default_rng(seed)``): a colour per class plus uniform noise, so that a
model can learn the classes in a smoke run. ``per_class`` training and ``test_per_class`` test images of each of
the first ``classes`` classes (default: all, at most 100), shuffled as the real files are; the training images are
spread over the dataset's training files. Writing is atomic and idempotent (``tasks.imagenet.fixtures``'s marker
scheme).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from harness.errors import HarnessError
from tasks.classification import LAYOUTS, ArrayLayout
from tasks.imagenet.fixtures import atomic_fixture, write_csv

CIFAR10_NAMES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
PICKLE_PROTOCOL = 2  # CIFAR: the highest protocol of Python 2's cPickle, which wrote the real files
IMAGENET32_PROTOCOL = 3  # Python 3's default until 3.8; the Imagenet32 scripts are Python 3


def _images(rng: np.random.Generator, labels: np.ndarray, colours: np.ndarray) -> np.ndarray:
    """uint8 (N, 3, 32, 32): the class colour plus noise in [-48, 48]."""
    noise = rng.integers(-48, 49, size=(len(labels), 3, 32, 32))
    return np.clip(colours[labels][:, :, None, None] + noise, 0, 255).astype(np.uint8)


def _dump(path: Path, data: dict, protocol: int = PICKLE_PROTOCOL) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        pickle.dump(data, handle, protocol=protocol)


def _write_cifar(root: Path, spec: ArrayLayout, train: tuple, test: tuple) -> None:
    fine = spec.label_key == "fine_labels"
    chunks = _chunks(*train, len(spec.train))
    parts = [(name, "training", chunk) for name, chunk in zip(spec.train, chunks, strict=True)]
    parts.append((spec.test[0], "testing", test))
    for count, (name, kind, (images, labels)) in enumerate(parts, start=1):
        total = len(spec.train) if kind == "training" else 1
        number = count if kind == "training" else 1
        data = {
            b"batch_label": f"{kind} batch {number} of {total}".encode(),
            b"filenames": [f"fixture_s_{count:02d}{i:04d}.png".encode() for i in range(len(labels))],
            b"data": images.reshape(len(labels), -1),
        }
        if fine:
            data[b"fine_labels"] = labels.tolist()
            data[b"coarse_labels"] = (labels // 5).tolist()
        else:
            data[b"labels"] = labels.tolist()
        _dump(root / name, data)
    folder = root / Path(spec.test[0]).parent
    if fine:
        meta = {
            b"fine_label_names": [f"fine_{i:03d}".encode() for i in range(100)],
            b"coarse_label_names": [f"coarse_{i:02d}".encode() for i in range(20)],
        }
        _dump(folder / "meta", meta)
    else:
        meta = {b"num_cases_per_batch": 10000, b"label_names": [n.encode() for n in CIFAR10_NAMES], b"num_vis": 3072}
        _dump(folder / "batches.meta", meta)


def _write_svhn(root: Path, spec: ArrayLayout, splits: dict[str, tuple]) -> None:
    import scipy.io

    for name, (images, labels) in splits.items():
        stored = np.where(labels == 0, 10, labels).astype(np.uint8).reshape(-1, 1)  # the digit 0 has label 10
        root.mkdir(parents=True, exist_ok=True)
        scipy.io.savemat(root / name, {"X": images.transpose(2, 3, 1, 0), "y": stored})  # (N,C,H,W) -> (H,W,C,N)


def _write_imagenet32(root: Path, spec: ArrayLayout, train: tuple, test: tuple) -> None:
    rows = train[0].reshape(len(train[1]), -1)
    mean = rows.mean(axis=0)
    for name, (images, labels) in zip(spec.train, _chunks(*train, len(spec.train)), strict=True):
        data = {"data": images.reshape(len(labels), -1), "labels": (labels + 1).tolist(), "mean": mean}
        _dump(root / name, data, IMAGENET32_PROTOCOL)
    images, labels = test
    val = {"data": images.reshape(len(labels), -1), "labels": (labels + 1).tolist()}
    _dump(root / spec.test[0], val, IMAGENET32_PROTOCOL)


def _chunks(images: np.ndarray, labels: np.ndarray, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    bounds = np.linspace(0, len(labels), count + 1).round().astype(int)
    return [(images[a:b], labels[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def _split(rng: np.random.Generator, classes: int, per_class: int, colours: np.ndarray) -> tuple:
    labels = rng.permutation(np.repeat(np.arange(classes), per_class))
    return _images(rng, labels, colours), labels


def _build(root: Path, spec: ArrayLayout, params: dict) -> None:
    rng = np.random.default_rng(params["seed"])
    colours = rng.integers(48, 208, size=(params["classes"], 3))
    train = _split(rng, params["classes"], params["per_class"], colours)
    test = _split(rng, params["classes"], params["test_per_class"], colours)
    if spec.format == "cifar-pickle":
        _write_cifar(root, spec, train, test)
    elif spec.format == "svhn-mat":
        extra = _split(rng, params["classes"], params["per_class"], colours)
        _write_svhn(root, spec, {spec.train[0]: train, spec.test[0]: test, spec.extra[0]: extra})
    else:
        _write_imagenet32(root, spec, train, test)


def write_tiny_classification(
    root: Path,
    dataset: str = "cifar-10",
    per_class: int = 3,
    test_per_class: int = 2,
    classes: int | None = None,
    seed: int = 0,
) -> Path:
    """Write a tiny copy of ``dataset`` (a task id of ``tasks.classification``) under ``root``; returns ``root``."""
    if dataset not in LAYOUTS:
        raise HarnessError(f"unknown small-image dataset {dataset!r}; known: {', '.join(LAYOUTS)}")
    spec = LAYOUTS[dataset]
    classes = min(spec.num_classes, 100) if classes is None else classes
    if not 1 <= classes <= spec.num_classes or per_class < 1 or test_per_class < 1:
        raise HarnessError(f"{dataset}: need 1 <= classes <= {spec.num_classes} and at least one image per class")
    params = {
        "fixture": f"tiny-{dataset}",
        "per_class": per_class,
        "test_per_class": test_per_class,
        "classes": classes,
        "seed": seed,
    }
    return atomic_fixture(Path(root), params, lambda tmp: _build(tmp, spec, params))


def example(root: Path, task_id: str) -> dict[str, Path]:
    """References ``id,label`` and predictions ``id,prediction,p2..p5`` for 4 test images of ``task_id``:
    2 right at top-1, one more within the top 5 (top1 50, top5 75, error 50)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    labels = ["3", "1", "4", "0"]
    guesses = [
        ["3", "0", "1", "2", "4"],
        ["1", "2", "3", "4", "5"],
        ["0", "2", "4", "6", "8"],  # right at guess 3
        ["9", "8", "7", "6", "5"],  # wrong in all five
    ]
    references, predictions = root / "labels.csv", root / "predictions.csv"
    write_csv(references, ["id", "label"], [[str(i), label] for i, label in enumerate(labels)])
    write_csv(predictions, ["id", "prediction", "p2", "p3", "p4", "p5"], [[str(i), *g] for i, g in enumerate(guesses)])
    return {"references": references, "predictions": predictions}
