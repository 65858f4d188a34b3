"""The ImageNet data module and fixtures on generated ILSVRC-layout folders (tasks.imagenet.data, .fixtures)."""

from __future__ import annotations

import hashlib
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from harness.errors import HarnessError
from tasks.imagenet.data import ImageNetDataModule, index_imagenet, read_devkit_meta
from tasks.imagenet.fixtures import (
    DEVKIT_DATA,
    GROUND_TRUTH,
    MARKER,
    VAL_LAYOUTS,
    placeholder_wnids,
    write_digits_ilsvrc,
    write_tiny_ilsvrc,
)
from tasks.imagenet.score import score
from tasks.imagenet.subsets import read_subset

WNIDS = placeholder_wnids(3)


def tiny(tmp_path: Path, val_layout: str = "devkit", **kw) -> Path:
    return write_tiny_ilsvrc(tmp_path / f"tiny-{val_layout}", val_layout=val_layout, **kw)


def module(root: Path, **kw) -> ImageNetDataModule:
    return ImageNetDataModule(data_root=root, batch_size=4, image_size=16, **kw)


def expected_val_labels() -> list[str]:
    # write_tiny_ilsvrc writes validation image i (1-based) for class (i - 1) % classes.
    return [WNIDS[i % 3] for i in range(6)]


@pytest.mark.parametrize("val_layout", VAL_LAYOUTS)
def test_every_val_layout_gives_the_same_labels(tmp_path: Path, val_layout: str) -> None:
    root = tiny(tmp_path, val_layout)
    for requested in ("auto", val_layout):
        index = index_imagenet(root, requested)
        assert index.val_layout == val_layout
        assert index.classes == tuple(WNIDS)
        assert [wnid for _, wnid in sorted(index.val, key=lambda item: item[0].rsplit("/")[-1])] == (
            expected_val_labels()
        )
        assert len(index.train) == 12 and index.train == sorted(index.train)


def test_devkit_ids_go_through_meta_mat(tmp_path: Path) -> None:
    root = tiny(tmp_path, "devkit")
    synsets = read_devkit_meta(root / DEVKIT_DATA / "meta.mat")
    # Leaves get ILSVRC2012_ID 3, 2, 1 in sorted-wnid order (not ID - 1 = class index), then a parent with 4.
    assert synsets == {3: WNIDS[0], 2: WNIDS[1], 1: WNIDS[2], 4: "n99999999"}
    assert (root / DEVKIT_DATA / GROUND_TRUTH).read_text().split() == ["3", "2", "1", "3", "2", "1"]


def test_one_batch_shapes_and_labels(tmp_path: Path) -> None:
    dm = module(tiny(tmp_path, "folders"), autoaugment=True)
    dm.setup("fit")
    x, y = next(iter(dm.train_dataloader()))
    assert x.shape == (4, 3, 16, 16) and x.dtype == torch.float32
    assert y.shape == (4,) and y.dtype == torch.long
    x, y = next(iter(dm.test_dataloader()))
    assert x.shape == (4, 3, 16, 16)
    assert y.tolist() == [0, 0, 1, 1]  # val order = sorted <wnid>/<file> paths, labels = class index
    assert len(dm.val_dataset) == 6 and dm.num_classes == 3


def test_datasets_pickle_for_spawned_workers(tmp_path: Path) -> None:
    dm = module(tiny(tmp_path, "labels-csv"), autoaugment="efficientnet-v0")
    dm.setup()
    for dataset in (dm.train_dataset, dm.val_dataset):
        clone = pickle.loads(pickle.dumps(dataset))
        assert clone[0][0].shape == (3, 16, 16) and clone[0][1] == dataset[0][1]


def test_digits_fixture_devkit_end_to_end(tmp_path: Path) -> None:
    root = write_digits_ilsvrc(tmp_path / "digits")
    assert sum(1 for _ in (root / "train").rglob("*.JPEG")) == 1437
    assert sum(1 for _ in (root / "val").glob("*.JPEG")) == 360
    with Image.open(root / "val" / "ILSVRC2012_val_00000001.JPEG") as img:
        assert img.size == (32, 32) and img.mode == "RGB" and img.format == "JPEG"
    dm = ImageNetDataModule(root, batch_size=32, image_size=32, crop_fraction=1.0, verify_images=50)
    dm.setup("test")
    assert dm.index.val_layout == "devkit"
    # sklearn's digit 0 is image 0 (val image 1), digit 5 is image 5 (val image 2).
    assert dm.val_dataset.targets[:2].tolist() == [0, 5]
    x, y = next(iter(dm.val_dataloader()))
    assert x.shape == (32, 3, 32, 32) and y.dtype == torch.long
    assert np.bincount(dm.val_dataset.targets, minlength=10).min() > 20  # every digit in validation


