"""XLNet's budget and smoke data: the Debian text corpora (docs/corpora.md) through a SentencePiece model trained on
``debian-lm`` (XLNet used a 32,000-piece unigram SentencePiece model; here ``vocab`` pieces, ``<cls>`` and
``<sep>`` control symbols, the layout ``A <sep> <cls>`` / ``A <sep> B <sep> <cls>`` of
:data:`tasks.tokenizers.XLNET_TEMPLATE`).

``data_root`` is the folder ``python -m tasks.debian_corpora text OUT`` writes; :func:`prepare_text` /
:func:`prepare_smoke` build it when missing (the tier's ``prepare``).

- **Pre-training** (:class:`XLNetLMDataModule`): the training stream (each line's pieces, then ``</s>``) split into
  ``batch_size`` parallel streams read in order, ``seq_len`` pieces at a time, so row ``b`` of batch ``k + 1``
  continues row ``b`` of batch ``k`` and the memory of Section 2.4 carries real context (Transformer-XL's
  batching). Test: ``wiki.test.tokens`` in rows of ``seq_len`` targets, each row led by the piece before it (a
  context every target may see; :class:`tasks.language_modeling.stream.TokenRows`); the system scores the
  left-to-right factorisation order and sums each word's piece log-probabilities, so the record's perplexity is
  ``debian-lm``'s word-level perplexity.
- **Fine-tuning** (:class:`XLNetTextDataModule`): a few-label ``wordnet-lexname`` or ``fortune-category`` subset,
  each text as ``text <sep> <cls>`` with segment ids (``<cls>`` its own segment, as the release's ``SEG_ID_CLS``).
- **The paper's tasks** (GLUE, RACE, SQuAD, the text classification sets of Table 4): the budget SentencePiece model
  of ``spm_root``, or with ``spiece`` the released ``spiece.model`` (32,000 pieces; ``<unk>`` 0, ``<s>`` 1, ``</s>``
  2, control symbols ``<cls>`` 3, ``<sep>`` 4, ``<pad>`` 5, ``<mask>`` 6, ``<eod>`` 7, ``<eop>`` 8 user-defined),
  read through :func:`tasks.tokenizers.load_tokenizer` under :data:`~tasks.tokenizers.XLNET_TEMPLATE`. Sequences
  are ``A <sep> [B <sep>] <cls>`` (segments 0, 1, and 2 for ``<cls>``) padded on the left, as the release pads
  (:func:`left_aligned`): ``<cls>`` is the last position of every row. With the released model the texts are
  cleaned as the release cleans them first (:func:`release_text`).
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.debian_corpora.corpus import CORPORA, LM_FILES, folder_hash
from tasks.debian_corpora.data import DebianTextDataModule, lm_file
from tasks.debian_corpora.tokenize import UNK, tokenize
from tasks.glue.data import GlueDataModule
from tasks.language_modeling.stream import TokenRows, encode_lines, file_lines, line_words
from tasks.squad.data import SquadDataModule
from tasks.text_classification.data import TextClassificationDataModule
from tasks.text_data import TextTaskDataModule
from tasks.tokenizers import XLNET_TEMPLATE, Tokenizer, load_tokenizer, register, save_tokenizer

CONTROL = ("<cls>", "<sep>")
RELEASED_VOCAB = 32000  # the released spiece.model's pieces (xlnet_config.json's n_token)


def prepare_text(root: Path) -> None:
    """Build the Debian text corpora under ``root`` unless all three are there (about 20 s)."""
    if all((Path(root) / corpus / "corpus.json").is_file() for corpus in CORPORA):
        return
    from tasks.debian_corpora.corpus import build_text

    build_text(Path(root))


def prepare_smoke(root: Path) -> None:
    """The smoke tier's corpora: ``tasks.debian_corpora``'s tiny copy of the Debian sources, built into ``root`` as
    the real corpora are (a few seconds)."""
    if all((Path(root) / corpus / "corpus.json").is_file() for corpus in CORPORA):
        return
    from tasks.debian_corpora.corpus import build_text
    from tasks.debian_corpora.fixtures import write_debian_tree

    build_text(Path(root), write_debian_tree(Path(root) / "debian-src"), min_count=2, min_fortunes=5)


def spm_tokenizer(data_root: str | Path, vocab: int) -> Tokenizer:
    """A unigram SentencePiece model of ``vocab`` pieces (``<unk>``, ``<s>``, ``</s>``, ``<cls>``, ``<sep>``
    included) trained on ``debian-lm``'s training text on first use, kept content-addressed in
    ``data_root/debian-lm-spm-<vocab>/`` (training is deterministic: the same file again)."""
    folder = Path(data_root) / f"debian-lm-spm-{vocab}"
    kept = sorted(folder.glob("*.model")) if folder.is_dir() else []
    if not kept:
        from tasks.tokenizers.spm import train_sentencepiece

        lines = [line for line in file_lines(lm_file(Path(data_root) / "debian-lm", "train")) if line.strip()]
        trained = train_sentencepiece(lines, vocab, control_symbols=CONTROL, template=XLNET_TEMPLATE)
        kept = [save_tokenizer(trained, folder)]
    tokenizer = load_tokenizer(kept[0], template=XLNET_TEMPLATE)
    if tokenizer.vocab_size > vocab:
        raise HarnessError(f"{kept[0]}: {tokenizer.vocab_size} pieces; the model has {vocab}")
    return tokenizer


def parallel_streams(ids: list[int], streams: int, seq_len: int) -> torch.Tensor:
    """``(segments * streams, seq_len)``: the stream cut into ``streams`` equal parts read side by side; batch
    ``k`` (rows ``k*streams .. (k+1)*streams - 1``) holds the ``k``-th segment of every part."""
    per_stream = len(ids) // streams // seq_len * seq_len
    if per_stream == 0:
        raise HarnessError(f"{len(ids)} pieces are too few for {streams} streams of {seq_len}")
    parts = torch.tensor(ids[: per_stream * streams], dtype=torch.long).view(streams, -1, seq_len)  # (S, K, T)
    return parts.transpose(0, 1).reshape(-1, seq_len)


class XLNetLMDataModule(pl.LightningDataModule):
    """``debian-lm`` as SentencePiece pieces: parallel in-order training streams, the test split in rows.

    Args:
        data_root: the folder holding ``debian-lm/`` (and where the SentencePiece model is kept).
        vocab: SentencePiece pieces (the model's vocabulary).
        seq_len: pieces per training segment and per test row.
        batch_size: parallel training streams (rows per batch).
        test_batch_size: rows per test batch.
        train_lines, test_lines: read only so many lines (``None``: all); with ``test_lines`` the references are
            the lines scored, written beside the predictions.
    """

    def __init__(
        self,
        data_root: str | Path,
        vocab: int = 4000,
        seq_len: int = 64,
        batch_size: int = 16,
        test_batch_size: int = 32,
        train_lines: int | None = None,
        test_lines: int | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.data_root = Path(data_root)
        self.train_set: TensorDataset | None = None
        self.test_set: TokenRows | None = None
        self.test_lines: list[str] = []
        self.test_words: list[str] = []
        self.data_hash: str | None = None

    def verify(self) -> None:
        for split in LM_FILES:
            lm_file(self.data_root / "debian-lm", split)

    def setup(self, stage: str | None = None) -> None:
        if self.test_set is not None:
            return
        hp, corpus = self.hparams, self.data_root / "debian-lm"
        tokenizer = spm_tokenizer(self.data_root, hp.vocab)
        register(self, tokenizer)
        ids, _ = encode_lines(tokenizer, file_lines(lm_file(corpus, "train"))[: hp.train_lines])
        self.train_set = TensorDataset(parallel_streams(ids, hp.batch_size, hp.seq_len))
        test = self.test_lines = file_lines(lm_file(corpus, "test"))[: hp.test_lines]
        ids, ends = encode_lines(tokenizer, test)
        self.test_set = TokenRows(ids, ends, hp.seq_len, tokenizer.eos_token_id)
        self.test_words = line_words(test)
        if sum(ends) != len(self.test_words):
            raise HarnessError(f"{lm_file(corpus, 'test')}: {sum(ends)} piece words for {len(self.test_words)} words")
        corpus_hash = folder_hash(corpus, LM_FILES.values())
        self.data_hash = hashlib.sha256(f"{corpus_hash}\n{tokenizer.digest}".encode()).hexdigest()

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.hparams.batch_size, shuffle=False)  # in order: memory

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.test_set, batch_size=self.hparams.test_batch_size, shuffle=False)

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        words, references = self.test_words, lm_file(self.data_root / "debian-lm", "test")
        if self.hparams.test_lines is not None:
            references = Path(folder) / references.name
            references.write_text("".join(f"{line}\n" for line in self.test_lines), encoding="utf-8")
        return Scoring("debian-lm", references, range(len(words)), words)


class ClassificationInputs:
    """Texts -> ``text <sep> <cls>`` ids, right-padded: ``(ids, mask, segments)`` ``(B, T)`` each."""

    def __init__(self, tokenizer: Tokenizer, max_length: int) -> None:
        self.tokenizer, self.max_length = tokenizer, max_length

    def __call__(self, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        words = [" ".join(tokenize(text.replace("\\n", " "))) or UNK for text in texts]  # as the LM corpus reads
        rows = []
        for text in words:
            encoding = self.tokenizer.encode(text, special_tokens=False).head(self.max_length - 2)
            rows.append(self.tokenizer.layout([encoding]))
        width = max(len(row.ids) for row in rows)
        ids = torch.zeros(len(rows), width, dtype=torch.long)
        mask, segments = torch.zeros_like(ids), torch.zeros_like(ids)
        for index, row in enumerate(rows):
            ids[index, : len(row.ids)] = torch.tensor(row.ids)
            mask[index, : len(row.ids)] = 1
            segments[index, : len(row.ids)] = torch.tensor(row.type_ids)
        return ids, mask, segments


class XLNetTextDataModule(DebianTextDataModule):
    """A few-label Debian classification corpus (``corpus`` under ``data_root``) as XLNet's input sequences.

    Args:
        data_root: the folder holding ``debian-lm/`` and the classification corpus.
        corpus: ``wordnet-lexname`` or ``fortune-category``.
        vocab: SentencePiece pieces (the pre-training stage's model).
        max_length: pieces per sequence, ``<sep>`` and ``<cls>`` included.
        batch_size, per_class, subset_seed: as :class:`~tasks.debian_corpora.data.DebianTextDataModule`.
    """

    def __init__(
        self,
        data_root: str | Path,
        corpus: str = "wordnet-lexname",
        vocab: int = 4000,
        max_length: int = 64,
        batch_size: int = 32,
        per_class: int | None = None,
        subset_seed: int = 0,
    ) -> None:
        if corpus not in CORPORA[1:]:
            raise HarnessError(f"unknown classification corpus {corpus!r}; known: {', '.join(CORPORA[1:])}")
        super().__init__(Path(data_root) / corpus, batch_size=batch_size, per_class=per_class, subset_seed=subset_seed)
        self.root, self.vocab, self.max_length = Path(data_root), vocab, max_length

    def setup(self, stage: str | None = None) -> None:
        if self.train_examples is not None:
            return
        tokenizer = spm_tokenizer(self.root, self.vocab)
        register(self, tokenizer)
        self.tokenizer: Any = ClassificationInputs(tokenizer, self.max_length)
        super().setup(stage)
        self.data_hash = hashlib.sha256(f"{self.data_hash}\n{tokenizer.digest}".encode()).hexdigest()


# --- the paper's fine-tuning tasks (smoke tier: their fixtures, this SentencePiece model) -------------------------


def prepare_smoke_task(root: Path, task: str, spm_root: str | Path) -> None:
    """A smoke tier's fine-tuning data: the tiny copy of ``task`` the task family ships, in its distributed format,
    at ``root`` (``glue-*``, ``race``, ``squad-v1.1``, ``squad-v2.0``), and the Debian corpora the SentencePiece
    model is trained on at ``spm_root``."""
    from tasks.glue.fixtures import write_tiny_glue_data
    from tasks.multiple_choice.fixtures import write_tiny_race
    from tasks.squad.fixtures import write_tiny_squad_data

    prepare_smoke(Path(spm_root))
    if task.startswith("glue-"):
        write_tiny_glue_data(root, task)
    elif task == "race":
        write_tiny_race(Path(root))
    elif task in ("squad-v1.1", "squad-v2.0"):
        write_tiny_squad_data(root, task.removeprefix("squad-v"))
    else:
        raise HarnessError(f"no smoke copy of task {task!r}")


def release_text(text: str) -> str:
    """A text as the release cleans it before SentencePiece (``prepro_utils.preprocess_text`` with the cased model's
    defaults, read for facts): white space runs as one space, two back-ticks and two single quotes as a double
    quote, accents removed (NFKD, combining marks dropped); IMDb's ``<br />`` as a space (the release's IMDb reader)."""
    text = " ".join(text.replace("<br />", " ").split()).replace("``", '"').replace("''", '"')
    return "".join(char for char in unicodedata.normalize("NFKD", text) if not unicodedata.combining(char))


def left_aligned(batch: dict[str, Any]) -> dict[str, Any]:
    """The release's left padding: every ``(N, T, ...)`` tensor of a right-padded batch rolled, row by row, by its
    number of padding positions, so each row's last token (``<cls>``) is at ``T - 1``. The output of a masked XLNet
    does not depend on the side (relative positions; padded keys are masked): the layout is the release's."""
    mask = batch["attention_mask"]
    width = mask.shape[-1]
    shift = width - mask.sum(-1)  # (N,)
    source = (torch.arange(width, device=mask.device) - shift[:, None]) % width  # (N, T): position j takes j - shift
    out = dict(batch)
    for key, value in batch.items():
        if torch.is_tensor(value) and value.shape[:2] == mask.shape:
            index = source.view(*source.shape, *[1] * (value.ndim - 2)).expand_as(value)
            out[key] = value.gather(1, index)
    return out


class LeftAligned:
    """A collate function whose batches are :func:`left_aligned`."""

    def __init__(self, collate: Callable[..., dict[str, Any]]) -> None:
        self.collate = collate

    def __call__(self, examples: Any) -> dict[str, Any]:
        return left_aligned(self.collate(examples))


class PairEncoder:
    """``encode(text_a, text_b)`` -> XLNet's ``A <sep> [B <sep>] <cls>`` ids, the texts cut (longest first) so the
    whole fits ``max_length`` and ``<cls>`` stays last; ``clean`` applied to each text first."""

    def __init__(self, tokenizer: Tokenizer, max_length: int, clean: Callable[[str], str] | None = None) -> None:
        self.tokenizer, self.max_length, self.clean = tokenizer, max_length, clean or (lambda text: text)
        self.pad_token_id = 0  # the release pads with id 0 (its mask hides it)

    def __call__(self, text_a: str, text_b: str | None = None) -> list[int]:
        texts = [self.clean(text) for text in (text_a, text_b) if text is not None]
        parts = [self.tokenizer.encode(text, special_tokens=False) for text in texts]
        return self.tokenizer.layout(self.tokenizer.truncated(parts, self.max_length)).ids


class TextInputs:
    """Texts -> ``text <sep> <cls>`` (Table 4's documents, cut to ``max_length``), left-padded:
    ``{"input_ids", "attention_mask", "token_type_ids", "offsets"}`` ``(N, T)``."""

    def __init__(self, tokenizer: Tokenizer, max_length: int, clean: Callable[[str], str] | None = None) -> None:
        self.tokenizer, self.max_length, self.clean = tokenizer, max_length, clean or (lambda text: text)

    def __call__(self, texts: list[str]) -> dict[str, torch.Tensor]:
        cleaned = [self.clean(text) for text in texts]
        return left_aligned(self.tokenizer.encode_batch(cleaned, max_length=self.max_length))


class ChoiceInputs:
    """RACE's columns -> one ``"<context> <question>" <sep> option <sep> <cls>`` sequence per option, left-padded:
    ``{"input_ids", "attention_mask", "token_type_ids"}`` ``(N, K, T)``."""

    def __init__(self, tokenizer: Tokenizer, max_length: int, clean: Callable[[str], str] | None = None) -> None:
        self.tokenizer, self.max_length, self.clean = tokenizer, max_length, clean or (lambda text: text)

    def __call__(self, contexts: list[str], questions: list[str], options: list[list[str]]) -> dict[str, torch.Tensor]:
        rows = zip(contexts, questions, options, strict=True)
        firsts = [self.clean(f"{c} {q}".strip()) for c, q, row in rows for _ in row]
        pairs = [self.clean(option) for row in options for option in row]
        batch = left_aligned(self.tokenizer.encode_batch(firsts, pairs=pairs, max_length=self.max_length))
        shape = (len(options), len(options[0]))
        return {key: batch[key].reshape(*shape, -1) for key in ("input_ids", "attention_mask", "token_type_ids")}


def released_tokenizer(spiece: str | Path, vocab: int = RELEASED_VOCAB) -> Tokenizer:
    """The released ``spiece.model`` under XLNet's layout; its pieces must be the model's ``vocab``."""
    tokenizer = load_tokenizer(spiece, template=XLNET_TEMPLATE)
    if tokenizer.vocab_size != vocab:
        raise HarnessError(f"{spiece}: {tokenizer.vocab_size} pieces; the model has {vocab}")
    return tokenizer


def _with_tokenizer(
    module: Any, spm_root: str | Path | None, vocab: int, spiece: str | Path | None = None
) -> Tokenizer:
    """The released ``spiece`` (when given) or the SentencePiece model of ``spm_root``, registered with ``module``'s
    records and hashed into its data."""
    if spiece is None and spm_root is None:
        raise HarnessError(f"{type(module).__name__}: give spiece (the released spiece.model) or spm_root")
    tokenizer = released_tokenizer(spiece, vocab) if spiece is not None else spm_tokenizer(spm_root, vocab)
    register(module, tokenizer)
    module.data_hash = hashlib.sha256(f"{module.data_hash}\n{tokenizer.digest}".encode()).hexdigest()
    return tokenizer


def _cleaner(spiece: str | Path | None) -> Callable[[str], str] | None:
    return release_text if spiece is not None else None


class XLNetGlueDataModule(GlueDataModule):
    """A GLUE task (``tasks.glue``) encoded by :class:`PairEncoder`, left-padded, with the released ``spiece`` or
    the SentencePiece model kept under ``spm_root`` (``vocab`` pieces)."""

    def __init__(self, data_root: str | Path, task: str, spm_root: str | Path | None = None, vocab: int = 4000,
                 max_length: int = 128, batch_size: int = 32, spiece: str | Path | None = None) -> None:  # fmt: skip
        super().__init__(data_root, task, max_length=max_length, batch_size=batch_size)
        self.spm_root, self.vocab, self.spiece = spm_root, vocab, spiece

    def setup(self, stage: str | None = None) -> None:
        if self._encode is None:
            super().setup(stage)
            tokenizer = _with_tokenizer(self, self.spm_root, self.vocab, self.spiece)
            self._encode = PairEncoder(tokenizer, self.max_length, _cleaner(self.spiece))

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        loader = super()._loader(split, shuffle)
        loader.collate_fn = LeftAligned(loader.collate_fn)
        return loader


class XLNetRaceDataModule(TextTaskDataModule):
    """RACE (``tasks.multiple_choice``) encoded by :class:`ChoiceInputs` with the released ``spiece`` or the
    SentencePiece model of ``spm_root``; trained on ``task``, tested on each of ``test_tasks`` (default ``task``;
    e.g. ``race-m``, ``race-h``, ``race``: Table 2's three columns from one fine-tuning)."""

    def __init__(self, data_root: str | Path, spm_root: str | Path | None = None, task: str = "race", vocab: int = 4000,
                 max_length: int = 512, batch_size: int = 32, spiece: str | Path | None = None,
                 test_tasks: list[str] | None = None) -> None:  # fmt: skip
        super().__init__(task, data_root, batch_size=batch_size)
        self.spm_root, self.vocab, self.max_length, self.spiece = spm_root, vocab, max_length, spiece
        self.tests = [TextTaskDataModule(name, data_root, batch_size=batch_size) for name in test_tasks or []]

    def setup(self, stage: str | None = None) -> None:
        if self.data_hash is None:
            super().setup(stage)
            for module in self.tests:
                module.setup(stage)
            if self.tests:
                hashes = "\n".join(m.data_hash for m in (self, *self.tests))
                self.data_hash = hashlib.sha256(hashes.encode()).hexdigest()
            tokenizer = _with_tokenizer(self, self.spm_root, self.vocab, self.spiece)
            self.tokenizer = ChoiceInputs(tokenizer, self.max_length, _cleaner(self.spiece))
            for module in self.tests:
                module.tokenizer = self.tokenizer

    def test_dataloader(self) -> DataLoader | list[DataLoader]:
        return [module.test_dataloader() for module in self.tests] if self.tests else super().test_dataloader()

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        return self.tests[dataloader_idx].scoring(0, folder) if self.tests else super().scoring(dataloader_idx, folder)


class XLNetTextClassificationDataModule(TextClassificationDataModule):
    """A text classification set of Table 4 (``tasks.text_classification``: ``imdb``, ``yelp-2``, ``yelp-5``,
    ``dbpedia``, ``ag-news``, ``amazon-2``, ``amazon-5``) as ``text <sep> <cls>`` (:class:`TextInputs`), cut to
    ``max_length`` pieces, with the released ``spiece`` or the SentencePiece model of ``spm_root``."""

    def __init__(self, data_root: str | Path, dataset: str, spiece: str | Path | None = None,
                 spm_root: str | Path | None = None, vocab: int = RELEASED_VOCAB, max_length: int = 512,
                 batch_size: int = 32) -> None:  # fmt: skip
        super().__init__(dataset, data_root, batch_size=batch_size)
        self.spm_root, self.vocab, self.max_length, self.spiece = spm_root, vocab, max_length, spiece

    def setup(self, stage: str | None = None) -> None:
        if self.train_examples is None:
            super().setup(stage)
            tokenizer = _with_tokenizer(self, self.spm_root, self.vocab, self.spiece)
            self.tokenizer = TextInputs(tokenizer, self.max_length, _cleaner(self.spiece))


class XLNetSquadDataModule(SquadDataModule):
    """SQuAD 1.1 / 2.0 (``tasks.squad``: its windows, ``<cls> question <sep> context <sep>``) with the released
    ``spiece`` or the SentencePiece model of ``spm_root`` as the tokenizer."""

    def __init__(self, data_root: str | Path, spm_root: str | Path | None = None, version: str = "1.1",
                 vocab: int = 4000, max_length: int = 512, doc_stride: int = 128, max_query_length: int = 64,
                 batch_size: int = 48, spiece: str | Path | None = None) -> None:  # fmt: skip
        super().__init__(data_root, version, None, max_length, doc_stride, batch_size, max_query_length)
        self.spm_root, self.vocab, self.spiece = spm_root, vocab, spiece

    def setup(self, stage: str | None = None) -> None:
        if self._tokenize is None:
            super().setup(stage)
            self._tokenize = _with_tokenizer(self, self.spm_root, self.vocab, self.spiece)
