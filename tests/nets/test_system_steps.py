"""nets.systems.steps: detections mapped from the network input back to each image's pixels."""

from __future__ import annotations

import torch

from nets.systems.steps import to_image_pixels


def test_boxes_are_unscaled_and_clipped_per_image() -> None:
    images = [torch.zeros(3, 100, 200), torch.zeros(3, 50, 50)]
    detections = [
        {"boxes": torch.tensor([[10.0, 20.0, 640.0, 40.0]])},  # one scale 2: x2 beyond the 200-pixel width
        {"boxes": torch.tensor([[8.0, 8.0, 16.0, 32.0]])},  # (sx, sy) = (4, 2): the aspect ratio was not kept
    ]
    out = to_image_pixels(detections, images, [2.0, (4.0, 2.0)])
    assert out[0]["boxes"].tolist() == [[5.0, 10.0, 200.0, 20.0]]
    assert out[1]["boxes"].tolist() == [[2.0, 4.0, 4.0, 16.0]]
