"""COCO 2017 object detection (bounding boxes), scored by pycocotools, the official COCO API.

Dataset: Lin et al., "Microsoft COCO: Common Objects in Context" (arXiv:1405.0312). Protocol: the detection
evaluation of https://cocodataset.org/#detection-eval as ``pycocotools.cocoeval.COCOeval(iouType="bbox")``
computes it: AP averaged over IoU 0.50:0.05:0.95 and over categories, at most 100 detections per image and
category, crowd regions ignored, objects split by area into small (< 32²), medium and large (> 96²).

References are an ``instances_*.json`` annotation file (``annotations/instances_val2017.json``); predictions are
a COCO results file, a JSON list of ``{"image_id", "category_id", "bbox": [x, y, width, height], "score"}``.
Keys, in pycocotools' ``stats`` order and ×100 as papers print them: ``AP``, ``AP50``, ``AP75``, ``APs``, ``APm``,
``APl``, ``AR1``, ``AR10``, ``AR100``, ``ARs``, ``ARm``, ``ARl``. See ``tasks.coco.score``.

Modules (imported on use, none of them from here): ``score`` (the scorer), ``data``
(:class:`~tasks.coco.data.CocoDetectionDataModule` over the COCO 2017 layout), ``metric`` (a torchmetrics
``Metric`` on the scorer's code path), ``fixtures`` (a tiny dataset in the COCO 2017 layout).
"""

from harness.registry import Task

KEYS = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")

COCO_DETECTION = Task(
    id="coco-detection",
    title="COCO 2017 object detection (bounding-box AP, pycocotools)",
    score="tasks.coco.score:score",
    keys=KEYS,
    example="tasks.coco.fixtures:example",
    data="tasks.coco.data:CocoDetectionDataModule",
    metric="tasks.coco.metric:CocoDetectionMetric",
    version=1,
)