def test_fixture_is_idempotent_and_checks_its_parameters(tmp_path: Path) -> None:
    root = tiny(tmp_path)
    stamp = (root / MARKER).stat().st_mtime_ns
    assert tiny(tmp_path) == root
    assert (root / MARKER).stat().st_mtime_ns == stamp
    with pytest.raises(HarnessError, match="fixture made with"):
        tiny(tmp_path, per_class=5)
    assert sorted(p.name for p in tmp_path.iterdir()) == [root.name]  # no temporary folder left


def test_fixture_refuses_a_foreign_folder_and_cleans_up_after_failure(tmp_path: Path) -> None:
    foreign = tmp_path / "data"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(HarnessError, match="not a complete fixture"):
        write_tiny_ilsvrc(foreign)
    with pytest.raises(HarnessError, match="unknown val_layout"):
        write_tiny_ilsvrc(tmp_path / "x", val_layout="zip")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]


def test_fixture_fills_an_existing_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert (write_tiny_ilsvrc(tmp_path / "empty") / MARKER).is_file()


def test_data_hash_is_the_list_file_hash(tmp_path: Path) -> None:
    root = tiny(tmp_path, "folders", per_class=10)
    full = module(root, subset_file=tmp_path / "full.txt")
    full.setup()
    assert full.data_hash == hashlib.sha256((tmp_path / "full.txt").read_bytes()).hexdigest()
    assert len(read_subset(tmp_path / "full.txt")) == 30
    part = module(root, subset_percent=20, subset_seed=1, subset_file=tmp_path / "20.txt")
    part.setup()
    assert part.data_hash == hashlib.sha256((tmp_path / "20.txt").read_bytes()).hexdigest()
    assert part.data_hash != full.data_hash
    assert len(part.train_dataset) == 6 and np.bincount(part.train_dataset.targets).tolist() == [2, 2, 2]
    unwritten = module(root, subset_percent=20, subset_seed=1)
    unwritten.setup()
    assert unwritten.data_hash == part.data_hash


def test_write_references_scores_with_the_scorer(tmp_path: Path) -> None:
    dm = module(tiny(tmp_path, "kaggle"))
    dm.setup("test")
    refs = dm.write_references(tmp_path / "refs.csv")
    lines = refs.read_text().splitlines()
    assert lines[:2] == ["id,label", f"ILSVRC2012_val_00000001,{WNIDS[0]}"]
    predictions = tmp_path / "pred.csv"
    predictions.write_text("id,prediction\n" + "".join(f"{i},{WNIDS[0]}\n" for i in dm.val_ids()))
    assert score(refs, predictions)["top1"] == pytest.approx(100 / 3)


def test_extra_extensions_and_hidden_files(tmp_path: Path) -> None:
    root = tiny(tmp_path, "folders")
    Image.new("RGB", (9, 9)).save(root / "train" / WNIDS[0] / "extra.png")
    (root / "train" / WNIDS[0] / "README.txt").write_text("not an image")
    (root / "train" / ".cache").mkdir()
    index = index_imagenet(root)
    assert index.classes == tuple(WNIDS)
    assert (f"{WNIDS[0]}/extra.png", WNIDS[0]) in index.train and len(index.train) == 13


# verify(): each failure names the path at fault.


def test_verify_missing_root_and_splits(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"nowhere: data root missing"):
        module(tmp_path / "nowhere").verify()
    root = tiny(tmp_path, "folders")
    shutil.rmtree(root / "val")
    with pytest.raises(HarnessError, match=r"tiny-folders/val: missing"):
        module(root).verify()
    shutil.rmtree(root / "train")
    with pytest.raises(HarnessError, match=r"tiny-folders/train: missing"):
        module(root).verify()


