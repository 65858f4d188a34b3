"""Perplexity and accuracy scorers of the Debian corpora, and the perplexity metric (tasks.debian_corpora.score, .metric)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from tasks.debian_corpora.fixtures import EXAMPLE_LOG_PROBS, example
from tasks.debian_corpora.metric import TokenPerplexity
from tasks.debian_corpora.score import reference_stream, score_classification, score_perplexity, write_log_probs


def test_example_scores_to_e_squared(tmp_path: Path) -> None:
    files = example(tmp_path, "debian-lm")
    result = score_perplexity(files["references"], files["predictions"])
    assert result == {"perplexity": pytest.approx(math.e**2), "nll": pytest.approx(2.0), "tokens": 5.0}


def test_uniform_model_has_perplexity_of_its_vocabulary(built: Path, tmp_path: Path) -> None:
    references = built / "debian-lm" / "wiki.test.tokens"
    tokens = [token for _, token in reference_stream(references)]
    predictions = write_log_probs(tmp_path / "p.tsv", tokens, [-math.log(1000)] * len(tokens))
    result = score_perplexity(built / "debian-lm", predictions)  # the folder: its wiki.test.tokens
    assert result["perplexity"] == pytest.approx(1000.0) and result["tokens"] == len(tokens)


def test_metric_agrees_with_the_scorer(tmp_path: Path) -> None:
    files = example(tmp_path, "debian-lm")
    metric = TokenPerplexity()
    log_probs = torch.tensor([p for _, p in EXAMPLE_LOG_PROBS] + [-9.0])
    metric.update(log_probs[:2])
    metric.update(log_probs[2:], mask=torch.tensor([True, True, True, False]))
    assert metric.counts() == pytest.approx(score_perplexity(files["references"], files["predictions"]))
    assert float(metric.compute()) == pytest.approx(math.e**2)


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("the\t-1\ncat\t-3\n<eos>\t-0.5\nsat\t-4\n", r"p\.tsv: 4 lines for the 5 tokens"),
        ("the\t-1\ncat\t-3\n<eos>\t-0.5\nsat\t-4\n<eos>\t-1\nextra\t-1\n", r"p\.tsv:6: more lines than the 5 tokens"),
        ("the\t-1\ndog\t-3\n", r"p\.tsv:2: token 'dog', but token 2 of .*wiki\.test\.tokens \(line 1\) is 'cat'"),
        ("the\t-1\ncat\tnan\n", r"p\.tsv:2: expected '<token><TAB><log-probability>'"),
        ("the\t0.5\n", r"p\.tsv:1: expected .* <= 0, found 'the\\t0\.5'"),
        ("the -1\n", r"p\.tsv:1: expected"),
        ("", r"p\.tsv: 0 lines for the 5 tokens"),
    ],
)
def test_malformed_predictions_give_one_clear_line(tmp_path: Path, lines: str, message: str) -> None:
    references = example(tmp_path, "debian-lm")["references"]
    predictions = tmp_path / "p.tsv"
    predictions.write_text(lines, encoding="utf-8")
    with pytest.raises(HarnessError, match=message) as caught:
        score_perplexity(references, predictions)
    assert "\n" not in str(caught.value)


def test_missing_references_say_how_to_build(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"wiki\.test\.tokens: missing \(build the corpus"):
        score_perplexity(tmp_path, tmp_path / "p.tsv")


def test_classification_scored_against_the_corpus_folder(built: Path, tmp_path: Path) -> None:
    from tasks.debian_corpora.data import read_classification

    test = read_classification(built / "fortune-category", "test")
    rows = ["id,prediction"] + [f"{e.id},{e.label if i else (e.label + 1) % 3}" for i, e in enumerate(test)]
    predictions = tmp_path / "predictions.csv"
    predictions.write_text("\n".join(rows) + "\n", encoding="utf-8")
    result = score_classification(built / "fortune-category", predictions)
    assert result["accuracy"] == pytest.approx(100 * (len(test) - 1) / len(test))
    assert result["error"] == pytest.approx(100 - result["accuracy"])
    predictions.write_text("id,prediction\n999,1\n", encoding="utf-8")
    with pytest.raises(HarnessError, match="999"):
        score_classification(built / "fortune-category", predictions)


def test_kept_predictions_of_the_test_loader_rescore_to_the_metric(built: Path, tmp_path: Path) -> None:
    """A model giving every token probability 1/1000, fed to the metric window by window as a system would."""
    from tasks.debian_corpora.data import DebianLMDataModule

    module = DebianLMDataModule(built / "debian-lm", bptt=9)
    module.setup()
    metric = TokenPerplexity()
    for _, targets in module.test_dataloader():
        metric.update(torch.full(targets.shape, -math.log(1000)), targets)
    written = metric.write_predictions(tmp_path, module.scoring(0, tmp_path))
    scored = score_perplexity(module.scoring(0, tmp_path).references, written["predictions"])
    assert scored == pytest.approx(metric.counts()) and scored["perplexity"] == pytest.approx(1000.0)


def test_metric_without_targets_keeps_nothing_to_write(tmp_path: Path) -> None:
    from harness.predictions import Scoring

    metric = TokenPerplexity()
    metric.update(torch.tensor([-1.0]))
    with pytest.raises(HarnessError, match="no predictions kept"):
        metric.write_predictions(tmp_path, Scoring("debian-lm", tmp_path / "wiki.test.tokens", range(1), ["a"]))


def test_classification_oracle_scores_perfect_through_the_modules_scoring(built: Path, tmp_path: Path) -> None:
    from tasks.debian_corpora.data import DebianTextDataModule
    from tasks.imagenet.metric import accuracy_metrics

    module = DebianTextDataModule(built / "wordnet-lexname", batch_size=5)
    module.setup()
    metric = accuracy_metrics(module.num_classes)
    for _, labels in module.test_dataloader():
        metric.update(torch.nn.functional.one_hot(labels, module.num_classes).float(), labels)
    scoring = module.scoring(0, tmp_path)
    assert scoring.task == "wordnet-lexname"
    written = metric.write_predictions(tmp_path, scoring)
    assert score_classification(scoring.references, written["predictions"])["accuracy"] == 100.0
