"""BPE and WordPiece over Hugging Face's ``tokenizers`` library (Rust; its ``tokenizer.json`` is the artifact).

Trained models (:func:`train_bpe`, :func:`train_wordpiece`):

- ``train_bpe(..., byte_level=True)``: GPT-2-style byte-level BPE (every text encodes, ``decode`` gives it back).
- ``train_bpe(..., byte_level=False)``: GPT-1-style character BPE, each word's last symbol marked ``</w>``, over
  BERT's pre-tokenizer (white space and punctuation) after NFKC and, by default, lower-casing. GPT-1 (Radford et
  al. 2018) learnt 40,000 merges over text cleaned with ``ftfy`` and split by spaCy; neither is used here.
- ``train_wordpiece``: BERT's WordPiece (``##`` continuation prefix, BERT's normaliser and pre-tokenizer).
- ``bert_wordpiece``: a released BERT ``vocab.txt`` (Google's checkpoints) with BERT's basic tokenisation.

Training is deterministic: the merges are learnt by :mod:`tasks.tokenizers.bpe_learn`, the library's BPE trainer
with its hash-map orders made sorted ones (the library's own trainer learns different merges in different processes
when counts tie, as they do on a small corpus), and the vocabulary is renumbered before saving: special tokens first
(in the order given), then the other base symbols sorted, then each merge's product in merge order (WordPiece: all
its pieces sorted). The same texts and settings therefore give byte-identical ``tokenizer.json`` files, in any
process. Offsets are ``tokenizers``' character offsets, with the white space a byte-level token carries left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from tasks.tokenizers.bpe_learn import count_words, learn_bpe
from tasks.tokenizers.core import BERT_TEMPLATE, TEXTS_ALONE, Encoding, Template, Tokenizer, pieces

# role -> the token names that fill it, by convention
ROLE_NAMES = {
    "pad": ("[PAD]", "<pad>", "<|pad|>"),
    "unk": ("[UNK]", "<unk>"),
    "bos": ("<s>", "<bos>", "<|startoftext|>"),
    "eos": ("</s>", "<eos>", "<|endoftext|>"),
    "cls": ("[CLS]", "<cls>"),
    "sep": ("[SEP]", "<sep>"),
    "mask": ("[MASK]", "<mask>"),
}


def roles_of(tokens: Iterable[str]) -> dict[str, str]:
    """Role -> special token, for the special tokens among ``tokens`` named as :data:`ROLE_NAMES` has them."""
    present = set(tokens)
    return {role: name for role, names in ROLE_NAMES.items() for name in names if name in present}


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """``(start, end)`` without the white space at either end (a byte-level or SentencePiece token's space)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


class HFBackend:
    """A ``tokenizers.Tokenizer`` read from the bytes of its ``tokenizer.json``."""

    def __init__(self, data: bytes) -> None:
        from tokenizers import Tokenizer as RustTokenizer

        self.data = data
        try:
            self.tokenizer = RustTokenizer.from_str(data.decode("utf-8"))
        except Exception as exc:  # the library's errors are plain Exceptions
            raise HarnessError(f"not a tokenizers tokenizer.json: {exc}") from None
        self.vocab_size = self.tokenizer.get_vocab_size(with_added_tokens=True)

    def pieces(self, text: str) -> Encoding:
        found = self.tokenizer.encode(text, add_special_tokens=False)
        return pieces(found.ids, found.tokens, [trim(text, a, b) for a, b in found.offsets])

    def decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False)

    def token_to_id(self, token: str) -> int | None:
        return self.tokenizer.token_to_id(token)

    def content(self) -> bytes:
        return self.data

    def special_tokens(self) -> list[str]:
        return [t["content"] for t in json.loads(self.data)["added_tokens"] if t.get("special")]

    def template(self) -> Template:
        """The layout its ``TemplateProcessing`` post-processor gives (none: the texts alone)."""
        processor = json.loads(self.data).get("post_processor") or {}
        if processor.get("type") != "TemplateProcessing":
            return TEXTS_ALONE
        return Template(*(" ".join(_item(item) for item in processor[key]) for key in ("single", "pair")))


