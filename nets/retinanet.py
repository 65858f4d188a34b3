"""RetinaNet (Lin et al., "Focal Loss for Dense Object Detection", arXiv 1708.02002): the detector of NAS-FPN and of
Attention Augmentation's COCO table; SSDLite reuses its box IoU, box coder and losses.

Everything follows the authors' TPU detection code (tensorflow/tpu models/official/detection), which the NAS-FPN and
Attention Augmentation experiments ran on (its settings are the constants below, from ``configs/detection_config.py``
and ``configs/retinanet_config.py``):

- anchors (``dataloader/anchor.py``): on level ``l`` (stride ``2^l``) centred at ``(stride/2 + i*stride)``, sizes
  ``anchor_size * stride * 2^(s / num_scales)`` for ``s = 0, 1, 2`` and aspect ratios (w/h) 1, 2, 0.5 with
  ``w = size * sqrt(ratio)``, ``h = size / sqrt(ratio)``; ``anchor_size = 4``: 9 anchors per location;
- matching: argmax IoU, positive at IoU >= 0.5, negative below 0.5 (no ignore band), crowd boxes skipped;
  box targets ``(ty, tx, th, tw)`` of the Faster R-CNN box coder without scale factors;
- heads (``modeling/architecture/heads.py``, ``RetinanetHead``): a class net and a box net of 4 3x3 convolutions
  (256 filters, N(0, 0.01) kernels, zero bias) whose weights are shared across levels while each level has its
  own BatchNorm (+ ReLU), then a 3x3 prediction conv (class bias ``-log((1 - 0.01) / 0.01)``, kernels N(0, 1e-5));
  ``num_classes * 9`` class logits (91 on COCO: category ids 1..90, index 0 unused) and ``4 * 9`` box outputs;
- loss (``modeling/losses.py``): sigmoid focal loss with alpha 0.25 and gamma 1.5 (the code's default; the
  RetinaNet paper uses gamma 2) summed and divided by the number of positive anchors, plus 50 x the Huber loss
  (delta 0.1) of the box outputs of positive anchors divided by 4 x the number of positives;
- post-processing (``configs/detection_config.py``): sigmoid scores, at most 5000 boxes above 0.05 before NMS,
  per-class NMS at IoU 0.5, at most 100 detections per image.

:func:`fpn` is the official FPN (``modeling/architecture/fpn.py``): 1x1 laterals on C3..C5, nearest-upsampling
top-down sums, 3x3 post-hoc convs, P6 / P7 by 3x3 stride-2 convs (ReLU before P7), BatchNorm on every output.
Boxes are ``[x1, y1, x2, y2]`` pixels here (the TF code uses ``[y1, x1, y2, x2]``; the arithmetic is the same).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

MIN_LEVEL, MAX_LEVEL = 3, 7  # pyramid levels P3..P7 (stride 8 .. 128)
NUM_SCALES = 3
ASPECT_RATIOS = (1.0, 2.0, 0.5)
ANCHOR_SIZE = 4.0
FOCAL_ALPHA = 0.25
FOCAL_GAMMA = 1.5
HUBER_DELTA = 0.1
BOX_LOSS_WEIGHT = 50.0
MATCH_THRESHOLD = 0.5
PRIOR_PROBABILITY = 0.01


def anchors_per_location(num_scales: int = NUM_SCALES, aspect_ratios: Sequence[float] = ASPECT_RATIOS) -> int:
    return num_scales * len(aspect_ratios)


def generate_anchors(
    image_size: tuple[int, int],
    min_level: int = MIN_LEVEL,
    max_level: int = MAX_LEVEL,
    num_scales: int = NUM_SCALES,
    aspect_ratios: Sequence[float] = ASPECT_RATIOS,
    anchor_size: float = ANCHOR_SIZE,
) -> torch.Tensor:
    """All anchors ``(A_total, 4)`` as ``[x1, y1, x2, y2]``, level by level, location-major, then scale, ratio."""
    height, width = image_size
    boxes = []
    for level in range(min_level, max_level + 1):
        stride = 2**level
        # One anchor centre per feature-map cell; 'SAME' convolutions give ceil(size / stride) cells.
        y, x = torch.meshgrid(
            torch.arange(math.ceil(height / stride), dtype=torch.float64) * stride + stride / 2,
            torch.arange(math.ceil(width / stride), dtype=torch.float64) * stride + stride / 2,
            indexing="ij",
        )
        centres = torch.stack([x.reshape(-1), y.reshape(-1)], dim=1)  # (HW, 2)
        half_sizes = []
        for scale in range(num_scales):
            base = anchor_size * stride * 2 ** (scale / num_scales)
            for ratio in aspect_ratios:
                half_sizes.append((base * ratio**0.5 / 2, base * ratio**-0.5 / 2))
        half = torch.tensor(half_sizes, dtype=torch.float64)  # (A, 2): half width, half height
        level_boxes = torch.cat([centres[:, None] - half[None], centres[:, None] + half[None]], dim=-1)
        boxes.append(level_boxes.reshape(-1, 4))
    return torch.cat(boxes).float()


def box_iou(boxes1: torch.Tensor, boxes2: torch.Tensor) -> torch.Tensor:
    """IoU matrix ``(len(boxes1), len(boxes2))`` of ``[x1, y1, x2, y2]`` boxes."""
    area1 = (boxes1[:, 2] - boxes1[:, 0]).clamp(min=0) * (boxes1[:, 3] - boxes1[:, 1]).clamp(min=0)
    area2 = (boxes2[:, 2] - boxes2[:, 0]).clamp(min=0) * (boxes2[:, 3] - boxes2[:, 1]).clamp(min=0)
    top_left = torch.maximum(boxes1[:, None, :2], boxes2[None, :, :2])
    bottom_right = torch.minimum(boxes1[:, None, 2:], boxes2[None, :, 2:])
    inter = (bottom_right - top_left).clamp(min=0).prod(dim=-1)
    return inter / (area1[:, None] + area2[None] - inter).clamp(min=1e-9)


def encode_boxes(boxes: torch.Tensor, anchors: torch.Tensor) -> torch.Tensor:
    """Faster R-CNN box coder without scale factors: ``(tx, ty, tw, th)`` of ``boxes`` relative to ``anchors``."""
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = anchors[:, 0] + aw / 2, anchors[:, 1] + ah / 2
    bw, bh = (boxes[:, 2] - boxes[:, 0]).clamp(min=1e-8), (boxes[:, 3] - boxes[:, 1]).clamp(min=1e-8)
    bx, by = boxes[:, 0] + bw / 2, boxes[:, 1] + bh / 2
    return torch.stack([(bx - ax) / aw, (by - ay) / ah, torch.log(bw / aw), torch.log(bh / ah)], dim=1)


def decode_boxes(codes: torch.Tensor, anchors: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`encode_boxes` (sizes clamped at ``exp(log(1000/16))`` as the TF code does)."""
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = anchors[:, 0] + aw / 2, anchors[:, 1] + ah / 2
    clip = math.log(1000.0 / 16)
    x, y = codes[:, 0] * aw + ax, codes[:, 1] * ah + ay
    w, h = torch.exp(codes[:, 2].clamp(max=clip)) * aw, torch.exp(codes[:, 3].clamp(max=clip)) * ah
    return torch.stack([x - w / 2, y - h / 2, x + w / 2, y + h / 2], dim=1)


