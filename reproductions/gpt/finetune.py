"""GPT's fine-tuning data for the tasks of Tables 2-5, each read in its distributed format and laid out as Figure 1's
input transformation (:mod:`reproductions.gpt.transforms`; Section 3.3):

=============== =================================================== ==============================================
kind            tasks                                               sequences of one example
=============== =================================================== ==============================================
classification  ``glue-cola``, ``glue-sst2``                        ``<s> text <e>``
entailment      ``snli``, ``scitail``, ``glue-mnli`` (``-m``,       ``<s> premise $ hypothesis <e>``
                ``-mm``), ``glue-qnli``, ``glue-rte``
similarity      ``glue-stsb``, ``glue-qqp``, ``glue-mrpc``          ``<s> a $ b <e>`` and ``<s> b $ a <e>``
multiple choice ``race``, ``race-m``, ``race-h``, ``story-cloze``   ``<s> context question $ answer_k <e>``, each k
=============== =================================================== ==============================================

QNLI's pair is (question, sentence) as GLUE orders it. STS-B is a regression (one output, squared error; GLUE scores
it by correlation); the report does not say how it trained STS-B. RACE's context is the article then the question;
when the two are longer than their room (``max_part`` symbols, or with ``max_length`` what the longest answer leaves)
the article's end is cut so that the question is kept whole.

Texts are read as the pre-training corpus reads (WikiText's tokenisation, :func:`tasks.debian_corpora.tokenize`),
then encoded with the BPE the pre-training trained on ``data_root/<corpus>`` (:func:`reproductions.gpt.data.
budget_tokenizer`) or, with ``released_bpe``, with the released vocabulary. The three special tokens are the ids
after that vocabulary (Section 3.2: start, delimiter, extract; :class:`~reproductions.gpt.transforms.Specials`).

The task's data live at ``data_root/<task_folder>`` (default :data:`TASK_FOLDERS`): the folder the SNLI, SciTail or
RACE archive unpacks to (or its parent), the folder of the two Story Cloze CSVs, or the GLUE root (``CoLA/``,
``MNLI/`` ...). Loaders: the task's training split, its dev split for validation (Story Cloze trains and validates on
its validation set, as GPT did: ``tasks.multiple_choice``) and one test loader per ``test_tasks`` entry: for the
text tasks their test split (``race`` trained once, then tested on ``race-m``, ``race-h`` and ``race``: Table 3), for
GLUE the dev set(s) (its test labels are private; ``glue-mnli`` tests on matched, then mismatched). Predictions are
kept in each test task's own format (:func:`test_metric`), so ``harness rescore`` gives back the record's metrics.

Batches: ``((ids, mask), labels)``, ids and mask long ``(B, T)``, or ``(B, S, T)`` with S = 2 orders (similarity)
or S answers (multiple choice); labels long ``(B,)`` (STS-B: float scores).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from harness.errors import HarnessError
from harness.predictions import Scoring
from reproductions.gpt import transforms
from reproductions.gpt.transforms import Specials, pad
from tasks.debian_corpora.tokenize import tokenize
from tasks.loaders import make_loader


class TaskInput(NamedTuple):
    kind: str  # model.TASK_KINDS
    classes: int  # outputs of W_y; multiple choice: the answers of a question (each scored by one output)
    family: str  # "glue" (tasks.glue) or "text" (tasks.text_data)


TASKS: dict[str, TaskInput] = {
    "glue-cola": TaskInput("classification", 2, "glue"),
    "glue-sst2": TaskInput("classification", 2, "glue"),
    "snli": TaskInput("entailment", 3, "text"),
    "scitail": TaskInput("entailment", 2, "text"),
    "glue-mnli": TaskInput("entailment", 3, "glue"),
    "glue-mnli-m": TaskInput("entailment", 3, "glue"),
    "glue-mnli-mm": TaskInput("entailment", 3, "glue"),
    "glue-qnli": TaskInput("entailment", 2, "glue"),
    "glue-rte": TaskInput("entailment", 2, "glue"),
    "glue-stsb": TaskInput("similarity", 1, "glue"),
    "glue-qqp": TaskInput("similarity", 2, "glue"),
    "glue-mrpc": TaskInput("similarity", 2, "glue"),
    "race": TaskInput("multiple_choice", 4, "text"),
    "race-m": TaskInput("multiple_choice", 4, "text"),
    "race-h": TaskInput("multiple_choice", 4, "text"),
    "story-cloze": TaskInput("multiple_choice", 2, "text"),
}
TASK_FOLDERS = {task: "glue" if row.family == "glue" else task for task, row in TASKS.items()}
TASK_FOLDERS.update({"race-m": "race", "race-h": "race"})  # one RACE folder serves its three test sets
REGRESSION = ("glue-stsb",)


def task_input(task: str) -> TaskInput:
    if task not in TASKS:
        raise HarnessError(f"unknown GPT fine-tuning task {task!r}; known: {', '.join(TASKS)}")
    return TASKS[task]


class GPTInputs:
    """Raw text columns of a batch -> Figure 1's sequences for ``kind``, right-padded: ``(ids, mask)``.

    Each part keeps its first ``max_part`` symbols; with ``max_length`` a multiple-choice context (article and
    question) keeps as many as the sequence has room for beside the longest answer. ``tokenizer`` is set at the data
    module's ``setup`` (the BPE is trained there on first use)."""

    def __init__(
        self, kind: str, vocab: int, max_part: int, max_length: int | None = None, tokenizer: Any = None
    ) -> None:
        self.kind, self.special, self.max_part, self.tokenizer = kind, Specials(vocab), max_part, tokenizer
        self.max_length = max_length

    def encode(self, text: str) -> list[int]:
        """The BPE ids of ``text`` read as the LM corpus reads (its WikiText-style tokens)."""
        words = " ".join(tokenize(text.replace("\\n", " ")))
        return self.tokenizer.encode(words, special_tokens=False).ids if words else []

    def sequences(self, *fields: Any) -> list[int] | list[list[int]]:
        """One example's sequence (or sequences) from its raw fields."""
        s, cut = self.special, self.max_part
        if self.kind == "classification":
            return transforms.classification(self.encode(fields[0]), s, cut)
        if self.kind == "entailment":
            return transforms.entailment(self.encode(fields[0]), self.encode(fields[1]), s, cut)
        if self.kind == "similarity":
            return transforms.similarity(self.encode(fields[0]), self.encode(fields[1]), s, cut)
        context, question, options = fields
        answers = [self.encode(option)[:cut] for option in options]
        room = cut if self.max_length is None else self.max_length - 3 - max(map(len, answers), default=0)
        asked = self.encode(question)[: max(room, 0)]
        context_part = self.encode(context)[: max(room - len(asked), 0)] + asked
        return transforms.multiple_choice(context_part, answers, s, max(len(context_part), cut))

    def __call__(self, rows: Sequence[Sequence[Any]]) -> tuple[torch.Tensor, torch.Tensor]:
        """``rows``: each example's raw fields."""
        return pad([self.sequences(*fields) for fields in rows])


