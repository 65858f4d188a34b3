"""Cityscapes class and category IoU as a torchmetrics ``Metric``: accumulate a confusion matrix, compute once.

Same definitions as the official-format scorer (``tasks.cityscapes.score``), whose
:func:`~tasks.cityscapes.score.scores_from_confusion` it calls on the same ``(19, 20)`` reduced matrix: rows the
ground-truth train ids 0..18 (pixels with target ``ignore_index``, the labels the benchmark ignores, are skipped),
columns the predicted train ids 0..18 plus one column for any other predicted value, which, like a prediction of
an ignored label id in the scorer, is a false negative of the pixel's class and a false positive of none.
So a train-id prediction scores here exactly as its label-id PNG
(:func:`~tasks.cityscapes.score.train_ids_to_label_ids`) scores in the scorer. Keys: :data:`tasks.cityscapes.KEYS`.

With ``keep_predictions`` (the default) the metric also keeps each image's prediction as that label-id PNG
(compressed, tens of kB an image), and :meth:`CityscapesIoU.write_predictions` writes them under the names the
data module gives (``harness.predictions``); ``reset`` drops them.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor
from torchmetrics import Metric

from harness.predictions import KeptLists, Scoring, check_count
from tasks.cityscapes.score import IGNORE, NUM_CLASSES, OTHER, scores_from_confusion, train_ids_to_label_ids


def _count(codes: Tensor, size: int) -> Tensor:
    """``bincount`` with a fallback when deterministic algorithms are requested (CUDA's bincount has none)."""
    if not torch.are_deterministic_algorithms_enabled():
        return torch.bincount(codes, minlength=size)
    values, counts = torch.unique(codes, return_counts=True)
    return torch.zeros(size, dtype=torch.long, device=codes.device).index_put_((values,), counts)


class CityscapesIoU(KeptLists, Metric):
    """``miou``, ``miou_category`` and ``iou_<class>`` (×100) over all pixels seen.

    ``update(preds, target)``: ``preds`` train ids ``(N, H, W)`` or scores ``(N, 19, H, W)`` (arg-maxed over
    dim 1); ``target`` train ids ``(N, H, W)``, 0..18 or ``ignore_index``.
    """

    is_differentiable = False
    higher_is_better = True
    full_state_update = False
    kept_lists = ("kept_pngs",)

    def __init__(self, ignore_index: int = IGNORE, keep_predictions: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ignore_index = ignore_index
        self.keep_predictions = keep_predictions
        self.kept_pngs: list[bytes] = []  # not a state: PNG bytes do not sync across devices
        self.add_state("confusion", default=torch.zeros(NUM_CLASSES, OTHER + 1, dtype=torch.long), dist_reduce_fx="sum")

    def update(self, preds: Tensor, target: Tensor) -> None:
        if preds.ndim == target.ndim + 1:
            if preds.shape[1] != NUM_CLASSES:
                raise ValueError(f"scores have {preds.shape[1]} channels; expected {NUM_CLASSES}")
            preds = preds.argmax(dim=1)
        if preds.shape != target.shape:
            raise ValueError(f"predictions {tuple(preds.shape)} and targets {tuple(target.shape)} differ in shape")
        if self.keep_predictions:
            self.kept_pngs.extend(label_id_png(image) for image in preds.detach().cpu().numpy())
        valid = target != self.ignore_index
        gt = target[valid].long()
        if gt.numel() and (gt.min() < 0 or gt.max() >= NUM_CLASSES):
            raise ValueError(f"target values must be train ids 0..{NUM_CLASSES - 1} or {self.ignore_index}")
        pred = preds[valid].long()
        pred = torch.where((pred >= 0) & (pred < NUM_CLASSES), pred, torch.full_like(pred, OTHER))
        counts = _count(gt * (OTHER + 1) + pred, NUM_CLASSES * (OTHER + 1))
        self.confusion += counts.reshape(NUM_CLASSES, OTHER + 1)

    def compute(self) -> dict[str, Tensor]:
        scores = scores_from_confusion(self.confusion.cpu().numpy())
        return {key: torch.tensor(value, dtype=torch.float64) for key, value in scores.items()}

    def write_predictions(self, folder: Path, scoring: Scoring) -> dict[str, Path]:
        """``folder/predictions/<name>``: one label-id PNG per image seen, named by ``scoring.ids`` (file names
        such as ``frankfurt_000000_000294_leftImg8bit.png``, in loader order)."""
        check_count(len(self.kept_pngs), scoring, "images")
        out = Path(folder) / "predictions"
        out.mkdir(parents=True, exist_ok=True)
        for name, data in zip(scoring.ids, self.kept_pngs, strict=False):
            (out / name).write_bytes(data)
        return {"predictions": out}


def label_id_png(train_ids: np.ndarray) -> bytes:
    """An ``(H, W)`` train-id map as the bytes of the label-id PNG (uint8, mode ``L``) the scorer reads."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(train_ids_to_label_ids(train_ids)).save(buffer, format="PNG")
    return buffer.getvalue()
