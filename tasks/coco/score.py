"""Official-format scorer for COCO bounding-box detection: pycocotools' ``COCOeval`` on a results file.

Dataset: Lin et al., "Microsoft COCO: Common Objects in Context" (arXiv:1405.0312). Protocol:
https://cocodataset.org/#detection-eval, computed by pycocotools (the official COCO API) itself, not rewritten:
``COCO`` indexes the references, ``COCO.loadRes`` the results, ``COCOeval(iouType="bbox")`` runs ``evaluate``,
``accumulate`` and ``summarize``, and the 12 ``stats`` become the keys of :data:`tasks.coco.KEYS`, ×100.
pycocotools' progress prints are captured and dropped. Everything the evaluation decides is pycocotools':

- every image of the references is evaluated, so an image without detections counts its objects as missed;
- per image and category only the 100 highest-scoring detections count (``maxDets``; ties keep file order);
- a detection matched to a crowd region (``iscrowd: 1``; IoU = intersection / detection area) is ignored, as is
  one matched to an object outside the area range being summarized; the range of an object is that of its
  ``area`` field (the mask area in the real files), that of a detection its box area ``width * height``;
- detections of a category that is not in the references' ``categories`` are never looked at (here: a warning);
- a category without ground truth (in an area range) does not enter the mean over categories.

Where this scorer decides what pycocotools does not:

- A summary with no ground truth at all in its area range is ``-1`` in pycocotools; here it is NaN (the way
  detectron2's ``COCOEvaluator`` reports it), not ``-100``.
- An empty results list makes ``loadRes`` fail (``IndexError`` on ``anns[0]``). Here it means "no detections":
  the results object is built with no annotations and evaluated by the same ``COCOeval``, which gives 0 for every
  key whose area range has ground truth. A warning says so.
- Input that pycocotools would reject with an ``AssertionError`` or ``KeyError``, or score wrongly, is a
  :class:`HarnessError` naming the file and the JSON place: invalid JSON; a results entry that is not an object
  with ``image_id``, ``category_id``, ``bbox`` (4 finite numbers, width and height >= 0) and a finite ``score``;
  a results ``image_id`` that is not an image of the references (the assertion "Results do not correspond to
  current coco set"); references without the ``images``/``annotations``/``categories`` lists, with an annotation
  missing ``bbox``, ``area`` or ``iscrowd``, naming an unknown image or category, or with an annotation ``id``
  that is not a positive integer or not unique (pycocotools marks "unmatched" with id 0, so an object with id 0
  could be matched many times).

Fast path: ``faster-coco-eval`` (``HARNESS_COCO_BACKEND=faster-coco-eval``, or ``backend=`` of :func:`evaluate`)
runs the same protocol with matching and accumulation in C++; pycocotools stays the reference and the default.
tests/tasks/coco/test_coco_backends.py checks that the two agree on all 12 numbers (to 1e-9 of a percentage point:
float sums taken in another order), benchmarks/bench_coco.py prints the speed ratio. The result says which backend
computed it (:class:`CocoScores` ``.backend``), and the detection systems cite it in their records.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import warnings
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from harness.errors import HarnessError
from tasks.coco import KEYS

_SHOWN = 5  # ids quoted in a message before "..."
RESULT_FIELDS = ("image_id", "category_id", "bbox", "score")
REFERENCE = "pycocotools"  # the official COCO API: what records and ``harness score`` use unless told otherwise
BACKEND_ENV = "HARNESS_COCO_BACKEND"


# --- reading and checking the two files ------------------------------------------------------------------------


def read_json(path: Path) -> Any:
    """The parsed JSON of ``path``; an unreadable file or invalid JSON is a :class:`HarnessError` with the line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: cannot read: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None


def _no_known_category(path: Path, references_path: Path, found: set[int], known: set[int]) -> None:
    """Every detection names a category the references do not define, so every AP is 0. Ids that look like
    contiguous class indices (0 among them, or all below the number of categories; e.g. 0..79 against COCO's ids
    1..90) are an error; other ids (an untrained detector's COCO ids against a fixture of three categories) a
    warning that says so."""
    said = (
        f"{path}: none of the detections' category ids ({_listing(sorted(found))}) is a category of "
        f"{references_path} ({_listing(sorted(known))})"
    )
    if 0 in found or max(found) < len(known):
        raise HarnessError(f"{said}: are they class indices rather than the references' category ids?")
    warnings.warn(f"{said}: every AP is 0", stacklevel=3)


