"""Lightning systems for MobileNetV3 (arXiv 1905.02244v5): image classification with the paper's ImageNet recipe
(:class:`MobileNetV3System`), SSDLite COCO detection with the release's recipe (:class:`SSDLiteSystem`, see its
docstring and :mod:`reproductions.mobilenetv3.ssdlite`) and LR-ASPP Cityscapes segmentation with the DeepLab recipe
(:class:`LRASPPSystem`, see its docstring).

Section 6.1: synchronous training on a 4x4 TPU Pod with TensorFlow's RMSPropOptimizer, momentum 0.9, initial learning
rate 0.1 at batch 4096 (128 images per chip), "learning rate decay rate of 0.01 every 3 epochs", dropout 0.8, L2
weight decay 1e-5, Inception preprocessing, an exponential moving average of the weights with decay 0.9999, and
batch normalisation with average decay 0.99. How this reads in code:

- the decay "rate of 0.01 every 3 epochs" is a staircase factor 0.99 every 3 epochs (a factor of 0.01 would end
  training after 3 epochs); the paper gives no epoch count, no warm-up, no label smoothing and no RMSProp epsilon,
  and the authors' README says "TODO: Add V3 hyperparameters". Defaults here: no warm-up, no label smoothing, and
  the TF-1 RMSProp of the EfficientNet/MnasNet TPU code (decay 0.9, epsilon 1e-3 inside the square root, mean-square
  accumulator starting at 1): :class:`nets.optim.RMSpropTF`, in the loop EfficientNet and CondConv share
  (:class:`nets.systems.tpu_classifier.TPUClassifierSteps`);
- "dropout of 0.8" is TF's keep probability (slim ``training_scope(dropout_keep_prob=0.8)``): rate 0.2;
- the learning rate scales linearly with the global batch (0.1 x batch / 4096), as the efficientnet system does;
- L2 weight decay as the gradient term ``1e-5 * w`` on every parameter but batch-norm ones;
- the EMA covers weights and BN statistics with TF's ``num_updates`` ramp; evaluation uses it.

Batches are ``(images, labels)``: float ``(N, 3, H, W)`` images and long ``(N,)`` class indices.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn

from harness.errors import HarnessError
from harness.evaluators import floats, per_test_loader
from harness.registry import model_variant
from nets.layers import set_bn
from nets.systems.steps import global_batch, to_image_pixels
from nets.systems.tpu_classifier import TPUClassifierSteps, TPURecipe
from nets.weights import load_state
from reproductions.mobilenetv3.model import BN_MOMENTUM, DROPOUT, VARIANTS, lraspp, mobilenetv3
from reproductions.mobilenetv3.ssdlite import generate_anchors, match_anchors, postprocess, ssd_loss, ssdlite
from reproductions.mobilenetv3.variants import CITYSCAPES_CLASSES, DET_VARIANTS, SEG_VARIANTS
from tasks.coco.steps import CocoTestSteps
from tasks.imagenet.metric import accuracy_metrics
from tasks.imagenet.steps import AccuracySteps

MODEL_PREFIX = "mobilenetv3-"


def parse_variant(model: str) -> str:
    """``"mobilenetv3-small-0.75"`` -> ``"small-0.75"``; other ids (segmentation ones included) are an error."""
    return model_variant(model, VARIANTS, "MobileNetV3 classification", MODEL_PREFIX)


class MobileNetV3System(TPUClassifierSteps, AccuracySteps, pl.LightningModule):
    """MobileNetV3 classifiers trained and evaluated on ImageNet-format batches with the Section 6.1 recipe."""

    # Section 6.1: RMSProp 0.1 per 4096 images, no warm-up, x0.99 every 3 epochs, no label smoothing
    RECIPE = TPURecipe(lr=0.1, warmup_epochs=0.0, lr_decay_epochs=3.0, lr_decay_factor=0.99, label_smoothing=0.0)

    def __init__(
        self,
        model: str = "mobilenetv3-large-1.0",
        num_classes: int = 1000,
        image_size: int = 224,
        dropout: float = DROPOUT,
        bn_momentum: float = BN_MOMENTUM,
        checkpoint: str | None = None,
        **recipe: Any,
    ) -> None:
        """``recipe``: fields of :class:`nets.systems.tpu_classifier.TPURecipe` (``lr``, ``lr_batch_size``, ...,
        ``ema_decay``) in place of Section 6.1's (:attr:`RECIPE`).

        ``image_size`` is the resolution the data must arrive at. ``bn_momentum`` is PyTorch's (0.01 = TF's 0.99).
        ``checkpoint`` loads weights for evaluation.
        """
        super().__init__()
        self.save_hyperparameters()
        self.init_recipe(recipe)
        self.model = mobilenetv3(parse_variant(model), num_classes, dropout=dropout)
        set_bn(self.model, bn_momentum)
        if checkpoint is not None:
            load_state(self.model, checkpoint)
        self.val_metrics = accuracy_metrics(num_classes, prefix="val/")
        self.image_size = image_size
        self.test_metrics = nn.ModuleList()  # one collection per test dataloader, made in on_test_start

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(images)  # (N, 3, H, W) -> (N, num_classes) logits


# ---------------------------------------------------------------------------------------------------------------------
# SSDLite detection (Section 6.3, Table 6) on COCO-format batches.
# ---------------------------------------------------------------------------------------------------------------------

# ssd_random_crop defaults of the release's preprocessor: one of 7 settings is drawn per image.
CROP_MIN_COVERED = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0)  # min_object_covered, also the box overlap_thresh
CROP_ASPECT_RANGE = (0.5, 2.0)
CROP_AREA_RANGE = (0.1, 1.0)
CROP_KEEP_PROBABILITY = 0.15  # random_coef: the image is left uncropped
CROP_ATTEMPTS = 100


def parse_detector(model: str) -> str:
    """``"mobilenetv3-small-1.0-ssdlite"`` -> ``"small-1.0-ssdlite"``; other ids are an error."""
    return model_variant(model, DET_VARIANTS, "MobileNetV3 SSDLite", MODEL_PREFIX)


def box_coverage(window: torch.Tensor, boxes: torch.Tensor) -> torch.Tensor:
    """Fraction of each ``[x1, y1, x2, y2]`` box inside ``window`` (the release's ``ioa(window, boxes)``)."""
    top_left = torch.maximum(boxes[:, :2], window[:2])
    bottom_right = torch.minimum(boxes[:, 2:], window[2:])
    inter = (bottom_right - top_left).clamp(min=0).prod(dim=1)
    return inter / (boxes[:, 2:] - boxes[:, :2]).clamp(min=1e-9).prod(dim=1)


def sample_crop(height: int, width: int, boxes: torch.Tensor, min_covered: float) -> torch.Tensor:
    """A crop window ``[x1, y1, x2, y2]`` as ``tf.image.sample_distorted_bounding_box`` draws it: area fraction in
    [0.1, 1], aspect ratio (w / h) in [0.5, 2], inside the image, covering at least ``min_covered`` of some box (of
    the whole image when there is none); the whole image after 100 failed attempts."""
    boxes = boxes if boxes.numel() else torch.tensor([[0.0, 0.0, width, height]])
    for _ in range(CROP_ATTEMPTS):
        area = random.uniform(*CROP_AREA_RANGE) * height * width
        ratio = random.uniform(*CROP_ASPECT_RANGE)
        h, w = round(math.sqrt(area / ratio)), round(math.sqrt(area * ratio))
        if not (0 < h <= height and 0 < w <= width):
            continue
        top, left = random.randint(0, height - h), random.randint(0, width - w)
        window = torch.tensor([left, top, left + w, top + h], dtype=torch.float32)
        if (box_coverage(window, boxes.float()) >= min_covered).any():
            return window
    return torch.tensor([0.0, 0.0, width, height])


def ssd_random_crop(image: torch.Tensor, target: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict]:
    """The release's ``ssd_random_crop``: with probability 0.85 crop a window drawn by :func:`sample_crop` for one of
    the 7 settings, keep the boxes with at least that setting's fraction inside, shift and clip them to the window.
    The window is drawn on the CPU (a few small tensors; no device synchronisation per attempt)."""
    if random.random() < CROP_KEEP_PROBABILITY:
        return image, target
    threshold = random.choice(CROP_MIN_COVERED)
    boxes = target["boxes"].detach().float().cpu()
    window = sample_crop(image.shape[-2], image.shape[-1], boxes, threshold)
    coverage = box_coverage(window, boxes)
    x1, y1, x2, y2 = (int(v) for v in window.tolist())
    shifted = boxes - window.new_tensor([x1, y1, x1, y1])
    shifted[:, 0::2] = shifted[:, 0::2].clamp(0, x2 - x1)
    shifted[:, 1::2] = shifted[:, 1::2].clamp(0, y2 - y1)
    area = (shifted[:, 2] - shifted[:, 0]) * (shifted[:, 3] - shifted[:, 1])
    keep = ((coverage > 0) & (coverage >= threshold) & (area > 0)).to(image.device)
    cropped = {key: value[keep] for key, value in target.items() if key in ("labels", "iscrowd")}
    return image[:, y1:y2, x1:x2], {**cropped, "boxes": shifted.to(image.device)[keep]}


def resize_to_square(
    image: torch.Tensor, boxes: torch.Tensor, size: int
) -> tuple[torch.Tensor, torch.Tensor, tuple[float, float]]:
    """``fixed_shape_resizer``: bilinear resize to ``size`` x ``size`` (aspect ratio not kept), pixels to [-1, 1].

    Returns the ``(3, size, size)`` input, the boxes in its pixels and the ``(x, y)`` scale factors."""
    _, height, width = image.shape
    resized = F.interpolate(image[None], size=(size, size), mode="bilinear", align_corners=False)[0]
    scale = (size / width, size / height)
    return resized * 2.0 - 1.0, boxes * boxes.new_tensor([scale[0], scale[1], scale[0], scale[1]]), scale


class SSDLiteSystem(CocoTestSteps, pl.LightningModule):
    """SSDLite + MobileNetV3 trained with the release's COCO recipe and scored by pycocotools.

    Recipe (``ssdlite_mobilenet_v3_{large,small}_320x320_coco.config``): 320 x 320 inputs, random horizontal flip
    (the data module's ``flip_prob``) and ``ssd_random_crop``; momentum SGD 0.9 at batch 512, learning rate 0.4 after
    a linear warm-up from 0.13333 over 2000 steps, cosine decay to 0 at the last step (400k steps for Large, 800k
    for Small), both scaled linearly with the global batch; L2 4e-5 on every conv kernel (not on biases or BN);
    BatchNorm decay 0.97, epsilon 1e-3; no moving average of the weights. Model, loss and post-processing:
    :mod:`reproductions.mobilenetv3.ssdlite`.

    Batches are ``(list of (3, H, W) images in [0, 1], list of targets)`` from
    :class:`tasks.coco.data.CocoDetectionDataModule`; test metrics are pycocotools' box AP (``ap``, ``ap50``, ...).
    """

    def __init__(
        self,
        model: str = "mobilenetv3-large-1.0-ssdlite-reduced",
        num_classes: int = 91,
        image_size: int = 320,
        lr: float = 0.4,
        lr_batch_size: int = 512,
        warmup_lr: float = 0.13333,
        warmup_steps: int = 2000,
        momentum: float = 0.9,
        weight_decay: float = 4e-5,
        random_crop: bool = True,
        bn_momentum: float = 0.03,
        checkpoint: str | None = None,
    ) -> None:
        """``num_classes``: class slots (91: COCO category ids 1..90 and the background slot 0); ``image_size``: the
        square input; ``bn_momentum`` is PyTorch's (0.03 = TF's decay 0.97); ``checkpoint``: weights to load."""
        super().__init__()
        self.save_hyperparameters()
        self.model = ssdlite(parse_detector(model), num_classes)
        set_bn(self.model, bn_momentum)
        if checkpoint is not None:
            load_state(self.model, checkpoint)
        self.register_buffer("anchors", generate_anchors((image_size, image_size)), persistent=False)
        self.test_metrics = nn.ModuleList()

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(images)  # (N, 3, S, S) -> (N, A, slots + 4)

    def _inputs(self, images: list[torch.Tensor], targets: list[dict], train: bool):
        batch, prepared, scales = [], [], []
        for image, target in zip(images, targets, strict=True):
            if train and self.hparams.random_crop:
                image, target = ssd_random_crop(image, target)
            x, boxes, scale = resize_to_square(image, target["boxes"].float(), self.hparams.image_size)
            batch.append(x)
            prepared.append({**target, "boxes": boxes})
            scales.append(scale)
        return torch.stack(batch), prepared, scales

    def training_step(self, batch: tuple[list[torch.Tensor], list[dict]], batch_idx: int) -> torch.Tensor:
        inputs, targets, _ = self._inputs(*batch, train=True)
        matched = [match_anchors(self.anchors, t["boxes"], t["labels"], t.get("iscrowd")) for t in targets]
        class_targets = torch.stack([cls for cls, _ in matched])
        box_targets = torch.stack([box for _, box in matched])
        outputs = self(inputs)
        slots = self.hparams.num_classes
        loss, class_loss, box_loss = ssd_loss(outputs[..., :slots], outputs[..., slots:], class_targets, box_targets)
        self.log_dict({"train/loss": loss, "train/class_loss": class_loss, "train/box_loss": box_loss}, prog_bar=True)
        self.log("train/lr", self.lr_schedulers().get_last_lr()[0])
        return loss

    def detect(self, images: list[torch.Tensor]) -> list[dict[str, torch.Tensor]]:
        """Detections in each image's own pixel coordinates."""
        dummy = [{"boxes": torch.zeros(0, 4, device=self.device)} for _ in images]
        inputs, _, scales = self._inputs(images, dummy, train=False)
        outputs = self(inputs)
        slots = self.hparams.num_classes
        detections = postprocess(outputs[..., :slots], outputs[..., slots:], self.anchors)
        return to_image_pixels(detections, images, scales)

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        _, batch = global_batch(self.trainer)
        total = max(1, int(self.trainer.estimated_stepping_batches))
        kernels = [p for p in self.model.parameters() if p.ndim > 1]  # conv kernels; biases and BN are 1-d
        others = [p for p in self.model.parameters() if p.ndim <= 1]
        groups = [{"params": kernels, "weight_decay": hp.weight_decay}, {"params": others, "weight_decay": 0.0}]
        peak = hp.lr * batch / hp.lr_batch_size
        optimizer = torch.optim.SGD(groups, lr=peak, momentum=hp.momentum)
        start = min(hp.warmup_lr / hp.lr, 1.0)
        warmup = min(hp.warmup_steps, total - 1)

        def factor(step: int) -> float:
            """TF ``cosine_decay_with_warmup``: linear from warmup_lr to lr, then half a cosine to 0 at ``total``."""
            if step < warmup:
                return start + (1.0 - start) * step / warmup
            return 0.5 * (1.0 + math.cos(math.pi * min(step - warmup, total - warmup) / max(1, total - warmup)))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


# ---------------------------------------------------------------------------------------------------------------------
# LR-ASPP semantic segmentation (Section 6.4, Tables 7 and 8) on Cityscapes batches.
# ---------------------------------------------------------------------------------------------------------------------

IGNORE_LABEL = 255  # train id of every label the Cityscapes benchmark ignores (tasks.cityscapes.data)


def parse_segmenter(model: str) -> str:
    """``"mobilenetv3-small-1.0-lraspp"`` -> ``"small-1.0-lraspp"``; other ids are an error."""
    return model_variant(model, SEG_VARIANTS, "MobileNetV3 LR-ASPP", MODEL_PREFIX)


def to_signed_unit(images: torch.Tensor) -> torch.Tensor:
    """Images in [0, 1] -> [-1, 1], DeepLab's MobileNet preprocessing (``2 x / 255 - 1``); other ranges are an error
    (the ImageNet-normalised output of the data module's default ``normalize=True`` would pass silently otherwise)."""
    low, high = images.aminmax()
    if low < -1e-3 or high > 1.0 + 1e-3:
        raise HarnessError(
            f"LR-ASPP expects images in [0, 1] (DeepLab maps them to [-1, 1]) but got values in "
            f"[{low:.3g}, {high:.3g}]; set the data module's normalize: false"
        )
    return images * 2.0 - 1.0


def random_scale(low: float, high: float, step: float) -> float:
    """DeepLab's ``get_random_scale``: one of the evenly spaced scales ``low ... high``
    (``int((high - low) / step + 1)`` of them), or uniform in [low, high] when ``step`` is 0."""
    if step <= 0:
        return random.uniform(low, high)
    count = int((high - low) / step + 1)
    return low + random.randrange(count) * (high - low) / max(count - 1, 1)


def scale_pad_crop(
    image: torch.Tensor, target: torch.Tensor, scale: float, crop: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """One training sample as DeepLab's ``preprocess_image_and_label`` makes it (after the data module's flip): resize
    by ``scale`` to ``floor(size * scale)`` (image bilinear, labels nearest), pad bottom and right to at least
    ``crop`` with the mean pixel (0 in [-1, 1]) and the ignore label, then cut a random ``crop x crop`` window.

    ``image``: ``(3, H, W)`` in [-1, 1]; ``target``: ``(H, W)`` train ids. Returns ``(3, crop, crop)`` and
    ``(crop, crop)``.
    """
    height, width = target.shape
    size = (int(height * scale), int(width * scale))
    if size != (height, width):
        image = F.interpolate(image[None], size=size, mode="bilinear", align_corners=True)[0]
        target = F.interpolate(target[None, None].float(), size=size, mode="nearest")[0, 0].long()
    pad_h, pad_w = max(crop - size[0], 0), max(crop - size[1], 0)
    if pad_h or pad_w:
        image = F.pad(image, (0, pad_w, 0, pad_h), value=0.0)
        target = F.pad(target, (0, pad_w, 0, pad_h), value=IGNORE_LABEL)
    top, left = random.randint(0, image.shape[-2] - crop), random.randint(0, image.shape[-1] - crop)
    return image[:, top : top + crop, left : left + crop], target[top : top + crop, left : left + crop]


def segmentation_loss(logits: torch.Tensor, target: torch.Tensor, ignore_index: int = IGNORE_LABEL) -> torch.Tensor:
    """Softmax cross-entropy of ``(N, C, H, W)`` logits (already upsampled to the labels) against ``(N, H, W)`` train
    ids, averaged over the pixels that are not ``ignore_index``; 0 when every pixel is ignored (DeepLab's
    ``utils/train_utils.py``: the summed pixel losses over the count of non-ignored pixels, ``_div_maybe_zero``)."""
    total = F.cross_entropy(logits, target, ignore_index=ignore_index, reduction="sum")
    return total / (target != ignore_index).sum().clamp(min=1)


def deeplab_l2_groups(module: nn.Module, weight_decay: float) -> list[dict]:
    """L2 where DeepLab's MobileNetV3 arg scope (``mobilenet_v2_arg_scope``) and head put it: on the kernels of regular
    convs (groups 1, squeeze-excite and head convs included); not on depthwise kernels (``slim.separable_conv2d``
    gets no regulariser there), biases or batch norm."""
    decayed = [m.weight for m in module.modules() if isinstance(m, nn.Conv2d) and m.groups == 1]
    chosen = {id(p) for p in decayed}
    plain = [p for p in module.parameters() if id(p) not in chosen]
    return [{"params": decayed, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


class LRASPPSystem(pl.LightningModule):
    """MobileNetV3 + LR-ASPP trained from scratch on Cityscapes fine annotations and scored with the benchmark's IoU.

    Section 6.4: "We employ the same training protocol as [8, 39]. All our models are trained from scratch without
    pretraining on ImageNet, and are evaluated with a single-scale input." [8] is DeepLabv3 (arXiv 1706.05587), whose
    Section 4.1 and Cityscapes appendix give: momentum SGD 0.9, "poly" learning rate ``lr (1 - step / max)^0.9`` from
    0.007, batch 16 with batch norm trained, output stride 16 for training, random scaling 0.5 ... 2.0 and left-right
    flips, loss on logits upsampled to the labels, 90K iterations with 769 x 769 crops on Cityscapes, whole-image
    inference. The DeepLab code (tensorflow/models research/deeplab) fills in: scales in steps of 0.25
    (``scale_factor_step_size``), MobileNet weight decay 4e-5 on regular conv kernels, batch-norm decay 0.997 in the
    MobileNetV3 backbone (``mobilenet_v2_arg_scope``) and 0.9997 in the head (``utils.get_batch_norm_params``),
    pixels mapped to [-1, 1], crops padded with the mean pixel and the ignore label 255. The learning rate scales
    linearly with the global batch (0.007 at 16), as the other systems here do.

    Batches are ``(float (N, 3, H, W) images in [0, 1], long (N, H, W) train ids with 255 ignored)`` from
    :class:`tasks.cityscapes.data.CityscapesDataModule` with ``normalize=False`` and whole training images (the system
    scales, pads and crops them). Test images are resized to ``eval_size`` (default: the model id's Cityscapes input,
    1024 x 2048 or 512 x 1024) and the logits back to the label resolution; the metrics are
    :class:`tasks.cityscapes.metric.CityscapesIoU` (``miou``, ``miou_category``, ``iou_<class>``), which count as the
    official scorer does. With ``predictions_dir`` the test also writes one label-id PNG per validation image there,
    the files ``harness score cityscapes-semantic`` and the official script read (one device only).
    """

    def __init__(
        self,
        model: str = "mobilenetv3-large-1.0-lraspp",
        num_classes: int = CITYSCAPES_CLASSES,
        crop_size: int = 769,
        min_scale: float = 0.5,
        max_scale: float = 2.0,
        scale_step: float = 0.25,
        lr: float = 0.007,
        lr_batch_size: int = 16,
        lr_power: float = 0.9,
        momentum: float = 0.9,
        weight_decay: float = 4e-5,
        bn_momentum: float = 0.003,
        head_bn_momentum: float = 0.0003,
        eval_size: tuple[int, int] | list[int] | None = None,
        predictions_dir: str | None = None,
        checkpoint: str | None = None,
    ) -> None:
        """``lr`` is the rate at a global batch of ``lr_batch_size``; ``bn_momentum`` / ``head_bn_momentum`` are
        PyTorch's (0.003 = TF's 0.997 in the backbone, 0.0003 = 0.9997 in the head's batch norm); ``eval_size`` is
        the test input ``(H, W)``; ``checkpoint`` loads weights."""
        super().__init__()
        self.save_hyperparameters()
        variant = parse_segmenter(model)
        self.model = lraspp(variant, num_classes)
        set_bn(self.model, bn_momentum)
        set_bn(self.model.cbr, head_bn_momentum)
        if checkpoint is not None:
            load_state(self.model, checkpoint)
        row = SEG_VARIANTS[variant]
        self.eval_size = tuple(eval_size) if eval_size else (row.height, row.width)
        self.test_metrics = nn.ModuleList()
        self._written: list[int] = []

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(images)  # (N, 3, H, W) in [-1, 1] -> (N, classes, H, W) logits

    def augment(self, images: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Random scale, pad and crop of each sample (:func:`scale_pad_crop`); images in [0, 1] on the way in."""
        hp = self.hparams
        pairs = [
            scale_pad_crop(x, t, random_scale(hp.min_scale, hp.max_scale, hp.scale_step), hp.crop_size)
            for x, t in zip(to_signed_unit(images), targets, strict=True)
        ]
        return torch.stack([x for x, _ in pairs]), torch.stack([t for _, t in pairs])

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        inputs, labels = self.augment(*batch)
        loss = segmentation_loss(self(inputs), labels)
        self.log("train/loss", loss, prog_bar=True)
        self.log("train/lr", self.lr_schedulers().get_last_lr()[0])
        return loss

    def predict_labels(self, images: torch.Tensor) -> torch.Tensor:
        """``(N, 3, H, W)`` images in [0, 1] -> ``(N, H, W)`` train ids, single scale at ``eval_size``."""
        size = tuple(images.shape[-2:])
        inputs = to_signed_unit(images)
        if size != self.eval_size:
            inputs = F.interpolate(inputs, size=self.eval_size, mode="bilinear", align_corners=True)
        logits = self(inputs)
        if tuple(logits.shape[-2:]) != size:
            logits = F.interpolate(logits, size=size, mode="bilinear", align_corners=True)
        return logits.argmax(dim=1)

    def on_test_start(self) -> None:
        from tasks.cityscapes.metric import CityscapesIoU

        self.test_metrics = per_test_loader(self, lambda _: CityscapesIoU(IGNORE_LABEL), floats)
        self._written = [0] * len(self.test_metrics)
        if self.hparams.predictions_dir and self.trainer.world_size > 1:
            raise HarnessError("predictions_dir: prediction PNGs are written by one device only (devices: 1)")

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        images, targets = batch
        predictions = self.predict_labels(images)
        self.test_metrics[dataloader_idx].update(predictions, targets)
        if self.hparams.predictions_dir:
            self.write_predictions(predictions, dataloader_idx)

    def write_predictions(self, predictions: torch.Tensor, dataloader_idx: int = 0) -> None:
        """One label-id PNG per image through the data module's ``write_prediction`` (test loaders are in order)."""
        datamodule = self.trainer.datamodule
        if not hasattr(datamodule, "write_prediction"):
            raise HarnessError("predictions_dir: the data module has no write_prediction (use CityscapesDataModule)")
        folder = Path(self.hparams.predictions_dir)
        folder = folder / f"loader_{dataloader_idx}" if len(self.test_metrics) > 1 else folder
        for prediction in predictions:
            datamodule.write_prediction(folder, self._written[dataloader_idx], prediction)
            self._written[dataloader_idx] += 1

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)

    def configure_optimizers(self) -> dict:
        hp = self.hparams
        _, batch = global_batch(self.trainer)
        total = max(1, int(self.trainer.estimated_stepping_batches))
        groups = deeplab_l2_groups(self.model, hp.weight_decay)
        optimizer = torch.optim.SGD(groups, lr=hp.lr * batch / hp.lr_batch_size, momentum=hp.momentum)

        def factor(step: int) -> float:
            """TF ``polynomial_decay`` to 0 at the last step with power ``lr_power`` (DeepLab's "poly" policy)."""
            return (1.0 - min(step, total) / total) ** hp.lr_power

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
