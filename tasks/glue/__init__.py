"""GLUE: the nine sentence(-pair) tasks of the General Language Understanding Evaluation benchmark, dev sets.

Benchmark: Wang, Singh, Michael, Hill, Levy & Bowman, "GLUE: A Multi-Task Benchmark and Analysis Platform for
Natural Language Understanding" (arXiv:1804.07461). Metrics as GLUE defines them (and as the GLUE baselines and
``transformers``' ``glue_compute_metrics`` compute them): Matthews correlation for CoLA, accuracy and F1 of the
positive class for MRPC and QQP, Pearson and Spearman correlation for STS-B, accuracy for the rest (MNLI on its
matched and mismatched dev sets separately). All are reported ×100, as the papers print them.

References are the dev TSVs exactly as the GLUE download script (``download_glue_data.py``) lays them out, under
``<GLUE root>/<directory>/<dev_file>``. Verified layouts (tab-separated, UTF-8, no quoting):

============ ========================== ========================================================================
task         file                       columns (header row unless noted)
============ ========================== ========================================================================
CoLA         CoLA/dev.tsv               NO header; 4 columns: source, label (0/1), original mark ("*" or ""),
                                        sentence
SST-2        SST-2/dev.tsv              sentence, label (0/1)
MRPC         MRPC/dev.tsv               Quality (0/1), #1 ID, #2 ID, #1 String, #2 String; the file starts with
                                        a UTF-8 byte-order mark, copied from ``msr_paraphrase_train.txt``
STS-B        STS-B/dev.tsv              index, genre, filename, year, old_index, source1, source2, sentence1,
                                        sentence2, score (a float in [0, 5])
QQP          QQP/dev.tsv                id, qid1, qid2, question1, question2, is_duplicate (0/1)
MNLI-m/-mm   MNLI/dev_matched.tsv,      index, promptID, pairID, genre, sentence1_binary_parse,
             MNLI/dev_mismatched.tsv    sentence2_binary_parse, sentence1_parse, sentence2_parse, sentence1,
                                        sentence2, label1 … label5, gold_label (entailment/neutral/contradiction)
QNLI         QNLI/dev.tsv               index, question, sentence, label (entailment/not_entailment)
RTE          RTE/dev.tsv                index, sentence1, sentence2, label (entailment/not_entailment)
WNLI         WNLI/dev.tsv               index, sentence1, sentence2, label (0/1)
============ ========================== ========================================================================

Row ids (the submission ``index``): the 0-based position of the data row in the dev file (header not counted). Where
a file has an ``index`` column (STS-B, MNLI, QNLI, RTE, WNLI) it holds that same position and is read from there;
QQP's own ``id`` column is a question-pair id, not the index.
Predictions are a TSV in the GLUE submission format: header ``index<TAB>prediction``, one row per dev example,
the label written as in the data (``0``/``1``, ``entailment`` …; STS-B a float).

``labels`` orders each task's classes; metrics.py takes class indices in that order (that of the HuggingFace
``glue`` datasets): the positive class of MRPC and QQP is ``"1"``, index 1.

This module is imported to list the registry: it imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness.registry import Task


@dataclass(frozen=True)
class GlueLayout:
    """Where a GLUE task's dev set lives, how its TSV is laid out, and what it is scored by."""

    task_id: str
    title: str
    directory: str
    dev_file: str
    columns: tuple[str, ...]  # the header row; for CoLA (no header row) the names given here to its columns
    has_header: bool
    id_column: str | None  # None: a row's id is its 0-based data-row number
    label_column: str
    labels: tuple[str, ...] | None  # class labels in class-index order; None: a real-valued score (STS-B)
    metrics: tuple[str, ...]

    @property
    def scorer_name(self) -> str:
        """``score_cola``, ``score_mnli_mm`` …: the attribute of ``tasks.glue.score`` that scores this task."""
        return "score_" + self.task_id.removeprefix("glue-").replace("-", "_")


_BINARY = ("0", "1")
_NLI2 = ("entailment", "not_entailment")
_NLI3 = ("entailment", "neutral", "contradiction")
_PAIR = ("index", "sentence1", "sentence2", "label")
_MNLI = (
    "index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse",
    "sentence2_parse", "sentence1", "sentence2", "label1", "label2", "label3", "label4", "label5", "gold_label",
)  # fmt: skip
_STSB = (
    "index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2", "score",
)  # fmt: skip