def _listing(ids: list[Any]) -> str:
    shown = ", ".join(repr(i) for i in ids[:_SHOWN])
    return shown + (", ..." if len(ids) > _SHOWN else "")


def _int_id(value: Any, where: str) -> int:
    """An integer id; JSON writers that print ``42.0`` are accepted, anything else is an error."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not float(value).is_integer():
        raise HarnessError(f"{where}: expected an integer id, found {value!r}")
    return int(value)


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise HarnessError(f"{where}: expected a finite number, found {value!r}")
    return float(value)


def _box(value: Any, where: str) -> list[float]:
    """A COCO box ``[x, y, width, height]``: 4 finite numbers, width and height not negative."""
    if not isinstance(value, list) or len(value) != 4:
        raise HarnessError(f"{where}: expected a box [x, y, width, height] of 4 numbers, found {value!r}")
    box = [_number(v, where) for v in value]
    if box[2] < 0 or box[3] < 0:
        raise HarnessError(f"{where}: box {value!r} has a negative width or height")
    return box


def _object(value: Any, where: str, fields: tuple[str, ...]) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise HarnessError(f"{where}: expected a JSON object, found {type(value).__name__}")
    missing = [name for name in fields if name not in value]
    if missing:
        raise HarnessError(f"{where}: missing field(s) {', '.join(missing)}")
    return value


def _unique_ids(items: list[Any], path: Path, name: str) -> list[dict[str, Any]]:
    """Copies of the ``images`` or ``categories`` entries with their ``id`` as an int; duplicates are an error."""
    out: list[dict[str, Any]] = []
    seen: set[int] = set()
    for index, item in enumerate(items):
        where = f"{path}: {name}[{index}]"
        entry = dict(_object(item, where, ("id",)))
        entry["id"] = _int_id(entry["id"], f"{where}.id")
        if entry["id"] in seen:
            raise HarnessError(f"{where}.id: {name} id {entry['id']} appears twice")
        seen.add(entry["id"])
        out.append(entry)
    return out


def _annotation(item: Any, where: str, image_ids: set[int], category_ids: set[int]) -> dict[str, Any]:
    ann = dict(_object(item, where, ("id", "image_id", "category_id", "bbox", "area", "iscrowd")))
    ann["id"] = _int_id(ann["id"], f"{where}.id")
    if ann["id"] <= 0:
        raise HarnessError(f"{where}.id: annotation ids must be positive (pycocotools reads 0 as 'unmatched')")
    ann["image_id"] = _int_id(ann["image_id"], f"{where}.image_id")
    if ann["image_id"] not in image_ids:
        raise HarnessError(f"{where}.image_id: {ann['image_id']} is not in 'images'")
    ann["category_id"] = _int_id(ann["category_id"], f"{where}.category_id")
    if ann["category_id"] not in category_ids:
        raise HarnessError(f"{where}.category_id: {ann['category_id']} is not in 'categories'")
    ann["bbox"] = _box(ann["bbox"], f"{where}.bbox")
    ann["area"] = _number(ann["area"], f"{where}.area")
    if ann["iscrowd"] not in (0, 1):  # True/False compare equal to 1/0
        raise HarnessError(f"{where}.iscrowd: expected 0 or 1, found {ann['iscrowd']!r}")
    ann["iscrowd"] = int(ann["iscrowd"])
    return ann


def check_references(doc: Any, path: Path) -> dict[str, Any]:
    """Check an ``instances_*.json`` document; return a copy with ``images``, ``annotations``, ``categories``.

    Entries keep all their fields (``file_name``, ``width``, ``segmentation``, ...); ids become ints.
    """
    if not isinstance(doc, dict):
        raise HarnessError(f"{path}: expected a COCO annotation file (a JSON object), found {type(doc).__name__}")
    for name in ("images", "annotations", "categories"):
        if not isinstance(doc.get(name), list):
            raise HarnessError(f"{path}: missing the '{name}' list of a COCO instances_*.json file")
    images = _unique_ids(doc["images"], path, "images")
    categories = _unique_ids(doc["categories"], path, "categories")
    image_ids, category_ids = {img["id"] for img in images}, {cat["id"] for cat in categories}
    annotations: list[dict[str, Any]] = []
    seen: set[int] = set()
    for index, item in enumerate(doc["annotations"]):
        ann = _annotation(item, f"{path}: annotations[{index}]", image_ids, category_ids)
        if ann["id"] in seen:
            raise HarnessError(f"{path}: annotations[{index}].id: annotation id {ann['id']} appears twice")
        seen.add(ann["id"])
        annotations.append(ann)
    if not images or not annotations:
        raise HarnessError(f"{path}: no {'images' if not images else 'annotations'} to score against")
    return {"images": images, "annotations": annotations, "categories": categories}


def check_detections(doc: Any, path: Path, references: Mapping[str, Any], references_path: Path) -> list[dict]:
    """Check a COCO results list against the checked references; return clean ``RESULT_FIELDS`` dicts."""
    if not isinstance(doc, list):
        raise HarnessError(
            f"{path}: expected a COCO results file (a JSON array of detections), found {type(doc).__name__}"
        )
    image_ids = {img["id"] for img in references["images"]}
    category_ids = {cat["id"] for cat in references["categories"]}
    detections: list[dict[str, Any]] = []
    unknown_images: dict[int, int] = {}  # image id -> index of its first detection
    unknown_categories: set[int] = set()
    for index, item in enumerate(doc):
        where = f"{path}: [{index}]"
        det = _object(item, where, RESULT_FIELDS)
        image_id = _int_id(det["image_id"], f"{where}.image_id")
        category_id = _int_id(det["category_id"], f"{where}.category_id")
        if image_id not in image_ids:
            unknown_images.setdefault(image_id, index)
        if category_id not in category_ids:
            unknown_categories.add(category_id)
        bbox, score = _box(det["bbox"], f"{where}.bbox"), _number(det["score"], f"{where}.score")
        detections.append({"image_id": image_id, "category_id": category_id, "bbox": bbox, "score": score})
    if unknown_images:
        first, index = next(iter(unknown_images.items()))
        raise HarnessError(
            f"{path}: [{index}].image_id: {first} is not an image of {references_path} "
            f"({len(unknown_images)} unknown image id(s): {_listing(sorted(unknown_images))})"
        )
    if detections and all(det["category_id"] in unknown_categories for det in detections):
        _no_known_category(path, references_path, unknown_categories, category_ids)
    elif unknown_categories:
        warnings.warn(
            f"{path}: detections of category id(s) {_listing(sorted(unknown_categories))} that {references_path} "
            "does not define; pycocotools ignores them",
            stacklevel=2,
        )
    return detections


# --- evaluation --------------------------------------------------------------------------------------------------


def coco_results(image_id: int, boxes_xyxy: Any, scores: Any, labels: Any) -> list[dict[str, Any]]:
    """One image's detections as COCO results entries; ``boxes_xyxy`` (N, 4) corners, ``labels`` category ids."""
    boxes = np.asarray(boxes_xyxy, dtype=np.float64).reshape(-1, 4)
    scores, labels = np.asarray(scores, dtype=np.float64).reshape(-1), np.asarray(labels).reshape(-1)
    if not len(boxes) == len(scores) == len(labels):
        raise ValueError(f"{len(boxes)} boxes, {len(scores)} scores and {len(labels)} labels for image {image_id}")
    xywh = np.concatenate([boxes[:, :2], boxes[:, 2:] - boxes[:, :2]], axis=1)
    return [
        {"image_id": int(image_id), "category_id": int(label), "bbox": box.tolist(), "score": float(score)}
        for box, score, label in zip(xywh, scores, labels, strict=True)
    ]


