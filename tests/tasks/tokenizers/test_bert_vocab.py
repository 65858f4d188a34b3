"""A released BERT ``vocab.txt`` read into the WordPiece tokenizer (``tasks.tokenizers.hf.bert_wordpiece``), on a tiny
vocabulary file the test writes in the release's layout (specials at their released lines' order, ``##`` pieces)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.tokenizers.hf import bert_wordpiece

PIECES = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "!", ",", ".", "the", "cafe", "un", "##aff",
          "##able", "hello", "world", "Hello", "##s", "naive", "文"]  # fmt: skip


@pytest.fixture
def vocab(tmp_path: Path) -> Path:
    path = tmp_path / "vocab.txt"
    path.write_text("".join(f"{piece}\n" for piece in PIECES), encoding="utf-8")
    return path


def test_uncased_basic_tokenisation_and_wordpiece(vocab: Path) -> None:
    tok = bert_wordpiece(vocab, lowercase=True)
    enc = tok.encode("Héllo,\tWORLD! The Café unaffable naïve worlds 文x")
    assert enc.tokens == ["[CLS]", "hello", ",", "world", "!", "the", "cafe", "un", "##aff", "##able", "naive", "world",
                          "##s", "文", "[UNK]", "[SEP]"]  # fmt: skip
    assert enc.ids == [PIECES.index(t) for t in enc.tokens]  # ids are the file's line numbers
    assert (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id) == (0, 2, 3, 4)
    assert enc.offsets[1] == (0, 5) and enc.offsets[7:10] == [(23, 25), (25, 28), (28, 32)]  # into the raw text
    assert tok.vocab_size == len(PIECES)
    assert (
        tok.decode(enc.ids) == "hello, world! the cafe unaffable naive worlds 文"
    )  # special tokens, [UNK] too, left out


def test_cased_keeps_case_and_accents(vocab: Path) -> None:
    tok = bert_wordpiece(vocab, lowercase=False)
    assert tok.encode("Hello hello Café", special_tokens=False).tokens == ["Hello", "hello", "[UNK]"]


def test_pairs_and_batches_use_bert_layout(vocab: Path) -> None:
    tok = bert_wordpiece(vocab)
    pair = tok.encode_pair("hello", "the world")
    assert pair.tokens == ["[CLS]", "hello", "[SEP]", "the", "world", "[SEP]"]
    assert pair.type_ids == [0, 0, 0, 1, 1, 1]
    batch = tok.encode_batch(["hello", "the world !"])
    assert batch["input_ids"].tolist() == [[3, 14, 4, 0, 0], [3, 9, 15, 6, 4]]  # [PAD] = 0


def test_a_bad_vocabulary_is_named(tmp_path: Path) -> None:
    repeated = tmp_path / "repeated.txt"
    repeated.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\nthe\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=r"repeated.txt:6: 'the' repeats line 5"):
        bert_wordpiece(repeated)
    bare = tmp_path / "bare.txt"
    bare.write_text("the\nworld\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=r"bare.txt: not a BERT vocabulary, no \[PAD\], \[UNK\], \[CLS\], \[SEP\]"):
        bert_wordpiece(bare)
    with pytest.raises(HarnessError, match="missing.txt: cannot read"):
        bert_wordpiece(tmp_path / "missing.txt")
