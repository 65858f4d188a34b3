"""ULMFiT's three stages as a chain of runs on the tiny fixture corpora: `harness run` on the classifier stage runs
LM pre-training and LM fine-tuning first, each child's record names its parent, and every stage's kept predictions
re-score to its metrics. Slow: three fits (about 20 s on two idle cores)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import runner
from harness.records import read_record
from harness.rescore import rescore
from tasks.tokenizers.artifacts import SHA_ARTIFACT

CONFIGS = Path(__file__).parents[3] / "reproductions" / "ulmfit" / "configs"


@pytest.mark.slow
def test_three_stage_smoke_chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "results" / "runs"
    [classifier_path] = runner.run("ulmfit", "smoke", config_path=CONFIGS / "smoke-classifier.yaml", runs_dir=runs)
    records = [read_record(path) for path in runs.glob("*.json")]
    classifier = read_record(classifier_path)
    [lm_finetune] = [r for r in records if r.run_id in classifier.parents]
    [pretrain] = [r for r in records if r.run_id in (lm_finetune.parents or [])]
    assert (pretrain.dataset, lm_finetune.dataset, classifier.dataset) == (
        "debian-lm",
        "wordnet-lexname",
        "wordnet-lexname",
    )
    assert {"perplexity"} <= set(pretrain.metrics) and {"error", "accuracy"} <= set(classifier.metrics)
    assert classifier.artifacts[SHA_ARTIFACT] == lm_finetune.artifacts[SHA_ARTIFACT]  # one tokenizer, cited by both
    for record in (pretrain, lm_finetune, classifier):  # every stage's kept predictions give its metrics back
        rows = rescore(runs / f"{record.run_id}.json")
        assert {row["metric"] for row in rows} == set(record.metrics) and all(row["agrees"] for row in rows)
