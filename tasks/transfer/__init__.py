"""Transfer-learning image classification: fine-tuning ImageNet models on other datasets at ImageNet resolution.

The datasets of EfficientNet's Table 5 (arXiv 1905.11946v5, Table 6 lists them) that are read here, each in the
format its authors distribute:

- CIFAR-10 / CIFAR-100 (Krizhevsky 2009): the python pickles, read by ``tasks.classification`` (whose task ids
  ``cifar-10`` / ``cifar-100`` and scorers they keep); here only upsampled into the ImageNet input pipeline.
- Food-101 (Bossard, Guillaumin & Van Gool, ECCV 2014; https://data.vision.ee.ethz.ch/cvl/datasets_extra/food-101/):
  ``food-101.tar.gz`` unpacks to ``food-101/`` with ``images/<class>/<image id>.jpg`` (1,000 images for each of
  101 classes, the longer side at most 512 px), ``meta/classes.txt`` (the 101 class names, one a line, sorted) and
  the official split ``meta/train.txt`` (75,750 lines) / ``meta/test.txt`` (25,250), each line ``<class>/<image
  id>`` without extension (``meta/*.json`` hold the same lists). Class index = line of ``classes.txt`` from 0.
- Oxford-IIIT Pets (Parkhi, Vedaldi, Zisserman & Jawahar, CVPR 2012; https://www.robots.ox.ac.uk/~vgg/data/pets/):
  ``images.tar.gz`` unpacks to ``images/<image name>.jpg`` and ``annotations.tar.gz`` to ``annotations/`` with
  ``list.txt`` (all images; ``#`` comment lines first) and the paper's split ``trainval.txt`` (3,680 lines) /
  ``test.txt`` (3,669), each line ``<image name> <CLASS-ID 1..37> <SPECIES 1 cat, 2 dog> <BREED ID>``.
  Class index = CLASS-ID - 1. The harness's ``train`` split is ``trainval``.

Scoring is ``tasks.imagenet.score``'s (top-1 / top-5 accuracy and error, in percent): references ``id,label``,
predictions ``id,prediction[,p2..p5]``; labels are class indices as decimal strings. The references may instead be
the dataset folder, whose test list is read: ids are the official list entries (Food-101 ``apple_pie/1011328``,
Pets ``Abyssinian_201``). Pets and Food-101 report plain top-1 accuracy, as Table 5 does (Kornblith et al. 2019
report mean per-class accuracy for Pets).

Not read here (no data module yet): Birdsnap (distributed as a list of image URLs to download), Stanford Cars,
Flowers-102 and FGVC Aircraft.

This module is imported to list the registry: it imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.registry import Task

KEYS = ("top1", "top5", "error")


@dataclass(frozen=True)
class ListDataset:
    """A dataset of image files with official split lists: where they are, relative to its folder."""

    task_id: str
    title: str
    num_classes: int
    folder: str  # the folder the official archive(s) unpack to; data_root may be it or its parent
    lists: tuple[tuple[str, str], ...]  # (harness split, official list file)
    images: str  # the image folder


LIST_DATASETS: dict[str, ListDataset] = {
    dataset.task_id: dataset
    for dataset in (
        ListDataset(
            "food-101", "Food-101", 101, "food-101", (("train", "meta/train.txt"), ("test", "meta/test.txt")), "images"
        ),
        ListDataset(
            "oxford-pets",
            "Oxford-IIIT Pets (37 breeds)",
            37,
            "oxford-iiit-pet",
            (("train", "annotations/trainval.txt"), ("test", "annotations/test.txt")),
            "images",
        ),
    )
}
ARRAY_DATASETS = ("cifar-10", "cifar-100")  # read by tasks.classification.data
DATASETS = (*ARRAY_DATASETS, *LIST_DATASETS)


def _task(task_id: str) -> Task:
    return Task(
        id=task_id,
        title=LIST_DATASETS[task_id].title,
        score=f"tasks.transfer.score:score_{task_id.replace('-', '_')}",
        keys=KEYS,
        example="tasks.classification.fixtures:example",
        data="tasks.transfer.data:TransferDataModule",
        metric="tasks.metrics:accuracy_metrics",
        version=1,
    )


FOOD_101 = _task("food-101")
OXFORD_PETS = _task("oxford-pets")
