"""Official-format scorers for the GLUE dev sets (Wang et al., arXiv:1804.07461).

``score_<task>(references, predictions)`` reads the task's dev TSV as the GLUE download script lays it out (see
``tasks.glue`` for every layout) and a prediction TSV in the GLUE submission format (header
``index<TAB>prediction``), and returns the task's GLUE metrics ×100:

- ``accuracy``: share of examples whose predicted label equals the gold label;
- ``f1``: F1 of the positive class ``"1"`` (MRPC, QQP), ``sklearn.metrics.f1_score`` with ``pos_label="1"``;
- ``mcc``: Matthews correlation (CoLA), ``sklearn.metrics.matthews_corrcoef`` (0 when undefined, as sklearn has it);
- ``pearson`` / ``spearman``: correlations of STS-B scores, ``scipy.stats.pearsonr`` / ``spearmanr`` (ties get
  average ranks). Undefined for constant predictions or references: that is an error, not a number.

These are the functions the GLUE baselines and ``transformers``' ``glue_compute_metrics`` use.

Reading: tab-separated, UTF-8 (a leading byte-order mark is skipped: MRPC's dev.tsv has one), and quote
characters are data, not quoting (``csv.QUOTE_NONE``, as the HuggingFace ``glue`` loader reads these files):
sentences such as ``" the witness "`` or an unbalanced ``"`` would otherwise swallow tabs and line ends.

Bad input raises :class:`HarnessError` naming the file and line: a missing header column, a row with the wrong
number of fields, an id that is not an integer, a duplicate id, a label not of the task, a prediction for an id
the references do not have, or a reference row without a prediction (GLUE scores every example).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import scipy.stats
from sklearn.metrics import f1_score, matthews_corrcoef

from harness.errors import HarnessError
from tasks.glue import LAYOUTS, GlueLayout

Label = str | float
PREDICTION_HEADER = ("index", "prediction")
_SHOWN = 5  # ids quoted in a message before "..."


def layout(task_id: str) -> GlueLayout:
    if task_id not in LAYOUTS:
        raise HarnessError(f"unknown GLUE task {task_id!r}; known: {', '.join(LAYOUTS)}")
    return LAYOUTS[task_id]


# --- reading ---------------------------------------------------------------------------------------------------


def _read_tsv(path: Path) -> list[tuple[int, list[str]]]:
    """(line number, fields) of every row; quote characters are plain text."""
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            return [(reader.line_num, row) for row in reader]
    except FileNotFoundError:
        raise HarnessError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except csv.Error as exc:
        raise HarnessError(f"{path}: unreadable TSV: {exc}") from None
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _parse_id(text: str, path: Path, line: int) -> int:
    try:
        return int(text)
    except ValueError:
        raise HarnessError(f"{path}:{line}: row id {text!r} is not an integer") from None


def _parse_label(spec: GlueLayout, text: str, path: Path, line: int) -> Label:
    if spec.labels is not None:
        if text not in spec.labels:
            raise HarnessError(f"{path}:{line}: label {text!r} is not one of {', '.join(spec.labels)} ({spec.title})")
        return text
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise HarnessError(f"{path}:{line}: score {text!r} is not a finite number ({spec.title})")
    return value


def _header(rows: list[tuple[int, list[str]]], path: Path, wanted: Sequence[str], layout_hint: str) -> list[str]:
    if not rows:
        raise HarnessError(f"{path}: empty file; expected a header row ({layout_hint})")
    line, header = rows[0]
    absent = [column for column in wanted if column not in header]
    if absent:
        raise HarnessError(f"{path}:{line}: header has no column {', '.join(map(repr, absent))} ({layout_hint})")
    return header


def _labelled_rows(
    spec: GlueLayout, path: Path, rows: list[tuple[int, list[str]]], width: int, id_at: int | None, label_at: int
) -> dict[int, tuple[Label, int]]:
    """id -> (label, line) over data rows, checking field counts, ids and labels."""
    found: dict[int, tuple[Label, int]] = {}
    for number, (line, fields) in enumerate(rows):
        if len(fields) != width:
            raise HarnessError(f"{path}:{line}: {len(fields)} tab-separated fields, expected {width}")
        row_id = number if id_at is None else _parse_id(fields[id_at], path, line)
        if row_id in found:
            raise HarnessError(f"{path}:{line}: duplicate id {row_id} (first on line {found[row_id][1]})")
        found[row_id] = (_parse_label(spec, fields[label_at], path, line), line)
    if not found:
        raise HarnessError(f"{path}: no data rows")
    return found


def _reference_rows(spec: GlueLayout, path: Path) -> dict[int, tuple[Label, int]]:
    rows = _read_tsv(path)
    hint = f"the {spec.directory}/{spec.dev_file} layout: {' | '.join(spec.columns)}"
    if spec.has_header:
        header = _header(rows, path, [c for c in (spec.id_column, spec.label_column) if c], hint)
        rows = rows[1:]
    else:
        header = list(spec.columns)
        if rows and len(rows[0][1]) != len(header):
            raise HarnessError(f"{path}:{rows[0][0]}: {len(rows[0][1])} fields, expected {len(header)} ({hint})")
    id_at = header.index(spec.id_column) if spec.id_column else None
    return _labelled_rows(spec, path, rows, len(header), id_at, header.index(spec.label_column))


def _prediction_rows(spec: GlueLayout, path: Path) -> dict[int, tuple[Label, int]]:
    rows = _read_tsv(path)
    if not rows or tuple(rows[0][1]) != PREDICTION_HEADER:
        found = "an empty file" if not rows else repr("\t".join(rows[0][1]))
        raise HarnessError(f"{path}:1: expected the header 'index<TAB>prediction' of a GLUE submission, found {found}")
    return _labelled_rows(spec, path, rows[1:], 2, 0, 1)


def read_references(task_id: str, path: Path | str) -> dict[int, Label]:
    """Gold label (a string; STS-B a float) of each dev example, by row id, in file order."""
    return {row_id: label for row_id, (label, _) in _reference_rows(layout(task_id), Path(path)).items()}


def read_predictions(task_id: str, path: Path | str) -> dict[int, Label]:
    """Predicted label of each example of a GLUE submission-format TSV, by index, in file order."""
    return {row_id: label for row_id, (label, _) in _prediction_rows(layout(task_id), Path(path)).items()}


def write_predictions(path: Path | str, predictions: Mapping[int, Label]) -> Path:
    """Write ``{index: label}`` as a GLUE submission TSV (``index<TAB>prediction``); STS-B floats round-trip."""
    path = Path(path)
    lines = ["\t".join(PREDICTION_HEADER)]
    for index, label in predictions.items():
        text = repr(float(label)) if isinstance(label, float) else str(label)
        if any(ch in text for ch in "\t\r\n"):
            raise HarnessError(f"{path}: the prediction for index {index} contains a tab or line break: {text!r}")
        lines.append(f"{int(index)}\t{text}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- metrics ---------------------------------------------------------------------------------------------------


def _accuracy(predictions: Sequence[Label], references: Sequence[Label]) -> float:
    return sum(p == r for p, r in zip(predictions, references, strict=True)) / len(references)


def _f1(predictions: Sequence[Label], references: Sequence[Label]) -> float:
    return float(f1_score(references, predictions, pos_label="1", average="binary", zero_division=0.0))


def _mcc(predictions: Sequence[Label], references: Sequence[Label]) -> float:
    return float(matthews_corrcoef(references, predictions))


def _correlation(name: str) -> Callable[[Sequence[Label], Sequence[Label]], float]:
    def correlation(predictions: Sequence[Label], references: Sequence[Label]) -> float:
        if len(set(predictions)) < 2 or len(set(references)) < 2:
            return math.nan  # a constant series has no correlation; scipy would warn and give nan
        return float(getattr(scipy.stats, name)(predictions, references).statistic)

    return correlation


METRICS: dict[str, Callable[[Sequence[Label], Sequence[Label]], float]] = {
    "accuracy": _accuracy,
    "f1": _f1,
    "mcc": _mcc,
    "pearson": _correlation("pearsonr"),
    "spearman": _correlation("spearmanr"),
}


def compute_metrics(task_id: str, predictions: Sequence[Label], references: Sequence[Label]) -> dict[str, float]:
    """The task's GLUE metrics ×100 of aligned label sequences (labels as in the data; STS-B floats)."""
    if len(predictions) != len(references) or not references:
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    return {name: 100.0 * METRICS[name](predictions, references) for name in layout(task_id).metrics}


