"""Toy scorer: CSV lines ``id,label`` against ``id,prediction``."""

import csv
from pathlib import Path

from harness.errors import HarnessError


def score(references: Path, predictions: Path) -> dict[str, float]:
    gold = {row[0]: row[1] for row in csv.reader(references.open())}
    pred = {row[0]: row[1] for row in csv.reader(predictions.open())}
    if set(pred) - set(gold):
        raise HarnessError(f"{predictions}: ids not in the references")
    accuracy = 100 * sum(pred.get(k) == v for k, v in gold.items()) / len(gold)
    return {"accuracy": accuracy, "error": 100 - accuracy}
