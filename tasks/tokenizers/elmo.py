"""ELMo's character ids, following bilm-tf's conventions (``bilm/data.py``: ``UnicodeCharsVocabulary``, ``Batcher``).

Peters et al., "Deep contextualized word representations" (arXiv:1802.05365). The biLM reads each token as
:data:`MAX_CHARS` = 50 character ids: begin-of-word, the token's UTF-8 bytes (0-255; cut to 48 bytes, undecodable
characters dropped), end-of-word, then padding. A sentence is framed by a begin- and an end-of-sentence token,
each ``begin-of-word, <bos or eos char>, end-of-word`` then padding. Ids 256-260 are begin-of-sentence,
end-of-sentence, begin-of-word, end-of-word and padding; every id is then shifted by +1 so that 0 masks the
positions past a sentence's end (``Batcher.batch_sentences``). Tokens come from any word tokenizer (ELMo's
training data, the One Billion Word benchmark, is distributed tokenised: its tokens are the space-separated words).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

MAX_CHARS = 50
BOS_CHAR, EOS_CHAR, BOW_CHAR, EOW_CHAR, PAD_CHAR = 256, 257, 258, 259, 260  # before the +1 shift
CHAR_VOCAB_SIZE = PAD_CHAR + 2  # ids 0 (mask) .. 261


def word_char_ids(word: str, max_chars: int = MAX_CHARS) -> list[int]:
    """The ``max_chars`` character ids of one token, shifted by +1."""
    data = word.encode("utf-8", "ignore")[: max_chars - 2]
    ids = [BOW_CHAR, *data, EOW_CHAR] + [PAD_CHAR] * (max_chars - len(data) - 2)
    return [i + 1 for i in ids]


def boundary_char_ids(char: int, max_chars: int = MAX_CHARS) -> list[int]:
    """The ids of the begin- (``BOS_CHAR``) or end-of-sentence (``EOS_CHAR``) token, shifted by +1."""
    return [i + 1 for i in [BOW_CHAR, char, EOW_CHAR] + [PAD_CHAR] * (max_chars - 3)]


def sentence_char_ids(tokens: Sequence[str], max_chars: int = MAX_CHARS) -> list[list[int]]:
    """``<S>``, each token, ``</S>``: (len(tokens) + 2) rows of ``max_chars`` ids."""
    words = [word_char_ids(token, max_chars) for token in tokens]
    return [boundary_char_ids(BOS_CHAR, max_chars), *words, boundary_char_ids(EOS_CHAR, max_chars)]


def batch_char_ids(sentences: Sequence[Sequence[str]], max_chars: int = MAX_CHARS) -> torch.Tensor:
    """Long (N, T + 2, ``max_chars``), T the longest sentence's tokens; 0 past each sentence's end."""
    width = max([len(tokens) for tokens in sentences] + [0]) + 2
    batch = torch.zeros((len(sentences), width, max_chars), dtype=torch.long)
    for row, tokens in enumerate(sentences):
        batch[row, : len(tokens) + 2] = torch.tensor(sentence_char_ids(tokens, max_chars), dtype=torch.long)
    return batch