def _sample(ids: Sequence[int]) -> str:
    return ", ".join(map(str, ids[:_SHOWN])) + (", ..." if len(ids) > _SHOWN else "")


def _check_ids(refs: Mapping[int, tuple], preds: Mapping[int, tuple], references: Path, predictions: Path) -> None:
    extra = [row_id for row_id in preds if row_id not in refs]
    if extra:
        raise HarnessError(
            f"{predictions}:{preds[extra[0]][1]}: index {extra[0]} is not an example of {references} "
            f"({len(extra)} such indices: {_sample(extra)})"
        )
    missing = [row_id for row_id in refs if row_id not in preds]
    if missing:
        raise HarnessError(
            f"{predictions}: no prediction for {len(missing)} of the {len(refs)} examples of {references} "
            f"(indices {_sample(missing)}; first on line {refs[missing[0]][1]}); GLUE scores every example"
        )


def score(task_id: str, references: Path | str, predictions: Path | str) -> dict[str, float]:
    """Score a GLUE submission-format prediction file against a task's dev TSV."""
    spec, references, predictions = layout(task_id), Path(references), Path(predictions)
    refs = _reference_rows(spec, references)
    preds = _prediction_rows(spec, predictions)
    _check_ids(refs, preds, references, predictions)
    result = compute_metrics(task_id, [preds[i][0] for i in refs], [refs[i][0] for i in refs])
    undefined = [name for name, value in result.items() if not math.isfinite(value)]
    if undefined:
        raise HarnessError(
            f"{predictions}: {', '.join(undefined)} undefined: the predictions or the references of {references} "
            "are all the same value"
        )
    return result


def _scorer(task_id: str) -> Callable[[Path | str, Path | str], dict[str, float]]:
    def score_task(references: Path | str, predictions: Path | str) -> dict[str, float]:
        return score(task_id, references, predictions)

    score_task.__name__ = score_task.__qualname__ = LAYOUTS[task_id].scorer_name
    score_task.__doc__ = f"GLUE {LAYOUTS[task_id].title}: {', '.join(LAYOUTS[task_id].metrics)} (×100)."
    return score_task


score_cola = _scorer("glue-cola")
score_sst2 = _scorer("glue-sst2")
score_mrpc = _scorer("glue-mrpc")
score_stsb = _scorer("glue-stsb")
score_qqp = _scorer("glue-qqp")
score_mnli_m = _scorer("glue-mnli-m")
score_mnli_mm = _scorer("glue-mnli-mm")
score_qnli = _scorer("glue-qnli")
score_rte = _scorer("glue-rte")
score_wnli = _scorer("glue-wnli")
