"""SentencePiece (unigram or BPE) over Google's ``sentencepiece`` library; its ``.model`` file is the artifact.

Kudo & Richardson, "SentencePiece: A simple and language independent subword tokenizer" (arXiv:1808.06226). XLNet
used a 32,000-piece unigram model; a word-piece model for speech (SpecAugment's LAS) is the same thing trained on
transcripts. Roles come from the model: ``unk``/``bos``/``eos``/``pad`` from its ids (``-1``: absent), ``cls``,
``sep``, ``mask`` from control or user-defined symbols of the names in ``tasks.tokenizers.hf.ROLE_NAMES``
(``<cls>``, ``<sep>``, ``<mask>``). The layout is not in the model file: pass a template (``XLNET_TEMPLATE``).

:func:`train_sentencepiece` trains in memory with sampling and shuffling off (every sentence is used, in order)
and a fixed thread count, so the same texts and settings give a byte-identical ``.model``. Offsets are characters
of the original text (the library's byte offsets, converted), without the white space a ``▁`` piece carries.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence

from harness.errors import HarnessError
from tasks.tokenizers.core import TEXTS_ALONE, Encoding, Template, Tokenizer, pieces
from tasks.tokenizers.hf import ROLE_NAMES, trim


def char_index(text: str) -> list[int]:
    """For every UTF-8 byte position of ``text`` (and the end), the character it belongs to."""
    index = []
    for i, char in enumerate(text):
        index += [i] * len(char.encode("utf-8"))
    return index + [len(text)]


class SentencePieceBackend:
    """A ``SentencePieceProcessor`` read from the bytes of a ``.model`` file."""

    def __init__(self, data: bytes) -> None:
        import sentencepiece

        self.data = data
        try:
            self.processor = sentencepiece.SentencePieceProcessor(model_proto=data)
        except (RuntimeError, TypeError) as exc:
            raise HarnessError(f"not a sentencepiece model: {exc}") from None
        self.vocab_size = self.processor.get_piece_size()

    def pieces(self, text: str) -> Encoding:
        found = self.processor.encode(text, out_type="proto").pieces
        at = range(len(text) + 1) if text.isascii() else char_index(text)
        spans = [trim(text, at[p.begin], at[p.end]) for p in found]
        return pieces([p.id for p in found], [p.piece for p in found], spans)

    def decode(self, ids: Sequence[int]) -> str:
        return self.processor.decode(list(ids))

    def token_to_id(self, token: str) -> int | None:
        found = self.processor.piece_to_id(token)
        return found if self.processor.id_to_piece(found) == token else None

    def content(self) -> bytes:
        return self.data

    def roles(self) -> dict[str, str]:
        p = self.processor
        ids = {"unk": p.unk_id(), "bos": p.bos_id(), "eos": p.eos_id(), "pad": p.pad_id()}
        roles = {role: p.id_to_piece(i) for role, i in ids.items() if i >= 0}
        for role in ("cls", "sep", "mask"):
            named = [name for name in ROLE_NAMES[role] if self.token_to_id(name) is not None]
            roles.update({role: named[0]} if named else {})
        return roles


def sentencepiece_tokenizer(data: bytes, template: Template | None = None) -> Tokenizer:
    """The :class:`Tokenizer` of a ``.model`` file's bytes (``template``: the texts alone when not given)."""
    backend = SentencePieceBackend(data)
    return Tokenizer(backend, template or TEXTS_ALONE, backend.roles(), "sentencepiece")


def train_sentencepiece(
    texts: Iterable[str],
    vocab_size: int,
    model_type: str = "unigram",
    control_symbols: Sequence[str] = (),
    user_defined_symbols: Sequence[str] = (),
    character_coverage: float = 1.0,
    pad_id: int = -1,
    num_threads: int = 2,
    template: Template | None = None,
) -> Tokenizer:
    """A SentencePiece model learnt from ``texts`` (``model_type``: ``unigram``, ``bpe``, ``word`` or ``char``).
    ``<unk>``, ``<s>``, ``</s>`` have ids 0, 1, 2 (the library's default); ``pad_id`` >= 0 adds ``<pad>``."""
    import sentencepiece

    model = io.BytesIO()
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(texts), model_writer=model, vocab_size=vocab_size, model_type=model_type,
            control_symbols=list(control_symbols), user_defined_symbols=list(user_defined_symbols),
            character_coverage=character_coverage, pad_id=pad_id, num_threads=num_threads,
            input_sentence_size=0, shuffle_input_sentence=False, minloglevel=2,
        )  # fmt: skip
    except RuntimeError as exc:
        raise HarnessError(f"sentencepiece training failed: {exc}") from None
    return sentencepiece_tokenizer(model.getvalue(), template)
