"""The data modules over the built corpora: LM windows, few-label subsets by seed, data hashes (tasks.debian_corpora.data)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from tasks.debian_corpora.data import (
    DebianLMDataModule,
    DebianTextDataModule,
    build_vocabulary,
    per_class_subset,
    read_tokens,
)


def test_token_stream_adds_eos_per_line(tmp_path: Path) -> None:
    path = tmp_path / "wiki.test.tokens"
    path.write_text(" \n = Title = \n \n the cat sat \n", encoding="utf-8")
    assert read_tokens(path) == ["<eos>", "=", "Title", "=", "<eos>", "<eos>", "the", "cat", "sat", "<eos>"]
    assert list(build_vocabulary(["b", "a", "b"])) == ["b", "a", "<eos>", "<unk>"]  # by count, then token


def test_lm_module_serves_shifted_windows_and_the_corpus_hash(built: Path) -> None:
    module = DebianLMDataModule(built / "debian-lm", batch_size=4, bptt=5)
    module.verify()
    module.setup()
    inputs, targets = next(iter(module.train_dataloader()))
    assert inputs.shape == targets.shape == (4, 5) and inputs.dtype == torch.long
    assert torch.equal(inputs[:, 1:], targets[:, :-1])
    stream = module.ids["train"]
    row = len(stream) // 4
    assert torch.equal(inputs[1], stream[row : row + 5]) and torch.equal(targets[1], stream[row + 1 : row + 6])
    assert module.vocab_size == len(module.vocab) and module.vocab["<eos>"] == 0  # the most frequent token
    assert module.data_hash == json.loads((built / "debian-lm" / "corpus.json").read_text())["data_hash"]


def test_lm_test_loader_predicts_every_token_once_in_order(built: Path) -> None:
    module = DebianLMDataModule(built / "debian-lm", bptt=7)
    module.setup()
    windows = list(module.test_dataloader())
    inputs = torch.cat([x for x, _ in windows], dim=1)[0]
    targets = torch.cat([y for _, y in windows], dim=1)[0]
    assert torch.equal(targets, module.ids["test"]) and windows[0][0][0, 0] == module.vocab["<eos>"]
    assert torch.equal(inputs[1:], targets[:-1])


def test_train_token_cap_keeps_the_whole_vocabulary(built: Path) -> None:
    full, capped = DebianLMDataModule(built / "debian-lm"), DebianLMDataModule(built / "debian-lm", train_tokens=100)
    full.setup(), capped.setup()
    assert len(capped.ids["train"]) == 100 and capped.vocab == full.vocab and capped.data_hash == full.data_hash


def test_lm_module_missing_file_names_it(built: Path, tmp_path: Path) -> None:
    (tmp_path / "wiki.train.tokens").write_bytes((built / "debian-lm" / "wiki.train.tokens").read_bytes())
    with pytest.raises(HarnessError, match=r"wiki\.valid\.tokens: missing"):
        DebianLMDataModule(tmp_path).verify()


@pytest.mark.parametrize("corpus", ["wordnet-lexname", "fortune-category"])
def test_per_class_subsets_have_n_per_class_and_nest(built: Path, corpus: str) -> None:
    full = DebianTextDataModule(built / corpus)
    full.setup()
    counts = {c: sum(e.label == c for e in full.train_examples) for c in range(full.num_classes)}
    for n in (1, 3):
        module = DebianTextDataModule(built / corpus, per_class=n, subset_seed=7)
        module.setup()
        got = {c: sum(e.label == c for e in module.train_examples) for c in range(module.num_classes)}
        assert got == {c: min(n, count) for c, count in counts.items()}
    small, large = (DebianTextDataModule(built / corpus, per_class=n, subset_seed=7) for n in (1, 3))
    small.setup(), large.setup()
    assert {e.id for e in small.train_examples} <= {e.id for e in large.train_examples}
    assert len({small.data_hash, large.data_hash, full.data_hash}) == 3


def test_subset_depends_on_seed_not_order() -> None:
    items = [(str(i), str(i % 3)) for i in range(60)]
    chosen = per_class_subset(items, 4, seed=0)
    assert chosen == per_class_subset(list(reversed(items)), 4, seed=0)
    assert len(chosen) == 12 and chosen != per_class_subset(items, 4, seed=1)
    with pytest.raises(HarnessError, match="per_class must be at least 1"):
        per_class_subset(items, 0)


def test_text_module_batches_and_subset_file(built: Path, tmp_path: Path) -> None:
    module = DebianTextDataModule(built / "fortune-category", batch_size=4, per_class=2, subset_file=tmp_path / "l.txt")
    module.verify()
    module.setup()
    texts, labels = next(iter(module.test_dataloader()))
    assert len(texts) == 4 and labels.dtype == torch.long
    assert len((tmp_path / "l.txt").read_text().splitlines()) == 6
    assert module.test_ids()[:2] == ["0", "1"]
