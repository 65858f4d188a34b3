"""UDA's few-label text classification data (arXiv 1904.12848v6, Section 2.3, Appendix E.1): a Debian corpus or a
text classification task (IMDb, DBpedia, Yelp, ...), words hashed or cut into BERT WordPieces, TF-IDF word
replacement, SwitchOut or back-translation on the unlabelled copies.
"""

from __future__ import annotations

import hashlib
import random
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from harness.errors import HarnessError
from reproductions.uda.data.batches import UDADataModule, labelled_positions, unlabelled_positions

TEXT_AUGMENTS = ("tfidf", "switchout", "backtranslation", "none")


PAD, CLS = 0, 1


def hashed_ids(words: Sequence[str], vocab_size: int, max_tokens: int) -> list[int]:
    """``[CLS]`` then each word's id ``3 + crc32(word) mod (vocab_size - 3)`` (ids 0-2: pad, [CLS], [SEP]); a longer
    text keeps its last ``max_tokens - 1`` words, as the paper keeps the last 512 subwords (Appendix E.1)."""
    kept = list(words)[-(max_tokens - 1) :] if max_tokens > 1 else []
    return [CLS] + [3 + zlib.crc32(w.encode()) % (vocab_size - 3) for w in kept]


def pad_ids(rows: Sequence[Sequence[int]]) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([list(r) + [PAD] * (width - len(r)) for r in rows], dtype=torch.long)


def read_text_examples(task: str, root: str, split: str) -> list:
    """Examples (``id``, ``text``, ``label``) of a Debian corpus folder (it has ``corpus.json``) or of a text
    classification task (``imdb``, ``dbpedia``, ``yelp-2``, ...) under ``root``."""
    if (Path(root) / "corpus.json").is_file():
        from tasks.debian_corpora.data import read_classification

        return read_classification(Path(root), split)
    from tasks.text_classification.data import read_split

    return read_split(task, Path(root), split)


