"""BERT_FINETUNE's first stage (UDA, arXiv 1904.12848v6, Appendix E.1): masked-LM pre-training examples made from the
in-domain unlabelled text, as google-research/bert's ``create_pretraining_data.py`` makes them.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, Dataset

from harness.errors import HarnessError
from reproductions.uda.data.text import PAD, read_text_examples

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")  # a sentence ends at . ! or ? followed by white space
HELD_OUT_SEED = 0  # the held-out texts and their examples: the same for every run, so their losses compare


class MaskedLMDataModule(pl.LightningDataModule):
    """In-domain unlabelled text as BERT pre-training examples of ``max_tokens`` WordPieces (Appendix E.1's
    "Fine-tuning BERT on in-domain unsupervised data", done "using the code released by BERT").

    Texts: the task's training texts (``train_texts``; labels never read) and/or the extra unlabelled texts of
    ``unlabelled_extra`` (IMDb's ``unsup`` folder, McAuley et al.'s Amazon review JSON lines, or one text a line:
    :func:`tasks.text_classification.data.read_unlabelled`, its first ``unlabelled_extra_size``). ``held_out`` of them,
    drawn by a fixed permutation (seed 0, whatever the run's seed), are the test set: the paper picks the further
    pre-trained model "by the BERT loss on a held-out set"; the rest train. Each text is cut into sentences (at
    ``.``, ``!`` or ``?`` followed by white space) and each sentence into WordPieces with the released ``vocab``
    (:func:`tasks.tokenizers.hf.bert_wordpiece`, cited in the records).

    An example per text, as BERT's ``create_pretraining_data.py`` makes them (:func:`nets.masked_lm.sentence_pair`):
    ``[CLS] A [SEP] B [SEP]`` with token types 0 then 1, B the text's next sentences or (half the time) a random
    text's, ``short_seq_prob`` of them shorter; without ``next_sentence``, ``[CLS]`` + the text's first
    ``max_tokens - 2`` pieces + ``[SEP]``. Padded to ``max_tokens``. A text's example is drawn from ``(seed, index)``
    (the held-out ones from :data:`HELD_OUT_SEED`), so it is the same in every epoch, as BERT's are made once before
    training; the masks are drawn per step by the system (:class:`reproductions.uda.system.BertPretrainSystem`).
    Texts are held in memory, as :class:`~reproductions.uda.data.text.TextUDADataModule` holds them.
    """

    def __init__(
        self,
        task: str = "yelp-2",
        data_root: str = "data/yelp-2",
        train_texts: bool = True,
        unlabelled_extra: str | None = None,
        unlabelled_extra_size: int | None = None,
        vocab: str = "data/bert/uncased_L-24_H-1024_A-16/vocab.txt",
        lowercase: bool = True,
        max_tokens: int = 512,
        next_sentence: bool = True,
        short_seq_prob: float = 0.1,
        held_out: int = 10000,
        batch_size: int = 32,
        eval_batch_size: int = 32,
        num_workers: int = 0,
        seed: int | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        if not train_texts and unlabelled_extra is None:
            raise HarnessError("no text to pre-train on: set train_texts: true or unlabelled_extra")
        if max_tokens < 8 or held_out < 1:
            raise HarnessError(f"need max_tokens >= 8 and held_out >= 1; got {max_tokens}, {held_out}")
        self.data_hash: str | None = None
        self.tokenizer: Any = None

    def verify(self) -> None:
        from tasks.tokenizers.hf import read_vocab

        hp = self.hparams
        if hp.train_texts:
            read_text_examples(hp.task, hp.data_root, "train")
        if hp.unlabelled_extra is not None:
            from tasks.text_classification.data import read_unlabelled

            read_unlabelled(Path(hp.unlabelled_extra), 1)
        read_vocab(hp.vocab)

    def setup(self, stage: str | None = None) -> None:
        if self.data_hash is not None:
            return
        from tasks.tokenizers import register
        from tasks.tokenizers.hf import bert_wordpiece

        hp = self.hparams
        self.tokenizer = bert_wordpiece(hp.vocab, hp.lowercase)
        register(self, self.tokenizer)
        self.mask_id = self.tokenizer.mask_token_id
        self.specials = (self.tokenizer.pad_token_id, self.tokenizer.cls_token_id, self.tokenizer.sep_token_id)
        if self.tokenizer.pad_token_id != PAD:
            raise HarnessError(f"{hp.vocab}: [PAD] is id {self.tokenizer.pad_token_id} (must be {PAD})")
        texts = self._texts()
        if len(texts) < hp.held_out + 2:
            raise HarnessError(f"{len(texts)} texts: held_out ({hp.held_out}) must leave two or more to train on")
        order = np.random.default_rng(HELD_OUT_SEED).permutation(len(texts))
        self.train_texts = [texts[i] for i in sorted(order[hp.held_out :])]
        self.test_texts = [texts[i] for i in sorted(order[: hp.held_out])]
        self.seed = hp.seed if hp.seed is not None else torch.initial_seed()
        digest = hashlib.sha256(f"tokenizer {self.tokenizer.digest} held_out {hp.held_out}\n".encode())
        for text in texts:  # the texts themselves, one a line (millions of reviews: no joined copy)
            digest.update(f"{text}\n".encode())
        self.data_hash = digest.hexdigest()

    def _texts(self) -> list[str]:
        from tasks.text_classification.data import read_unlabelled

        hp = self.hparams
        examples = read_text_examples(hp.task, hp.data_root, "train") if hp.train_texts else []
        if hp.unlabelled_extra is not None:
            examples = examples + read_unlabelled(Path(hp.unlabelled_extra), hp.unlabelled_extra_size)
        return [" ".join(e.text.split()) for e in examples if e.text.strip()]  # one line, no empty text

    def sentences(self, text: str) -> list[list[int]]:
        """The text's sentences as WordPiece ids (those that give no piece left out)."""
        pieces = (self.tokenizer.encode(s, special_tokens=False).ids for s in SENTENCE_END.split(text))
        return [p for p in pieces if p]

    def example(self, texts: Sequence[str], index: int, seed: int) -> dict[str, torch.Tensor]:
        """Text ``index``'s pre-training example, drawn from ``(seed, index)``: fixed-length tensors."""
        from nets.masked_lm import sentence_pair

        hp, tok = self.hparams, self.tokenizer
        rng = random.Random(f"{seed}:{index}")
        if not hp.next_sentence:
            pieces = [t for s in self.sentences(texts[index]) for t in s][: hp.max_tokens - 2]
            ids, types, label = [tok.cls_token_id, *pieces, tok.sep_token_id], [0] * (len(pieces) + 2), 0
        else:

            def random_text() -> list[list[int]]:  # another text (BERT draws one other than the current)
                other = rng.randrange(len(texts) - 1)
                return self.sentences(texts[other + (other >= index)])

            pair = sentence_pair(self.sentences(texts[index]) or [[tok.unk_token_id]], random_text, hp.max_tokens, rng,
                                 hp.short_seq_prob)  # fmt: skip
            a, b = pair.tokens_a, pair.tokens_b
            ids = [tok.cls_token_id, *a, tok.sep_token_id, *b, tok.sep_token_id]
            types, label = [0] * (len(a) + 2) + [1] * (len(b) + 1), int(pair.is_random_next)
        pad = hp.max_tokens - len(ids)
        input_ids = torch.tensor(ids + [PAD] * pad)
        return {
            "input_ids": input_ids,
            "token_type_ids": torch.tensor(types + [0] * pad),
            "attention_mask": torch.tensor([1] * len(ids) + [0] * pad),
            "candidates": ~torch.isin(input_ids, torch.tensor(self.specials)),
            "next_sentence_label": torch.tensor(label),
        }

    def train_dataloader(self) -> DataLoader:
        hp = self.hparams
        data = PretrainingExamples(self, self.train_texts, self.seed)
        generator = torch.Generator().manual_seed(self.seed)
        return DataLoader(data, hp.batch_size, shuffle=True, generator=generator, num_workers=hp.num_workers,
                          drop_last=True, persistent_workers=hp.num_workers > 0)  # fmt: skip

    def test_dataloader(self) -> DataLoader:
        data = PretrainingExamples(self, self.test_texts, HELD_OUT_SEED)
        return DataLoader(data, self.hparams.eval_batch_size, shuffle=False, num_workers=self.hparams.num_workers)


class PretrainingExamples(Dataset):
    """Item ``i``: text ``i``'s pre-training example (:meth:`MaskedLMDataModule.example`), drawn from ``seed``."""

    def __init__(self, owner: MaskedLMDataModule, texts: Sequence[str], seed: int) -> None:
        self.owner, self.texts, self.seed = owner, texts, seed

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return self.owner.example(self.texts, index, self.seed)
