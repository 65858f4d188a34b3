"""Official-format scorer for Cityscapes pixel-level semantic labeling: class and category IoU over a split.

Dataset: Cordts et al., "The Cityscapes Dataset for Semantic Urban Scene Understanding" (CVPR 2016,
arXiv:1604.01685). Protocol: ``cityscapesscripts/evaluation/evalPixelLevelSemanticLabeling.py`` (cityscapesScripts
2.x, https://github.com/mcordts/cityscapesScripts), rewritten here to its definitions, with the label table taken
from the package itself (``cityscapesscripts.helpers.labels.labels``: id, trainId, category, ignoreInEval):

- Ground truth: every ``<references>/<city>/*_gtFine_labelIds.png`` (the script's ``gtFine/val/*/*`` search).
- Matching: for ``<city>_<seq>_<frame>_gtFine_labelIds.png`` the prediction is the one file in the prediction
  folder or any folder below it (``os.walk``) whose name matches ``<city>_<seq>_<frame>*.png`` (``fnmatch``, so
  case-sensitive on Linux). None, or more than one, is an error, as in the script. Other files are not read.
- Images: one channel (``np.array(Image.open(...))`` must be 2-D), prediction and ground truth of equal size.
  Pixel values are label ids (``id``, 0..33), not train ids. The script's confusion matrix has a row and column
  for each id 0..33: a ground-truth id outside it stops the script ("Unknown label with id"), a predicted one
  overflows the matrix (an ``IndexError``, or memory beyond it in the Cython path). Both are errors here.
- One confusion matrix ``C[gt id, predicted id]`` is summed over all image pairs (no per-image averaging).
- Class IoU, for each of the 19 labels not ``ignoreInEval``: TP = ``C[l, l]``; FN = the rest of row ``l``, so a
  pixel predicted as an ignored id (e.g. 0 "unlabeled", 9 "parking") is a false negative; FP = column ``l`` over
  the rows of the other evaluated labels only, so a pixel whose ground truth is ignored never counts.
  IoU = TP / (TP + FP + FN), NaN when that is 0 (the class is absent and never predicted on evaluated pixels).
- Category IoU, for each category holding an evaluated label (flat, construction, object, nature, sky, human,
  vehicle; not void): with L its evaluated labels, TP = ``C[L, L].sum()``, FN = ``C[L, :].sum() - TP`` (a
  prediction of an ignored label of the same category, such as parking for road, is a false negative), FP =
  ``C[M, L].sum()`` over the evaluated labels M of other categories.
- ``miou`` / ``miou_category``: the mean over the classes / categories whose IoU is not NaN (NaN if none), ×100.

Keys: :data:`tasks.cityscapes.KEYS`; ``iou_<class>`` is NaN for a class the score has no pixel of (the script
prints "nan" too). Left out: the instance-level iIoU of the benchmark, which needs ``*_gtFine_instanceIds.png``
and per-class average instance sizes, and the script's optional pixel accuracy.

Bad input raises :class:`HarnessError` naming the file: a missing or ambiguous prediction, an unreadable PNG, a
multi-channel image, sizes that differ, pixel values that are not label ids 0..33, or predictions none of whose
label ids is an evaluated id of the ground truth (train ids written where label ids belong), which would score 0.
"""

from __future__ import annotations

import fnmatch
import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

from harness.errors import HarnessError
from tasks.cityscapes import CLASS_KEYS, CLASS_NAMES

GT_SUFFIX = "_gtFine_labelIds.png"
NUM_IDS = 34  # label ids 0..33, the official confusion matrix's side ("license plate", id -1, is in no image)
NUM_CLASSES = len(CLASS_NAMES)  # 19 evaluated labels, train ids 0..18
OTHER = NUM_CLASSES  # column of the reduced matrix for predictions of a label that is not evaluated
IGNORE = 255  # train id of every label that is not evaluated
_SHOWN = 5


@dataclass(frozen=True)
class LabelTable:
    """What the evaluation needs from ``labels.py``, in train-id order."""

    eval_ids: tuple[int, ...]  # label id of train id 0..18
    train_id_of: np.ndarray  # (256,) uint8: label id -> train id, 255 for ignored ids and for values beyond 33
    categories: tuple[tuple[str, tuple[int, ...]], ...]  # (category, its evaluated train ids), labels.py order


@functools.cache
def label_table() -> LabelTable:
    """Build the table from ``cityscapesscripts.helpers.labels`` and check it against :data:`CLASS_NAMES`."""
    from cityscapesscripts.helpers.labels import labels

    evaluated = sorted((lab for lab in labels if lab.id >= 0 and not lab.ignoreInEval), key=lambda lab: lab.trainId)
    if tuple(lab.name for lab in evaluated) != CLASS_NAMES or [lab.trainId for lab in evaluated] != list(
        range(NUM_CLASSES)
    ):
        raise HarnessError("cityscapesscripts' labels table no longer has the 19 classes with train ids 0..18")
    if max(lab.id for lab in labels) != NUM_IDS - 1:
        raise HarnessError(f"cityscapesscripts' labels table no longer has label ids 0..{NUM_IDS - 1}")
    train_id_of = np.full(256, IGNORE, dtype=np.uint8)
    for lab in evaluated:
        train_id_of[lab.id] = lab.trainId
    categories: dict[str, list[int]] = {}
    for lab in labels:
        categories.setdefault(lab.category, [])
        if lab.id >= 0 and not lab.ignoreInEval:
            categories[lab.category].append(lab.trainId)
    kept = tuple((name, tuple(ids)) for name, ids in categories.items() if ids)
    return LabelTable(tuple(lab.id for lab in evaluated), train_id_of, kept)


