"""The training-time top-k metric agrees with the official-format scorer on the same predictions."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tasks.imagenet.metric import accuracy_metrics
from tasks.imagenet.score import score


def test_metric_agrees_with_scorer(tmp_path: Path) -> None:
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(37, 12, generator=generator)
    labels = torch.randint(0, 12, (37,), generator=generator)
    metrics = accuracy_metrics(12, prefix="test/")
    for chunk in range(0, 37, 10):  # accumulated over batches, computed once
        metrics.update(logits[chunk : chunk + 10], labels[chunk : chunk + 10])
    measured = {k.removeprefix("test/"): float(v) for k, v in metrics.compute().items()}
    guesses = logits.topk(5, dim=1).indices
    (tmp_path / "refs.csv").write_text("id,label\n" + "".join(f"{i},{int(y)}\n" for i, y in enumerate(labels)))
    rows = "".join(f"{i}," + ",".join(str(int(g)) for g in row) + "\n" for i, row in enumerate(guesses))
    (tmp_path / "preds.csv").write_text("id,prediction,p2,p3,p4,p5\n" + rows)
    scored = score(tmp_path / "refs.csv", tmp_path / "preds.csv")
    assert measured == pytest.approx(scored, abs=1e-4)