def _documents(references: Mapping[str, Any]) -> dict[str, Any]:
    """A fresh references document: both backends write into annotation dicts (``ignore``), so they get copies."""
    return {
        "images": list(references["images"]),
        "annotations": [dict(ann) for ann in references["annotations"]],
        "categories": list(references["categories"]),
    }


def _indexed(coco_class: type, dataset: dict[str, Any]) -> Any:
    coco = coco_class()
    coco.dataset = dataset
    coco.createIndex()
    return coco


def _pycocotools_stats(references: Mapping[str, Any], detections: list[dict[str, Any]]) -> list[float]:
    """The reference: pycocotools' ``COCOeval`` stats, its progress prints dropped."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        gt = _indexed(COCO, _documents(references))
        if detections:
            dt = gt.loadRes([dict(det) for det in detections])
        else:  # loadRes cannot read an empty list: the same results object, with no annotations
            empty = {"images": list(references["images"]), "annotations": [], "categories": references["categories"]}
            dt = _indexed(COCO, empty)
        coco_eval = COCOeval(gt, dt, iouType="bbox")
        coco_eval.evaluate()
        coco_eval.accumulate()
        coco_eval.summarize()
    return list(coco_eval.stats)


def _faster_stats(references: Mapping[str, Any], detections: list[dict[str, Any]]) -> list[float]:
    """The fast path: faster-coco-eval's ``COCOeval_faster`` (matching and accumulation in C++), same protocol."""
    from faster_coco_eval.core import COCO, COCOeval_faster

    gt = _indexed(COCO, _documents(references))
    dt = gt.loadRes([dict(det) for det in detections])  # an empty list is read as "no detections" here
    coco_eval = COCOeval_faster(gt, dt, iouType="bbox", print_function=lambda *args, **kwargs: None)
    coco_eval.evaluate()
    coco_eval.accumulate()
    coco_eval.summarize()
    return list(coco_eval.stats[: len(KEYS)])