# --- confusion matrices and IoU ----------------------------------------------------------------------------------


def label_confusion(gt: np.ndarray, pred: np.ndarray) -> np.ndarray:
    """``(34, 34)`` int64 counts ``C[gt id, predicted id]`` of one image pair (values already checked)."""
    codes = gt.astype(np.int64).ravel() * NUM_IDS + pred.astype(np.int64).ravel()
    return np.bincount(codes, minlength=NUM_IDS * NUM_IDS).reshape(NUM_IDS, NUM_IDS)


def reduce_confusion(confusion: np.ndarray) -> np.ndarray:
    """The label-id matrix ``(34, 34)`` as ``(19, 20)``: rows the evaluated ground truth in train-id order (rows of
    ignored ids dropped), columns the evaluated predictions plus one column (:data:`OTHER`) for all other ids.

    Every official formula reads only these numbers, so :func:`scores_from_confusion` gives the same IoUs.
    """
    eval_ids = list(label_table().eval_ids)
    rows = np.asarray(confusion, dtype=np.int64)[eval_ids]  # (19, 34)
    other = np.delete(rows, eval_ids, axis=1).sum(axis=1, keepdims=True)  # (19, 1)
    return np.concatenate([rows[:, eval_ids], other], axis=1)


def _iou(tp: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, tp / np.maximum(denominator, 1), np.nan)


def _mean(values: np.ndarray) -> float:
    defined = values[~np.isnan(values)]
    return float(defined.mean()) if defined.size else float("nan")


def class_iou(confusion: np.ndarray) -> np.ndarray:
    """IoU of the 19 classes from a ``(19, 20)`` matrix (NaN where TP + FP + FN = 0)."""
    conf = np.asarray(confusion, dtype=np.int64)
    tp = np.diag(conf[:, :NUM_CLASSES])
    fn = conf.sum(axis=1) - tp
    fp = conf[:, :NUM_CLASSES].sum(axis=0) - tp
    return _iou(tp, tp + fp + fn)


def category_iou(confusion: np.ndarray) -> dict[str, float]:
    """IoU of each category that holds an evaluated class, from a ``(19, 20)`` matrix."""
    conf = np.asarray(confusion, dtype=np.int64)
    out: dict[str, float] = {}
    for name, members in label_table().categories:
        inside = list(members)
        outside = [c for c in range(NUM_CLASSES) if c not in members]
        tp = conf[np.ix_(inside, inside)].sum()
        fn = conf[inside].sum() - tp
        fp = conf[np.ix_(outside, inside)].sum()
        out[name] = float(_iou(np.asarray(tp), np.asarray(tp + fp + fn)))
    return out


def scores_from_confusion(confusion: np.ndarray) -> dict[str, float]:
    """The task's keys (×100) from a reduced ``(19, 20)`` confusion matrix."""
    classes = class_iou(confusion)
    categories = np.asarray(list(category_iou(confusion).values()))
    result = {"miou": 100.0 * _mean(classes), "miou_category": 100.0 * _mean(categories)}
    result.update({key: 100.0 * float(value) for key, value in zip(CLASS_KEYS, classes, strict=True)})
    return result


# --- files --------------------------------------------------------------------------------------------------------


def frame_prefix(path: Path) -> str:
    """``<city>_<seq>_<frame>`` of a Cityscapes file name (its first three ``_``-separated fields)."""
    parts = path.name.split("_")
    if len(parts) < 4:
        raise HarnessError(f"{path}: not a Cityscapes file name (<city>_<seq>_<frame>_<type>.png)")
    return "_".join(parts[:3])


def ground_truth_files(references: Path) -> list[Path]:
    """Every ``<city>/*_gtFine_labelIds.png`` under the ``gtFine/<split>`` folder, sorted."""
    if not references.is_dir():
        raise HarnessError(f"{references}: expected a gtFine/<split> folder (e.g. gtFine/val)")
    files = sorted(references.glob(f"*/*{GT_SUFFIX}"))
    if not files:
        raise HarnessError(
            f"{references}: no <city>/*{GT_SUFFIX} files; expected a gtFine/<split> folder such as gtFine/val"
        )
    for path in files:
        if len(path.name.removesuffix(GT_SUFFIX).split("_")) != 3:
            raise HarnessError(f"{path}: not a Cityscapes ground-truth name (<city>_<seq>_<frame>{GT_SUFFIX})")
    return files


