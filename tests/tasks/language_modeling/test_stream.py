"""tasks.language_modeling.stream: test rows led by the token before them, padded and masked at the end; the words
the scorer counts; lines read without their newlines."""

from __future__ import annotations

from pathlib import Path

import torch

from tasks.language_modeling.stream import TokenRows, file_lines, line_words

EOS = 1


def test_each_row_is_led_by_the_token_before_it_and_the_last_is_padded() -> None:
    ids = [5, 6, 7, 8, 9, 10, 11]  # 7 tokens in rows of 3: the last row holds one
    ends = [False, True, True, False, True, False, True]
    rows = TokenRows(ids, ends, length=3, first=EOS)
    assert len(rows) == 3
    inputs, row_ends, mask = rows[0]
    assert inputs.tolist() == [EOS, 5, 6, 7] and row_ends.tolist() == [False, True, True] and mask.all()
    assert rows[1][0].tolist() == [7, 8, 9, 10]  # led by the last target of row 0
    inputs, row_ends, mask = rows[2]
    assert inputs.tolist() == [10, 11, 0, 0] and mask.tolist() == [True, False, False]
    targets = torch.cat([rows[i][0][1:] for i in range(len(rows))])
    assert targets[torch.cat([rows[i][2] for i in range(len(rows))])].tolist() == ids


def test_line_words_end_each_line_with_eos() -> None:
    assert line_words(["the cat", "", " a  dog "]) == ["the", "cat", "<eos>", "<eos>", "a", "dog", "<eos>"]


def test_file_lines_keep_a_last_line_without_newline(tmp_path: Path) -> None:
    path = tmp_path / "wiki.test.tokens"
    path.write_text("a b\n\nc\n", encoding="utf-8")
    assert file_lines(path) == ["a b", "", "c"]
    path.write_text("a b\nc", encoding="utf-8")
    assert file_lines(path) == ["a b", "c"]
