"""XLNet's data pieces: parallel in-order streams (the memory's context), word ends of SentencePiece pieces (the
word-level perplexity), XLNet's input layout with ``<cls>`` last, and segments counted from ``<sep>``; the released
``spiece.model``'s special ids and layout (left padding) on a tiny model trained with the release's symbols."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from reproductions.xlnet.data import (
    CONTROL,
    ChoiceInputs,
    PairEncoder,
    TextInputs,
    XLNetGlueDataModule,
    left_aligned,
    parallel_streams,
    release_text,
    released_tokenizer,
)
from reproductions.xlnet.system import last_index, segments_from_sep
from tasks.language_modeling.stream import encode_lines
from tasks.tokenizers import XLNET_TEMPLATE

TEXTS = [
    "the cat sat on the mat", "a dog ran in the park", "the park is green and the mat is red",
    "cats and dogs sat in the green park", "on the red mat a cat ran",
] * 4  # fmt: skip


@pytest.fixture(scope="module")
def tokenizer():  # noqa: ANN201
    from tasks.tokenizers.spm import train_sentencepiece

    return train_sentencepiece(TEXTS, 30, control_symbols=CONTROL, template=XLNET_TEMPLATE)


def test_parallel_streams_continue_row_by_row() -> None:
    rows = parallel_streams(list(range(100)), streams=3, seq_len=4)  # 33 pieces a stream, 8 segments of 4
    assert rows.shape == (8 * 3, 4)
    batches = rows.view(8, 3, 4)
    for k in range(1, 8):
        assert torch.equal(batches[k, :, 0], batches[k - 1, :, -1] + 1)  # row b of batch k continues row b of k-1
    assert batches[0, :, 0].tolist() == [0, 32, 64]


def test_word_ends_mark_each_words_last_piece(tokenizer) -> None:  # noqa: ANN001
    ids, ends = encode_lines(tokenizer, ["the cat sat", "cats ran"])
    assert len(ids) == len(ends) and sum(ends) == 3 + 1 + 2 + 1  # words and one </s> per line
    assert ids[-1] == tokenizer.eos_token_id and ends[-1]


def test_pair_encoder_keeps_cls_last_within_max_length(tokenizer) -> None:  # noqa: ANN001
    encode = PairEncoder(tokenizer, 10)
    ids = encode(" ".join(TEXTS[:3]), TEXTS[3])
    assert len(ids) == 10 and ids[-1] == tokenizer.cls_token_id and ids.count(tokenizer.sep_token_id) == 2
    single = encode("the cat")
    assert single[-2:] == [tokenizer.sep_token_id, tokenizer.cls_token_id]


def test_segments_count_the_separators() -> None:
    ids = torch.tensor([[7, 8, 4, 9, 4, 3, 0]])  # A A <sep> B <sep> <cls> pad, <sep> = 4
    assert segments_from_sep(ids, 4).tolist() == [[0, 0, 0, 1, 1, 2, 2]]


# --- the released spiece.model: its special ids, XLNet's layout, left padding ---------------------------------------

RELEASE_CONTROL = ("<cls>", "<sep>", "<pad>", "<mask>", "<eod>")  # the release's spm_train control symbols, in order
RELEASE_USER = ("<eop>", ".", "(", ")", '"', "-", "–", "£", "€")  # and its user-defined symbols
PIECES = 40


@pytest.fixture(scope="module")
def spiece(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny SentencePiece model trained with the release's special symbols: ``<cls>`` 3 ... ``<eop>`` 8."""
    from tasks.tokenizers.spm import train_sentencepiece

    model = train_sentencepiece(TEXTS, PIECES, control_symbols=RELEASE_CONTROL, user_defined_symbols=RELEASE_USER)
    path = tmp_path_factory.mktemp("xlnet_cased") / "spiece.model"
    path.write_bytes(model.backend.content())
    return path


def test_released_spiece_has_the_releases_special_ids(spiece: Path) -> None:
    tokenizer = released_tokenizer(spiece, PIECES)
    ids = {token: tokenizer.backend.token_to_id(token) for token in ("<unk>", "<s>", "</s>", *RELEASE_CONTROL, "<eop>")}
    assert list(ids.values()) == list(range(9))
    assert (tokenizer.cls_token_id, tokenizer.sep_token_id) == (3, 4)
    with pytest.raises(HarnessError, match=f"spiece.model: {PIECES} pieces; the model has 32000"):
        released_tokenizer(spiece)