def match_predictions(ground_truth: list[Path], predictions: Path) -> list[Path]:
    """The prediction file of each ground-truth file: the one ``<city>_<seq>_<frame>*.png`` below ``predictions``."""
    if not predictions.is_dir():
        raise HarnessError(f"{predictions}: expected a folder of prediction PNGs (<city>_<seq>_<frame>*.png)")
    walk = [(Path(folder), names) for folder, _, names in os.walk(predictions)]
    matched: list[Path] = []
    missing: list[Path] = []
    for gt in ground_truth:
        pattern = f"{frame_prefix(gt)}*.png"
        found = [folder / name for folder, names in walk for name in fnmatch.filter(names, pattern)]
        if len(found) > 1:
            raise HarnessError(f"{found[1]}: a second prediction for {gt} (the first is {found[0]})")
        if found:
            matched.append(found[0])
        else:
            missing.append(gt)
    if missing:
        shown = ", ".join(frame_prefix(gt) for gt in missing[:_SHOWN]) + (", ..." if len(missing) > _SHOWN else "")
        raise HarnessError(
            f"{predictions}: no prediction <city>_<seq>_<frame>*.png for {len(missing)} of the {len(ground_truth)} "
            f"ground-truth images, starting with {missing[0]} (missing: {shown})"
        )
    return matched


def read_label_ids(path: Path, what: str) -> np.ndarray:
    """A one-channel PNG of label ids 0..33 as a 2-D array; anything else is a :class:`HarnessError`."""
    try:
        with Image.open(path) as img:
            array = np.array(img)
    except Exception as exc:  # Pillow raises OSError, SyntaxError, ValueError, ... on corrupt files
        raise HarnessError(f"{path}: unreadable {what} image: {exc}") from None
    if array.ndim != 2:
        raise HarnessError(f"{path}: {what} image has {array.shape[-1]} channels; expected one channel of label ids")
    if array.dtype == bool:
        array = array.astype(np.uint8)
    if array.size and (array.min() < 0 or array.max() >= NUM_IDS):
        bad = np.unique(array[(array < 0) | (array >= NUM_IDS)])
        shown = ", ".join(str(v) for v in bad[:_SHOWN]) + (", ..." if bad.size > _SHOWN else "")
        raise HarnessError(
            f"{path}: {what} pixel values {shown} are not Cityscapes label ids 0..{NUM_IDS - 1} "
            "(predictions must hold label ids, not train ids with 255)"
        )
    return array


def pair_confusion(gt_path: Path, pred_path: Path) -> np.ndarray:
    """The ``(34, 34)`` confusion of one ground-truth / prediction pair, after the official checks."""
    gt = read_label_ids(gt_path, "ground-truth")
    pred = read_label_ids(pred_path, "prediction")
    if gt.shape != pred.shape:
        raise HarnessError(
            f"{pred_path}: prediction is {pred.shape[1]}x{pred.shape[0]}, its ground truth {gt_path} is "
            f"{gt.shape[1]}x{gt.shape[0]}"
        )
    return label_confusion(gt, pred)


def train_ids_to_label_ids(train_ids: np.ndarray) -> np.ndarray:
    """A train-id map (0..18) as the label-id map (uint8) a prediction PNG must hold; other values become 0
    ("unlabeled"), which the evaluation counts as a miss wherever the ground truth is evaluated."""
    lookup = np.zeros(256, dtype=np.uint8)
    lookup[:NUM_CLASSES] = label_table().eval_ids
    values = np.asarray(train_ids)
    return lookup[np.where((values >= 0) & (values < NUM_CLASSES), values, 255).astype(np.uint8)]


def score(references: Path, predictions: Path) -> dict[str, float]:
    """Score a folder of label-id PNGs against a ``gtFine/<split>`` folder (see the module docstring)."""
    references, predictions = Path(references), Path(predictions)
    ground_truth = ground_truth_files(references)
    confusion = np.zeros((NUM_IDS, NUM_IDS), dtype=np.int64)
    for gt_path, pred_path in zip(ground_truth, match_predictions(ground_truth, predictions), strict=True):
        confusion += pair_confusion(gt_path, pred_path)
    _check_comparable(confusion, predictions)
    return scores_from_confusion(reduce_confusion(confusion))


def _check_comparable(confusion: np.ndarray, predictions: Path) -> None:
    """Some predicted label id must be an evaluated label id of the ground truth: train ids (0..18) written where
    label ids belong would score every class 0, which would look like a result."""
    evaluated = [i for i in label_table().eval_ids if confusion[i].sum()]
    predicted = [int(i) for i in np.flatnonzero(confusion.sum(axis=0))]
    if evaluated and not set(predicted) & set(evaluated):
        shown = ", ".join(str(i) for i in predicted[:_SHOWN]) + (", ..." if len(predicted) > _SHOWN else "")
        raise HarnessError(
            f"{predictions}: none of the predicted label ids ({shown}) is an evaluated label id of the ground truth "
            f"({', '.join(str(i) for i in evaluated[:_SHOWN])}): are they train ids? Predictions hold label ids "
            "(tasks.cityscapes.score.train_ids_to_label_ids converts)"
        )
