"""COCO bounding-box AP/AR as a torchmetrics ``Metric``: accumulate detections per batch, score once with pycocotools.

Same code path as the official-format scorer (``tasks.coco.score``): ``compute`` builds the references and results
documents from what was accumulated and calls :func:`tasks.coco.score.evaluate`, i.e. pycocotools' ``COCOeval``,
returning the 12 keys of :data:`tasks.coco.KEYS` ×100 (NaN where an area range has no ground truth). ``backend``
picks pycocotools (the reference, default) or faster-coco-eval; ``scored_by`` names the one that computed.

The inputs follow torchvision's detection convention (and :class:`tasks.coco.data.CocoDetectionDataModule`):
``preds`` a list of ``{"boxes": (N, 4) xyxy, "scores": (N,), "labels": (N,)}``, ``target`` a list of
``{"boxes": (M, 4) xyxy, "labels": (M,)}`` with optional ``"iscrowd"`` (default 0) and ``"area"`` (default the
box area; the data module passes the annotation file's mask area, which is what the scorer sorts objects by).
Images are numbered in the order they arrive; categories are the labels seen (a category without ground truth
does not enter pycocotools' mean, so listing only those seen changes nothing).

Boxes pass through float32 tensors, so a box is rounded to float32 on its way in; on real COCO that can move an
IoU by about 1e-7. For the number a paper table is compared with, write the results file
(:func:`tasks.coco.score.coco_results`) and run the scorer on the annotation file:
:meth:`CocoDetectionMetric.write_predictions` writes the detections it holds as that file, with the data module's
image ids (``harness.predictions``). The states are the rows of all images concatenated, with each image's row
counts, so under DDP they are gathered as one tensor per state whatever number of images each process saw.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import Tensor
from torchmetrics import Metric
from torchmetrics.utilities import dim_zero_cat

from harness.predictions import Scoring, check_count
from tasks.coco import KEYS
from tasks.coco.score import coco_results, evaluate

_PRED_STATES = ("det_boxes", "det_scores", "det_labels", "det_counts")
_TARGET_STATES = ("gt_boxes", "gt_labels", "gt_iscrowd", "gt_area", "gt_counts")


def _column(target: Mapping[str, Tensor], key: str, default: Tensor) -> Tensor:
    value = target.get(key)
    return default if value is None else value.detach().reshape(-1)


def _per_image(state: list[Tensor] | Tensor, counts: list[Tensor] | Tensor) -> list[Tensor]:
    """A flat state (rows of every image, in arrival order) cut back into one tensor per image."""
    if isinstance(counts, list) and not counts:  # no image seen
        return []
    return list(torch.split(dim_zero_cat(state), dim_zero_cat(counts).tolist()))


class CocoDetectionMetric(Metric):
    """``AP``, ``AP50``, ..., ``ARl`` over all images seen, computed by pycocotools (see the module docstring)."""

    is_differentiable = False
    higher_is_better = True
    full_state_update = False

    def __init__(self, backend: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.backend = backend  # None: $HARNESS_COCO_BACKEND or pycocotools (tasks.coco.score.resolve_backend)
        self.scored_by = ""  # after compute: the library and version that computed the last result
        for name in _PRED_STATES + _TARGET_STATES:  # rows of all images, concatenated when gathered across processes
            self.add_state(name, default=[], dist_reduce_fx="cat")

    def update(self, preds: Sequence[Mapping[str, Tensor]], target: Sequence[Mapping[str, Tensor]]) -> None:
        if len(preds) != len(target):
            raise ValueError(f"{len(preds)} predictions for {len(target)} images")
        for pred, gt in zip(preds, target, strict=True):
            boxes = pred["boxes"].detach().reshape(-1, 4).double()
            self.det_boxes.append(boxes)
            self.det_scores.append(pred["scores"].detach().reshape(-1).double())
            self.det_labels.append(pred["labels"].detach().reshape(-1).long())
            self.det_counts.append(torch.tensor([len(boxes)], device=boxes.device))
            boxes = gt["boxes"].detach().reshape(-1, 4).double()
            self.gt_boxes.append(boxes)
            self.gt_labels.append(gt["labels"].detach().reshape(-1).long())
            self.gt_iscrowd.append(_column(gt, "iscrowd", torch.zeros_like(boxes[:, 0])).long())
            box_area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
            self.gt_area.append(_column(gt, "area", box_area).double())
            self.gt_counts.append(torch.tensor([len(boxes)], device=boxes.device))

    def _images(self) -> tuple[list[tuple[Tensor, ...]], list[tuple[Tensor, ...]]]:
        """Per image, in arrival order (process by process once gathered): ``(boxes, labels, iscrowd, area)`` of
        its objects and ``(boxes, scores, labels)`` of its detections."""
        gts = [_per_image(getattr(self, name), self.gt_counts) for name in _TARGET_STATES[:-1]]
        dets = [_per_image(getattr(self, name), self.det_counts) for name in _PRED_STATES[:-1]]
        return list(zip(*gts, strict=True)), list(zip(*dets, strict=True))

    def _documents(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The references document and the results list pycocotools is given (image ids 1, 2, ...)."""
        annotations: list[dict[str, Any]] = []
        detections: list[dict[str, Any]] = []
        labels: set[int] = set()
        images, found = self._images()
        for index, (boxes, cats, crowd, area) in enumerate(images):
            for box, cat, is_crowd, obj_area in zip(
                boxes.tolist(), cats.tolist(), crowd.tolist(), area.tolist(), strict=True
            ):
                x1, y1, x2, y2 = box
                annotations.append(
                    {"id": len(annotations) + 1, "image_id": index + 1, "category_id": cat,
                     "bbox": [x1, y1, x2 - x1, y2 - y1], "area": obj_area, "iscrowd": int(is_crowd)}
                )  # fmt: skip
            labels.update(cats.tolist())
        for index, (boxes, scores, cats) in enumerate(found):
            detections.extend(coco_results(index + 1, boxes.cpu().numpy(), scores.cpu().numpy(), cats.cpu().numpy()))
            labels.update(cats.tolist())
        references = {
            "images": [{"id": index + 1} for index in range(len(images))],
            "annotations": annotations,
            "categories": [{"id": cat} for cat in sorted(labels)],
        }
        return references, detections

    def compute(self) -> dict[str, Tensor]:
        references, detections = self._documents()
        if not references["annotations"]:
            return {key: torch.tensor(float("nan"), dtype=torch.float64) for key in KEYS}
        scores = evaluate(references, detections, self.backend)
        self.scored_by = scores.backend
        return {key: torch.tensor(value, dtype=torch.float64) for key, value in scores.items()}

    def write_predictions(self, folder: Path, scoring: Scoring) -> dict[str, Path]:
        """``folder/detections_results.json``: the COCO results file of every detection held, image ``i`` (in
        arrival order) named by ``scoring.ids[i]``; labels are written as category ids, as they arrive."""
        _, found = self._images()
        check_count(len(found), scoring, "images")
        results: list[dict[str, Any]] = []
        for image_id, (boxes, scores, cats) in zip(scoring.ids, found, strict=False):
            results.extend(coco_results(image_id, boxes.cpu().numpy(), scores.cpu().numpy(), cats.cpu().numpy()))
        path = Path(folder) / "detections_results.json"
        path.write_text(json.dumps(results) + "\n", encoding="utf-8")
        return {"predictions": path}
