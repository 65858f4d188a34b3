"""SSDLite on MobileNetV3 (Section 6.3 and Table 6 of "Searching for MobileNetV3", arXiv 1905.02244v5).

SSDLite is SSD (Liu et al., arXiv 1512.02325) with every 3x3 convolution of the extra layers and of the prediction
layers made depthwise-separable (MobileNetV2, arXiv 1801.04381, Section 6.2). Section 6.3 attaches "the first layer
of SSDLite to the last feature extractor layer that has an output stride of 16" (C4: the expansion output of the
13-th bneck of Large, the 9-th of Small) and the second to "the layer immediately before pooling" (C5); the "†"
models halve "the channel counts of all feature layers between C4 and C5" (:func:`variants.reduce_for_detection`).

Everything the paper leaves open follows the authors' release (tensorflow/models, research/object_detection:
``models/ssd_mobilenet_v3_feature_extractor.py``, ``models/feature_map_generators.py``,
``predictors/heads/{box,class}_head.py``, ``anchor_generators/multiple_grid_anchor_generator.py`` and
``samples/configs/ssdlite_mobilenet_v3_{large,small}_320x320_coco.config``):

- input resized to 320 x 320 (aspect ratio not kept), pixels mapped to [-1, 1];
- feature maps C4 (stride 16, 20x20 at 320 px), C5 (stride 32, 10x10), then four extra layers of depth
  512, 256, 256, 128 (5x5, 3x3, 2x2, 1x1), each a 1x1 conv to half the depth, a 3x3 stride-2 depthwise conv and a
  1x1 conv, every conv with BatchNorm (decay 0.97, epsilon 1e-3) and ReLU6 (``insert_1x1_conv``,
  ``use_depthwise``, ``min_depth`` 16);
- box predictor per feature map (``num_layers_before_predictor: 0``, ``use_depthwise``): for the class logits and for
  the box codes separately, a 3x3 depthwise conv + BN + ReLU6 then a 1x1 conv with bias; 91 class slots per anchor
  (90 COCO classes + a background slot whose target is always 0, ``encode_background_as_zeros``), class bias
  initialised to -4.6; so slot ``k`` is COCO category id ``k``;
- anchors (``ssd_anchor_generator``): 6 layers, scales linearly from 0.2 to 0.95 of the image, aspect ratios
  1, 2, 1/2, 3, 1/3 plus one of scale sqrt(s_k s_{k+1}) and ratio 1 (6 per location); the lowest layer has only
  (0.1, 1), (0.2, 2), (0.2, 1/2) (``reduce_boxes_in_lowest_layer``): 2034 anchors at 320 px;
- box coder: Faster R-CNN coder with scales 10, 10, 5, 5; matcher: argmax IoU, positive at >= 0.5, negative
  below, and every ground-truth box forced onto its best anchor (``force_match_for_each_row``);
- loss: sigmoid focal loss (alpha 0.75 on positives, gamma 2) over all anchors and slots plus smooth-L1 (delta 1)
  of the positive anchors' codes divided by the code size 4, both divided by the number of matched anchors
  (``normalize_loss_by_num_matches``); no hard-example mining;
- post-processing: sigmoid scores, score threshold 1e-8, per-class NMS at IoU 0.6, 100 detections per image.

Initialisation: convs of the backbone and extra layers truncated N(0, 0.03) (the config overrides the backbone's
hyper-parameters), prediction convs N(0, 0.03), biases 0 (class logits -4.6). Boxes are ``[x1, y1, x2, y2]``
pixels; the release uses normalised ``[y1, x1, y2, x2]``, which changes no IoU, code or match.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from nets.retinanet import box_iou, decode_boxes, encode_boxes, focal_loss, huber_loss
from reproductions.mobilenetv3.model import Bneck, _blocks
from reproductions.mobilenetv3.variants import (
    ARCHITECTURES,
    C4_BLOCK,
    COCO_CLASS_SLOTS,
    DET_VARIANTS,
    DETECTION_REDUCED_BLOCKS,
    reduce_for_detection,
)

EXTRA_DEPTHS = (512, 256, 256, 128)  # 'layer_depth' of the four layers after C4 and C5
MIN_DEPTH = 16
NUM_LAYERS = 6
MIN_SCALE, MAX_SCALE = 0.2, 0.95
ASPECT_RATIOS = (1.0, 2.0, 0.5, 3.0, 0.3333)
LOWEST_LAYER_SCALE = 0.1
BOX_CODE_SCALES = (10.0, 10.0, 5.0, 5.0)  # x, y, w, h (the config's x_scale, y_scale, width_scale, height_scale)
MATCH_THRESHOLD = 0.5
FOCAL_ALPHA, FOCAL_GAMMA = 0.75, 2.0
SMOOTH_L1_DELTA = 1.0
SCORE_THRESHOLD, NMS_IOU, MAX_DETECTIONS = 1e-8, 0.6, 100
PRE_NMS = 5000  # candidates kept before NMS (the release keeps all; see postprocess)
CLASS_BIAS = -4.6  # class_prediction_bias_init, ~ log(0.01 / 0.99)
INIT_STD = 0.03
BN_MOMENTUM_SSD = 0.03  # TF decay 0.97
BN_EPS = 1e-3


def conv_bn_relu6(in_channels: int, out_channels: int, kernel: int = 1, stride: int = 1, groups: int = 1) -> nn.Module:
    """conv (no bias) -> BatchNorm -> ReLU6, the ``conv_hyperparams`` of the extra layers and predictors."""
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel, stride, kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(out_channels, eps=BN_EPS, momentum=BN_MOMENTUM_SSD),
        nn.ReLU6(inplace=True),
    )


def extra_layer(in_channels: int, depth: int) -> nn.Module:
    """One SSDLite feature map after C5: 1x1 to depth/2, 3x3 stride-2 depthwise, 1x1 to depth (each BN + ReLU6)."""
    half = max(depth // 2, MIN_DEPTH)
    return nn.Sequential(
        conv_bn_relu6(in_channels, half),
        conv_bn_relu6(half, half, 3, stride=2, groups=half),
        conv_bn_relu6(half, max(depth, MIN_DEPTH)),
    )


def predictor(in_channels: int, outputs: int) -> nn.Module:
    """SSDLite prediction layer: 3x3 depthwise + BN + ReLU6, then a 1x1 conv with bias to ``outputs`` channels."""
    depthwise = conv_bn_relu6(in_channels, in_channels, 3, groups=in_channels)
    return nn.Sequential(depthwise, nn.Conv2d(in_channels, outputs, 1))


def anchor_specs(num_layers: int = NUM_LAYERS) -> list[list[tuple[float, float]]]:
    """(scale, aspect ratio) of the anchors of each layer, in the release's order (``create_ssd_anchors``)."""
    scales = [MIN_SCALE + (MAX_SCALE - MIN_SCALE) * i / (num_layers - 1) for i in range(num_layers)] + [1.0]
    specs = []
    for layer in range(num_layers):
        scale, following = scales[layer], scales[layer + 1]
        if layer == 0:  # reduce_boxes_in_lowest_layer
            specs.append([(LOWEST_LAYER_SCALE, 1.0), (scale, 2.0), (scale, 0.5)])
        else:
            specs.append([(scale, ratio) for ratio in ASPECT_RATIOS] + [(math.sqrt(scale * following), 1.0)])
    return specs


