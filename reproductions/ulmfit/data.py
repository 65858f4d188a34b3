"""ULMFiT's data on the budget corpora (docs/corpora.md): the three stages read the same vocabulary.

- :func:`prepare_budget` / :func:`prepare_smoke` (a tier's ``prepare``): build the Debian text corpora into the data
  root when they are not there (``tasks.debian_corpora``: ``debian-lm``, ``wordnet-lexname``,
  ``fortune-category``; the smoke tier from the tiny package copies of ``tasks.debian_corpora.fixtures``) and write
  the vocabulary file ``vocab-<K>.txt``: ``<pad>``, ``<eos>``, ``<unk>``, then the ``K - 3`` most frequent tokens
  of ``debian-lm``'s training file (ties by the token). Every other token is ``<unk>``.
- :class:`LMStreamDataModule` (stages a and b): a token stream in ``rows`` rows read in BPTT windows, as
  Merity et al. train AWD-LSTM: training windows of variable length (``bptt`` with probability 0.95, else
  ``bptt / 2``, then drawn from a normal distribution of standard deviation 5, at least 5 tokens), evaluation
  windows of ``bptt`` over one row. The stream is ``debian-lm``'s ``wiki.*.tokens`` (general-domain pre-training)
  or the training texts of a classification corpus, without their labels (target-task LM fine-tuning; the
  evaluation stream is its test texts).
- :class:`TokenizedTextDataModule` (stage c): ``tasks.debian_corpora``'s classification module with the texts turned
  into right-padded id matrices and lengths; its last training batch is dropped when incomplete (batch norm needs
  more than one example).

Texts are tokenised by ``tasks.tokenizers`` (:class:`Vocabulary`): at the budget tier as ``debian-lm`` was
(WikiText's conventions), each paragraph followed by ``<eos>`` as the LM stream has it, so the classifier reads what
the LM was trained on; at the full tier by ULMFiT's rule-based tokenizer. The tokenizer is stored content-addressed
and cited by every record (``tasks.tokenizers.register``).
``backwards=True`` reverses the stream (LM) or each document (classifier): the backward model of Section 3.3.
"""

from __future__ import annotations

import functools
import hashlib
import math
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, IterableDataset

from harness.errors import HarnessError
from harness.predictions import Scoring
from tasks.debian_corpora.data import DebianTextDataModule, lm_file, read_classification, read_tokens
from tasks.language_modeling.wikitext import Windows
from tasks.text_classification import LAYOUTS
from tasks.text_classification.data import Example, ExampleDataset, TextClassificationDataModule, collate, read_split
from tasks.tokenizers import Tokenizer, register
from tasks.tokenizers.ulmfit import build_ulmfit_vocab, ulmfit_tokenizer
from tasks.tokenizers.words import wikitext_tokenizer

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"  # the budget vocabulary's specials (WikiText's <unk>, the LM's <eos>)
SPECIALS = (PAD, EOS, UNK)
CORPORA = ("debian-lm", "wordnet-lexname", "fortune-category")
SCHEMES = {"wikitext": "txt", "ulmfit": "json"}  # tokenisation scheme -> vocabulary file suffix
LM_CORPORA = ("debian-lm", "wikitext-103")  # corpora in WikiText-103's layout (wiki.*.tokens)


# --- preparing ---------------------------------------------------------------------------------------------------


def vocabulary_path(root: Path, max_vocab: int, scheme: str = "wikitext") -> Path:
    if scheme not in SCHEMES:
        raise HarnessError(f"unknown tokenisation scheme {scheme!r}; known: {', '.join(SCHEMES)}")
    return Path(root) / f"vocab-{max_vocab}.{SCHEMES[scheme]}"