class Example(NamedTuple):
    id: Any
    fields: tuple[Any, ...]
    label: int | float


def collate(examples: Sequence[Example], inputs: GPTInputs, regression: bool) -> tuple:
    labels = torch.tensor([e.label for e in examples], dtype=torch.float32 if regression else torch.long)
    return inputs([e.fields for e in examples]), labels


# --- the task data, read by the task families' own readers ---------------------------------------------------------


class GlueSource:
    """A GLUE task's ``train.tsv`` and dev set(s) (``tasks.glue.data``); the test loaders serve the dev sets."""

    def __init__(self, folder: Path, task: str) -> None:
        from tasks.glue.data import GlueDataModule, dev_tasks

        self.module = GlueDataModule(folder, task)
        self.test_tasks = dev_tasks(task)

    def verify(self) -> None:
        self.module.verify()

    def data_hash(self) -> str:
        self.module.setup()
        return self.module.data_hash

    def examples(self, split: str) -> list[Example]:
        rows = self.module.examples(split)
        return [Example(r.id, (r.text_a,) if r.text_b is None else (r.text_a, r.text_b), r.label) for r in rows]

    def split(self, stage: str, index: int = 0) -> list[Example]:
        return self.examples("train" if stage == "train" else self.module.dev_splits[index if stage == "test" else 0])

    def scoring(self, index: int, folder: Path) -> Scoring:
        return self.module.scoring(index, folder)


