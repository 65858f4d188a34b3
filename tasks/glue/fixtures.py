"""Tiny GLUE dev sets in the exact layouts of the GLUE download script, for tests and the smoke tier.

``write_tiny_glue(root, task)`` writes ``root/<directory>/<dev file>`` (e.g. ``root/MNLI/dev_matched.tsv``) with
eight examples laid out as the real file is (see ``tasks.glue``): CoLA without a header row, MRPC with its
byte-order mark, MNLI with its sixteen columns. The sentences are written for these files and contain quote
characters, balanced and not, as the real ones do, so a reader that honours quoting fails on them. Output is
byte-for-byte deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tasks.glue import LAYOUTS

_FIRST = (
    "The harbour lights came on at dusk .",
    'He called it " the best summer of my life " and meant it .',
    'She said "no" twice , then left the room .',
    '"Nobody expected the ferry to leave on time .',
    "It 's a charming and often affecting walk through the old town .",
    "The kettle boiled before the bread was toasted .",
    "Three fishermen mended their nets on the pier .",
    'A "quiet" week turned into a busy one .',
)
_SECOND = (
    "The lights of the harbour were switched on in the evening .",
    "He thought that summer was his best .",
    "She agreed at once and stayed .",
    "The ferry left on time , to everyone's surprise .",
    "The walk through the old town is dull .",
    "The bread was toasted after the kettle boiled .",
    "The pier was empty all day .",
    'The week was "quiet" from start to end .',
)
_BINARY = ("1", "0", "1", "1", "0", "1", "0", "0")
_SCORES = ("5.000", "3.800", "0.600", "2.750", "0.400", "4.500", "1.200", "2.400")
_NLI3 = ("entailment", "neutral", "contradiction")
_MNLI_GENRES = {"glue-mnli-m": ("fiction", "government", "slate"), "glue-mnli-mm": ("letters", "verbatim", "oup")}


def _parses(sentence: str) -> tuple[str, str]:
    """Stand-ins for MNLI's binary and Penn-style parse columns: bracketed, one token per leaf."""
    words = sentence.split()
    return "( " + " ".join(words) + " )", "(ROOT (S " + " ".join(f"(X {w})" for w in words) + "))"


def _binary_label(task_id: str, i: int) -> str:
    if task_id in ("glue-qnli", "glue-rte"):
        return "entailment" if _BINARY[i] == "1" else "not_entailment"
    return _BINARY[i]


def _mnli_row(task_id: str, i: int) -> list[str]:
    shift = 0 if task_id == "glue-mnli-m" else 3  # the two dev sets hold different pairs
    s1, s2 = _FIRST[(i + shift) % 8], _SECOND[(i + shift) % 8]
    gold = _NLI3[(i + shift) % 3]
    other = _NLI3[(i + shift + 1) % 3]
    prompt = 63000 + 17 * i + shift
    (binary1, parse1), (binary2, parse2) = _parses(s1), _parses(s2)
    genre = _MNLI_GENRES[task_id][i % 3]
    annotators = [gold, gold, other, gold, gold]  # label1 ... label5; gold_label is their majority
    return [
        str(i),
        str(prompt),
        f"{prompt}{gold[0]}",
        genre,
        binary1,
        binary2,
        parse1,
        parse2,
        s1,
        s2,
        *annotators,
        gold,
    ]


_ROWS: dict[str, Callable[[str, int], list[str]]] = {
    "glue-cola": lambda t, i: ["gj04" if i < 4 else "bc01", _BINARY[i], "" if _BINARY[i] == "1" else "*", _FIRST[i]],
    "glue-sst2": lambda t, i: [_FIRST[i].lower() + " ", _BINARY[i]],
    "glue-mrpc": lambda t, i: [_BINARY[i], str(702876 + 131 * i), str(702977 + 131 * i), _FIRST[i], _SECOND[i]],
    "glue-stsb": lambda t, i: [
        str(i),
        "main-captions",
        "MSRvid",
        "2012test",
        f"{i:04d}",
        "none",
        "none",
        _FIRST[i],
        _SECOND[i],
        _SCORES[i],
    ],  # fmt: skip
    "glue-qqp": lambda t, i: [
        str(201359 - 977 * i),
        str(303345 + 2 * i),
        str(303346 + 2 * i),
        _FIRST[i],
        _SECOND[i],
        _BINARY[i],
    ],  # fmt: skip
    "glue-mnli-m": _mnli_row,
    "glue-mnli-mm": _mnli_row,
    "glue-qnli": lambda t, i: [str(i), "What happened " + _SECOND[i].lower(), _FIRST[i], _binary_label(t, i)],
    "glue-rte": lambda t, i: [str(i), _FIRST[i], _SECOND[i], _binary_label(t, i)],
    "glue-wnli": lambda t, i: [str(i), _FIRST[i], _SECOND[i], _binary_label(t, i)],
}


