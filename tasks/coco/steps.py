"""The COCO test protocol shared by the detection systems: one pycocotools metric per test loader (``bbox`` AP at
IoU 0.50:0.95, 0.50, 0.75 and by object size), logged under the harness's metric names ``test/ap`` ...

A system that mixes in :class:`CocoTestSteps` (after its training steps, e.g.
:class:`nets.systems.retinanet.RetinaNetSteps`) provides ``detect(images) -> [{"boxes", "scores", "labels"}]`` with
boxes in each image's own pixel coordinates (x1, y1, x2, y2; :func:`nets.systems.steps.to_image_pixels`) and labels
as COCO category ids. The run's records cite the scorer that computed the AP (``artifacts.coco_scorer``, e.g.
``pycocotools 2.0.11``; tasks.coco.score).
"""

from __future__ import annotations

import torch
from torch import nn

from harness.evaluators import per_test_loader

METRIC_NAMES = {"AP": "ap", "AP50": "ap50", "AP75": "ap75", "APs": "aps", "APm": "apm", "APl": "apl"}


def coco_results(metric: nn.Module, index: int = 0) -> dict[str, float]:
    """A :class:`~tasks.coco.metric.CocoDetectionMetric`'s AP under the harness's names (``ap``, ``ap50`` ...)."""
    values = metric.compute()
    return {name: float(values[key]) for key, name in METRIC_NAMES.items()}


class CocoTestSteps:
    def detect(self, images: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        raise NotImplementedError

    def on_test_start(self) -> None:
        from tasks.coco.metric import CocoDetectionMetric

        self.test_metrics = per_test_loader(self, lambda _: CocoDetectionMetric(), coco_results)

    def test_step(self, batch: tuple[list[torch.Tensor], list[dict]], batch_idx: int, dataloader_idx: int = 0) -> None:
        images, targets = batch
        self.test_metrics[dataloader_idx].update(self.detect(images), targets)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)
        scorer = self.test_metrics[-1].scored_by  # the library and version that computed the AP
        self.record_artifacts = {**getattr(self, "record_artifacts", {}), "coco_scorer": scorer}