def feature_map_sizes(image_size: tuple[int, int], num_layers: int = NUM_LAYERS) -> list[tuple[int, int]]:
    """(H, W) of C4 (stride 16), C5 (stride 32) and the extra layers: every stride-2 layer gives ceil(size / 2)."""
    height, width = image_size
    sizes = []
    for halvings in range(1, 4 + num_layers):
        height, width = math.ceil(height / 2), math.ceil(width / 2)
        if halvings >= 4:  # stride 2^4 = 16 on
            sizes.append((height, width))
    return sizes


def generate_anchors(image_size: tuple[int, int], num_layers: int = NUM_LAYERS) -> torch.Tensor:
    """All anchors ``(A, 4)`` as pixel ``[x1, y1, x2, y2]``, layer by layer, location-major, then spec order.

    A cell of an ``fh x fw`` map is centred at ``((j + 0.5) W / fw, (i + 0.5) H / fh)``; an anchor of scale ``s`` and
    ratio ``r`` is ``s sqrt(r) m`` wide and ``s m / sqrt(r)`` high with ``m = min(H, W)`` (the release's normalised
    anchors with its ``base_anchor_size`` correction for non-square images).
    """
    height, width = image_size
    side = min(height, width)
    boxes = []
    for (fh, fw), specs in zip(feature_map_sizes(image_size, num_layers), anchor_specs(num_layers), strict=True):
        y, x = torch.meshgrid(
            (torch.arange(fh, dtype=torch.float64) + 0.5) * height / fh,
            (torch.arange(fw, dtype=torch.float64) + 0.5) * width / fw,
            indexing="ij",
        )
        centres = torch.stack([x.reshape(-1), y.reshape(-1)], dim=1)  # (fh * fw, 2)
        half = torch.tensor([(s * r**0.5 * side / 2, s * side / r**0.5 / 2) for s, r in specs], dtype=torch.float64)
        level = torch.cat([centres[:, None] - half[None], centres[:, None] + half[None]], dim=-1)  # (HW, A, 4)
        boxes.append(level.reshape(-1, 4))
    return torch.cat(boxes).float()


