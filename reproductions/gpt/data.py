"""GPT's budget data: the Debian text corpora (docs/corpora.md) through a BPE vocabulary trained on ``debian-lm``.

``data_root`` is the folder ``python -m tasks.debian_corpora text OUT`` writes (``debian-lm/``,
``wordnet-lexname/``, ``fortune-category/``); :func:`prepare_text` builds it when missing (the tier's ``prepare``).

- **BPE** (:func:`budget_tokenizer`): GPT-1's character BPE from :mod:`tasks.tokenizers` (``train_bpe(...,
  byte_level=False)``: a word's last symbol marked ``</w>`` as in the released ``vocab_40000.bpe``, lower-cased,
  white space and punctuation split) with ``vocab`` symbols (``<unk>`` and ``<eos>`` included), trained on
  ``wiki.train.tokens`` once and kept content-addressed under ``data_root``; every run stores it in
  ``results/tokenizers/`` and cites it in its records (``tasks.tokenizers.register``), and its sha256 is part of
  the data hash. The corpus is WikiText-tokenised already; the classification texts are tokenised the same way
  (``tasks.debian_corpora.tokenize``) before BPE. The pre-training stage is scored on the corpus's own words: each
  BPE symbol belongs to the white-space word its first character lies in.
- **Pre-training** (:class:`GPTLMDataModule`): the training stream (each line's symbols, then ``<eos>``) cut into
  contiguous sequences of ``n_ctx + 1`` symbols, shuffled ("minibatches of ... randomly sampled, contiguous
  sequences"). Test: ``wiki.test.tokens`` in rows of ``n_ctx`` symbols, in order, each led by the symbol before it
  (:class:`tasks.language_modeling.stream.TokenRows`); the system sums each word's symbol log-probabilities, so the
  record's perplexity is ``debian-lm``'s word-level perplexity.
- **Fine-tuning** (:class:`GPTTextDataModule`): a few-label ``wordnet-lexname`` or ``fortune-category`` subset
  (``DebianTextDataModule``), each text as Figure 1's classification sequence ``<s> text <e>``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from reproductions.gpt.transforms import Specials, classification, pad
from tasks.debian_corpora.corpus import CORPORA, LM_FILES, folder_hash
from tasks.debian_corpora.data import DebianTextDataModule, lm_file, prepare_smoke, prepare_text  # noqa: F401 (configs)
from tasks.debian_corpora.score import EOS
from tasks.debian_corpora.tokenize import UNK, tokenize
from tasks.language_modeling.stream import TokenRows, encode_lines, file_lines, line_words
from tasks.tokenizers import Tokenizer, load_tokenizer, register, save_tokenizer

SPECIAL_SYMBOLS = (UNK, EOS)


# --- BPE ---------------------------------------------------------------------------------------------------------


def budget_tokenizer(data_root: str | Path, vocab: int, corpus: str = "debian-lm") -> Tokenizer:
    """GPT-1's character BPE (:func:`tasks.tokenizers.hf.train_bpe`, ``byte_level=False``: ``</w>`` on a word's
    last symbol, NFKC and lower-casing, BERT's pre-tokenizer) with ``vocab`` symbols, ``<unk>`` and ``<eos>``
    included, trained on ``corpus``'s training text on first use and kept content-addressed in
    ``data_root/<corpus>-gpt-bpe-<vocab>/<sha256>.json`` (training is deterministic: the same file again)."""
    folder = Path(data_root) / f"{corpus}-gpt-bpe-{vocab}"
    kept = sorted(folder.glob("*.json")) if folder.is_dir() else []
    if not kept:
        from tasks.tokenizers.hf import train_bpe

        lines = file_lines(lm_file(Path(data_root) / corpus, "train"))
        kept = [save_tokenizer(train_bpe(lines, vocab, byte_level=False, special_tokens=SPECIAL_SYMBOLS), folder)]
    tokenizer = load_tokenizer(kept[0])
    if tokenizer.vocab_size > vocab:
        raise HarnessError(f"{kept[0]}: {tokenizer.vocab_size} symbols; the model has {vocab}")
    return tokenizer


def released_tokenizer(model_dir: str | Path) -> Tokenizer:
    """The released vocabulary (``encoder_bpe_40000.json`` and ``vocab_40000.bpe``,
    :func:`reproductions.gpt.weights.read_vocabulary`) as a :class:`tasks.tokenizers.Tokenizer`: words split at white
    space and punctuation, lower-cased, a word's last symbol marked ``</w>``, an unknown symbol id 0, as the release
    encodes after its spaCy tokenizer (which is not used here)."""
    from tokenizers import Tokenizer as RustTokenizer
    from tokenizers import models, normalizers, pre_tokenizers

    from reproductions.gpt.weights import read_vocabulary
    from tasks.tokenizers.hf import hf_tokenizer

    encoder, merges = read_vocabulary(model_dir)
    unknown = next(symbol for symbol, index in encoder.items() if index == 0)
    rust = RustTokenizer(models.BPE(vocab=encoder, merges=merges, unk_token=unknown, end_of_word_suffix="</w>"))
    rust.normalizer = normalizers.Lowercase()
    rust.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return hf_tokenizer(rust.to_str().encode("utf-8"))


# --- pre-training ------------------------------------------------------------------------------------------------


class GPTLMDataModule(pl.LightningDataModule):
    """``debian-lm`` as BPE symbols: shuffled training sequences of ``n_ctx + 1``, the test split in order.

    Args:
        data_root: the folder holding ``corpus/`` (and where the BPE file is kept).
        vocab: BPE symbols (the model's vocabulary).
        n_ctx: symbols per sequence.
        batch_size: sequences per training batch.
        test_batch_size: rows per test batch.
        train_lines: read only the first so many lines of ``wiki.train.tokens`` for training (``None``: all).
        test_lines: score only the first so many lines of ``wiki.test.tokens`` (``None``: all); the references
            the predictions are kept with are then those lines, written beside them (``wiki.test.tokens``).
        corpus: the sub-folder with ``wiki.{train,valid,test}.tokens`` (``debian-lm``; any corpus in WikiText-103's
            layout, e.g. BooksCorpus laid out so, for the full tier).
    """

    def __init__(
        self,
        data_root: str | Path,
        vocab: int = 4000,
        n_ctx: int = 128,
        batch_size: int = 32,
        test_batch_size: int = 64,
        train_lines: int | None = None,
        test_lines: int | None = None,
        corpus: str = "debian-lm",
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.data_root = Path(data_root)
        self.test_lines: list[str] = []
        self.train_set: TensorDataset | None = None
        self.test_set: TokenRows | None = None
        self.test_words: list[str] = []
        self.data_hash: str | None = None

    def verify(self) -> None:
        for split in LM_FILES:
            lm_file(self.data_root / self.hparams.corpus, split)

    def setup(self, stage: str | None = None) -> None:
        if self.test_set is not None:
            return
        hp, corpus = self.hparams, self.data_root / self.hparams.corpus
        tokenizer = budget_tokenizer(self.data_root, hp.vocab, hp.corpus)
        register(self, tokenizer)  # the records cite it (results/tokenizers/<sha256>.json)
        train = file_lines(lm_file(corpus, "train"))[: hp.train_lines]
        ids, _ = encode_lines(tokenizer, train, words=False)
        length = hp.n_ctx + 1
        sequences = torch.tensor(ids[: len(ids) // length * length], dtype=torch.long).view(-1, length)
        self.train_set = TensorDataset(sequences)
        test = self.test_lines = file_lines(lm_file(corpus, "test"))[: hp.test_lines]
        ids, ends = encode_lines(tokenizer, test)
        self.test_set = TokenRows(ids, ends, hp.n_ctx, tokenizer.eos_token_id)
        self.test_words = line_words(test)
        if sum(ends) != len(self.test_words):
            raise HarnessError(f"{lm_file(corpus, 'test')}: {sum(ends)} BPE words for {len(self.test_words)} words")
        corpus_hash = folder_hash(corpus, LM_FILES.values())
        self.data_hash = hashlib.sha256(f"{corpus_hash}\n{tokenizer.digest}".encode()).hexdigest()

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.hparams.batch_size, shuffle=True, drop_last=True)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.test_set, batch_size=self.hparams.test_batch_size, shuffle=False)

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """Word ``i`` of ``wiki.test.tokens`` (with ``<eos>`` ending each line) is target ``i``; with ``test_lines``
        the references are the lines scored, written to ``folder/wiki.test.tokens``."""
        words, references = self.test_words, lm_file(self.data_root / self.hparams.corpus, "test")
        if self.hparams.test_lines is not None:
            references = Path(folder) / references.name
            references.write_text("".join(f"{line}\n" for line in self.test_lines), encoding="utf-8")
        return Scoring("debian-lm", references, range(len(words)), words)


# --- fine-tuning -------------------------------------------------------------------------------------------------


class ClassificationInputs:
    """Texts -> Figure 1's classification sequences ``<s> text <e>``, right-padded: ``(ids, mask)``."""

    def __init__(self, tokenizer: Any, vocab: int, max_part: int) -> None:
        self.tokenizer, self.special, self.max_part = tokenizer, Specials(vocab), max_part

    def __call__(self, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        words = [" ".join(tokenize(text.replace("\\n", " "))) or UNK for text in texts]  # as the LM corpus reads
        ids = [self.tokenizer.encode(text, special_tokens=False).ids for text in words]
        return pad([classification(row, self.special, self.max_part) for row in ids])


class GPTTextDataModule(DebianTextDataModule):
    """A few-label Debian classification corpus (``corpus`` under ``data_root``) as GPT's input sequences.

    Args:
        data_root: the folder holding ``debian-lm/`` and the classification corpus.
        corpus: ``wordnet-lexname`` or ``fortune-category``.
        vocab: BPE symbols (the model's vocabulary; special ids follow it).
        max_part: symbols kept of each text (the sequence adds start and extract).
        batch_size, per_class, subset_seed: as :class:`~tasks.debian_corpora.data.DebianTextDataModule`.
        released_bpe: the released model folder: use its vocabulary (:func:`released_tokenizer`) instead of the
            BPE trained on ``debian-lm`` (the full tier, fine-tuning the released weights).
    """

    def __init__(
        self,
        data_root: str | Path,
        corpus: str = "wordnet-lexname",
        vocab: int = 4000,
        max_part: int = 62,
        batch_size: int = 32,
        per_class: int | None = None,
        subset_seed: int = 0,
        released_bpe: str | None = None,
    ) -> None:
        if corpus not in CORPORA[1:]:
            raise HarnessError(f"unknown classification corpus {corpus!r}; known: {', '.join(CORPORA[1:])}")
        super().__init__(Path(data_root) / corpus, batch_size=batch_size, per_class=per_class, subset_seed=subset_seed)
        self.root, self.vocab, self.max_part, self.released_bpe = Path(data_root), vocab, max_part, released_bpe

    def setup(self, stage: str | None = None) -> None:
        if self.train_examples is not None:
            return
        if self.released_bpe is None:
            tokenizer = budget_tokenizer(self.root, self.vocab)
            register(self, tokenizer)
            digest = tokenizer.digest
        else:
            tokenizer = released_tokenizer(self.released_bpe)
            digest = tokenizer.digest
        self.tokenizer = ClassificationInputs(tokenizer, self.vocab, self.max_part)
        super().setup(stage)
        self.data_hash = hashlib.sha256(f"{self.data_hash}\n{digest}".encode()).hexdigest()