def tiny_glue_lines(task: str) -> list[str]:
    """The lines (without line ends) of the tiny dev TSV of ``task`` (``glue-cola`` or ``cola`` …)."""
    task_id = task if task.startswith("glue-") else f"glue-{task}"
    if task_id not in LAYOUTS:
        raise ValueError(f"unknown GLUE task {task!r}; known: {', '.join(LAYOUTS)}")
    spec = LAYOUTS[task_id]
    lines = ["\t".join(spec.columns)] if spec.has_header else []
    if task_id == "glue-mrpc":
        lines[0] = "\ufeff" + lines[0]  # copied from msr_paraphrase_train.txt by the download script
    lines += ["\t".join(_ROWS[task_id](task_id, i)) for i in range(len(_FIRST))]
    return lines


def write_tiny_glue(root: Path | str, task: str) -> Path:
    """Write the tiny dev set of ``task`` at ``root/<directory>/<dev file>`` and return its path (idempotent)."""
    task_id = task if task.startswith("glue-") else f"glue-{task}"
    lines = tiny_glue_lines(task_id)
    spec = LAYOUTS[task_id]
    path = Path(root) / spec.directory / spec.dev_file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")
    return path


def example(root: Path | str, task_id: str) -> dict[str, Path]:
    """A tiny scoring example for a GLUE task: its dev TSV and a submission predicting the gold labels, except
    that the first and last predictions are swapped."""
    from tasks.glue.score import read_references, write_predictions

    references = write_tiny_glue(root, task_id)
    gold = read_references(task_id, references)
    ids = list(gold)
    predictions = dict(gold)
    predictions[ids[0]], predictions[ids[-1]] = gold[ids[-1]], gold[ids[0]]
    return {"references": references, "predictions": write_predictions(Path(root) / "predictions.tsv", predictions)}


# --- training files ------------------------------------------------------------------------------------------------

# MNLI/train.tsv has one annotator label where the dev files have five: 12 columns, not 16.
MNLI_TRAIN_COLUMNS = LAYOUTS["glue-mnli-m"].columns[:11] + ("gold_label",)
_TRAIN_QQP_IDS = 402555  # QQP's train ids are not those of its dev set


def _train_row(task_id: str, n: int) -> list[str]:
    """Training row ``n``: the dev row ``3n mod 8`` (a reordering) with the file's own ids."""
    spec = LAYOUTS[task_id]
    source = "glue-mnli-m" if spec.directory == "MNLI" else task_id  # the train genres are the matched ones
    row = _ROWS[source](source, (3 * n) % len(_FIRST))
    if spec.id_column is not None:
        row[spec.columns.index(spec.id_column)] = str(n)
    if task_id == "glue-qqp":
        row[0] = str(_TRAIN_QQP_IDS + 11 * n)  # QQP's own pair ids (not the submission index)
    if spec.directory == "MNLI":
        row = row[:11] + row[-1:]  # label1, gold_label
    return row


def tiny_glue_train_lines(task: str) -> list[str]:
    """The lines (without line ends) of the tiny ``train.tsv`` of ``task``, in the layout of the real one: the
    dev layout (CoLA without a header, MRPC with its byte-order mark), except MNLI's 12 columns."""
    task_id = task if task.startswith("glue-") else f"glue-{task}"
    if task_id not in LAYOUTS:
        raise ValueError(f"unknown GLUE task {task!r}; known: {', '.join(LAYOUTS)}")
    spec = LAYOUTS[task_id]
    columns = MNLI_TRAIN_COLUMNS if spec.directory == "MNLI" else spec.columns
    lines = ["\t".join(columns)] if spec.has_header else []
    if task_id == "glue-mrpc":
        lines[0] = "\ufeff" + lines[0]  # the download script copies the header of msr_paraphrase_train.txt
    return lines + ["\t".join(_train_row(task_id, n)) for n in range(len(_FIRST))]


def write_tiny_glue_split(root: Path | str, task: str, split: str = "train") -> Path:
    """Write ``root/<directory>/train.tsv`` (``split="train"``) or the dev file (``split="dev"``) of ``task`` and
    return its path (idempotent, byte-for-byte deterministic)."""
    if split == "dev":
        return write_tiny_glue(root, task)
    if split != "train":
        raise ValueError(f"GLUE fixture split must be 'train' or 'dev', not {split!r}")
    task_id = task if task.startswith("glue-") else f"glue-{task}"
    lines = tiny_glue_train_lines(task_id)
    path = Path(root) / LAYOUTS[task_id].directory / "train.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8", newline="\n")
    return path


def write_tiny_glue_data(root: Path | str, task: str) -> Path:
    """Everything ``tasks.glue.data.GlueDataModule(root, task)`` reads: ``train.tsv`` and the dev file(s); ``task``
    may be ``glue-mnli`` (both MNLI dev files). Returns ``root``; fit for a tier's ``prepare`` step."""
    dev_tasks = ("glue-mnli-m", "glue-mnli-mm") if task in ("glue-mnli", "mnli") else (task,)
    write_tiny_glue_split(root, dev_tasks[0], "train")
    for task_id in dev_tasks:
        write_tiny_glue_split(root, task_id, "dev")
    return Path(root)