class TextSource:
    """A task of ``tasks.text_data`` (SNLI, SciTail, RACE, Story Cloze): trained on ``task``'s training split,
    tested on the test split of each of ``test_tasks`` (tasks of one folder, e.g. ``race-m``, ``race-h``, ``race``)."""

    def __init__(self, folder: Path, task: str, test_tasks: Sequence[str], test_split: str | None = None) -> None:
        from tasks.text_data import TextTaskDataModule

        splits = None if test_split is None else [test_split]
        self.module = TextTaskDataModule(task, folder)
        self.tests = [TextTaskDataModule(name, folder, test_splits=splits) for name in test_tasks]
        self.test_tasks = tuple(test_tasks)

    def verify(self) -> None:
        for module in (self.module, *self.tests):
            module.verify()

    def data_hash(self) -> str:
        hashes = []
        for module in (self.module, *self.tests):
            module.setup()
            hashes.append(module.data_hash)
        return hashes[0] if len(set(hashes)) == 1 else hashlib.sha256("\n".join(hashes).encode()).hexdigest()

    def split(self, stage: str, index: int = 0) -> list[Example]:
        module = self.tests[index] if stage == "test" else self.module
        split = module.test_splits[0] if stage == "test" else module.spec.splits[("train", "val").index(stage)]
        return [Example(r.id, r.fields, r.label) for r in module.records(split)]

    def scoring(self, index: int, folder: Path) -> Scoring:
        return self.tests[index].scoring(0, folder)


