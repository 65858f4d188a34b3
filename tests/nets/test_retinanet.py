"""RetinaNet pieces of the TPU detection code: anchors, box coding, matching, focal / Huber loss, NMS."""

from __future__ import annotations

import math

import pytest
import torch

from nets.retinanet import (
    batched_nms,
    decode_boxes,
    encode_boxes,
    focal_loss,
    generate_anchors,
    match_anchors,
    postprocess,
    retinanet_loss,
)


def test_anchors_follow_the_official_layout():
    anchors = generate_anchors((128, 128))
    per_level = [(128 // 2**level) ** 2 * 9 for level in range(3, 8)]
    assert anchors.shape == (sum(per_level), 4)
    first = anchors[:9]  # P3, location (4, 4): sizes 32 * 2^(s/3), aspect ratios 1, 2, 0.5
    assert torch.allclose(first[0], torch.tensor([-12.0, -12.0, 20.0, 20.0]))
    w, h = first[1, 2] - first[1, 0], first[1, 3] - first[1, 1]
    assert w / h == pytest.approx(2.0) and (w * h).sqrt() == pytest.approx(32.0)
    assert (anchors[3, 2] - anchors[3, 0]).item() == pytest.approx(32 * 2 ** (1 / 3))
    last = anchors[-1]  # P7: one location centred at 64, largest scale, ratio 0.5
    assert ((last[0] + last[2]) / 2).item() == pytest.approx(64.0)


def test_box_coder_roundtrip_and_matching():
    anchors = torch.tensor([[0.0, 0.0, 10.0, 10.0], [20.0, 20.0, 40.0, 40.0], [50.0, 50.0, 60.0, 60.0]])
    boxes = torch.tensor([[1.0, 1.0, 11.0, 11.0], [18.0, 22.0, 41.0, 39.0]])
    assert torch.allclose(decode_boxes(encode_boxes(boxes, anchors[:2]), anchors[:2]), boxes, atol=1e-5)
    classes, targets = match_anchors(anchors, boxes, torch.tensor([3, 7]))
    assert classes.tolist() == [3, 7, -1]
    assert torch.allclose(targets[0], encode_boxes(boxes[:1], anchors[:1])[0]) and targets[2].abs().sum() == 0
    crowd_classes, _ = match_anchors(anchors, boxes, torch.tensor([3, 7]), iscrowd=torch.tensor([0, 1]))
    assert crowd_classes.tolist() == [3, -1, -1]


def test_focal_loss_hand_computed():
    # logit 0: p = 0.5; positive: 0.25 * 0.5^1.5 * ln 2; negative: 0.75 * 0.5^1.5 * ln 2.
    assert focal_loss(torch.zeros(1), torch.ones(1)).item() == pytest.approx(0.25 * 0.5**1.5 * math.log(2))
    assert focal_loss(torch.zeros(1), torch.zeros(1)).item() == pytest.approx(0.75 * 0.5**1.5 * math.log(2))
    # logit ln 3: p = 0.75; positive: 0.25 * 0.25^1.5 * -ln 0.75.
    value = focal_loss(torch.tensor([math.log(3.0)]), torch.ones(1)).item()
    assert value == pytest.approx(0.25 * 0.25**1.5 * -math.log(0.75))
    # gamma 0, alpha 0.5 is half the binary cross-entropy
    assert focal_loss(torch.tensor([2.0]), torch.ones(1), alpha=0.5, gamma=0.0).item() == pytest.approx(
        0.5 * math.log(1 + math.exp(-2.0))
    )


def test_retinanet_loss_normalises_by_positives():
    logits = torch.zeros(1, 3, 4)
    boxes = torch.zeros(1, 3, 4)
    targets = torch.tensor([[2, -1, -1]])
    box_targets = torch.tensor([[[0.05, 0.0, 0.0, 0.2], [0, 0, 0, 0], [0, 0, 0, 0]]])
    total, cls, box = retinanet_loss(logits, boxes, targets, box_targets, num_classes=4)
    per = 0.5**1.5 * math.log(2)
    assert cls.item() == pytest.approx((0.25 * per + 11 * 0.75 * per) / 2)  # 1 positive element, 11 negatives
    huber = 0.5 * 0.05**2 + 0.1 * (0.2 - 0.05)
    assert box.item() == pytest.approx(huber / (4 * 2))
    assert total.item() == pytest.approx(cls.item() + 50 * box.item())


def test_nms_and_postprocess():
    boxes = torch.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0], [0.0, 0.0, 10.0, 10.0], [50, 50, 60, 60.0]])
    scores = torch.tensor([0.9, 0.8, 0.7, 0.6])
    keep = batched_nms(boxes, scores, torch.tensor([1, 1, 2, 1]), 0.5)
    assert keep.tolist() == [0, 2, 3]  # box 1 overlaps box 0 of its class; box 2 is another class
    anchors = torch.tensor([[0.0, 0.0, 10.0, 10.0], [50.0, 50.0, 60.0, 60.0]])
    logits = torch.full((1, 2, 3), -10.0)
    logits[0, 1, 2] = 5.0
    (det,) = postprocess(logits, torch.zeros(1, 2, 4), anchors)
    assert det["labels"].tolist() == [2] and torch.allclose(det["boxes"], anchors[1:])