_BACKENDS = {"pycocotools": _pycocotools_stats, "faster-coco-eval": _faster_stats}


class CocoScores(dict):
    """The 12 keys of :data:`tasks.coco.KEYS` (a plain dict to every caller) plus ``backend``: the library and
    version that computed them, e.g. ``"pycocotools 2.0.11"``."""

    backend: str = ""


def resolve_backend(backend: str | None = None) -> str:
    """``backend``, else ``$HARNESS_COCO_BACKEND``, else the reference ``pycocotools``; an unknown name is an error,
    and so is ``faster-coco-eval`` when it is not installed (it is never swapped in silently)."""
    name = backend or os.environ.get(BACKEND_ENV) or REFERENCE
    if name not in _BACKENDS:
        raise HarnessError(f"COCO scoring backend {name!r} (${BACKEND_ENV}): choose one of {', '.join(_BACKENDS)}")
    try:
        version(name)
    except PackageNotFoundError:
        raise HarnessError(f"COCO scoring backend {name!r} is not installed (pip install {name})") from None
    return name


def evaluate(references: Mapping[str, Any], detections: list[dict[str, Any]], backend: str | None = None) -> CocoScores:
    """Bbox evaluation of checked detections against checked references: the 12 keys, ×100, as :class:`CocoScores`.

    ``backend`` (see :func:`resolve_backend`): ``pycocotools``, the reference, or ``faster-coco-eval``, the fast
    path (tests/tasks/coco/test_coco_backends.py checks that both give the same 12 numbers). The inputs are copied
    before a backend, which writes into annotation dicts, sees them.
    """
    name = resolve_backend(backend)
    stats = _BACKENDS[name](references, detections)
    scores = CocoScores(
        (key, float(stat) * 100.0 if stat >= 0 else math.nan) for key, stat in zip(KEYS, stats, strict=True)
    )
    scores.backend = f"{name} {version(name)}"
    return scores


def score(references: Path, predictions: Path) -> CocoScores:
    """Score a COCO results file against an ``instances_*.json`` file (see the module docstring)."""
    references, predictions = Path(references), Path(predictions)
    gt = check_references(read_json(references), references)
    detections = check_detections(read_json(predictions), predictions, gt, references)
    if not detections:
        warnings.warn(f"{predictions}: no detections; every object of {references} counts as missed", stacklevel=2)
    return evaluate(gt, detections)