def match_anchors(
    anchors: torch.Tensor, boxes: torch.Tensor, labels: torch.Tensor, iscrowd: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Class target per anchor (-1 negative, else the category id) and encoded box targets ``(A, 4)``.

    Argmax matching at IoU >= 0.5, everything else negative; crowd annotations are skipped (official
    ``skip_crowd_during_training``).
    """
    if iscrowd is not None:
        keep = iscrowd == 0
        boxes, labels = boxes[keep], labels[keep]
    classes = torch.full((anchors.shape[0],), -1, dtype=torch.long, device=anchors.device)
    box_targets = torch.zeros_like(anchors)
    if boxes.numel() == 0:
        return classes, box_targets
    best_iou, best = box_iou(anchors, boxes).max(dim=1)
    positive = best_iou >= MATCH_THRESHOLD
    classes[positive] = labels[best[positive]]
    box_targets[positive] = encode_boxes(boxes[best[positive]], anchors[positive])
    return classes, box_targets


def focal_loss(
    logits: torch.Tensor, targets: torch.Tensor, alpha: float = FOCAL_ALPHA, gamma: float = FOCAL_GAMMA
) -> torch.Tensor:
    """Sigmoid focal loss summed over elements: ``-alpha_t (1 - p_t)^gamma log(p_t)``.

    ``targets`` are 0/1 with the shape of ``logits``; ``alpha`` weighs positives, ``1 - alpha`` negatives.
    """
    p = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    p_t = targets * p + (1 - targets) * (1 - p)
    alpha_t = targets * alpha + (1 - targets) * (1 - alpha)
    return (alpha_t * (1 - p_t) ** gamma * ce).sum()


def huber_loss(outputs: torch.Tensor, targets: torch.Tensor, delta: float = HUBER_DELTA) -> torch.Tensor:
    """Summed Huber loss (``tf.losses.huber_loss``): ``0.5 e^2`` below ``delta``, ``delta (|e| - delta/2)`` above."""
    return F.huber_loss(outputs, targets, reduction="sum", delta=delta)


def retinanet_loss(
    class_logits: torch.Tensor,
    box_outputs: torch.Tensor,
    class_targets: torch.Tensor,
    box_targets: torch.Tensor,
    num_classes: int,
    alpha: float = FOCAL_ALPHA,
    gamma: float = FOCAL_GAMMA,
    box_loss_weight: float = BOX_LOSS_WEIGHT,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Total, class and box loss of a batch: ``(N, A, C)`` logits, ``(N, A, 4)`` boxes, ``(N, A)`` class targets.

    Both losses are normalised by the number of positive anchors in the batch (+1, as the TF code's
    ``num_positives + 1.0``); the box loss also by 4 coordinates.
    """
    positive = class_targets >= 0
    normalizer = positive.sum().to(class_logits.dtype) + 1.0
    one_hot = F.one_hot(class_targets.clamp(min=0), num_classes).to(class_logits.dtype) * positive[..., None]
    class_loss = focal_loss(class_logits, one_hot, alpha, gamma) / normalizer
    box_loss = huber_loss(box_outputs[positive], box_targets[positive]) / (4.0 * normalizer)
    return class_loss + box_loss_weight * box_loss, class_loss, box_loss


def nms(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """Indices kept by greedy non-maximum suppression, highest score first."""
    order = scores.argsort(descending=True)
    keep = []
    while order.numel():
        best = order[0]
        keep.append(best)
        if order.numel() == 1:
            break
        ious = box_iou(boxes[best][None], boxes[order[1:]])[0]
        order = order[1:][ious <= iou_threshold]
    return torch.stack(keep) if keep else torch.zeros(0, dtype=torch.long, device=boxes.device)


def batched_nms(boxes: torch.Tensor, scores: torch.Tensor, classes: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    """Per-class NMS: boxes of different classes are moved apart so that they never overlap."""
    if boxes.numel() == 0:
        return torch.zeros(0, dtype=torch.long, device=boxes.device)
    offsets = classes.to(boxes.dtype)[:, None] * (boxes.max() + 1)
    return nms(boxes + offsets, scores, iou_threshold)


def postprocess(
    class_logits: torch.Tensor,
    box_outputs: torch.Tensor,
    anchors: torch.Tensor,
    score_threshold: float = 0.05,
    pre_nms: int = 5000,
    iou_threshold: float = 0.5,
    max_detections: int = 100,
) -> list[dict[str, torch.Tensor]]:
    """Detections per image: ``boxes`` (K, 4) ``[x1, y1, x2, y2]``, ``scores`` (K,), ``labels`` (K,) category ids."""
    results = []
    num_classes = class_logits.shape[-1]
    for logits, codes in zip(class_logits, box_outputs, strict=True):
        scores = torch.sigmoid(logits).flatten()  # (A * C,)
        candidates = (scores > score_threshold).nonzero().squeeze(1)
        candidates = candidates[scores[candidates].argsort(descending=True)[:pre_nms]]
        anchor_index, labels = candidates // num_classes, candidates % num_classes
        boxes = decode_boxes(codes[anchor_index], anchors[anchor_index])
        keep = batched_nms(boxes, scores[candidates], labels, iou_threshold)[:max_detections]
        results.append({"boxes": boxes[keep], "scores": scores[candidates][keep], "labels": labels[keep]})
    return results


def conv3x3(in_channels: int, out_channels: int, separable: bool = False, stride: int = 1) -> nn.Module:
    """A 3x3 convolution with bias (``tf.layers.conv2d``), or a depthwise + pointwise one (``separable_conv2d``)."""
    if not separable:
        return nn.Conv2d(in_channels, out_channels, 3, stride, padding=1)
    return nn.Sequential(
        nn.Conv2d(in_channels, in_channels, 3, stride, padding=1, groups=in_channels, bias=False),
        nn.Conv2d(in_channels, out_channels, 1),
    )


class FPN(nn.Module):
    """The official RetinaNet FPN on C3..C5: P3..P7 with ``dims`` channels."""

    def __init__(self, in_channels: Sequence[int], dims: int = 256, separable: bool = False) -> None:
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(c, dims, 1) for c in in_channels)
        self.post_hoc = nn.ModuleList(conv3x3(dims, dims, separable) for _ in in_channels)
        self.coarser = nn.ModuleList(conv3x3(dims, dims, separable, stride=2) for _ in range(2))  # P6, P7
        self.norms = nn.ModuleList(nn.BatchNorm2d(dims) for _ in range(MAX_LEVEL - MIN_LEVEL + 1))

    def forward(self, features: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        laterals = [conv(c) for conv, c in zip(self.lateral, features, strict=True)]  # C3..C5 -> dims channels
        for index in range(len(laterals) - 2, -1, -1):  # top-down: P_l = lateral_l + up(P_{l+1})
            laterals[index] = laterals[index] + F.interpolate(laterals[index + 1], scale_factor=2.0, mode="nearest")
        outputs = [conv(p) for conv, p in zip(self.post_hoc, laterals, strict=True)]
        outputs.append(self.coarser[0](outputs[-1]))  # P6 from P5
        outputs.append(self.coarser[1](F.relu(outputs[-1])))  # P7 from relu(P6)
        return [norm(p) for norm, p in zip(self.norms, outputs, strict=True)]


class Subnet(nn.Module):
    """A class or box net: ``convs`` 3x3 convs shared over levels, a BatchNorm + ReLU per level, then prediction."""

    def __init__(
        self, dims: int, outputs: int, convs: int, levels: int, separable: bool = False, bias: float = 0.0
    ) -> None:
        super().__init__()
        self.convs = nn.ModuleList(conv3x3(dims, dims, separable) for _ in range(convs))
        self.norms = nn.ModuleList(
            nn.ModuleList(nn.BatchNorm2d(dims) for _ in range(levels)) for _ in range(convs)
        )  # norms[i][level]
        self.predict = conv3x3(dims, outputs, separable)
        for conv in self.convs:
            for m in conv.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.normal_(m.weight, std=0.01)
                    if m.bias is not None:
                        nn.init.zeros_(m.bias)
        for m in self.predict.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.normal_(m.weight, std=1e-5)
                if m.bias is not None:
                    nn.init.constant_(m.bias, bias)

    def forward(self, x: torch.Tensor, level: int) -> torch.Tensor:
        for conv, norms in zip(self.convs, self.norms, strict=True):
            x = F.relu(norms[level](conv(x)))
        return self.predict(x)


class RetinaNet(nn.Module):
    """Backbone -> pyramid network (FPN or NAS-FPN) -> class and box subnets on P3..P7.

    ``forward`` returns the raw predictions of every anchor, ``(N, A_total, num_classes + 4)``: class logits
    then box codes, anchors ordered as :func:`generate_anchors` orders them.
    """

    def __init__(
        self,
        backbone: nn.Module,
        neck: nn.Module,
        dims: int,
        num_classes: int,
        head_convs: int = 4,
        head_dims: int | None = None,
        separable: bool = False,
    ) -> None:
        super().__init__()
        self.backbone, self.neck, self.num_classes = backbone, neck, num_classes
        head_dims = head_dims or dims
        self.head_input = nn.Conv2d(dims, head_dims, 1) if head_dims != dims else nn.Identity()
        levels, anchors = MAX_LEVEL - MIN_LEVEL + 1, anchors_per_location()
        prior = -math.log((1 - PRIOR_PROBABILITY) / PRIOR_PROBABILITY)
        self.class_net = Subnet(head_dims, num_classes * anchors, head_convs, levels, separable, bias=prior)
        self.box_net = Subnet(head_dims, 4 * anchors, head_convs, levels, separable)

    def pyramid(self, images: torch.Tensor) -> list[torch.Tensor]:
        features = self.backbone.features(images)[-3:]  # C3, C4, C5
        return self.neck(features)  # P3..P7

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        n = images.shape[0]
        outputs = []
        for level, p in enumerate(self.pyramid(images)):
            p = self.head_input(p)
            classes = self.class_net(p, level).permute(0, 2, 3, 1).reshape(n, -1, self.num_classes)  # (N, HWA, C)
            boxes = self.box_net(p, level).permute(0, 2, 3, 1).reshape(n, -1, 4)  # (N, HWA, 4)
            outputs.append(torch.cat([classes, boxes], dim=-1))
        return torch.cat(outputs, dim=1)  # (N, A_total, C + 4)
