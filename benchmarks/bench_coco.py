"""Benchmark: COCO bbox scoring by faster-coco-eval (the fast path) against pycocotools (the reference), measured
on the same files in the same run.

    .venv/bin/python benchmarks/bench_coco.py [--images 1000] [--repeat 3] [--seed 0]

Writes a synthetic but valid COCO pair into a temporary folder: an ``instances_val2017.json`` of IMAGES 640x480
images with 1-6 objects each (10 real COCO categories, every area range, 2% crowd regions) and a results file
with every object found with a jittered box, some missed and some false positives (a few thousand detections).
Prints the load average, then for each backend the best of REPEAT wall times of ``evaluate`` (the COCOeval part)
and of ``score`` (reading and checking both files too), the ratio reference / fast, and whether the 12 numbers
agree (to 1e-9 of a percentage point, as tests/tasks/coco/test_coco_backends.py asks).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from tasks.coco.score import check_detections, check_references, evaluate, read_json, score

CATEGORIES = [1, 2, 3, 4, 6, 8, 17, 18, 44, 62]  # person, bicycle, car, motorcycle, bus, truck, cat, dog, bottle, chair
WIDTH, HEIGHT = 640, 480
BACKENDS = ("pycocotools", "faster-coco-eval")


def _box(rng: random.Random) -> list[float]:
    side = rng.choice([rng.uniform(8, 30), rng.uniform(35, 90), rng.uniform(100, 300)])  # small, medium, large
    w, h = side * rng.uniform(0.6, 1.4), side * rng.uniform(0.6, 1.4)
    return [rng.uniform(0, WIDTH - w), rng.uniform(0, HEIGHT - h), w, h]


def references(images: int, rng: random.Random) -> dict[str, Any]:
    anns = []
    for image_id in range(1, images + 1):
        for _ in range(rng.randint(1, 6)):
            x, y, w, h = _box(rng)
            anns.append({"id": len(anns) + 1, "image_id": image_id, "category_id": rng.choice(CATEGORIES),
                         "bbox": [x, y, w, h], "area": w * h, "iscrowd": int(rng.random() < 0.02),
                         "segmentation": [[x, y, x + w, y, x + w, y + h, x, y + h]]})  # fmt: skip
    return {
        "images": [
            {"id": i, "file_name": f"{i:012d}.jpg", "width": WIDTH, "height": HEIGHT} for i in range(1, images + 1)
        ],
        "annotations": anns,
        "categories": [{"id": c, "name": f"category-{c}", "supercategory": "thing"} for c in CATEGORIES],
    }


def detections(refs: dict[str, Any], rng: random.Random) -> list[dict[str, Any]]:
    """85% of the objects found (box jittered by up to 15% of its size), 1-3 false positives per image."""
    dets = []
    for ann in refs["annotations"]:
        if rng.random() < 0.85:
            x, y, w, h = ann["bbox"]
            box = [x + w * rng.uniform(-0.15, 0.15), y + h * rng.uniform(-0.15, 0.15),
                   w * rng.uniform(0.85, 1.15), h * rng.uniform(0.85, 1.15)]  # fmt: skip
            dets.append({"image_id": ann["image_id"], "category_id": ann["category_id"], "bbox": box,
                         "score": rng.uniform(0.3, 1.0)})  # fmt: skip
    for image in refs["images"]:
        for _ in range(rng.randint(1, 3)):
            dets.append({"image_id": image["id"], "category_id": rng.choice(CATEGORIES), "bbox": _box(rng),
                         "score": rng.uniform(0.0, 0.7)})  # fmt: skip
    return dets


def best_of(repeat: int, fn) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def agree(a: dict[str, float], b: dict[str, float]) -> bool:
    return all((math.isnan(a[k]) and math.isnan(b[k])) or abs(a[k] - b[k]) <= 1e-9 for k in a) and list(a) == list(b)


def compare(refs_path: Path, preds_path: Path, repeat: int) -> None:
    """Time both backends on the same checked inputs and files; print the times, the ratios and the agreement."""
    gt = check_references(read_json(refs_path), refs_path)
    dets = check_detections(read_json(preds_path), preds_path, gt, refs_path)
    print(f"{len(gt['images'])} images, {len(gt['annotations'])} objects, {len(dets)} detections; best of {repeat}")
    rows = {}
    for backend in BACKENDS:
        t_eval, result = best_of(repeat, lambda b=backend: evaluate(gt, dets, b))
        os.environ["HARNESS_COCO_BACKEND"] = backend
        t_score, _ = best_of(repeat, lambda: score(refs_path, preds_path))
        rows[backend] = (t_eval, t_score, result)
        print(f"{result.backend:<24} evaluate {t_eval:7.3f} s   score {t_score:7.3f} s   AP {result['AP']:.4f}")
    (ref_eval, ref_score, ref), (fast_eval, fast_score, fast) = rows["pycocotools"], rows["faster-coco-eval"]
    ratios = f"evaluate {ref_eval / fast_eval:.1f}x, score {ref_score / fast_score:.1f}x"
    print(f"ratio pycocotools / faster-coco-eval: {ratios}; the 12 numbers agree (1e-9): {agree(ref, fast)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        refs_path, preds_path = Path(tmp) / "instances_val2017.json", Path(tmp) / "results.json"
        refs = references(args.images, rng)
        refs_path.write_text(json.dumps(refs))
        preds_path.write_text(json.dumps(detections(refs, rng)))
        compare(refs_path, preds_path, args.repeat)


if __name__ == "__main__":
    main()
