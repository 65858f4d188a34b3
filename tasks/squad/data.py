"""SQuAD v1.1 and v2.0 training and dev files in the official JSON layout, as a Lightning data module.

Datasets: Rajpurkar et al., "SQuAD: 100,000+ Questions for Machine Comprehension of Text" (arXiv:1606.05250) and
Rajpurkar, Jia & Liang, "Know What You Don't Know: Unanswerable Questions for SQuAD" (arXiv:1806.03822). Files:
``<data_root>/train-v1.1.json`` and ``dev-v1.1.json`` (v2.0: ``train-v2.0.json``, ``dev-v2.0.json``), the names
under which https://rajpurkar.github.io/SQuAD-explorer/ distributes them.

Reading builds on the scorer's reader (:mod:`tasks.squad.score`): invalid JSON is an error naming the file, line
and column, a wrong structure one naming the JSON path (``data[3].paragraphs[0].qas[2].answers[0].text``), a
duplicated question id both places. Beyond what the scorer reads, each paragraph needs a ``context`` string, each
question a ``question`` string, each answer an integer ``answer_start``; v2.0's ``is_impossible`` must be a boolean
that agrees with the answers (absent, a question without answers is unanswerable), and every v1.1 question needs an
answer. Texts are kept exactly as written: stripping a context's leading white space shifts every ``answer_start``
(the bug of HuggingFace datasets#2585).

An answer whose text is not ``context[answer_start:answer_start + len(text)]`` is not an error: ``verify()`` warns
with the count and the first JSON paths, and the answer is used as given. HuggingFace's check of this alignment
over the official train and dev files of both versions passed once contexts were no longer stripped
(datasets#2585, #2586), so such a warning points at a modified file.

Examples are :class:`SquadExample` ``(qid, question, context, answers, is_impossible)``, ``answers`` a tuple of
``(text, char start)``. The validation and test dataloaders serve the dev file (the test set is hidden).

Batches. Without a tokenizer, a batch is a list of examples: tokenizing belongs to the reproduction (BERT's
WordPiece, XLNet's SentencePiece). With ``tokenizer="module:factory"`` (imported on use, called with no arguments),
the factory returns ``tokenize(text) -> (ids, offsets)``, ``offsets[i]`` the ``(start, end)`` characters of token
``i`` in ``text``, with attributes ``cls_token_id``, ``sep_token_id`` and optionally ``pad_token_id`` (default 0).
Each question then becomes features as in BERT's ``run_squad.py`` (Devlin et al., arXiv:1810.04805):

- the question's tokens, cut to ``max_query_length``;
- windows of ``max_length - len(question) - 3`` context tokens, each starting ``min(doc_stride, window length)``
  tokens after the previous one, until a window reaches the end of the context;
- input ``[CLS] question [SEP] window [SEP]``, ``token_type_ids`` 0 up to the first ``[SEP]``, then 1;
- ``start_positions`` / ``end_positions``: the first and last token overlapping the first gold answer's characters
  (the training files have exactly one) when both lie in the window, else 0, the ``[CLS]`` index: for unanswerable
  questions and for windows that do not hold the whole answer.

XLNet's preprocessing is the same up to the layout (its CLS comes last); a reproduction needing that lays out its
own features from :func:`windows`. A tokenized batch holds ``input_ids``, ``attention_mask``, ``token_type_ids``
long (N, T) padded to the longest feature, ``start_positions``, ``end_positions`` and ``example_index`` long (N,)
(into ``module.examples(split)``), ``offsets`` long (N, T, 2) (a context token's characters in its context,
``(-1, -1)`` elsewhere) and ``qids``, a list of N question ids; :func:`span_text` turns a predicted span back into
the answer text of the prediction JSON. A :class:`tasks.tokenizers.Tokenizer` (from a factory, or ``tokenizer`` the
path of a stored one, ``results/tokenizers/<sha256>.json``) serves too: its pieces without special tokens are the
ids and offsets. :func:`whitespace_tokenizer` (:mod:`tasks.tokenizers.words`, imported here under its old path) is a
reference tokenizer for tests and the smoke tier, not any paper's.

``data_hash`` (after ``setup()``) is the sha256 of the ``sha256sum``-style manifest (``<sha256>  <file name>``
lines) of the two files.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader

from harness.errors import HarnessError
from harness.predictions import Scoring
from harness.records import files_hash
from tasks.squad.score import Question, _expect, _field, _json_type, _paragraph_questions, _read_json
from tasks.tokenizers import Tokenizer, make_tokenizer
from tasks.tokenizers.words import WhitespaceTokenizer, whitespace_tokenizer  # noqa: F401 (their old import path)

FILE_NAMES = {"1.1": ("train-v1.1.json", "dev-v1.1.json"), "2.0": ("train-v2.0.json", "dev-v2.0.json")}
SPLITS = ("train", "dev")
_SHOWN = 5  # JSON paths quoted in a warning before "..."


class SquadExample(NamedTuple):
    qid: str
    question: str
    context: str
    answers: tuple[tuple[str, int], ...]  # (text, char start)
    is_impossible: bool


class Feature(NamedTuple):
    """One window of one question (see the module docstring)."""

    example_index: int
    input_ids: list[int]
    token_type_ids: list[int]
    offsets: list[tuple[int, int]]
    start_position: int
    end_position: int


def squad_version(version: str | float) -> str:
    """``"1.1"`` or ``"2.0"`` from ``1.1``, ``"v2.0"`` ... (a YAML config may give a number)."""
    text = str(version).removeprefix("v")
    if text not in FILE_NAMES:
        raise HarnessError(f"SQuAD version must be '1.1' or '2.0', not {version!r}")
    return text


# --- reading -------------------------------------------------------------------------------------------------------


def _answers(qa: dict, question: Question, context: str, path: Path, misaligned: list[str]) -> tuple:
    spans = []
    for m, text in enumerate(question.answers):
        where = f"{question.where}.answers[{m}]"
        start = _field(qa["answers"][m], "answer_start", int, path, where, "an integer")
        if start < 0 or context[start : start + len(text)] != text:
            misaligned.append(where)
        spans.append((text, start))
    return tuple(spans)


def _is_impossible(qa: dict, question: Question, v2: bool, path: Path) -> bool:
    at = f"{path}: {question.where} (id {question.qid!r})"
    if not v2:
        if not question.answers:
            raise HarnessError(f"{at} has no answer; every SQuAD v1.1 question has one (v2.0 data: version='2.0')")
        return False
    flag = qa.get("is_impossible", not question.answers)
    if not isinstance(flag, bool):
        raise HarnessError(f"{path}: {question.where}.is_impossible must be a boolean, found {_json_type(flag)}")
    if flag == bool(question.answers):
        raise HarnessError(
            f"{at} {'is_impossible but has answers' if flag else 'has no answer but is not is_impossible'}"
        )
    return flag


def _paragraph_examples(
    paragraph: Any, path: Path, where: str, v2: bool, misaligned: list[str]
) -> Iterator[tuple[SquadExample, str]]:
    questions = list(_paragraph_questions(paragraph, path, where))  # the scorer's checks of qas, ids, answer texts
    context = _field(paragraph, "context", str, path, where, "a string")
    for qa, question in zip(paragraph["qas"], questions, strict=True):
        text = _field(qa, "question", str, path, question.where, "a string")
        answers = _answers(qa, question, context, path, misaligned)
        example = SquadExample(question.qid, text, context, answers, _is_impossible(qa, question, v2, path))
        yield example, question.where


def read_examples(path: Path | str, version: str = "1.1") -> tuple[list[SquadExample], list[str]]:
    """The questions of an official SQuAD file, in file order, and the JSON paths of misaligned answers."""
    path, v2 = Path(path), squad_version(version) == "2.0"
    doc = _expect(_read_json(path, "SQuAD data"), dict, path, "the top level", "an object with 'data'")
    examples: list[SquadExample] = []
    misaligned: list[str] = []
    seen: dict[str, str] = {}
    for i, article in enumerate(_field(doc, "data", list, path, "the top level", "an array of articles")):
        _expect(article, dict, path, f"data[{i}]", "an object with a 'paragraphs' array")
        for j, paragraph in enumerate(_field(article, "paragraphs", list, path, f"data[{i}]", "an array")):
            for example, at in _paragraph_examples(paragraph, path, f"data[{i}].paragraphs[{j}]", v2, misaligned):
                if example.qid in seen:
                    raise HarnessError(f"{path}: {at}: question id {example.qid!r} already used at {seen[example.qid]}")
                seen[example.qid] = at
                examples.append(example)
    if not examples:
        raise HarnessError(f"{path}: no question")
    return examples, misaligned


def _warn_misaligned(path: Path, misaligned: Sequence[str], total: int) -> None:
    if misaligned:
        shown = ", ".join(misaligned[:_SHOWN]) + (", ..." if len(misaligned) > _SHOWN else "")
        warnings.warn(
            f"{path}: {len(misaligned)} answer(s) of {total} questions do not match the context at their "
            f"answer_start (used as given): {shown}",
            stacklevel=3,
        )


# --- windows -------------------------------------------------------------------------------------------------------


def windows(n_tokens: int, size: int, doc_stride: int) -> list[tuple[int, int]]:
    """``(first token, length)`` of the context windows of BERT's ``run_squad.py`` (``doc_spans``)."""
    spans, start = [], 0
    while True:
        length = min(n_tokens - start, size)
        spans.append((start, length))
        if start + length >= n_tokens:
            return spans
        start += min(length, doc_stride)


