"""Small datasets written in the on-disk ILSVRC-2012 layout, for the smoke and budget tiers and for tests.

The layout is the one :class:`tasks.imagenet.data.ImageNetDataModule` reads from a real ImageNet copy:
``train/<wnid>/<wnid>_<n>.JPEG`` and a validation split in one of the layouts people keep it in
(``val_layout``):

- ``"devkit"`` (default, the official release): ``val/ILSVRC2012_val_<8 digits>.JPEG`` flat, plus
  ``ILSVRC2012_devkit_t12/data/ILSVRC2012_validation_ground_truth.txt`` (one ILSVRC2012_ID per line, in image
  order) and ``ILSVRC2012_devkit_t12/data/meta.mat`` (the ``synsets`` struct array, written with
  ``scipy.io.savemat`` in the devkit's field layout, leaf synsets first, then one parent synset);
- ``"folders"``: ``val/<wnid>/ILSVRC2012_val_<8 digits>.JPEG``;
- ``"labels-csv"``: flat ``val/`` plus ``val_labels.csv`` (``id,label``: image stem, wnid);
- ``"kaggle"``: flat ``val/`` plus ``LOC_val_solution.csv`` (``ImageId,PredictionString``, wnid first).

The wnids ``n00000000``, ``n00000001``, ... are placeholders, not real WordNet synsets. As in the real devkit,
the ILSVRC2012_IDs are not in sorted-wnid order (here they run backwards), so reading ``ID - 1`` as the class
index would be caught by the tests.

Writers are idempotent and atomic: the dataset is written into a temporary sibling folder, completed with a
marker file naming its parameters, and renamed into place; a complete fixture with the same parameters is
left alone, and a killed run leaves no half-written ``root``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from harness.errors import HarnessError

MARKER = ".harness-fixture.json"
VAL_LAYOUTS = ("devkit", "folders", "labels-csv", "kaggle")
DEVKIT_DATA = Path("ILSVRC2012_devkit_t12") / "data"
GROUND_TRUTH = "ILSVRC2012_validation_ground_truth.txt"
META_FIELDS = (
    "ILSVRC2012_ID",
    "WNID",
    "words",
    "gloss",
    "num_children",
    "children",
    "wordnet_height",
    "num_train_images",
)
JPEG_QUALITY = 95

TrainItem = tuple[str, str, Image.Image]  # (wnid, file name, image)
ValItem = tuple[Image.Image, str]  # (image, wnid)


def placeholder_wnids(n: int) -> list[str]:
    """``n00000000``, ``n00000001``, ...: wnid-shaped names that are not real synsets."""
    return [f"n{index:08d}" for index in range(n)]


def val_name(number: int) -> str:
    """The official validation file name of the 1-based image ``number``."""
    return f"ILSVRC2012_val_{number:08d}.JPEG"


def _save_jpeg(img: Image.Image, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    img.convert("RGB").save(path, format="JPEG", quality=JPEG_QUALITY)


def _write_meta(path: Path, classes: Sequence[str], train_counts: Sequence[int]) -> None:
    """A devkit-style ``meta.mat``: leaf synsets with ILSVRC2012_ID ``n..1`` (reversed), then a parent."""
    import scipy.io

    n = len(classes)
    synsets = np.zeros((n + 1, 1), dtype=[(name, "O") for name in META_FIELDS])
    for index, wnid in enumerate(classes):
        synset_id = np.array([[n - index]], dtype=np.uint16)
        leaf = (synset_id, wnid, f"placeholder class {index}", "", 0, np.zeros((1, 0)), 0, train_counts[index])
        synsets[index, 0] = leaf
    children = np.arange(1, n + 1, dtype=np.uint16).reshape(1, n)
    parent = (np.array([[n + 1]], dtype=np.uint16), "n99999999", "placeholder parent", "", n, children, 1, 0)
    synsets[n, 0] = parent
    scipy.io.savemat(path, {"synsets": synsets})


def _write_val(root: Path, val: Sequence[ValItem], classes: Sequence[str], counts: Sequence[int], layout: str) -> None:
    for number, (img, wnid) in enumerate(val, start=1):
        folder = root / "val" / wnid if layout == "folders" else root / "val"
        _save_jpeg(img, folder / val_name(number))
    stems = [val_name(number).removesuffix(".JPEG") for number in range(1, len(val) + 1)]
    if layout == "devkit":
        (root / DEVKIT_DATA).mkdir(parents=True)
        ids = [len(classes) - classes.index(wnid) for _, wnid in val]
        (root / DEVKIT_DATA / GROUND_TRUTH).write_text("".join(f"{i}\n" for i in ids))
        _write_meta(root / DEVKIT_DATA / "meta.mat", classes, counts)
    elif layout == "labels-csv":
        write_csv(
            root / "val_labels.csv", ["id", "label"], [[stem, wnid] for stem, (_, wnid) in zip(stems, val, strict=True)]
        )
    elif layout == "kaggle":
        rows = [[stem, f"{wnid} 0 0 1 1"] for stem, (_, wnid) in zip(stems, val, strict=True)]
        write_csv(root / "LOC_val_solution.csv", ["ImageId", "PredictionString"], rows)


def write_csv(path: Path, header: list[str], rows: Iterable[list[str]]) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    path.write_text(buffer.getvalue())


def _write_ilsvrc(
    root: Path, train: Iterable[TrainItem], val: Sequence[ValItem], classes: Sequence[str], layout: str
) -> None:
    counts = dict.fromkeys(classes, 0)
    for wnid, name, img in train:
        _save_jpeg(img, root / "train" / wnid / name)
        counts[wnid] += 1
    _write_val(root, val, classes, [counts[wnid] for wnid in classes], layout)


def atomic_fixture(root: Path, spec: dict, build: Callable[[Path], None]) -> Path:
    """Run ``build`` into a temporary sibling of ``root`` and rename it into place, unless already done."""
    root = Path(root)
    marker = root / MARKER
    if marker.is_file():
        found = json.loads(marker.read_text())
        if found != spec:
            raise HarnessError(f"{root} holds a fixture made with {found}, not {spec}; remove it to regenerate")
        return root
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise HarnessError(f"{root} exists and is not a complete fixture ({MARKER} missing); remove it to regenerate")
    root.parent.mkdir(parents=True, exist_ok=True)
    # the pid in the name tells `harness run` whether the writer is still alive (harness.runner cleans up the dead's)
    tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}.partial-{os.getpid()}-", dir=root.parent))
    try:
        build(tmp)
        (tmp / MARKER).write_text(json.dumps(spec, sort_keys=True) + "\n")
        try:
            os.rename(tmp, root)  # atomic; replaces an empty directory, fails on a non-empty one
        except OSError:
            if not marker.is_file():  # not a concurrent writer that finished first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def _check_layout(val_layout: str) -> None:
    if val_layout not in VAL_LAYOUTS:
        raise HarnessError(f"unknown val_layout {val_layout!r}; choose one of {', '.join(VAL_LAYOUTS)}")


def write_digits_ilsvrc(root: Path, size: int = 32, val_layout: str = "devkit", val_every: int = 5) -> Path:
    """scikit-learn's 1,797 handwritten digits (8x8, shipped with scikit-learn) as a 10-class ILSVRC copy.

    Each digit is scaled from 0..16 to 0..255, enlarged to ``size`` px with nearest-neighbour and saved as
    RGB JPEG (quality 95). Image ``i`` (in scikit-learn's order) goes to validation when ``i % val_every == 0``
    (360 images at the default), to training otherwise (1,437); class ``d`` is wnid ``n0000000d``.
    """
    _check_layout(val_layout)
    spec = {"fixture": "digits-ilsvrc", "size": size, "val_layout": val_layout, "val_every": val_every}
    return atomic_fixture(root, spec, lambda tmp: _build_digits(tmp, size, val_layout, val_every))


def _build_digits(root: Path, size: int, val_layout: str, val_every: int) -> None:
    from sklearn.datasets import load_digits

    digits = load_digits()
    classes = placeholder_wnids(10)
    train: list[TrainItem] = []
    val: list[ValItem] = []
    for index, (pixels, target) in enumerate(zip(digits.images, digits.target, strict=True)):
        gray = np.clip(np.round(pixels * 255.0 / 16.0), 0, 255).astype(np.uint8)  # (8, 8)
        img = Image.fromarray(gray).resize((size, size), Image.Resampling.NEAREST).convert("RGB")
        wnid = classes[int(target)]
        if index % val_every == 0:
            val.append((img, wnid))
        else:
            train.append((wnid, f"{wnid}_{index}.JPEG", img))
    _write_ilsvrc(root, train, val, classes, val_layout)


def write_tiny_ilsvrc(
    root: Path,
    classes: int = 3,
    per_class: int = 4,
    size: int = 16,
    val_per_class: int = 2,
    val_layout: str = "devkit",
    seed: int = 0,
) -> Path:
    """Uniform-noise RGB JPEGs in the ILSVRC layout, for fast tests (``classes * per_class`` train images).

    Widths vary (``size``, ``size + 4``, ``size + 8``) so that resizing and cropping see non-square images.
    """
    _check_layout(val_layout)
    spec = {
        "fixture": "tiny-ilsvrc",
        "classes": classes,
        "per_class": per_class,
        "size": size,
        "val_per_class": val_per_class,
        "val_layout": val_layout,
        "seed": seed,
    }
    return atomic_fixture(root, spec, lambda tmp: _build_tiny(tmp, spec))


def _build_tiny(root: Path, spec: dict) -> None:
    rng = np.random.default_rng(spec["seed"])
    wnids = placeholder_wnids(spec["classes"])

    def noise(index: int) -> Image.Image:
        width = spec["size"] + 4 * (index % 3)
        return Image.fromarray(rng.integers(0, 256, (spec["size"], width, 3), dtype=np.uint8))

    train = [(wnid, f"{wnid}_{i}.JPEG", noise(i)) for wnid in wnids for i in range(spec["per_class"])]
    val = [(noise(i), wnid) for i in range(spec["val_per_class"]) for wnid in wnids]
    _write_ilsvrc(root, train, val, wnids, spec["val_layout"])


def example(root: Path, task_id: str) -> dict[str, Path]:
    """A tiny scoring example: references ``id,label`` and predictions ``id,prediction,p2..p5`` for 4 images,
    2 right at top-1 and one more within the top 5 (top1 50, top5 75)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    wnids = placeholder_wnids(6)
    labels = {f"ILSVRC2012_val_{i:08d}": wnids[i] for i in range(1, 5)}
    guesses = {
        "ILSVRC2012_val_00000001": [wnids[1], *wnids[2:6]],
        "ILSVRC2012_val_00000002": [wnids[2], *wnids[3:6], wnids[0]],
        "ILSVRC2012_val_00000003": [wnids[0], wnids[3], wnids[1], wnids[2], wnids[4]],
        "ILSVRC2012_val_00000004": [wnids[0], wnids[1], wnids[2], wnids[3], wnids[5]],
    }
    references, predictions = root / "labels.csv", root / "predictions.csv"
    write_csv(references, ["id", "label"], ([key, label] for key, label in labels.items()))
    write_csv(predictions, ["id", "prediction", "p2", "p3", "p4", "p5"], ([key, *g] for key, g in guesses.items()))
    return {"references": references, "predictions": predictions}
