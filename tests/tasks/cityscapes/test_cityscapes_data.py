"""The Cityscapes data module and the tiny Cityscapes fixture (tasks.cityscapes.data, tasks.cityscapes.fixtures)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from harness.errors import HarnessError
from tasks.cityscapes.data import CityscapesDataModule
from tasks.cityscapes.fixtures import HEIGHT, WIDTH, label_map, write_tiny_cityscapes
from tasks.cityscapes.score import score


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_cityscapes(tmp_path_factory.mktemp("cityscapes"))


def tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return digest.hexdigest()


def test_fixture_layout_and_determinism(root: Path, tmp_path: Path) -> None:
    labels = root / "gtFine" / "val" / "frankfurt" / "frankfurt_000000_000019_gtFine_labelIds.png"
    image = root / "leftImg8bit" / "train" / "bochum" / "bochum_000001_000019_leftImg8bit.png"
    with Image.open(labels) as lab, Image.open(image) as img:
        assert lab.mode == "L" and lab.size == (WIDTH, HEIGHT) and img.mode == "RGB"
        assert set(np.unique(np.array(lab))) == set(range(34))
    assert sorted(p.name for p in (root / "gtFine" / "train").iterdir()) == ["aachen", "bochum"]
    assert tree_hash(write_tiny_cityscapes(tmp_path / "again")) == tree_hash(root)


def test_one_batch_shapes_and_train_ids(root: Path) -> None:
    dm = CityscapesDataModule(root, batch_size=2, crop_size=(16, 32), flip_prob=0.0)
    dm.setup("fit")
    x, y = next(iter(dm.train_dataloader()))
    assert x.shape == (2, 3, 16, 32) and x.dtype == torch.float32
    assert y.shape == (2, 16, 32) and y.dtype == torch.int64
    x, y = next(iter(dm.test_dataloader()))
    assert x.shape == (2, 3, HEIGHT, WIDTH)
    expected = dm.frames["val"][0]
    assert expected.prefix == "frankfurt_000000_000019"
    ids = label_map(4)  # the first val image is the fixture's 5th
    assert y[0][ids == 7].eq(0).all() and y[0][ids == 33].eq(18).all() and y[0][ids == 9].eq(255).all()
    assert set(y.unique().tolist()) == set(range(19)) | {255}


def test_crop_pads_small_images_with_ignore(root: Path) -> None:
    dm = CityscapesDataModule(root, crop_size=64, flip_prob=0.0)
    dm.setup()
    image, target = dm.train_dataset[0]
    assert image.shape == (3, 64, 64) and target.shape == (64, 64)
    assert target[HEIGHT:].eq(255).all() and image[:, HEIGHT:].eq(0).all()


def test_written_predictions_score_100(root: Path, tmp_path: Path) -> None:
    dm = CityscapesDataModule(root)
    dm.setup()
    for index, (_, target) in enumerate(dm.val_dataset):
        # Ignored pixels are written as 0 ("unlabeled"): the evaluation skips them.
        dm.write_prediction(tmp_path / "pred", index, target)
    result = score(dm.references, tmp_path / "pred")
    assert result["miou"] == pytest.approx(100.0) and result["miou_category"] == pytest.approx(100.0)


def test_verify_names_what_is_missing_or_broken(tmp_path: Path) -> None:
    broken = write_tiny_cityscapes(tmp_path / "a")
    (broken / "gtFine" / "val" / "lindau" / "lindau_000001_000019_gtFine_labelIds.png").unlink()
    with pytest.raises(HarnessError, match=r"lindau_000001_000019_gtFine_labelIds\.png: missing; the label-id file of"):
        CityscapesDataModule(broken).verify()
    broken = write_tiny_cityscapes(tmp_path / "b")
    path = broken / "gtFine" / "train" / "aachen" / "aachen_000000_000019_gtFine_labelIds.png"
    Image.fromarray(np.full((HEIGHT, WIDTH), 40, dtype=np.uint8)).save(path)
    with pytest.raises(HarnessError, match=r"aachen_000000_000019_gtFine_labelIds\.png: ground-truth pixel values 40"):
        CityscapesDataModule(broken, verify_images=-1).verify()
    with pytest.raises(HarnessError, match=r"leftImg8bit/train: missing"):
        CityscapesDataModule(tmp_path / "a" / "gtFine").verify()