class GPTTaskDataModule(pl.LightningDataModule):
    """One task of :data:`TASKS` as Figure 1's input sequences (see the module docstring).

    Args:
        data_root: the folder holding the pre-training corpus (``corpus/``, whose BPE is kept beside it) and the
            task's folder.
        task: the task trained on (a key of :data:`TASKS`).
        test_tasks: the tasks tested on, of ``task``'s folder (text tasks only; default ``task``; GLUE: its dev
            set(s)).
        task_folder: the task's folder under ``data_root`` (default :data:`TASK_FOLDERS`).
        vocab: BPE symbols (the model's vocabulary; the special ids follow it).
        corpus: the pre-training corpus the BPE was trained on.
        max_part: symbols kept of each part of a sequence (the sequence adds start, delimiter and extract).
        max_length: multiple choice: the longest sequence (the model's positions); the context keeps what room the
            longest answer leaves (``None``: ``max_part``, as any other part).
        batch_size: examples per batch.
        num_workers: data-loader worker processes.
        released_bpe: the released model folder: encode with its vocabulary (``data.released_tokenizer``).
        test_split: text tasks: the split the test loaders serve instead of the test split (e.g. ``dev``: Figure 2,
            left, plots RACE's dev accuracy).
    """

    def __init__(
        self,
        data_root: str | Path,
        task: str,
        test_tasks: Sequence[str] | None = None,
        task_folder: str | None = None,
        vocab: int = 40478,
        corpus: str = "debian-lm",
        max_part: int = 254,
        max_length: int | None = None,
        batch_size: int = 32,
        num_workers: int = 0,
        released_bpe: str | None = None,
        test_split: str | None = None,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.data_root, self.row = Path(data_root), task_input(task)
        self.folder = self.data_root / (task_folder or TASK_FOLDERS[task])
        self.source = self._source(task, list(test_tasks or [task]), test_split)
        self.test_tasks = self.source.test_tasks
        self.inputs = GPTInputs(self.row.kind, vocab, max_part, max_length)
        self.regression = task in REGRESSION
        self.data_hash: str | None = None
        self.stages: dict[str, list[list[Example]]] = {}

    def _source(self, task: str, test_tasks: list[str], test_split: str | None) -> GlueSource | TextSource:
        if self.row.family == "glue":
            if test_tasks != [task] or test_split is not None:
                raise HarnessError(f"test_tasks, test_split: a GLUE task tests on its own dev set(s); {task} got those")
            return GlueSource(self.folder, task)
        for name in test_tasks:
            if TASK_FOLDERS.get(name) != TASK_FOLDERS[task] or task_input(name).kind != self.row.kind:
                raise HarnessError(f"test_tasks: {name!r} is not read from {task}'s folder with {task}'s input layout")
        return TextSource(self.folder, task, test_tasks, test_split)

    def verify(self) -> None:
        """Read every split; a missing or malformed file is one error naming it."""
        self.source.verify()

    def setup(self, stage: str | None = None) -> None:
        if self.data_hash is not None:
            return
        from reproductions.gpt.data import budget_tokenizer, released_tokenizer
        from tasks.tokenizers import register

        hp = self.hparams
        if hp.released_bpe is None:
            tokenizer = budget_tokenizer(self.data_root, hp.vocab, hp.corpus)
            register(self, tokenizer)  # the records cite it (results/tokenizers/<sha256>.json)
        else:
            tokenizer = released_tokenizer(hp.released_bpe)
        self.inputs.tokenizer = tokenizer
        self.stages = {"train": [self.source.split("train")], "val": [self.source.split("val")]}
        self.stages["test"] = [self.source.split("test", i) for i in range(len(self.test_tasks))]
        self.data_hash = hashlib.sha256(f"{self.source.data_hash()}\n{tokenizer.digest}".encode()).hexdigest()

    def _loader(self, stage: str, index: int = 0) -> DataLoader:
        examples = self.stages[stage][index] if stage in self.stages else None
        return make_loader(
            examples,
            batch_size=self.hparams.batch_size,
            num_workers=self.hparams.num_workers,
            shuffle=stage == "train",
            owner=type(self).__name__,
            collate_fn=functools.partial(collate, inputs=self.inputs, regression=self.regression),
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader("train")

    def val_dataloader(self) -> DataLoader:
        return self._loader("val")

    def test_dataloader(self) -> DataLoader | list[DataLoader]:
        loaders = [self._loader("test", index) for index in range(len(self.test_tasks))]
        return loaders[0] if len(loaders) == 1 else loaders

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """Test loader ``dataloader_idx`` is scored by its task's own scorer against its references."""
        return self.source.scoring(dataloader_idx, folder)


# --- test metrics: each test task's own, keeping its predictions ----------------------------------------------------


def test_metric(task: str) -> Any:  # noqa: ANN401 (a torchmetrics Metric or MetricCollection)
    """GLUE: the task's metrics (``tasks.glue.metric``, ×100, predictions written as a GLUE submission TSV); the text
    tasks: accuracy in percent (``tasks.text_data.AnswerAccuracy``, predictions in the task's answer CSV)."""
    if task_input(task).family == "glue":
        from tasks.glue.metric import glue_metrics

        return glue_metrics(task)
    from tasks.text_data import AnswerAccuracy

    return AnswerAccuracy()


def predictions(scores: torch.Tensor, task: str) -> torch.Tensor:
    """What ``test_metric(task)`` is updated with: STS-B's scores ``(B,)``, a GLUE class index ``(B,)``, or the
    scores ``(B, C)`` themselves (the answer is their arg-max)."""
    if task in REGRESSION:
        return scores.squeeze(-1)
    return scores.argmax(-1) if task_input(task).family == "glue" else scores


# --- the smoke tier's data: the tasks' own fixtures -----------------------------------------------------------------


def prepare_smoke_task(root: Path, task: str) -> None:
    """The smoke tier's data under ``root``: the tiny Debian corpora (the BPE's training text,
    ``data.prepare_smoke``) and ``task``'s fixture in its distributed layout at ``root/<TASK_FOLDERS[task]>``."""
    from reproductions.gpt.data import prepare_smoke

    prepare_smoke(Path(root))
    folder, row = Path(root) / TASK_FOLDERS[task], task_input(task)
    if row.family == "glue":
        from tasks.glue.fixtures import write_tiny_glue_data

        write_tiny_glue_data(folder, task)
    elif row.kind == "entailment":
        from tasks.entailment.fixtures import write_tiny_scitail, write_tiny_snli

        (write_tiny_snli if task == "snli" else write_tiny_scitail)(folder)
    else:
        from tasks.multiple_choice.fixtures import write_tiny_cloze, write_tiny_race

        (write_tiny_cloze if task == "story-cloze" else write_tiny_race)(folder)
