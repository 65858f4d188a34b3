"""WikiText-103 and One Billion Word: reading the distributed layouts, the token streams the scorers count,
hand-computed perplexities, malformed prediction files, and a test loader's kept predictions re-scored."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from tasks.language_modeling.fixtures import example, write_tiny_lm1b, write_tiny_wikitext
from tasks.language_modeling.lm1b import Lm1bDataModule, heldout_shard, train_shard
from tasks.language_modeling.metric import TokenPerplexity
from tasks.language_modeling.score import lm1b_stream, score_lm1b, score_perplexity
from tasks.language_modeling.wikitext import WikiTextDataModule, read_tokens


@pytest.fixture(scope="module")
def wikitext(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_wikitext(tmp_path_factory.mktemp("wt") / "root")


@pytest.fixture(scope="module")
def lm1b(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_lm1b(tmp_path_factory.mktemp("lm1b") / "root")


def test_wikitext_layout_is_read_from_the_parent_folder_with_eos_per_line(wikitext: Path) -> None:
    module = WikiTextDataModule(wikitext, batch_size=2, bptt=5)
    assert module.data_root == wikitext / "wikitext-103"
    module.setup()
    lines = (wikitext / "wikitext-103" / "wiki.test.tokens").read_text(encoding="utf-8").splitlines()
    assert len(module.ids["test"]) == sum(len(line.split()) + 1 for line in lines)
    assert read_tokens(wikitext / "wikitext-103" / "wiki.test.tokens")[:6] == [
        "<eos>",
        "=",
        "Article",
        "0",
        "=",
        "<eos>",
    ]
    assert {"@,@", "@-@", "<unk>", "<eos>"} <= set(module.vocab)
    assert len(module.data_hash) == 64 and module.scoring(0, wikitext).task == "wikitext-103"


def test_debian_lm_is_the_same_module_under_its_own_task_id(wikitext: Path) -> None:
    from tasks.debian_corpora.data import DebianLMDataModule

    debian, wiki = DebianLMDataModule(wikitext / "wikitext-103"), WikiTextDataModule(wikitext)
    debian.setup(), wiki.setup()
    assert debian.vocab == wiki.vocab and debian.data_hash == wiki.data_hash
    assert debian.scoring(0, wikitext).task == "debian-lm"


def test_wikitext_example_scores_to_e_squared(tmp_path: Path) -> None:
    files = example(tmp_path, "wikitext-103")
    assert score_perplexity(**files) == pytest.approx({"perplexity": math.e**2, "nll": 2.0, "tokens": 5.0})


def test_lm1b_stream_counts_words_and_one_end_marker_per_sentence(tmp_path: Path) -> None:
    shard = tmp_path / "news.en.heldout-00000-of-00050"
    shard.write_text("The cat sat .\n\nIt rained\n", encoding="utf-8")
    assert [token for _, token in lm1b_stream(shard)] == ["The", "cat", "sat", ".", "</S>", "It", "rained", "</S>"]


def test_lm1b_example_scores_to_e_squared_with_an_unk_line(tmp_path: Path) -> None:
    files = example(tmp_path, "lm1b")
    assert score_lm1b(**files) == pytest.approx({"perplexity": math.e**2, "nll": 2.0, "tokens": 5.0})


def test_lm1b_unk_may_not_stand_for_the_end_marker(tmp_path: Path) -> None:
    files = example(tmp_path, "lm1b")
    files["predictions"].write_text("a\t-1\nzeppelin\t-1\n<UNK>\t-1\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=r"predictions\.tsv:3: token '<UNK>', but token 3 of .* is '</S>'"):
        score_lm1b(**files)


def test_lm1b_archive_folder_gives_heldout_shard_zero(lm1b: Path, tmp_path: Path) -> None:
    shard = lm1b / "1-billion-word-language-modeling-benchmark-r13output" / heldout_shard(0)
    tokens = [token for _, token in lm1b_stream(shard)]
    predictions = tmp_path / "p.tsv"
    predictions.write_text("".join(f"{t}\t{-math.log(10)}\n" for t in tokens), encoding="utf-8")
    assert score_lm1b(lm1b, predictions)["perplexity"] == pytest.approx(10.0)
    assert score_lm1b(lm1b / "1-billion-word-language-modeling-benchmark-r13output", predictions)["tokens"] == len(
        tokens
    )


def test_lm1b_module_reads_shards_maps_rare_words_to_unk_and_rescores(lm1b: Path, tmp_path: Path) -> None:
    module = Lm1bDataModule(lm1b, batch_size=2, bptt=6, train_shards=2)
    module.setup()
    assert module.shards()["train"] == [train_shard(1), train_shard(2)] and module.shards()["test"] == [
        heldout_shard(0)
    ]
    assert "zeppelin" not in module.vocab and module.ids["test"][1] == module.vocab["<UNK>"]
    inputs, targets = next(iter(module.train_dataloader()))
    assert inputs.shape == targets.shape == (2, 6) and torch.equal(inputs[:, 1:], targets[:, :-1])
    metric = TokenPerplexity()
    for _, window in module.test_dataloader():
        metric.update(torch.full(window.shape, -math.log(50.0)), window)
    written = metric.write_predictions(tmp_path, module.scoring(0, tmp_path))
    assert written["predictions"].read_text().splitlines()[1].startswith("<UNK>\t")
    scored = score_lm1b(module.scoring(0, tmp_path).references, written["predictions"])
    assert scored == pytest.approx(metric.counts()) and scored["perplexity"] == pytest.approx(50.0)


def test_lm1b_missing_shard_and_bad_arguments_are_named(lm1b: Path) -> None:
    with pytest.raises(HarnessError, match=r"news\.en-00003-of-00100: missing"):
        Lm1bDataModule(lm1b, train_shards=3).verify()
    with pytest.raises(HarnessError, match="valid_shard in 1..49"):
        Lm1bDataModule(lm1b, valid_shard=0)


def test_lm1b_missing_references_say_what_is_expected(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"news\.en\.heldout-00000-of-00050: missing \(the One Billion Word"):
        score_lm1b(tmp_path, tmp_path / "p.tsv")
