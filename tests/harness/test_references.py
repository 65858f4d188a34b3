"""The trivial references the harness runs itself (harness.references): the floor a budget baseline must clear."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from harness.references import collect, predict, scores


def test_the_majority_class_is_the_most_frequent_training_label_ties_to_the_smallest() -> None:
    (pred,) = predict("majority", [], np.array([2, 1, 2, 1, 0]), [[]], [4])
    assert pred.tolist() == [1, 1, 1, 1]
    assert scores(np.array([1, 1, 2]), np.array([1, 0, 2])) == pytest.approx(
        {"top1": 200 / 3, "accuracy": 200 / 3, "error": 100 / 3}
    )


def test_the_linear_reference_fits_dense_inputs_and_bags_of_tokens() -> None:
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.normal(size=(200, 5)), dtype=torch.float32)
    y = (x[:, 0] > 0).long()
    train_x, train_y = collect([(x[:100], y[:100])], "dense", True)
    test_x, test_y = collect([(x[100:], y[100:])], "dense", True)
    (pred,) = predict("linear", train_x, train_y, [test_x], [len(test_y)])
    assert scores(pred, test_y)["accuracy"] > 90  # a separable first feature
    texts = (["good fine great"] * 20 + ["bad awful poor"] * 20, torch.tensor([1] * 20 + [0] * 20))
    bags, labels = collect([texts], "text", True)
    assert bags[0] == Counter({"good": 1, "fine": 1, "great": 1})
    (pred,) = predict(
        "linear", bags, labels, [collect([(["great good", "poor"], torch.tensor([1, 0]))], "t", True)[0]], [2]
    )
    assert pred.tolist() == [1, 0]
    ids, _ = collect([{"input_ids": torch.tensor([[5, 6, 0]]), "label": torch.tensor([1])}], "ids", True)
    assert ids == [Counter({5: 1, 6: 1})]  # padding (0) left out
    # an RNN's ((ids, lengths), labels): each row's ids up to its length, whatever the padding id
    padded = (torch.tensor([[7, 8, 8, 1], [9, 1, 1, 1]]), torch.tensor([3, 1]))
    rows, _ = collect([(padded, torch.tensor([0, 1]))], "rnn", True)
    assert rows == [Counter({7: 1, 8: 2}), Counter({9: 1})]


def test_data_without_labels_in_its_batches_is_an_error_naming_the_module() -> None:
    with pytest.raises(HarnessError, match="Odd: its batches are neither"):
        collect([torch.zeros(3)], "Odd", False)


def test_harness_reference_records_the_toy_papers_floor_on_its_own_data(toy) -> None:
    from harness.records import read_record
    from harness.references import run_reference
    from harness.registry import reproduction
    from harness.runner import load_config, resolve_config

    repro = reproduction("toy-paper")
    resolved = resolve_config(load_config(repro.config_path("budget"), "budget"), "budget", None, None, None)
    (majority,) = [read_record(p) for p in run_reference(repro, resolved, "majority", toy / "runs")]
    (linear,) = [read_record(p) for p in run_reference(repro, resolved, "linear", toy / "runs")]
    assert (majority.model, majority.tier, majority.dataset, majority.split) == ("reference-majority", "budget",
                                                                                 "digits", "test")  # fmt: skip
    assert majority.metrics["accuracy"] < 20 < 80 < linear.metrics["accuracy"]  # digits: 10 classes; linear ~95%
    assert majority.metrics["error"] == pytest.approx(100 - majority.metrics["accuracy"])
    again = run_reference(repro, resolved, "majority", toy / "runs")
    assert [p.name for p in again] == [f"{majority.run_id}.json"]  # the same reference is found, not written twice


def test_the_unigram_reference_is_add_one_over_the_training_words_scored_by_wikitexts_scorer(tmp_path) -> None:
    import math

    from harness.references import unigram_log_probs, unigram_scores

    (tmp_path / "wiki.train.tokens").write_text("a b\na\n", encoding="utf-8")  # a 2, b 1, <eos> 2: 5 words, 3 kinds
    (tmp_path / "wiki.test.tokens").write_text("a c\n", encoding="utf-8")
    tokens, log_probs = unigram_log_probs(tmp_path / "wiki.train.tokens", tmp_path / "wiki.test.tokens")
    assert tokens == ["a", "c", "<eos>"]
    assert log_probs == pytest.approx([math.log(3 / 9), math.log(1 / 9), math.log(3 / 9)])
    resolved = {"data": {"init_args": {"data_root": str(tmp_path)}}, "evaluate": [{"dataset": "debian-lm"}]}
    (metrics,) = unigram_scores(object(), resolved, tmp_path / "out")
    assert metrics["perplexity"] == pytest.approx(math.exp(-sum(log_probs) / 3)) == metrics["word_perplexity"]
    assert metrics["tokens"] == 3.0
    with pytest.raises(HarnessError, match="no training split in the WikiText-103 layout"):
        unigram_scores(object(), {"data": {"init_args": {"data_root": str(tmp_path / "none")}}, "evaluate": [{}]},
                       tmp_path / "out")  # fmt: skip