class TextUDADataModule(UDADataModule):
    """Few-label text classification with TF-IDF word replacement, SwitchOut or back-translation on the unlabelled
    copies.

    Words (:func:`tasks.text_augment.words`) are numbered by hashing (:func:`hashed_ids`, ``vocab_size`` ids), so
    no vocabulary file is needed; or, with ``vocab`` (a released BERT ``vocab.txt``), each raw text is cut into
    WordPieces (:func:`tasks.tokenizers.hf.bert_wordpiece`, ``lowercase`` for the uncased checkpoints) and laid out
    ``[CLS] pieces [SEP]``, a longer text keeping its last ``max_tokens - 2`` pieces (the paper keeps the last 512
    subwords, Appendix E.1); the run's records cite the tokenizer. ``augment``: ``tfidf``
    (:class:`tasks.text_augment.TfidfWordReplacement`, fitted on the unlabelled texts' words, replacement probability
    ``tfidf_p``; with WordPiece the replaced words are joined by spaces, lower-cased), ``switchout``
    (:class:`tasks.text_augment.SwitchOut`: ``n ~ exp(-n / switchout_tau)`` words replaced by words drawn uniformly
    from the vocabulary of the same texts TF-IDF is fitted on; Table 2), ``backtranslation`` (paraphrases read from
    ``paraphrases``, :class:`tasks.text_augment.Paraphrases`) or ``none``; ``augment_labelled`` applies it to the
    labelled texts too (Table 2's supervised rows). The word-level ones act on words, before numbering, so ``[CLS]``,
    ``[SEP]`` and padding are added afterwards: never replaced, never drawn. Other arguments as
    :class:`~reproductions.uda.data.images.ImageUDADataModule`'s; ``task`` is the dataset id the test split is scored
    as.

    Extra unlabelled text (Appendix E.1: "the concatenation of the training set and the unlabeled set for IMDb and
    external data for Yelp-2, Yelp-5, Amazon-2 and Amazon-5", the external data being McAuley et al.'s Amazon
    reviews): ``unlabelled_extra`` names IMDb's ``aclImdb/train/unsup`` folder, a file of Amazon review JSON lines,
    or a file of one text per line (:func:`tasks.text_classification.data.read_unlabelled`; its first
    ``unlabelled_extra_size`` texts), added to the training texts chosen by ``unlabelled_size``
    (``unlabelled_size: 0`` for the external data alone). Their ids, ``unsup/<file stem or line number>``, are
    what a paraphrase file names them by.
    """

    def __init__(
        self,
        task: str = "wordnet-lexname",
        data_root: str = "data/budget/uda-corpora/wordnet-lexname",
        per_class: int | None = 10,
        label_seed: int = 0,
        unlabelled_size: int | None = None,
        unlabelled_ids: str | None = None,
        unlabelled_extra: str | None = None,
        unlabelled_extra_size: int | None = None,
        batch_size: int = 32,
        unlabelled_ratio: float = 7.0,
        steps_per_epoch: int = 100,
        augment: str = "tfidf",
        augment_labelled: bool = False,
        tfidf_p: float = 0.7,
        switchout_tau: float = 1.25,
        paraphrases: str | None = None,
        vocab_size: int = 8192,
        max_tokens: int = 64,
        vocab: str | None = None,
        lowercase: bool = True,
        test_size: int | None = None,
        eval_batch_size: int = 500,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.tokenizer: Any = None
        if augment not in TEXT_AUGMENTS:
            raise HarnessError(f"augment must be one of {', '.join(TEXT_AUGMENTS)}; got {augment!r}")
        if augment == "backtranslation" and not paraphrases:
            raise HarnessError("augment 'backtranslation' reads its paraphrases from a file: set 'paraphrases'")
        if augment == "switchout" and not switchout_tau > 0:
            raise HarnessError(f"switchout_tau (SwitchOut's temperature) must be positive; got {switchout_tau}")
        self.data_hash: str | None = None

    def verify(self) -> None:
        for split in ("train", "test"):
            read_text_examples(self.hparams.task, self.hparams.data_root, split)
        if self.hparams.unlabelled_extra is not None:
            from tasks.text_classification.data import read_unlabelled

            read_unlabelled(Path(self.hparams.unlabelled_extra), 1)
        if self.hparams.vocab is not None:
            from tasks.tokenizers.hf import read_vocab

            read_vocab(self.hparams.vocab)

    def _wordpiece(self) -> Any:
        """The tokenizer of ``vocab``, cited in the run's records; [PAD] must be id 0 (the network's padding)."""
        from tasks.tokenizers import register
        from tasks.tokenizers.hf import bert_wordpiece

        hp = self.hparams
        tokenizer = bert_wordpiece(hp.vocab, hp.lowercase)
        if tokenizer.pad_token_id != PAD or tokenizer.vocab_size > hp.vocab_size:
            raise HarnessError(
                f"{hp.vocab}: [PAD] is id {tokenizer.pad_token_id} (must be {PAD}) and {tokenizer.vocab_size} pieces "
                f"(at most vocab_size {hp.vocab_size})"
            )
        register(self, tokenizer)
        return tokenizer

    def setup(self, stage: str | None = None) -> None:
        if self.data_hash is not None:
            return
        from tasks.text_augment import words

        hp = self.hparams
        self.tokenizer = self._wordpiece() if hp.vocab is not None else None
        train = read_text_examples(hp.task, hp.data_root, "train")
        ids = [e.id for e in train]
        self.labelled_at = labelled_positions([e.label for e in train], ids, hp.per_class, hp.label_seed)
        self.unlabelled_at = (
            unlabelled_positions(ids, hp.unlabelled_size, hp.unlabelled_ids) if hp.unlabelled_ratio else []
        )
        extra = self._extra() if hp.unlabelled_ratio else []
        self.unlabelled_at += range(len(train), len(train) + len(extra))
        self.num_classes = max(e.label for e in train) + 1
        train = train + extra  # positions past the training split: the extra unlabelled texts
        self.train, self.words = train, {p: words(train[p].text) for p in {*self.labelled_at, *self.unlabelled_at}}
        self.augmenter = self._augmenter()
        test = read_text_examples(hp.task, hp.data_root, "test")[: hp.test_size]
        self.test_inputs = self.encode([e.text for e in test])
        self.test_labels, self.test_ids = torch.tensor([e.label for e in test]), [e.id for e in test]
        self.task = hp.task
        self.num_labelled, self.num_unlabelled = len(self.labelled_at), len(self.unlabelled_at)
        listing = "".join(f"{ids[p]} {train[p].label}\n" for p in self.labelled_at) + f"unlabelled {self.unlabelled_at}"
        listing += f" tokenizer {self.tokenizer.digest}" if self.tokenizer is not None else ""
        listing += "".join(f"\n{e.id}\t{e.text}" for e in extra)  # the extra texts themselves
        self.data_hash = hashlib.sha256(listing.encode()).hexdigest()

    def _extra(self) -> list:
        """The extra unlabelled texts of ``unlabelled_extra`` (none without it)."""
        from tasks.text_classification.data import read_unlabelled

        hp = self.hparams
        if hp.unlabelled_extra is None:
            return []
        return read_unlabelled(Path(hp.unlabelled_extra), hp.unlabelled_extra_size)

    def _augmenter(self) -> Callable[[int, random.Random], str | list[str]] | None:
        from tasks.text_augment import Paraphrases, SwitchOut, TfidfWordReplacement

        hp = self.hparams
        if hp.augment in ("tfidf", "switchout"):
            corpus = (self.words[p] for p in self.unlabelled_at or self.labelled_at)
            replace: TfidfWordReplacement | SwitchOut
            if hp.augment == "tfidf":
                replace = TfidfWordReplacement(corpus, hp.tfidf_p)
            else:
                replace = SwitchOut(corpus, hp.switchout_tau)

            def replaced(position: int, rng: random.Random) -> list[str]:
                replace.rng = rng
                return replace(self.words[position])

            return replaced
        if hp.augment == "backtranslation":
            table = Paraphrases(hp.paraphrases)

            def paraphrase(position: int, rng: random.Random) -> str:
                table.rng = rng
                return table(self.train[position].id, self.train[position].text)

            return paraphrase
        return None

    def row(self, position: int) -> str | list[str]:
        """A training text as :meth:`encode` takes it: its words (hashed ids) or its raw text (WordPiece)."""
        return self.train[position].text if self.tokenizer is not None else self.words[position]

    def encode(self, rows: Sequence[str | Sequence[str]]) -> torch.Tensor:
        """Token ids ``(N, T)``, padded with 0, of texts (``str``) or word lists (TF-IDF's output)."""
        from tasks.text_augment import words

        hp = self.hparams
        if self.tokenizer is None:
            return pad_ids(
                [hashed_ids(words(r) if isinstance(r, str) else r, hp.vocab_size, hp.max_tokens) for r in rows]
            )
        return pad_ids([self.wordpiece_ids(r if isinstance(r, str) else " ".join(r)) for r in rows])

    def wordpiece_ids(self, text: str) -> list[int]:
        """``[CLS]`` + the text's last ``max_tokens - 2`` WordPieces + ``[SEP]``."""
        pieces = self.tokenizer.encode(text, special_tokens=False).ids
        kept = pieces[-(self.hparams.max_tokens - 2) :] if self.hparams.max_tokens > 2 else []
        return [self.tokenizer.cls_token_id, *kept, self.tokenizer.sep_token_id]

    def labelled_batch(self, positions: list[int], rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
        chosen = [self.labelled_at[p] for p in positions]
        augment = self.augmenter if self.hparams.augment_labelled and self.augmenter else None
        rows = [augment(p, rng) if augment else self.row(p) for p in chosen]
        return self.encode(rows), torch.tensor([self.train[p].label for p in chosen])

    def unlabelled_batch(self, positions: list[int], rng: random.Random) -> tuple[torch.Tensor, torch.Tensor]:
        chosen = [self.unlabelled_at[p] for p in positions]
        original = [self.row(p) for p in chosen]
        augmented = [self.augmenter(p, rng) for p in chosen] if self.augmenter else original
        return self.encode(original), self.encode(augmented)