def _item(item: dict[str, Any]) -> str:
    kind, body = next(iter(item.items()))
    name = body["id"] if kind == "SpecialToken" else f"${body['id']}"
    return f"{name}:{body['type_id']}"


def hf_tokenizer(data: bytes, template: Template | None = None) -> Tokenizer:
    """The :class:`Tokenizer` of a ``tokenizer.json`` (``template``: its own post-processor's when not given)."""
    backend = HFBackend(data)
    kind = json.loads(data)["model"]["type"]
    return Tokenizer(backend, template or backend.template(), roles_of(backend.special_tokens()), kind.lower())


def _renumbered(model: dict[str, Any], specials: Sequence[str]) -> dict[str, int]:
    """The trained vocabulary in the deterministic order of the module docstring."""
    vocab = model["vocab"]
    order = [token for token in specials if token in vocab]
    if model["type"] == "BPE":
        prefix = model.get("continuing_subword_prefix") or ""
        merges = [m.split(" ", 1) if isinstance(m, str) else m for m in model["merges"]]
        products = list(dict.fromkeys(a + b.removeprefix(prefix) if prefix else a + b for a, b in merges))
        made = set(products) | set(order)
        order += sorted(token for token in vocab if token not in made) + [p for p in products if p not in order]
    else:
        order += sorted(token for token in vocab if token not in set(order))
    if sorted(order) != sorted(vocab):
        raise HarnessError("tokenizers: the trained vocabulary could not be renumbered (an unexpected merge product)")
    return {token: i for i, token in enumerate(order)}


def _canonical(tokenizer: Any, specials: Sequence[str], template: Template | None) -> bytes:
    """The trained tokenizer's ``tokenizer.json`` bytes, renumbered, with ``template`` as its post-processor."""
    from tokenizers import Tokenizer as RustTokenizer
    from tokenizers import processors

    document = json.loads(tokenizer.to_str())
    old = dict(document["model"]["vocab"])
    document["model"]["vocab"] = new = _renumbered(document["model"], specials)
    for added in document["added_tokens"]:
        if old[added["content"]] != new[added["content"]]:
            raise HarnessError(f"tokenizers: special token {added['content']!r} moved while renumbering")
    rebuilt = RustTokenizer.from_str(json.dumps(document, ensure_ascii=False))
    if template is not None and template.specials():
        ids = [(token, rebuilt.token_to_id(token)) for token in template.specials()]
        rebuilt.post_processor = processors.TemplateProcessing(single=template.single, pair=template.pair,
                                                               special_tokens=ids)  # fmt: skip
    return rebuilt.to_str().encode("utf-8")


def _word_counts(tokenizer: Any, texts: Iterable[str]) -> dict[str, int]:
    """The words ``tokenizer``'s normaliser and pre-tokenizer make of ``texts``, counted (what the library's trainer
    learns from)."""
    normalizer = tokenizer.normalizer
    return count_words(
        texts, normalizer.normalize_str if normalizer else None, tokenizer.pre_tokenizer.pre_tokenize_str
    )


def _check_specials(template: Template | None, specials: Sequence[str]) -> None:
    missing = [token for token in (template.specials() if template else []) if token not in specials]
    if missing:
        raise HarnessError(f"the template uses {missing}, which are not among the special tokens {list(specials)}")


def train_bpe(
    texts: Iterable[str],
    vocab_size: int,
    byte_level: bool = True,
    special_tokens: Sequence[str] = ("<|endoftext|>",),
    lowercase: bool = True,
    min_frequency: int = 2,
    template: Template | None = None,
) -> Tokenizer:
    """A BPE tokenizer learnt from ``texts`` (see the module docstring; ``lowercase`` applies to character BPE
    only; ``vocab_size`` counts the base symbols, the merges and the special tokens)."""
    from tokenizers import Tokenizer as RustTokenizer
    from tokenizers import decoders, models, normalizers, pre_tokenizers

    _check_specials(template, special_tokens)
    if byte_level:
        model_args: dict[str, Any] = {}
        tokenizer = RustTokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        options: dict[str, Any] = {"initial_alphabet": pre_tokenizers.ByteLevel.alphabet()}
    else:
        model_args = {"unk_token": roles_of(special_tokens).get("unk"), "end_of_word_suffix": "</w>"}
        tokenizer = RustTokenizer(models.BPE(**model_args))
        steps = [normalizers.NFKC(), *([normalizers.Lowercase()] if lowercase else [])]
        tokenizer.normalizer = normalizers.Sequence(steps)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        tokenizer.decoder = decoders.BPEDecoder(suffix="</w>")
        options = {"suffix": "</w>"}
    vocab, merges = learn_bpe(_word_counts(tokenizer, texts), vocab_size, special_tokens, min_frequency=min_frequency,
                              **options)  # fmt: skip
    tokenizer.model = models.BPE(vocab, merges, **model_args)
    tokenizer.add_special_tokens(list(special_tokens))
    return hf_tokenizer(_canonical(tokenizer, special_tokens, template), template)