def _layout(task_id: str, title: str, directory: str, columns: tuple[str, ...], **rest: Any) -> GlueLayout:
    settings = {"dev_file": "dev.tsv", "has_header": True, "id_column": "index", "label_column": "label"}
    settings.update(rest)
    return GlueLayout(task_id=task_id, title=title, directory=directory, columns=columns, **settings)


LAYOUTS: dict[str, GlueLayout] = {
    layout.task_id: layout
    for layout in (
        _layout(
            "glue-cola", "CoLA (Corpus of Linguistic Acceptability)", "CoLA",
            columns=("source", "label", "original_label", "sentence"), has_header=False, id_column=None,
            labels=_BINARY, metrics=("mcc",),
        ),
        _layout(
            "glue-sst2", "SST-2 (Stanford Sentiment Treebank, binary)", "SST-2",
            columns=("sentence", "label"), id_column=None, labels=_BINARY, metrics=("accuracy",),
        ),
        _layout(
            "glue-mrpc", "MRPC (Microsoft Research Paraphrase Corpus)", "MRPC",
            columns=("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"), id_column=None, label_column="Quality",
            labels=_BINARY, metrics=("accuracy", "f1"),
        ),
        _layout(
            "glue-stsb", "STS-B (Semantic Textual Similarity Benchmark)", "STS-B",
            columns=_STSB, label_column="score", labels=None, metrics=("pearson", "spearman"),
        ),
        _layout(
            "glue-qqp", "QQP (Quora Question Pairs)", "QQP",
            # the submission index is the data row's position, not QQP's own `id` column
            columns=("id", "qid1", "qid2", "question1", "question2", "is_duplicate"), id_column=None,
            label_column="is_duplicate", labels=_BINARY, metrics=("accuracy", "f1"),
        ),
        _layout(
            "glue-mnli-m", "MNLI matched (Multi-Genre Natural Language Inference)", "MNLI",
            columns=_MNLI, dev_file="dev_matched.tsv", label_column="gold_label", labels=_NLI3, metrics=("accuracy",),
        ),
        _layout(
            "glue-mnli-mm", "MNLI mismatched (Multi-Genre Natural Language Inference)", "MNLI",
            columns=_MNLI, dev_file="dev_mismatched.tsv", label_column="gold_label", labels=_NLI3,
            metrics=("accuracy",),
        ),
        _layout(
            "glue-qnli", "QNLI (Question-answering NLI)", "QNLI",
            columns=("index", "question", "sentence", "label"), labels=_NLI2, metrics=("accuracy",),
        ),
        _layout(
            "glue-rte", "RTE (Recognizing Textual Entailment)", "RTE",
            columns=_PAIR, labels=_NLI2, metrics=("accuracy",),
        ),
        _layout(
            "glue-wnli", "WNLI (Winograd NLI)", "WNLI",
            columns=_PAIR, labels=_BINARY, metrics=("accuracy",),
        ),
    )
}  # fmt: skip


def _task(task_id: str) -> Task:
    layout = LAYOUTS[task_id]
    return Task(
        id=task_id,
        title=f"GLUE {layout.title}, dev set",
        score=f"tasks.glue.score:{layout.scorer_name}",
        keys=layout.metrics,
        example="tasks.glue.fixtures:example",
        data="tasks.glue.data:GlueDataModule",
        metric="tasks.glue.metric:glue_metrics",
        version=1,
    )


GLUE_COLA = _task("glue-cola")
GLUE_SST2 = _task("glue-sst2")
GLUE_MRPC = _task("glue-mrpc")
GLUE_STSB = _task("glue-stsb")
GLUE_QQP = _task("glue-qqp")
GLUE_MNLI_M = _task("glue-mnli-m")
GLUE_MNLI_MM = _task("glue-mnli-mm")
GLUE_QNLI = _task("glue-qnli")
GLUE_RTE = _task("glue-rte")
GLUE_WNLI = _task("glue-wnli")
