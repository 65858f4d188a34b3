"""A WikiText-layout corpus as one token stream, scored per word (GPT's and XLNet's pre-training data).

Each line's tokens (BPE symbols, SentencePiece pieces), then the tokenizer's end-of-sequence token, in file order
(:func:`encode_lines`); per token whether it ends one of the line's white-space-separated words, so a model's token
log-probabilities sum to the word-level ones the scorer counts (``<eos>`` a word of its own,
:mod:`tasks.language_modeling.score`). :class:`TokenRows` cuts the stream into test rows of ``T`` targets, each led
by the token before it.
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

import torch
from torch.utils.data import Dataset

from harness.errors import HarnessError
from tasks.language_modeling.score import EOS
from tasks.tokenizers import Tokenizer


def file_lines(path: Path) -> list[str]:
    """The lines of ``path`` without their newlines (a last line without one counts too)."""
    text = path.read_text(encoding="utf-8")
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def encode_lines(tokenizer: Tokenizer, lines: list[str], words: bool = True) -> tuple[list[int], list[bool]]:
    """The token stream of ``lines`` (each line's tokens, then the end-of-sequence token) and, with ``words``, per
    token whether it ends one of the line's white-space-separated words (the end token is a word of its own, as the
    scorer counts ``<eos>``): a token belongs to the word its first character lies in."""
    eos = tokenizer.eos_token_id
    ids: list[int] = []
    ends: list[bool] = []
    for number, line in enumerate(lines, start=1):
        encoding = tokenizer.encode(line, special_tokens=False)
        ids += [*encoding.ids, eos]
        if not words:
            continue
        starts = [match.start() for match in re.finditer(r"\S+", line)]
        owner = [bisect.bisect_right(starts, max(start, 0)) - 1 for start, _ in encoding.offsets]
        if sorted(set(owner)) != list(range(len(starts))):
            raise HarnessError(f"line {number}: {len(starts)} words but tokens for {len(set(owner))} of them")
        ends += [a != b for a, b in zip(owner, owner[1:], strict=False)] + [True] * bool(owner) + [True]
    return ids, ends


def line_words(lines: list[str]) -> list[str]:
    """The words the scorer counts in ``lines``: each line's white-space-separated words, then ``<eos>``."""
    return [word for line in lines for word in [*line.split(), EOS]]


class TokenRows(Dataset):
    """Row ``i``: ``(inputs (T+1,), word ends (T,), mask (T,))``; the targets are ``inputs[1:]``, stream tokens
    ``i*T .. (i+1)*T - 1``, led by the token before them (``first``, the end-of-sequence token, for the first row);
    the last row is padded, ``mask`` False there."""

    def __init__(self, ids: list[int], ends: list[bool], length: int, first: int) -> None:
        n = -(-len(ids) // length) * length
        self.targets = torch.zeros(n, dtype=torch.long)
        self.targets[: len(ids)] = torch.tensor(ids, dtype=torch.long)
        self.context = torch.cat([torch.tensor([first]), self.targets[:-1]])
        self.ends = torch.zeros(n, dtype=torch.bool)
        self.ends[: len(ids)] = torch.tensor(ends)
        self.mask = torch.arange(n) < len(ids)
        self.length = length

    def __len__(self) -> int:
        return len(self.targets) // self.length

    def __getitem__(self, index: int) -> tuple[torch.Tensor, ...]:
        span = slice(index * self.length, (index + 1) * self.length)
        inputs = torch.cat([self.context[span.start : span.start + 1], self.targets[span]])
        return inputs, self.ends[span], self.mask[span]
