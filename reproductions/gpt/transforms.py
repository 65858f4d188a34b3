"""Figure 1's task-specific input transformations (Section 3.3): structured inputs as token sequences.

Every sequence starts with the start token ``<s>`` and ends with the extract token ``<e>``, whose final state the
head reads; the delimiter ``$`` separates the parts. With ``vocab`` BPE symbols the special ids are ``vocab``
(start), ``vocab + 1`` (delimiter), ``vocab + 2`` (extract), as the released code appends ``_start_``,
``_delimiter_`` and ``_classify_`` to its encoder.

- classification: ``<s> text <e>``
- entailment: ``<s> premise $ hypothesis <e>``
- similarity: ``<s> a $ b <e>`` and ``<s> b $ a <e>`` (both orders; the head adds their representations)
- multiple choice (QA, commonsense): ``<s> context question $ answer_k <e>`` for each answer ``k``

Lengths: each part is cut to its first ``max_part`` tokens, as the release cuts each part of a Story Cloze example
to ``n_ctx // 2 - 2``; :func:`pad` right-pads a batch to its longest sequence (mask 1 on real tokens).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

Ids = Sequence[int]


class Specials:
    """The three special ids after a vocabulary of ``vocab`` symbols."""

    def __init__(self, vocab: int) -> None:
        self.start, self.delimiter, self.extract = vocab, vocab + 1, vocab + 2


def classification(text: Ids, special: Specials, max_part: int) -> list[int]:
    return [special.start, *text[:max_part], special.extract]


def entailment(premise: Ids, hypothesis: Ids, special: Specials, max_part: int) -> list[int]:
    return [special.start, *premise[:max_part], special.delimiter, *hypothesis[:max_part], special.extract]


def similarity(a: Ids, b: Ids, special: Specials, max_part: int) -> list[list[int]]:
    return [entailment(a, b, special, max_part), entailment(b, a, special, max_part)]


def multiple_choice(context: Ids, answers: Sequence[Ids], special: Specials, max_part: int) -> list[list[int]]:
    return [entailment(context, answer, special, max_part) for answer in answers]


def pad(sequences: Sequence[Sequence[int]] | Sequence[Sequence[Sequence[int]]]) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, mask)`` long tensors ``(B, T)`` for flat sequences or ``(B, S, T)`` for groups of S sequences."""
    grouped = bool(sequences) and isinstance(sequences[0][0], list | tuple)
    rows = [seq for group in sequences for seq in group] if grouped else list(sequences)
    length = max(len(row) for row in rows)
    ids = torch.zeros(len(rows), length, dtype=torch.long)
    mask = torch.zeros(len(rows), length, dtype=torch.long)
    for index, row in enumerate(rows):
        ids[index, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[index, : len(row)] = 1
    if grouped:
        return ids.view(len(sequences), -1, length), mask.view(len(sequences), -1, length)
    return ids, mask
