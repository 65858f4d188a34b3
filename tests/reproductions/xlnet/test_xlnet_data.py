"""XLNet's data pieces: parallel in-order streams (the memory's context), word ends of SentencePiece pieces (the
word-level perplexity), XLNet's input layout with ``<cls>`` last, and segments counted from ``<sep>``."""

from __future__ import annotations

import pytest
import torch

from reproductions.xlnet.data import CONTROL, PairEncoder, encode_lines, parallel_streams
from reproductions.xlnet.system import segments_from_sep
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