def answer_tokens(offsets: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """First and last token overlapping the characters ``[start, end)``; ``None`` when no token does."""
    inside = [i for i, (a, b) in enumerate(offsets) if a < end and b > start]
    return (inside[0], inside[-1]) if inside else None


def _tokenize(tokenize: Any, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    if isinstance(tokenize, Tokenizer):  # the one interface: the text's pieces, no special tokens
        encoding = tokenize.encode(text, special_tokens=False)
        return encoding.ids, encoding.offsets
    ids, offsets = tokenize(text)
    if len(ids) != len(offsets):
        raise HarnessError(f"the SQuAD tokenizer gave {len(ids)} ids but {len(offsets)} offsets for {text[:40]!r}")
    return list(ids), [(int(a), int(b)) for a, b in offsets]


def featurize(
    example: SquadExample, index: int, tokenize: Any, max_length: int, doc_stride: int, max_query_length: int
) -> list[Feature]:
    """The windows of one question (see the module docstring)."""
    head = [tokenize.cls_token_id, *_tokenize(tokenize, example.question)[0][:max_query_length], tokenize.sep_token_id]
    ids, offsets = _tokenize(tokenize, example.context)
    answer = None
    if example.answers and not example.is_impossible:
        text, start = example.answers[0]
        answer = answer_tokens(offsets, start, start + len(text))
    features = []
    for first, length in windows(len(ids), max_length - len(head) - 1, doc_stride):
        start_position = end_position = 0
        if answer is not None and first <= answer[0] and answer[1] < first + length:
            start_position, end_position = answer[0] - first + len(head), answer[1] - first + len(head)
        features.append(
            Feature(
                example_index=index,
                input_ids=[*head, *ids[first : first + length], tokenize.sep_token_id],
                token_type_ids=[0] * len(head) + [1] * (length + 1),
                offsets=[(-1, -1)] * len(head) + offsets[first : first + length] + [(-1, -1)],
                start_position=start_position,
                end_position=end_position,
            )
        )
    return features


def span_text(context: str, offsets: Sequence[Sequence[int]], start: int, end: int) -> str:
    """The answer text of the token span ``start..end`` of a feature; ``""`` (no answer) for a span outside the
    context, such as ``[CLS]``'s ``(0, 0)``."""
    if start > end or min(offsets[start][0], offsets[end][0]) < 0:
        return ""
    return context[int(offsets[start][0]) : int(offsets[end][1])]


def collate_features(features: Sequence[Feature], examples: Sequence[SquadExample], pad_id: int) -> dict[str, Any]:
    """A tokenized batch, padded to its longest feature (see the module docstring)."""
    n, width = len(features), max(len(feature.input_ids) for feature in features)
    batch: dict[str, Any] = {
        "input_ids": torch.full((n, width), pad_id, dtype=torch.long),
        "attention_mask": torch.zeros((n, width), dtype=torch.long),
        "token_type_ids": torch.zeros((n, width), dtype=torch.long),
        "offsets": torch.full((n, width, 2), -1, dtype=torch.long),
    }
    for row, feature in enumerate(features):
        length = len(feature.input_ids)
        batch["input_ids"][row, :length] = torch.tensor(feature.input_ids)
        batch["attention_mask"][row, :length] = 1
        batch["token_type_ids"][row, :length] = torch.tensor(feature.token_type_ids)
        batch["offsets"][row, :length] = torch.tensor(feature.offsets)
    for key in ("start_position", "end_position", "example_index"):
        name = key + "s" if key != "example_index" else key
        batch[name] = torch.tensor([getattr(feature, key) for feature in features], dtype=torch.long)
    batch["qids"] = [examples[feature.example_index].qid for feature in features]
    return batch


# --- the data module -----------------------------------------------------------------------------------------------


class SquadDataModule(pl.LightningDataModule):
    """SQuAD v1.1 or v2.0 training and dev files from ``data_root`` (see the module docstring).

    Args:
        data_root: the folder holding ``train-v1.1.json`` and ``dev-v1.1.json`` (or the v2.0 files).
        version: ``"1.1"`` or ``"2.0"``.
        tokenizer: ``"module:factory"``; the factory, called with no arguments, returns ``tokenize(text) -> (ids,
            offsets)`` with ``cls_token_id`` and ``sep_token_id`` attributes (or a ``tasks.tokenizers.Tokenizer``);
            or the path of a stored tokenizer. ``None``: batches of raw examples.
        max_length: tokens per feature, ``[CLS]`` and both ``[SEP]`` included.
        doc_stride: tokens between the starts of consecutive context windows.
        batch_size: examples (raw) or features (tokenized) per batch.
        max_query_length: question tokens kept.
        num_workers: data-loader worker processes.
    """

    def __init__(
        self,
        data_root: str | Path,
        version: str = "1.1",
        tokenizer: str | None = None,
        max_length: int = 384,
        doc_stride: int = 128,
        batch_size: int = 32,
        max_query_length: int = 64,
        num_workers: int = 0,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.version = squad_version(version)
        if max_length - max_query_length - 3 < 1:
            raise HarnessError(
                f"SquadDataModule: max_length {max_length} leaves no context token after a question of "
                f"max_query_length {max_query_length} and 3 special tokens"
            )
        if doc_stride < 1:
            raise HarnessError(f"SquadDataModule: doc_stride must be at least 1, not {doc_stride}")
        self.data_root = Path(data_root)
        self.files = dict(zip(SPLITS, FILE_NAMES[self.version], strict=True))
        self.tokenizer = tokenizer
        self.max_length, self.doc_stride, self.max_query_length = max_length, doc_stride, max_query_length
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.splits: dict[str, list[SquadExample]] = {}
        self.split_features: dict[str, list[Feature]] = {}
        self.data_hash: str | None = None
        self._tokenize: Any = None

    def examples(self, split: str) -> list[SquadExample]:
        """The questions of ``train`` or ``dev``, read once (warning once about misaligned answers)."""
        if split not in self.files:
            raise HarnessError(f"SQuAD has no split {split!r}; it has: {', '.join(SPLITS)}")
        if split not in self.splits:
            path = self.data_root / self.files[split]
            examples, misaligned = read_examples(path, self.version)
            _warn_misaligned(path, misaligned, len(examples))
            self.splits[split] = examples
        return self.splits[split]

    def features(self, split: str) -> list[Feature]:
        """The tokenized windows of ``split``, made once (needs a tokenizer and ``setup()``)."""
        if self._tokenize is None:
            raise HarnessError("SquadDataModule: features need a tokenizer and setup()")
        if split not in self.split_features:
            settings = (self.max_length, self.doc_stride, self.max_query_length)
            self.split_features[split] = [
                feature
                for index, example in enumerate(self.examples(split))
                for feature in featurize(example, index, self._tokenize, *settings)
            ]
        return self.split_features[split]

    def verify(self) -> None:
        """Read both files; raise :class:`HarnessError` naming the file and the line or JSON path at fault."""
        for split in SPLITS:
            self.examples(split)

    def _load_tokenizer(self) -> Any:
        tokenize = make_tokenizer(self.tokenizer)
        absent = [name for name in ("cls_token_id", "sep_token_id") if not hasattr(tokenize, name)]
        if absent:
            raise HarnessError(f"the SQuAD tokenizer made by {self.tokenizer!r} has no {', '.join(absent)} attribute")
        return tokenize

    def setup(self, stage: str | None = None) -> None:
        self.verify()
        if self.data_hash is None:
            self.data_hash = files_hash(self.data_root, list(self.files.values()))
        if self.tokenizer is not None and self._tokenize is None:
            self._tokenize = self._load_tokenizer()

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        if self.data_hash is None:
            raise HarnessError("SquadDataModule: call setup() before asking for a dataloader")
        if self._tokenize is None:
            dataset, collate = self.examples(split), list
        else:
            pad_id = getattr(self._tokenize, "pad_token_id", 0)
            dataset = self.features(split)
            collate = functools.partial(collate_features, examples=self.examples(split), pad_id=pad_id)
        return DataLoader(
            dataset,
            batch_size=self.batch_size,
            shuffle=shuffle,
            num_workers=self.num_workers,
            collate_fn=collate,
            persistent_workers=self.num_workers > 0,
        )

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        """The dev file: the SQuAD test set is hidden."""
        return self._loader("dev", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        """The dev file, as the papers report (``harness score`` scores its prediction JSON)."""
        return self._loader("dev", shuffle=False)

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        """How the test loader's answers are scored: the dev file, ids = its question ids in file order (a system
        that answers in another order passes ``ids`` to :class:`~tasks.squad.metric.SquadMetric`)."""
        task = "squad-v1.1" if self.version == "1.1" else "squad-v2.0"
        return Scoring(task, self.data_root / self.files["dev"], [e.qid for e in self.examples("dev")])
