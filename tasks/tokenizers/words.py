"""Word-level schemes: the hashed whitespace tokenizer of the smoke tiers, and the LM corpus's WikiText words.

- :class:`WhitespaceTokenizer`: one token per run of non-space characters, its id ``3 + crc32(lower-cased word)
  mod (vocab_size - 3)``; ids 0, 1, 2 are ``[PAD]``, ``[CLS]``, ``[SEP]``; BERT's layout ``[CLS] a [SEP] (b
  [SEP])``. A reference for tests and smoke tiers, not any paper's; ids are hashes, so it does not decode. GLUE's
  and SQuAD's ``whitespace_tokenizer`` factories are this class.
- :func:`wikitext_tokenizer`: the tokens of ``tasks.debian_corpora.tokenize`` (WikiText-103's conventions) with
  their character offsets, numbered by a vocabulary (a corpus's ``itos``: ``<unk>`` for the rest).
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence

from harness.errors import HarnessError
from tasks.debian_corpora.tokenize import UNK
from tasks.tokenizers.core import BERT_TEMPLATE, TEXTS_ALONE, Encoding, Template, Tokenizer, pieces

_WORD = re.compile(r"\S+")
WHITESPACE_SPECIALS = ("[PAD]", "[CLS]", "[SEP]")


class HashedWords:
    """The backend of :class:`WhitespaceTokenizer`."""

    def __init__(self, vocab_size: int) -> None:
        if vocab_size <= len(WHITESPACE_SPECIALS):
            raise HarnessError(f"whitespace tokenizer: vocab_size must exceed 3, not {vocab_size}")
        self.vocab_size = vocab_size

    def word_id(self, word: str) -> int:
        return 3 + zlib.crc32(word.lower().encode()) % (self.vocab_size - 3)

    def pieces(self, text: str) -> Encoding:
        words = list(_WORD.finditer(text))
        return pieces([self.word_id(w.group()) for w in words], [w.group() for w in words], [w.span() for w in words])

    def decode(self, ids: Sequence[int]) -> str:
        raise HarnessError("the whitespace tokenizer hashes words: its ids do not decode")

    def token_to_id(self, token: str) -> int | None:
        return WHITESPACE_SPECIALS.index(token) if token in WHITESPACE_SPECIALS else None

    def content(self) -> bytes:
        return json.dumps({"scheme": "whitespace-crc32", "vocab_size": self.vocab_size}, sort_keys=True).encode()


class WhitespaceTokenizer(Tokenizer):
    """See the module docstring. The ids of the three special tokens are class attributes."""

    pad_token_id, cls_token_id, sep_token_id = 0, 1, 2

    def __init__(self, vocab_size: int = 30522) -> None:
        specials = dict(zip(("pad", "cls", "sep"), WHITESPACE_SPECIALS, strict=True))
        super().__init__(HashedWords(vocab_size), BERT_TEMPLATE, specials, "whitespace")

    def word_id(self, word: str) -> int:
        return self.backend.word_id(word)


def whitespace_tokenizer() -> WhitespaceTokenizer:
    """The factory of :class:`WhitespaceTokenizer` (``tokenizer="tasks.tokenizers.words:whitespace_tokenizer"``)."""
    return WhitespaceTokenizer()


# WikiText-103's tokens (tasks.debian_corpora.tokenize), found in the text as it is: an infix marker is the
# hyphen, comma or full stop it stands for
_WIKITEXT = re.compile(r"(?P<infix>(?<=[^\W_])-(?=[^\W_])|(?<=\d)[.,](?=\d))|@[-.,]@|[^\W_]+|'[^\W_]+|[^\w\s]|_")


class WikiTextWords:
    """The backend of :func:`wikitext_tokenizer`."""

    def __init__(self, itos: Sequence[str]) -> None:
        self.itos = list(itos)
        self.stoi = {token: i for i, token in enumerate(self.itos)}
        if UNK not in self.stoi:
            raise HarnessError(f"WikiText vocabulary: {UNK!r} is not in it")
        self.vocab_size = len(self.itos)

    def pieces(self, text: str) -> Encoding:
        found = list(_WIKITEXT.finditer(text))
        tokens = [f"@{m.group()}@" if m.lastgroup == "infix" else m.group() for m in found]
        unk = self.stoi[UNK]
        return pieces([self.stoi.get(t, unk) for t in tokens], tokens, [m.span() for m in found])

    def decode(self, ids: Sequence[int]) -> str:
        return " ".join(self.itos[i] for i in ids)

    def token_to_id(self, token: str) -> int | None:
        return self.stoi.get(token)

    def content(self) -> bytes:
        return json.dumps({"scheme": "wikitext-words", "itos": self.itos}, ensure_ascii=False).encode()


def wikitext_tokenizer(itos: Sequence[str], template: Template = TEXTS_ALONE) -> Tokenizer:
    """WikiText-103-style words numbered by ``itos`` (which holds ``<unk>``; ``<eos>`` too for an LM's layout)."""
    backend = WikiTextWords(itos)
    specials = {"unk": UNK, **({"eos": "<eos>"} if "<eos>" in backend.stoi else {})}
    return Tokenizer(backend, template, specials, "wikitext-words")
