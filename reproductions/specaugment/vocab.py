"""The output vocabularies of SpecAugment's LAS and its fusion LM (arXiv 1904.08779v3, Sections 3.1 and 4).

The paper's targets are word pieces: a 16k word-piece model for LibriSpeech and a 1k one for Switchboard. Here a
word-piece model is a SentencePiece unigram model (``tasks.tokenizers.spm``, SentencePiece's default algorithm;
the paper's WPM is Google's own word-piece trainer, whose vocabulary lingvo ships as ``wpm_16k_librispeech.vocab``)
trained on the transcripts of the training splits, ``wordpieces`` pieces in all: ``<unk>``, ``<s>``, ``</s>`` (ids
0, 1, 2, the library's defaults) and the pieces. The training is deterministic (same transcripts, same ``.model``
bytes), so the ASR system and its fusion LM, each training it from the same transcripts, share one vocabulary; the
``digest`` tells them apart when they do not. :class:`Characters` (``wordpieces = 0``) is the budget tier's
vocabulary: the 28 symbols of LibriSpeech transcripts after the same three.

Either way a transcript is encoded without ``<s>`` / ``</s>`` (the systems add them) and hypotheses are decoded
back to the upper-case words the WER is computed on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from harness.errors import HarnessError
from tasks.tokenizers.core import Tokenizer

CHARS = " ABCDEFGHIJKLMNOPQRSTUVWXYZ'"
UNK, BOS, EOS = 0, 1, 2
FIRST = 3  # the first id that is not <unk>, <s> or </s>


def encode(text: str) -> list[int]:
    """Character ids of ``text`` (anything outside :data:`CHARS` is ``<unk>``)."""
    return [FIRST + CHARS.index(c) if c in CHARS else UNK for c in text]


def decode(ids: Sequence[int]) -> str:
    """The characters of ``ids``, special ids left out."""
    return "".join(CHARS[i - FIRST] for i in ids if i >= FIRST)


@dataclass(frozen=True)
class Characters:
    """The character vocabulary: :data:`CHARS` after ``<unk>``, ``<s>``, ``</s>``."""

    vocab_size: int = FIRST + len(CHARS)

    def encode(self, text: str) -> list[int]:
        return encode(text)

    def decode(self, ids: Sequence[int]) -> str:
        return decode(ids)

    def starts(self, text: str) -> list[int]:
        """The character of ``text`` each piece of :meth:`encode` begins at (one piece per character)."""
        return list(range(len(text)))

    @property
    def digest(self) -> str:
        return hashlib.sha256(f"characters:{CHARS}".encode()).hexdigest()


@dataclass(frozen=True)
class WordPieces:
    """A SentencePiece word-piece model with ``<unk>``, ``<s>``, ``</s>`` at ids 0, 1, 2."""

    tokenizer: Tokenizer

    def __post_init__(self) -> None:
        t = self.tokenizer
        if (t.unk_token_id, t.bos_token_id, t.eos_token_id) != (UNK, BOS, EOS):
            raise HarnessError(f"word pieces: <unk>, <s>, </s> must be ids 0, 1, 2; the model has {t.special_ids}")

    @property
    def vocab_size(self) -> int:
        return self.tokenizer.vocab_size

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode([i for i in ids if i >= FIRST])

    def starts(self, text: str) -> list[int]:
        """The character of ``text`` each piece of :meth:`encode` begins at (after the white space of a ``▁``)."""
        return [start for start, _ in self.tokenizer.encode(text, special_tokens=False).offsets]

    @property
    def digest(self) -> str:
        return self.tokenizer.digest


def train_wordpieces(transcripts: Sequence[str], wordpieces: int) -> WordPieces:
    """A unigram SentencePiece model of exactly ``wordpieces`` pieces learnt from ``transcripts``."""
    from tasks.tokenizers.spm import train_sentencepiece

    pieces = WordPieces(train_sentencepiece(transcripts, wordpieces, model_type="unigram", character_coverage=1.0))
    if pieces.vocab_size != wordpieces:
        raise HarnessError(f"word pieces: {pieces.vocab_size} pieces trained, {wordpieces} asked")
    return pieces


def training_transcripts(speech_root: str | Path, splits: Sequence[str]) -> list[str]:
    """The transcripts of a LibriSpeech-layout corpus's ``splits``, in path order."""
    from tasks.librispeech.data import find_split, index_split

    return [u.transcript for split in splits for u in index_split(find_split(Path(speech_root), split))]


def vocabulary(wordpieces: int, transcripts: Sequence[str] = ()) -> Characters | WordPieces:
    """Characters (``wordpieces = 0``) or ``wordpieces`` word pieces learnt from the training ``transcripts``."""
    if wordpieces < 0:
        raise HarnessError(f"wordpieces: {wordpieces}; give a vocabulary size, or 0 for characters")
    if wordpieces == 0:
        return Characters()
    if not transcripts:
        raise HarnessError("word pieces need the training transcripts to learn from; none were given")
    return train_wordpieces(transcripts, wordpieces)


def digest_tensor(digest: str) -> torch.Tensor:
    """A vocabulary's sha256 hex digest as 32 bytes: a buffer that travels in checkpoints (the fusion LM's)."""
    return torch.tensor(list(bytes.fromhex(digest)), dtype=torch.uint8)