def test_verify_empty_class_folder(tmp_path: Path) -> None:
    root = tiny(tmp_path, "folders")
    (root / "train" / "n00000009").mkdir()
    with pytest.raises(HarnessError, match=r"train/n00000009: empty class folder"):
        module(root).verify()


def test_verify_corrupt_image_is_named(tmp_path: Path) -> None:
    root = tiny(tmp_path, "devkit")
    bad = root / "train" / WNIDS[1] / f"{WNIDS[1]}_2.JPEG"
    bad.write_bytes(b"this is not a JPEG" * 10)
    with pytest.raises(HarnessError, match=rf"{bad.name}: unreadable image"):
        module(root).verify()
    module(root, verify_images=0).verify()  # the sample can be switched off


def test_verify_truncated_jpeg_is_named(tmp_path: Path) -> None:
    root = tiny(tmp_path, "devkit")
    bad = root / "val" / "ILSVRC2012_val_00000004.JPEG"
    bad.write_bytes(bad.read_bytes()[:200])
    with pytest.raises(HarnessError, match=r"ILSVRC2012_val_00000004.JPEG: unreadable image"):
        module(root).verify()


def test_verify_samples_a_bounded_number(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tasks.imagenet.data as data

    opened: list[Path] = []
    monkeypatch.setattr(data, "load_rgb", opened.append)
    root = tiny(tmp_path, "devkit", per_class=10)
    module(root, verify_images=5).verify()
    assert len(opened) == len(set(opened)) == 5
    assert any("/val/" in str(path) for path in opened) and any("/train/" in str(path) for path in opened)
    opened.clear()
    module(root, verify_images=-1).verify()
    assert len(opened) == 36


@pytest.mark.parametrize(
    ("layout", "damage", "message"),
    [
        ("devkit", lambda r: (r / DEVKIT_DATA / "meta.mat").unlink(), r"ILSVRC2012_devkit_t12/data/meta.mat: missing"),
        ("devkit", lambda r: (r / DEVKIT_DATA / "meta.mat").write_bytes(b"junk"), r"meta.mat: not a devkit meta.mat"),
        ("devkit", lambda r: (r / DEVKIT_DATA / GROUND_TRUTH).write_text("3\n2\n"), r"beyond the 2 lines of"),
        ("devkit", lambda r: (r / DEVKIT_DATA / GROUND_TRUTH).write_text("3\n9\n1\n3\n2\n1\n"), r"ground_truth.txt:2:"),
        ("devkit", lambda r: (r / "val" / "ILSVRC2012_val_00000001.JPEG").rename(r / "val" / "x.JPEG"), r"x.JPEG"),
        ("devkit", lambda r: shutil.rmtree(r / "ILSVRC2012_devkit_t12"), r"flat validation folder without labels"),
        ("labels-csv", lambda r: (r / "val_labels.csv").write_text("id,label\n"), r"val_00000001.JPEG: no label in"),
        ("labels-csv", lambda r: (r / "val_labels.csv").write_text("a,b\n"), r"val_labels.csv:1: header must name"),
        (
            "labels-csv",
            lambda r: (r / "val_labels.csv").write_text("id,label\nILSVRC2012_val_00000001,n123\n"),
            r"val_labels.csv:2: label 'n123' is not a class folder",
        ),
        ("folders", lambda r: (r / "val" / "n00000007").mkdir(), r"val/n00000007: label 'n00000007' is not a class"),
    ],
)
def test_verify_bad_validation_labels(tmp_path: Path, layout: str, damage, message: str) -> None:
    root = tiny(tmp_path, layout)
    damage(root)
    with pytest.raises(HarnessError, match=message):
        module(root).verify()


def test_partial_devkit_split_warns(tmp_path: Path) -> None:
    root = tiny(tmp_path, "devkit")
    (root / "val" / "ILSVRC2012_val_00000006.JPEG").unlink()
    with pytest.warns(UserWarning, match="5 images for the 6 labels"):
        index_imagenet(root)


def test_bad_arguments_fail_early(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match="unknown val_layout"):
        ImageNetDataModule(tmp_path, val_layout="tar")
    with pytest.raises(HarnessError, match="subset percent"):
        ImageNetDataModule(tmp_path, subset_percent=0)
    with pytest.raises(HarnessError, match="call setup"):
        ImageNetDataModule(tmp_path).train_dataloader()