def train_wordpiece(
    texts: Iterable[str],
    vocab_size: int,
    special_tokens: Sequence[str] = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
    lowercase: bool = True,
    min_frequency: int = 2,
    template: Template | None = BERT_TEMPLATE,
) -> Tokenizer:
    """A BERT-style WordPiece tokenizer learnt from ``texts`` (layout ``[CLS] a [SEP] (b [SEP])`` by default)."""
    from tokenizers import Tokenizer as RustTokenizer
    from tokenizers import decoders, models, normalizers, pre_tokenizers

    _check_specials(template, special_tokens)
    unk = roles_of(special_tokens).get("unk", "[UNK]")
    tokenizer = RustTokenizer(models.WordPiece(unk_token=unk))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    # the library's WordPieceTrainer is its BpeTrainer with the continuing-subword prefix, its vocabulary kept whole
    vocab, _ = learn_bpe(_word_counts(tokenizer, texts), vocab_size, special_tokens, min_frequency=min_frequency,
                         prefix="##")  # fmt: skip
    tokenizer.model = models.WordPiece(vocab, unk_token=unk)
    tokenizer.add_special_tokens(list(special_tokens))
    return hf_tokenizer(_canonical(tokenizer, special_tokens, template), template)


BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def read_vocab(path: str | Path) -> dict[str, int]:
    """A released BERT ``vocab.txt``: one WordPiece a line, its id the 0-based line number (as BERT's
    ``load_vocab``); an unreadable file, a repeated piece or a missing special token is an error naming the file."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{path}: cannot read the WordPiece vocabulary: {exc}") from None
    vocab: dict[str, int] = {}
    for number, line in enumerate(lines):
        token = line.strip()
        if token in vocab:
            raise HarnessError(f"{path}:{number + 1}: {token!r} repeats line {vocab[token] + 1}")
        vocab[token] = number
    missing = [token for token in BERT_SPECIALS[:4] if token not in vocab]
    if missing:
        raise HarnessError(f"{path}: not a BERT vocabulary, no {', '.join(missing)}")
    return vocab


def bert_wordpiece(vocab_file: str | Path, lowercase: bool = True, template: Template = BERT_TEMPLATE) -> Tokenizer:
    """The tokenizer of a released BERT ``vocab.txt``: BERT's basic tokenisation (control characters removed, white
    space normalised, CJK characters split, then for an uncased model lower-casing and accent stripping; a split at
    white space and at every punctuation character) and greedy longest-match WordPiece (``##`` continuations, a word
    of over 100 characters or with no match is ``[UNK]``). Ids are the file's line numbers, so ``[PAD]``, ``[UNK]``,
    ``[CLS]``, ``[SEP]`` keep theirs (0, 100, 101, 102 in the released files); layout ``[CLS] a [SEP] (b [SEP])``.
    ``lowercase``: true for the ``uncased`` checkpoints, false for the ``cased`` ones."""
    from tokenizers import Tokenizer as RustTokenizer
    from tokenizers import decoders, models, normalizers, pre_tokenizers, processors

    vocab = read_vocab(vocab_file)
    tokenizer = RustTokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tokenizer.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, lowercase=lowercase)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.add_special_tokens([token for token in BERT_SPECIALS if token in vocab])
    tokenizer.post_processor = processors.TemplateProcessing(
        single=template.single, pair=template.pair, special_tokens=[(t, vocab[t]) for t in template.specials()]
    )
    return hf_tokenizer(tokenizer.to_str().encode("utf-8"), template)
