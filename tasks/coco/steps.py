"""The COCO test protocol shared by the detection systems: one pycocotools metric per test loader (``bbox`` AP at
IoU 0.50:0.95, 0.50, 0.75 and by object size), logged under the harness's metric names ``test/ap`` ...

A system that mixes in :class:`CocoTestSteps` (after its training steps, e.g.
:class:`nets.systems.retinanet.RetinaNetSteps`) provides ``detect(images) -> [{"boxes", "scores", "labels"}]`` with
boxes in each image's own pixel coordinates (x1, y1, x2, y2; :func:`nets.systems.steps.to_image_pixels`) and labels
as COCO category ids. The run's records cite
the scorer that computed the AP (``artifacts.coco_scorer``, e.g. ``pycocotools 2.0.11``; tasks.coco.score).
"""

from __future__ import annotations

import torch
from torch import nn

METRIC_NAMES = {"AP": "ap", "AP50": "ap50", "AP75": "ap75", "APs": "aps", "APm": "apm", "APl": "apl"}


class CocoTestSteps:
    def detect(self, images: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        raise NotImplementedError

    def on_test_start(self) -> None:
        from tasks.coco.metric import CocoDetectionMetric

        loaders = len(self.trainer.num_test_batches)
        self.test_metrics = nn.ModuleList(CocoDetectionMetric() for _ in range(loaders)).to(self.device)

    def test_step(self, batch: tuple[list[torch.Tensor], list[dict]], batch_idx: int, dataloader_idx: int = 0) -> None:
        images, targets = batch
        self.test_metrics[dataloader_idx].update(self.detect(images), targets)

    def on_test_epoch_end(self) -> None:
        for index, metric in enumerate(self.test_metrics):
            values = metric.compute()
            suffix = f"/dataloader_idx_{index}" if len(self.test_metrics) > 1 else ""
            for key, name in METRIC_NAMES.items():
                self.log(f"test/{name}{suffix}", float(values[key]), add_dataloader_idx=False)
            self.record_artifacts = {**getattr(self, "record_artifacts", {}), "coco_scorer": metric.scored_by}
            metric.reset()
