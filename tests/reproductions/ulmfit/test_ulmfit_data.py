"""ULMFiT's data on the budget corpora: the vocabulary file, texts to ids as the LM corpus is tokenised, variable-length
BPTT windows that walk the stream in order, per-run few-label subsets, Section 5's held-out split."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

from harness.errors import HarnessError
from reproductions.ulmfit.data import (
    SPECIALS,
    LMStreamDataModule,
    StreamWindows,
    TextToIds,
    TokenizedTextDataModule,
    Vocabulary,
    held_out,
    prepare_smoke,
    vocabulary_path,
)
from tasks.text_classification.data import Example


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ulmfit-data")
    prepare_smoke(root, max_vocab=60)
    return root


def test_vocabulary_has_the_specials_then_the_most_frequent_tokens(corpora: Path) -> None:
    vocab = Vocabulary(vocabulary_path(corpora, 60))
    assert len(vocab) == 60 and tuple(vocab.itos[:3]) == SPECIALS
    assert vocab.encode(["no-such-token"]) == [vocab.stoi["<unk>"]]
    # a text is tokenised as debian-lm was (WikiText conventions), each paragraph followed by <eos>
    ids = vocab.encode_text(vocab.itos[5] + "-" + vocab.itos[6] + "\\n" + vocab.itos[7])
    assert ids == [
        vocab.stoi[vocab.itos[5]],
        vocab.stoi.get("@-@", 2),
        vocab.stoi[vocab.itos[6]],
        1,
        vocab.stoi[vocab.itos[7]],
        1,
    ]


def test_a_file_without_the_specials_is_refused(tmp_path: Path) -> None:
    (tmp_path / "vocab.txt").write_text("the\nof\n")
    with pytest.raises(HarnessError, match="starts with the lines <pad>, <eos>, <unk>"):
        Vocabulary(tmp_path / "vocab.txt")


def test_texts_become_right_padded_ids_and_lengths(corpora: Path) -> None:
    vocab = Vocabulary(vocabulary_path(corpora, 60))
    word = vocab.itos[5]
    ids, lengths = TextToIds(vocab)([word, f"{word} {word} {word}"])
    assert lengths.tolist() == [2, 4] and ids[0, 2:].tolist() == [0, 0]
    back, _ = TextToIds(vocab, backwards=True, max_tokens=2)([f"{word} {vocab.itos[6]} {word}"])
    assert back.tolist() == [[1, vocab.stoi[word]]]  # the last two tokens, read right to left


def test_variable_bptt_windows_cover_the_stream_in_order() -> None:
    windows = StreamWindows(torch.arange(1000), rows=4, bptt=20, variable=True, seed=1)
    batches = list(windows)
    lengths = {inputs.shape[1] for inputs, _ in batches}
    assert len(lengths) > 3 and min(lengths) >= 5  # lengths vary around bptt
    inputs = torch.cat([i for i, _ in batches], dim=1)
    targets = torch.cat([t for _, t in batches], dim=1)
    assert torch.equal(inputs, torch.arange(1000).view(4, 250)[:, :-1]) and torch.equal(targets, inputs + 1)
    assert [b[0].shape for b in list(windows)] != [b[0].shape for b in batches]  # a new epoch draws new lengths


def test_lm_module_reads_a_classification_corpus_as_a_stream(corpora: Path) -> None:
    module = LMStreamDataModule(corpora, corpus="wordnet-lexname", max_vocab=60, batch_size=2, bptt=8, eval_tokens=30)
    module.verify()
    module.setup()
    assert len(module.ids["test"]) == 30 and module.data_hash
    inputs, targets = next(iter(module.test_dataloader()))
    assert inputs.shape == (1, 8) and inputs[0, 0] == 1 and torch.equal(inputs[0, 1:], targets[0, :-1])


def test_run_seed_draws_the_few_label_subset(corpora: Path) -> None:
    def subset(seed: int) -> list[str]:
        pl.seed_everything(seed)
        module = TokenizedTextDataModule(
            corpora, corpus="wordnet-lexname", max_vocab=60, per_class=1, subset_seed="run"
        )
        module.setup()
        return [example.id for example in module.train_examples]

    assert subset(0) == subset(0) and subset(0) != subset(1)


def test_held_out_is_a_fraction_of_every_class() -> None:
    examples = [Example(str(i), "x", i % 2) for i in range(40)]
    held = held_out(examples, 0.1)
    assert len(held) == 4 and {int(i) % 2 for i in held} == {0, 1}


def test_the_ulmfit_scheme_reads_with_the_rule_based_tokenizer(corpora: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(corpora)  # the tokenizer artifact goes to results/tokenizers/ here
    module = LMStreamDataModule(corpora, corpus="debian-lm", scheme="ulmfit", max_vocab=80, batch_size=2, bptt=8)
    module.setup()  # stage a writes the ulmfit-vocab artifact from the corpus's training file
    vocab = module.vocab
    assert vocabulary_path(corpora, 80, "ulmfit").is_file() and vocab.scheme == "ulmfit" and len(vocab) <= 80
    assert vocab.itos[:4] == ["xxunk", "xxpad", "xxbos", "xxeos"] and module.ids["train"][0] == vocab.stoi["xxbos"]
    ids, lengths = TextToIds(vocab)(["The cat", "the cat sat on a cat"])
    assert ids[0, :2].tolist() == [vocab.stoi["xxbos"], vocab.stoi["xxmaj"]] and ids[0, -1] == vocab.pad_id == 1
    assert set(module.record_artifacts) and all(Path(p).is_file() for p in module.record_artifacts.values() if "/" in p)


@pytest.mark.parametrize("backwards", [False, True])
def test_lm_predictions_rescore_to_the_metric_forward_and_backward(
    corpora: Path, tmp_path: Path, backwards: bool
) -> None:
    """The test stream as scored (over the vocabulary) is written in WikiText's layout; a backward model's targets,
    kept from the stream's end, are written in the file's order; the official scorer gives the metric's numbers."""
    from reproductions.ulmfit.system import StreamPerplexity
    from tasks.language_modeling.score import score_perplexity

    module = LMStreamDataModule(corpora, corpus="wordnet-lexname", max_vocab=60, bptt=8, backwards=backwards)
    module.setup()
    metric = StreamPerplexity()
    for inputs, targets in module.test_dataloader():
        metric.update(-torch.rand(targets.shape, generator=torch.Generator().manual_seed(len(inputs[0]))), targets)
    scoring = module.scoring(0, tmp_path)
    scored = score_perplexity(scoring.references, metric.write_predictions(tmp_path, scoring)["predictions"])
    assert scoring.task == "debian-lm"
    assert scored == pytest.approx(metric.counts(), rel=1e-12)


def test_a_stream_cut_inside_a_line_cannot_be_written(corpora: Path, tmp_path: Path) -> None:
    module = LMStreamDataModule(corpora, corpus="wordnet-lexname", max_vocab=60, bptt=8, eval_tokens=30)
    module.setup()
    assert module.ids["test"][-1] != module.vocab.eos_id  # the fixture's 30th token is inside a line
    with pytest.raises(HarnessError, match=r"wiki.test.tokens: the scored stream does not end with <eos>"):
        module.scoring(0, tmp_path)


def test_reversing_a_batch_gives_what_the_backward_data_module_serves(corpora: Path) -> None:
    """The ensemble reads the forward batches and reverses each document for its backward classifier."""
    from reproductions.ulmfit.model import reverse_documents

    vocab = Vocabulary(vocabulary_path(corpora, 60))
    texts = ["the quiet river", "a bright lantern that covers the harbour ; again", ""]
    ids, lengths = TextToIds(vocab, max_tokens=6)(texts)
    backward, backward_lengths = TextToIds(vocab, backwards=True, max_tokens=6)(texts)
    assert torch.equal(lengths, backward_lengths) and (ids == vocab.pad_id).any()
    assert torch.equal(reverse_documents(ids, lengths, vocab.pad_id), backward)