def encode(boxes: torch.Tensor, anchors: torch.Tensor) -> torch.Tensor:
    """Faster R-CNN box codes with the SSD scale factors: ``(10 tx, 10 ty, 5 tw, 5 th)``."""
    return encode_boxes(boxes, anchors) * boxes.new_tensor(BOX_CODE_SCALES)


def decode(codes: torch.Tensor, anchors: torch.Tensor) -> torch.Tensor:
    return decode_boxes(codes / codes.new_tensor(BOX_CODE_SCALES), anchors)


def match_anchors(
    anchors: torch.Tensor, boxes: torch.Tensor, labels: torch.Tensor, iscrowd: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Class target per anchor (0 background, else the category id) and encoded box targets ``(A, 4)``.

    ``argmax_matcher``: an anchor takes the ground truth it overlaps most if that IoU is >= 0.5, else it is
    background; then each ground-truth box claims its own best anchor whatever the IoU (``force_match_for_each_row``;
    an anchor that is the best of several boxes goes to the first). Crowd regions are skipped, as in the NAS-FPN
    system.
    """
    if iscrowd is not None:
        boxes, labels = boxes[iscrowd == 0], labels[iscrowd == 0]
    classes = torch.zeros(anchors.shape[0], dtype=torch.long, device=anchors.device)
    box_targets = torch.zeros_like(anchors)
    if boxes.numel() == 0:
        return classes, box_targets
    iou = box_iou(anchors, boxes)  # (A, M)
    best_iou, matched = iou.max(dim=1)
    positive = best_iou >= MATCH_THRESHOLD
    forced = iou.argmax(dim=0)  # (M,) best anchor of each box
    for gt in range(boxes.shape[0] - 1, -1, -1):  # reversed: the first box wins an anchor several boxes want
        matched[forced[gt]] = gt
    positive[forced] = True
    classes[positive] = labels[matched[positive]]
    box_targets[positive] = encode(boxes[matched[positive]], anchors[positive])
    return classes, box_targets


def ssd_loss(
    class_logits: torch.Tensor, box_outputs: torch.Tensor, class_targets: torch.Tensor, box_targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Total, class and box loss of a batch: ``(N, A, slots)`` logits, ``(N, A, 4)`` codes, ``(N, A)`` targets.

    Focal loss summed over every anchor and slot (the background slot's target is always 0), smooth-L1 of the
    positive anchors summed over the 4 code entries and divided by 4; both divided by max(1, matched anchors).
    """
    positive = class_targets > 0
    normalizer = positive.sum().to(class_logits.dtype).clamp(min=1.0)
    one_hot = F.one_hot(class_targets, class_logits.shape[-1]).to(class_logits.dtype)
    one_hot[..., 0] = 0.0  # background encoded as all zeros
    class_loss = focal_loss(class_logits, one_hot, FOCAL_ALPHA, FOCAL_GAMMA) / normalizer
    box_loss = huber_loss(box_outputs[positive], box_targets[positive], SMOOTH_L1_DELTA) / 4.0 / normalizer
    return class_loss + box_loss, class_loss, box_loss


def nms_top_k(boxes: torch.Tensor, scores: torch.Tensor, iou_threshold: float, limit: int) -> torch.Tensor:
    """Greedy NMS, highest score first, stopped once ``limit`` boxes are kept: the kept boxes are exactly the first
    ``limit`` that full greedy NMS keeps (a box's fate depends only on the boxes scoring above it)."""
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() and len(keep) < limit:
        best, order = order[0], order[1:]
        keep.append(best)
        order = order[box_iou(boxes[best][None], boxes[order])[0] <= iou_threshold]
    return torch.stack(keep) if keep else torch.zeros(0, dtype=torch.long, device=boxes.device)


def postprocess(
    class_logits: torch.Tensor, box_outputs: torch.Tensor, anchors: torch.Tensor
) -> list[dict[str, torch.Tensor]]:
    """Detections per image: ``boxes`` (K, 4) pixels, ``scores`` (K,), ``labels`` (K,) COCO category ids, K <= 100.

    Sigmoid scores of the class slots but the background one, per-class greedy NMS at IoU 0.6 (boxes of different
    classes are moved apart so that they never overlap), the 100 best survivors. The release runs NMS on every box
    scoring above 1e-8; here the 5000 best (anchor, class) pairs enter it, which changes the result only when fewer
    than 100 of them survive.
    """
    results = []
    slots = class_logits.shape[-1]
    for logits, codes in zip(class_logits, box_outputs, strict=True):
        scores = torch.sigmoid(logits[:, 1:]).flatten()  # (A * (slots - 1),), background slot dropped
        candidates = (scores > SCORE_THRESHOLD).nonzero().squeeze(1)
        candidates = candidates[scores[candidates].argsort(descending=True)[:PRE_NMS]]
        anchor_index, labels = candidates // (slots - 1), candidates % (slots - 1) + 1  # slot k = category id k
        boxes = decode(codes[anchor_index], anchors[anchor_index])
        offsets = labels.to(boxes.dtype)[:, None] * (boxes.abs().max() + 1) if boxes.numel() else 0.0
        keep = nms_top_k(boxes + offsets, scores[candidates], NMS_IOU, MAX_DETECTIONS)
        results.append({"boxes": boxes[keep], "scores": scores[candidates][keep], "labels": labels[keep]})
    return results


def forward_to_expansion(block: Bneck, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A bneck's expansion output (the release's ``expansion_output`` end point) and the block's output."""
    expanded = block.expand(x)  # (N, exp, H, W)
    y = block.project(block.se(block.depthwise(expanded)))
    return expanded, (y + x if block.has_skip else y)


class SSDLite(nn.Module):
    """MobileNetV3 feature extractor (to C5) -> four extra layers -> class and box predictors on six feature maps.

    ``forward`` returns ``(N, A, slots + 4)``: class logits then box codes of every anchor, in the order of
    :func:`generate_anchors`.
    """

    def __init__(self, arch: str = "large", reduced: bool = False, num_classes: int = COCO_CLASS_SLOTS) -> None:
        super().__init__()
        base = ARCHITECTURES[arch]
        base = reduce_for_detection(base, DETECTION_REDUCED_BLOCKS) if reduced else base
        _, layers, c5 = _blocks(base, 1.0)
        self.features = nn.ModuleList(layers)
        self.c4_index = C4_BLOCK[arch] + 1  # features[0] is the stem
        c4 = self.features[self.c4_index].depthwise[0].in_channels
        depths = [c4, c5]
        self.extras = nn.ModuleList()
        for depth in EXTRA_DEPTHS:
            self.extras.append(extra_layer(depths[-1], depth))
            depths.append(max(depth, MIN_DEPTH))
        anchors = [len(specs) for specs in anchor_specs()]
        self.num_classes = num_classes
        self.class_heads = nn.ModuleList(predictor(c, a * num_classes) for c, a in zip(depths, anchors, strict=True))
        self.box_heads = nn.ModuleList(predictor(c, a * 4) for c, a in zip(depths, anchors, strict=True))
        self._init_weights()

    def _init_weights(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.trunc_normal_(m.weight, std=INIT_STD, a=-2 * INIT_STD, b=2 * INIT_STD)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                m.momentum, m.eps = BN_MOMENTUM_SSD, BN_EPS
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
        for head in list(self.class_heads) + list(self.box_heads):
            for m in head.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.normal_(m.weight, std=INIT_STD)
        for head in self.class_heads:
            nn.init.constant_(head[-1].bias, CLASS_BIAS)

    def feature_maps(self, images: torch.Tensor) -> list[torch.Tensor]:
        # Shapes for Large at 320 x 320.
        x = images
        for layer in self.features[: self.c4_index]:
            x = layer(x)  # -> (N, 112, 20, 20)
        c4, x = forward_to_expansion(self.features[self.c4_index], x)  # C4 (N, 672, 20, 20); x (N, 160, 10, 10)
        for layer in self.features[self.c4_index + 1 :]:
            x = layer(x)  # -> C5 (N, 960, 10, 10)
        maps = [c4, x]
        for extra in self.extras:
            maps.append(extra(maps[-1]))  # (N, 512, 5, 5), (N, 256, 3, 3), (N, 256, 2, 2), (N, 128, 1, 1)
        return maps

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        n = images.shape[0]
        outputs = []
        for fmap, class_head, box_head in zip(self.feature_maps(images), self.class_heads, self.box_heads, strict=True):
            classes = class_head(fmap).permute(0, 2, 3, 1).reshape(n, -1, self.num_classes)  # (N, HWA, slots)
            boxes = box_head(fmap).permute(0, 2, 3, 1).reshape(n, -1, 4)  # (N, HWA, 4)
            outputs.append(torch.cat([classes, boxes], dim=-1))
        return torch.cat(outputs, dim=1)  # (N, A, slots + 4)


def ssdlite(variant: str = "large-1.0-ssdlite", num_classes: int = COCO_CLASS_SLOTS) -> SSDLite:
    """Build ``mobilenetv3-<variant>`` of :data:`variants.DET_VARIANTS`."""
    if variant not in DET_VARIANTS:
        raise ValueError(f"unknown MobileNetV3 SSDLite variant {variant!r}; known: {', '.join(DET_VARIANTS)}")
    row = DET_VARIANTS[variant]
    return SSDLite(row.arch, row.reduced, num_classes)


def anchors_per_layer(image_size: tuple[int, int]) -> list[int]:
    """Number of anchors of each of the six feature maps at ``image_size``."""
    sizes = feature_map_sizes(image_size)
    return [h * w * len(specs) for (h, w), specs in zip(sizes, anchor_specs(), strict=True)]


def layer_channels(model: SSDLite) -> Sequence[int]:
    """Channels of the six feature maps the predictors read."""
    return [head[0][0].in_channels for head in model.box_heads]