def write_ulmfit_vocabulary(corpus: Path, path: Path, max_vocab: int) -> Path:
    """ULMFiT's vocabulary (fastai's rules; the ``max_vocab`` most frequent tokens seen at least twice) of
    ``corpus``'s training file, as the ``ulmfit-vocab`` artifact."""
    lines = (line.strip() for line in lm_file(corpus, "train").read_text(encoding="utf-8").split("\n"))
    tokenizer = build_ulmfit_vocab((line for line in lines if line), max_vocab, min_freq=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(tokenizer.backend.content())
    return path


def write_vocabulary(corpus: Path, path: Path, max_vocab: int) -> Path:
    """The ``max_vocab`` tokens (specials first) of ``corpus``'s training file, one per line (see the docstring)."""
    if max_vocab <= len(SPECIALS):
        raise HarnessError(f"max_vocab must exceed {len(SPECIALS)}; got {max_vocab}")
    counts = Counter(read_tokens(lm_file(corpus, "train")))
    ranked = sorted((token for token in counts if token not in SPECIALS), key=lambda t: (-counts[t], t))
    tokens = [*SPECIALS, *ranked[: max_vocab - len(SPECIALS)]]
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_suffix(".tmp")
    staging.write_text("".join(f"{token}\n" for token in tokens), encoding="utf-8")
    staging.replace(path)
    return path


def _prepare(root: Path, source_root: Path, max_vocab: int) -> None:
    from tasks.debian_corpora.corpus import build_text

    if not all((root / name / "corpus.json").is_file() for name in CORPORA):
        build_text(root, source_root)
    if not vocabulary_path(root, max_vocab).is_file():
        write_vocabulary(root / "debian-lm", vocabulary_path(root, max_vocab), max_vocab)


def prepare_budget(root: Path, max_vocab: int = 8000, source_root: str = "/") -> None:
    """The budget corpora from the installed Debian packages (about a minute, once) and the vocabulary file."""
    _prepare(Path(root), Path(source_root), max_vocab)


def prepare_smoke(root: Path, max_vocab: int = 200) -> None:
    """Tiny corpora built from the fixture copies of the packages' files, and the vocabulary file."""
    from tasks.debian_corpora.fixtures import write_debian_tree

    root = Path(root)
    if not (root / "debian-lm" / "corpus.json").is_file():
        write_debian_tree(root / "packages")
    _prepare(root, root / "packages", max_vocab)


# --- the vocabulary ----------------------------------------------------------------------------------------------


class Vocabulary:
    """A chain's vocabulary and its tokenizer (``tasks.tokenizers``), from the file stage a wrote:

    - ``vocab-<K>.txt`` (``scheme: wikitext``, the budget tier): one token per line, ``<pad>``, ``<eos>``, ``<unk>``
      first; texts tokenised as ``debian-lm`` was (``tasks.tokenizers.words.wikitext_tokenizer``), each paragraph
      followed by ``<eos>``;
    - ``vocab-<K>.json`` (``scheme: ulmfit``, the full tier): the ``ulmfit-vocab`` artifact of ULMFiT's rule-based
      tokenizer (``tasks.tokenizers.ulmfit``: fastai's rules, ``xxmaj``, ``xxup``, ``xxrep`` ...); a text is
      ``xxbos`` and its tokens (its ``\\n`` escapes become new lines), padding is ``xxpad``.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise HarnessError(f"{self.path}: cannot read the vocabulary: {exc.strerror or exc}") from None
        self.sha256 = hashlib.sha256(data).hexdigest()
        self.scheme = "ulmfit" if self.path.suffix == ".json" else "wikitext"
        self.tokenizer = self._tokenizer(data)
        self.stoi = {token: index for index, token in enumerate(self.itos)}
        self.pad_id, self.eos_id = self.stoi[PAD if self.scheme == "wikitext" else "xxpad"], self.tokenizer.eos_token_id

    def _tokenizer(self, data: bytes) -> Tokenizer:
        if self.scheme == "ulmfit":
            try:
                tokenizer = ulmfit_tokenizer(data)
            except HarnessError as exc:
                raise HarnessError(f"{self.path}: {exc}") from None
            self.itos = tokenizer.backend.itos
            return tokenizer
        try:
            self.itos = data.decode("utf-8").split("\n")[:-1]
        except UnicodeDecodeError as exc:
            raise HarnessError(f"{self.path}: not UTF-8 text ({exc.reason})") from None
        if tuple(self.itos[: len(SPECIALS)]) != SPECIALS:
            raise HarnessError(f"{self.path}: a vocabulary starts with the lines {', '.join(SPECIALS)}")
        return wikitext_tokenizer(self.itos)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        """Tokens of an already tokenised LM corpus (WikiText's layout) -> ids, ``<unk>`` for the rest."""
        unk = self.tokenizer.unk_token_id
        return [self.stoi.get(token, unk) for token in tokens]

    def encode_text(self, text: str) -> list[int]:
        """A text of a classification corpus (paragraphs joined by the two characters ``\\n``), or a line of a WikiText
        file under the ``ulmfit`` scheme (whose rules undo WikiText's ``@-@`` markers)."""
        if self.scheme == "ulmfit":
            return self.tokenizer.encode(text).ids
        ids: list[int] = []
        for paragraph in text.split("\\n"):
            ids += self.tokenizer.encode(paragraph, special_tokens=False).ids + [self.eos_id]
        return ids

    def encode_corpus(self, path: Path) -> list[int]:
        """A ``wiki.*.tokens`` file as one stream: its tokens and ``<eos>`` per line (``wikitext``), or each
        non-empty line as a text (``ulmfit``)."""
        if self.scheme == "wikitext":
            return self.encode(read_tokens(path))
        ids: list[int] = []
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                ids += self.encode_text(line.strip())
        return ids


def task_examples(root: Path, corpus: str, split: str) -> list[Example]:
    """The ``train`` or ``test`` examples of a classification corpus under ``root``: a budget corpus
    (``root/<corpus>``, Zhang et al.'s CSV layout) or one of the paper's six datasets (``tasks.text_classification``,
    its archive folder under ``root``)."""
    if corpus in LAYOUTS:
        return read_split(corpus, root, split)
    return read_classification(Path(root) / corpus, split)


# --- language-model streams --------------------------------------------------------------------------------------


class StreamWindows(IterableDataset):
    """Training windows ``(inputs, targets)``, long ``(rows, L)``, over ``ids`` cut into ``rows`` rows; ``L`` is
    drawn per window (variable-length BPTT) from a generator seeded by ``seed`` and the epoch."""

    def __init__(self, ids: torch.Tensor, rows: int, bptt: int, variable: bool = True, seed: int = 0) -> None:
        length = len(ids) // rows
        if length < 2:
            raise HarnessError(f"{len(ids)} tokens are too few for {rows} rows")
        self.data = ids[: rows * length].view(rows, length)
        self.bptt, self.variable, self.seed, self.epoch = bptt, variable, seed, 0

    def __len__(self) -> int:
        return math.ceil((self.data.shape[1] - 1) / self.bptt)

    def window_length(self, generator: torch.Generator) -> int:
        if not self.variable:
            return self.bptt
        base = self.bptt if float(torch.rand(1, generator=generator)) < 0.95 else self.bptt / 2
        return max(5, int(base + 5 * float(torch.randn(1, generator=generator))))

    def __iter__(self):
        generator = torch.Generator().manual_seed(self.seed * 1000 + self.epoch)
        self.epoch += 1
        start, end = 0, self.data.shape[1] - 1
        while start < end:
            size = min(self.window_length(generator), end - start)
            yield self.data[:, start : start + size], self.data[:, start + 1 : start + 1 + size]
            start += size


class LMStreamDataModule(pl.LightningDataModule):
    """A token stream for the language model (see the module docstring).

    Args:
        data_root: the folder holding the corpora and the vocabulary file (the tier's prepared data root).
        corpus: ``debian-lm`` or ``wikitext-103`` (its ``wiki.{train,test}.tokens``), or a classification corpus
            (its texts).
        max_vocab: which vocabulary file (``vocab-<max_vocab>.txt`` or ``.json``, see :class:`Vocabulary`); stage a
            writes it from its LM corpus when it is missing.
        scheme: ``wikitext`` (the budget tier) or ``ulmfit`` (the paper's rule-based tokenizer, the full tier).
        vocab_file: another vocabulary file (e.g. the released model's, converted).
        batch_size: rows of the training stream.
        bptt: tokens per window (the mean of the variable lengths).
        train_tokens / eval_tokens: keep only the first so many tokens of the training / evaluation stream.
        variable_bptt: draw training window lengths (Merity et al.) or use ``bptt`` always.
        backwards: reverse the streams (a backward LM).
        seed: of the window lengths.
    """

    def __init__(
        self,
        data_root: str | Path,
        corpus: str = "debian-lm",
        max_vocab: int = 8000,
        batch_size: int = 32,
        bptt: int = 70,
        train_tokens: int | None = None,
        eval_tokens: int | None = None,
        variable_bptt: bool = True,
        backwards: bool = False,
        seed: int = 0,
        vocab_file: str | None = None,
        scheme: str = "wikitext",
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.data_root = Path(data_root)
        self.vocab_path = Path(vocab_file) if vocab_file else vocabulary_path(self.data_root, max_vocab, scheme)
        self.ids: dict[str, torch.Tensor] = {}
        self.vocab: Vocabulary | None = None
        self.data_hash: str | None = None

    def verify(self) -> None:
        if self.hparams.corpus not in LM_CORPORA or self.vocab_path.is_file():
            Vocabulary(self.vocab_path)
        if self.hparams.corpus in LM_CORPORA:
            for split in ("train", "test"):
                lm_file(self.data_root / self.hparams.corpus, split)
        else:
            task_examples(self.data_root, self.hparams.corpus, "test")

    def _stream(self, split: str) -> list[int]:
        folder = self.data_root / self.hparams.corpus
        if self.hparams.corpus in LM_CORPORA:
            return self.vocab.encode_corpus(lm_file(folder, split))
        ids: list[int] = []
        for example in task_examples(self.data_root, self.hparams.corpus, split):
            ids += self.vocab.encode_text(example.text)
        return ids

    def setup(self, stage: str | None = None) -> None:
        if self.ids:
            return
        hp = self.hparams
        if hp.corpus in LM_CORPORA and not self.vocab_path.is_file():  # stage a makes the vocabulary of the chain
            write = write_ulmfit_vocabulary if hp.scheme == "ulmfit" else write_vocabulary
            write(self.data_root / hp.corpus, self.vocab_path, hp.max_vocab)
        self.vocab = Vocabulary(self.vocab_path)
        register(self, self.vocab.tokenizer)  # the records cite the tokenizer (results/tokenizers/<sha256>)
        for split, cap in (("train", hp.train_tokens), ("test", hp.eval_tokens)):
            ids = torch.tensor(self._stream(split)[:cap], dtype=torch.long)
            self.ids[split] = ids.flip(0) if hp.backwards else ids
        digest = hashlib.sha256(self.vocab.sha256.encode())
        for split in ("train", "test"):
            digest.update(self.ids[split].numpy().tobytes())
        self.data_hash = digest.hexdigest()

    def train_dataloader(self) -> DataLoader:
        hp = self.hparams
        windows = StreamWindows(self.ids["train"], hp.batch_size, hp.bptt, hp.variable_bptt, hp.seed)
        return DataLoader(windows, batch_size=None)

    def _eval_loader(self) -> DataLoader:
        return DataLoader(Windows.scoring(self.ids["test"], self.vocab.eos_id, self.hparams.bptt), batch_size=None)

    def val_dataloader(self) -> DataLoader:
        return self._eval_loader()

    def test_dataloader(self) -> DataLoader:
        return self._eval_loader()

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """The test stream as it was scored (its ``<unk>`` included), written to ``folder/wiki.test.tokens`` in
        WikiText's layout for the perplexity scorer of ``debian-lm`` (``wikitext-103`` for that corpus). The ids are
        the positions of the loader's targets in that file: reversed for a backward model."""
        if self.vocab is None:
            raise HarnessError(f"{type(self).__name__}: call setup() before scoring")
        ids = self.ids["test"].flip(0) if self.hparams.backwards else self.ids["test"]
        labels = [EOS if index == self.vocab.eos_id else token for index, token in enumerate(self.vocab.itos)]
        references = write_stream(Path(folder) / "wiki.test.tokens", ids.tolist(), labels, self.vocab.eos_id)
        positions = range(len(ids) - 1, -1, -1) if self.hparams.backwards else range(len(ids))
        task = "wikitext-103" if self.hparams.corpus == "wikitext-103" else "debian-lm"
        return Scoring(task, references, positions, labels)


def write_stream(path: Path, ids: Sequence[int], labels: Sequence[str], eos_id: int) -> Path:
    """A token stream in WikiText's layout: one line per ``<eos>``-ended stretch (the scorer reads an ``<eos>`` at each
    line's end). A stream that does not end with ``<eos>`` (cut by ``eval_tokens``) or a token holding white space
    cannot be written so: an error says which."""
    if not ids or ids[-1] != eos_id:
        raise HarnessError(f"{path.name}: the scored stream does not end with {EOS} (eval_tokens cut a line), so "
                           "WikiText's scorer, which counts one after every line, cannot re-score it")  # fmt: skip
    lines, line = [], []
    for index in ids:
        if index == eos_id:
            lines.append(" ".join(line))
            line = []
        elif not labels[index] or any(character.isspace() for character in labels[index]):
            raise HarnessError(f"{path.name}: token {labels[index]!r} cannot be written in WikiText's layout")
        else:
            line.append(labels[index])
    path.write_text("".join(f"{text}\n" for text in lines), encoding="utf-8")
    return path


# --- classification ----------------------------------------------------------------------------------------------


class TextToIds:
    """A batch of texts -> ids ``(B, T)`` right-padded with the vocabulary's padding token, and lengths ``(B,)``;
    documents longer than ``max_tokens`` keep their last ``max_tokens`` tokens."""

    def __init__(self, vocab: Vocabulary, backwards: bool = False, max_tokens: int | None = None) -> None:
        self.vocab, self.backwards, self.max_tokens = vocab, backwards, max_tokens

    def __call__(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        documents = [self.vocab.encode_text(text)[-self.max_tokens if self.max_tokens else 0 :] for text in texts]
        documents = [document[::-1] if self.backwards else document for document in documents]
        lengths = torch.tensor([max(1, len(document)) for document in documents], dtype=torch.long)
        ids = torch.full((len(documents), int(lengths.max())), self.vocab.pad_id, dtype=torch.long)
        for row, document in enumerate(documents):
            ids[row, : len(document)] = torch.tensor(document, dtype=torch.long)
        return ids, lengths


class TokenizedTextDataModule(DebianTextDataModule):
    """``DebianTextDataModule`` over ``data_root/<corpus>`` with batches ``((ids, lengths), labels)``.

    Args (besides the parent's ``batch_size``, ``per_class``, ``subset_file``):
        data_root: the prepared data root (corpora and vocabulary file).
        corpus: ``wordnet-lexname`` or ``fortune-category``.
        max_vocab: which vocabulary file; scheme: its tokenizer (:class:`Vocabulary`).
        backwards: read each document right to left.
        max_tokens: keep each document's last so many tokens (``None``: all).
        subset_seed: seed of the per-class subset, or ``"run"``: the run's own seed (read in ``setup``, after the
            runner's ``seed_everything``), so each seed of a budget run draws its own labelled examples and two
            recipes run with one seed see the same ones.
    """

    def __init__(
        self,
        data_root: str | Path,
        corpus: str = "wordnet-lexname",
        max_vocab: int = 8000,
        scheme: str = "wikitext",
        batch_size: int = 32,
        per_class: int | None = None,
        subset_seed: int | str = 0,
        subset_file: str | Path | None = None,
        backwards: bool = False,
        max_tokens: int | None = None,
    ) -> None:
        if subset_seed != "run" and not isinstance(subset_seed, int):
            raise HarnessError(f"subset_seed is an integer or 'run' (the run's seed); got {subset_seed!r}")
        self.vocab = Vocabulary(vocabulary_path(Path(data_root), max_vocab, scheme))
        tokenizer = TextToIds(self.vocab, backwards, max_tokens)
        seed = 0 if subset_seed == "run" else subset_seed
        super().__init__(Path(data_root) / corpus, batch_size, 0, tokenizer, per_class, seed, subset_file)
        self.save_hyperparameters(ignore=["tokenizer"])
        self.hparams.subset_seed = subset_seed

    def setup(self, stage: str | None = None) -> None:
        if self.hparams.subset_seed == "run":  # the seed Lightning's seed_everything set for this run
            self.hparams.subset_seed = int(os.environ.get("PL_GLOBAL_SEED", "0"))
        super().setup(stage)
        self.data_hash = hashlib.sha256(f"{self.data_hash}\n{self.vocab.sha256}".encode()).hexdigest()
        register(self, self.vocab.tokenizer)

    def train_dataloader(self) -> DataLoader:
        return training_loader(self, self.train_examples, self.hparams.batch_size)


def training_loader(owner: object, examples: Sequence[Example] | None, batch_size: int) -> DataLoader:
    """Shuffled training batches; the last one is dropped when incomplete (batch norm needs two examples)."""
    if examples is None:
        raise HarnessError(f"{type(owner).__name__}: call setup() before asking for a dataloader")
    batch = min(batch_size, len(examples))
    return DataLoader(
        ExampleDataset(examples),
        batch_size=batch,
        shuffle=True,
        drop_last=len(examples) > batch,
        collate_fn=functools.partial(collate, tokenizer=owner.tokenizer),
    )


class TokenizedBenchmarkDataModule(TextClassificationDataModule):
    """One of the paper's six datasets (``tasks.text_classification``) with batches ``((ids, lengths), labels)``.

    ``holdout`` > 0 holds that fraction of every class out of training (the examples ranked first by
    ``sha256("holdout:<id>")``) and serves it as the validation and test loaders: Section 5's "we split off 10% of
    the training set and report error rates on this validation set" (records' split ``val``). ``vocab_file``: the
    vocabulary of the pre-trained LM (default ``data_root/vocab-<max_vocab>.txt``)."""

    def __init__(
        self,
        dataset: str,
        data_root: str | Path,
        max_vocab: int = 60_000,
        scheme: str = "ulmfit",
        batch_size: int = 64,
        holdout: float = 0.0,
        backwards: bool = False,
        max_tokens: int | None = None,
        vocab_file: str | None = None,
        num_workers: int = 0,
    ) -> None:
        self.vocab = Vocabulary(vocab_file or vocabulary_path(Path(data_root), max_vocab, scheme))
        super().__init__(dataset, data_root, batch_size, num_workers, TextToIds(self.vocab, backwards, max_tokens))
        self.save_hyperparameters(ignore=["tokenizer"])
        self.holdout = holdout

    def setup(self, stage: str | None = None) -> None:
        super().setup(stage)
        if self.holdout > 0 and "heldout" not in self.splits:
            held = held_out(self.train_examples, self.holdout)
            self.splits["heldout"] = [example for example in self.train_examples if example.id in held]
            self.train_examples = [example for example in self.train_examples if example.id not in held]
        self.data_hash = hashlib.sha256(f"{self.data_hash}\n{self.vocab.sha256}\n{self.holdout}".encode()).hexdigest()
        register(self, self.vocab.tokenizer)

    def examples(self, split: str) -> list[Example]:
        if split == "test" and self.holdout > 0:
            self.setup()
            return self.splits["heldout"]
        return super().examples(split)

    def train_dataloader(self) -> DataLoader:
        return training_loader(self, self.train_examples, self.batch_size)


def held_out(examples: Sequence[Example], fraction: float) -> set[str]:
    """Ids of ``ceil(fraction * n_class)`` examples of every class, the first by ``sha256("holdout:<id>")``."""
    by_class: dict[int, list[str]] = {}
    for example in examples:
        by_class.setdefault(example.label, []).append(example.id)
    held: set[str] = set()
    for ids in by_class.values():
        ranked = sorted(ids, key=lambda i: hashlib.sha256(f"holdout:{i}".encode()).digest())
        held.update(ranked[: math.ceil(fraction * len(ids))])
    return held