def test_release_text_cleans_as_the_release() -> None:
    assert release_text("``Café''  au   lait<br />naïve") == '"Cafe" au lait naive'


def test_left_aligned_rolls_padding_to_the_front() -> None:
    batch = {"input_ids": torch.tensor([[5, 6, 4, 3, 0], [7, 4, 3, 0, 0]]), "labels": torch.tensor([1, 0])}
    batch["attention_mask"] = (batch["input_ids"] > 0).long()
    batch["offsets"] = torch.arange(20).view(2, 5, 2)
    out = left_aligned(batch)
    assert out["input_ids"].tolist() == [[0, 5, 6, 4, 3], [0, 0, 7, 4, 3]]
    assert out["attention_mask"].tolist() == [[0, 1, 1, 1, 1], [0, 0, 1, 1, 1]]
    assert out["offsets"][1, 2].tolist() == batch["offsets"][1, 0].tolist() and out["labels"] is batch["labels"]
    assert last_index(out["attention_mask"]).tolist() == [4, 4] and last_index(batch["attention_mask"]).tolist() == [
        3,
        2,
    ]


def test_glue_batches_are_the_releases_layout(spiece: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tasks.glue.fixtures import write_tiny_glue_data

    monkeypatch.chdir(tmp_path)  # the tokenizer is stored under results/tokenizers/
    module = XLNetGlueDataModule(write_tiny_glue_data(tmp_path / "glue", "glue-rte"), "glue-rte", spiece=spiece,
                                 vocab=PIECES, max_length=512, batch_size=4)  # fmt: skip
    module.setup()
    batch = next(iter(module.test_dataloader()))
    ids, mask = batch["input_ids"], batch["attention_mask"]
    assert (ids[:, -2:] == torch.tensor([4, 3])).all() and (mask[:, -1] == 1).all()  # ... <sep> <cls>, at the end
    assert (mask.diff(dim=1) >= 0).all() and (mask == 0).any()  # padding only in front
    segments = segments_from_sep(ids, 4)
    for row, m in zip(segments, mask.bool(), strict=True):
        real = row[m].tolist()
        assert real[-1] == 2 and real.count(0) >= 2 and real.count(1) >= 2 and real == sorted(real)  # A, B, <cls>
    assert module.record_artifacts["tokenizer_sha256"] == module._encode.tokenizer.digest


def test_race_and_text_inputs_put_cls_last(spiece: Path) -> None:
    tokenizer = released_tokenizer(spiece, PIECES)
    choices = ChoiceInputs(tokenizer, 20, release_text)(["the cat sat"], ["who sat?"], [["cat", "a dog ran", "x", "y"]])
    assert choices["input_ids"].shape[:2] == (1, 4) and (choices["input_ids"][..., -2:] == torch.tensor([4, 3])).all()
    assert (choices["token_type_ids"][..., -1] == 2).all()
    texts = TextInputs(tokenizer, 8, release_text)(["the cat sat on the mat in the park", "a dog"])
    assert texts["input_ids"].shape == (2, 8) and (texts["input_ids"][:, -2:] == torch.tensor([4, 3])).all()
    mask = texts["attention_mask"]
    assert mask[0].all() and mask[1, 0] == 0 and (mask.diff(dim=1) >= 0).all()


def test_left_padding_gives_the_same_summary_as_right_padding(monkeypatch: pytest.MonkeyPatch) -> None:
    from reproductions.xlnet.model import SIZES, XLNetConfig
    from reproductions.xlnet.system import XLNetTaskSystem

    monkeypatch.setitem(SIZES, "xlnet-tiny", XLNetConfig(vocab=40, dim=16, layers=2, heads=2, head_dim=8, inner=32))
    system = XLNetTaskSystem(model="xlnet-tiny", task="glue-rte").eval()
    right = {"input_ids": torch.tensor([[5, 6, 4, 7, 4, 3], [8, 4, 9, 4, 3, 0]]), "labels": torch.tensor([0, 1])}
    right["attention_mask"] = (right["input_ids"] > 0).long()
    left = left_aligned(right)
    with torch.no_grad():
        torch.testing.assert_close(system(left["input_ids"], left["attention_mask"], None),
                                   system(right["input_ids"], right["attention_mask"], None))  # fmt: skip
