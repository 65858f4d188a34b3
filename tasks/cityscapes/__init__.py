"""Cityscapes pixel-level semantic labeling (19 classes), scored as the official ``cityscapesscripts`` evaluation.

Dataset: Cordts et al., "The Cityscapes Dataset for Semantic Urban Scene Understanding" (CVPR 2016,
arXiv:1604.01685). Protocol: ``cityscapesscripts/evaluation/evalPixelLevelSemanticLabeling.py`` with the label
table of ``cityscapesscripts/helpers/labels.py``: one confusion matrix over the whole split, class IoU =
TP / (TP + FP + FN) for the 19 classes that are not ``ignoreInEval``, category IoU for the 7 categories that hold
one of them, each averaged over the classes / categories whose IoU is defined.

References are a ``gtFine/<split>`` folder (``<city>/<city>_<seq>_<frame>_gtFine_labelIds.png``); predictions a
folder, searched recursively, holding one ``<city>_<seq>_<frame>*.png`` of label ids (not train ids) per ground
truth image. Keys, ×100: ``miou`` (the benchmark's "IoU class"), ``miou_category`` ("IoU category"), then
``iou_<class>`` for the 19 classes in train-id order, named as in ``labels.py`` with spaces replaced by
underscores (``iou_traffic_light``). The instance-weighted iIoU of the benchmark is left out. See
``tasks.cityscapes.score``.

Modules (imported on use, none of them from here): ``score``, ``data``
(:class:`~tasks.cityscapes.data.CityscapesDataModule`), ``metric``, ``fixtures``.
"""

from harness.registry import Task

# The 19 evaluated classes of cityscapesscripts' labels.py in train-id order (trainId 0..18); a test checks this
# table against the package.
CLASS_NAMES = (
    "road",
    "sidewalk",
    "building",
    "wall",
    "fence",
    "pole",
    "traffic light",
    "traffic sign",
    "vegetation",
    "terrain",
    "sky",
    "person",
    "rider",
    "car",
    "truck",
    "bus",
    "train",
    "motorcycle",
    "bicycle",
)
CLASS_KEYS = tuple(f"iou_{name.replace(' ', '_')}" for name in CLASS_NAMES)
KEYS = ("miou", "miou_category", *CLASS_KEYS)

CITYSCAPES_SEMANTIC = Task(
    id="cityscapes-semantic",
    title="Cityscapes pixel-level semantic labeling (gtFine, 19 classes)",
    score="tasks.cityscapes.score:score",
    keys=KEYS,
    example="tasks.cityscapes.fixtures:example",
    data="tasks.cityscapes.data:CityscapesDataModule",
    metric="tasks.cityscapes.metric:CityscapesIoU",
    version=1,
)
