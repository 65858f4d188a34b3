"""Golden tests of the GLUE scorers: hand-computed metrics, the real file layouts, and bad input."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.registry import load_object
from tasks import glue
from tasks.glue import LAYOUTS
from tasks.glue.fixtures import tiny_glue_lines, write_tiny_glue
from tasks.glue.score import compute_metrics, read_predictions, read_references, score, write_predictions

TASK_IDS = list(LAYOUTS)


def tsv(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def perturbed(task_id: str, refs: dict[int, str | float]) -> dict[int, str | float]:
    """Gold labels with every third one changed (STS-B: every score moved), so no metric is trivially 100."""
    labels = LAYOUTS[task_id].labels
    if labels is None:
        return {i: float(v) + 0.3 * ((n * 7) % 5 - 2) for n, (i, v) in enumerate(refs.items())}
    return {
        i: labels[(labels.index(v) + 1) % len(labels)] if n % 3 == 1 else v for n, (i, v) in enumerate(refs.items())
    }


# --- hand-computed metrics -----------------------------------------------------------------------------------------


def test_mcc_accuracy_f1_by_hand() -> None:
    refs = ["1", "1", "1", "0", "0", "0", "1", "0"]
    preds = ["1", "1", "0", "0", "0", "1", "1", "0"]
    # TP 3, FN 1, TN 3, FP 1: MCC = (3*3 - 1*1) / sqrt(4*4*4*4) = 8/16; accuracy 6/8; F1 = 2*3 / (2*3 + 1 + 1)
    assert compute_metrics("glue-cola", preds, refs) == pytest.approx({"mcc": 50.0})
    assert compute_metrics("glue-mrpc", preds, refs) == pytest.approx({"accuracy": 75.0, "f1": 75.0})


def test_mcc_unbalanced_by_hand() -> None:
    # TP 2, TN 1, FP 1, FN 0: MCC = (2*1 - 1*0) / sqrt((2+1)(2+0)(1+1)(1+0)) = 2 / sqrt(12)
    result = compute_metrics("glue-cola", ["1", "1", "1", "0"], ["1", "1", "0", "0"])
    assert result["mcc"] == pytest.approx(100 * 2 / math.sqrt(12))


def test_f1_is_of_the_positive_class_by_hand() -> None:
    # TP 1, FN 1, FP 2, TN 2: F1 = 2*1 / (2*1 + 2 + 1) = 0.4 (the negative class would give 4/7); accuracy 3/6
    result = compute_metrics("glue-qqp", ["1", "0", "1", "1", "0", "0"], ["1", "1", "0", "0", "0", "0"])
    assert result == pytest.approx({"accuracy": 50.0, "f1": 40.0})


def test_pearson_spearman_by_hand() -> None:
    # deviations (-1.5, -.5, .5, 1.5) and (-1.5, .5, -.5, 1.5): r = 4 / sqrt(5 * 5); ranks equal the values
    assert compute_metrics("glue-stsb", [1.0, 2.0, 3.0, 4.0], [1.0, 3.0, 2.0, 4.0]) == pytest.approx(
        {"pearson": 80.0, "spearman": 80.0}
    )
    # y = x^2: monotone, so Spearman 1; Pearson = 25 / sqrt(5 * 129)
    result = compute_metrics("glue-stsb", [1.0, 2.0, 3.0, 4.0], [1.0, 4.0, 9.0, 16.0])
    assert result == pytest.approx({"pearson": 100 * 25 / math.sqrt(645), "spearman": 100.0})


def test_three_class_accuracy() -> None:
    refs = ["entailment", "neutral", "contradiction", "neutral", "entailment", "contradiction"]
    preds = ["entailment", "neutral", "contradiction", "entailment", "entailment", "contradiction"]
    assert compute_metrics("glue-mnli-mm", preds, refs) == pytest.approx({"accuracy": 500 / 6})


# --- the real layouts --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_perfect_predictions_on_the_fixture(task_id: str, tmp_path: Path) -> None:
    refs_path = write_tiny_glue(tmp_path, task_id)
    spec = LAYOUTS[task_id]
    assert refs_path == tmp_path / spec.directory / spec.dev_file
    refs = read_references(task_id, refs_path)
    assert len(refs) == 8  # every line read as one example, quotes notwithstanding
    preds = write_predictions(tmp_path / "pred.tsv", refs)
    result = load_object(f"tasks.glue.score:{spec.scorer_name}")(refs_path, preds)
    assert result == pytest.approx(dict.fromkeys(spec.metrics, 100.0))


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_tasks_are_registered_with_the_scorer_keys(task_id: str) -> None:
    constant = "GLUE_" + task_id.removeprefix("glue-").replace("-", "_").upper()
    task = getattr(glue, constant)
    assert task.id == task_id and task.keys == LAYOUTS[task_id].metrics
    assert task.score == f"tasks.glue.score:score_{task_id.removeprefix('glue-').replace('-', '_')}"
    assert callable(task.scorer())


def test_fixture_is_deterministic_and_keeps_quotes(tmp_path: Path) -> None:
    first = write_tiny_glue(tmp_path / "a", "cola").read_bytes()
    assert first == write_tiny_glue(tmp_path / "b", "glue-cola").read_bytes()
    assert b'\n"Nobody expected' not in first and b'\t"Nobody expected' in first  # unbalanced quote mid-line
    with (tmp_path / "a" / "CoLA" / "dev.tsv").open(newline="") as handle:
        quoting_rows = list(csv.reader(handle, delimiter="\t"))  # the default dialect honours quotes
    assert len(quoting_rows) != 8  # ... and so misreads the file: hence QUOTE_NONE
    assert list(read_references("glue-cola", tmp_path / "a" / "CoLA" / "dev.tsv")) == list(range(8))


def test_mrpc_byte_order_mark_and_row_number_ids(tmp_path: Path) -> None:
    path = write_tiny_glue(tmp_path, "mrpc")
    assert path.read_bytes().startswith(b"\xef\xbb\xbfQuality\t#1 ID")
    assert list(read_references("glue-mrpc", path)) == list(range(8))


def test_qqp_index_is_the_row_position_not_its_id_column(tmp_path: Path) -> None:
    path = write_tiny_glue(tmp_path, "qqp")
    refs = read_references("glue-qqp", path)
    assert list(refs) == list(range(len(refs)))  # the GLUE submission convention
    by_pair_id = write_predictions(tmp_path / "pred.tsv", {201359: "1", **{i: v for i, v in refs.items() if i}})
    with pytest.raises(HarnessError, match=r"pred\.tsv:2: index 201359 is not an example of"):
        score("glue-qqp", path, by_pair_id)


def test_stsb_predictions_round_trip(tmp_path: Path) -> None:
    preds = {0: 1 / 3, 1: 4.25, 2: 0.1}
    assert read_predictions("glue-stsb", write_predictions(tmp_path / "p.tsv", preds)) == preds


# --- the torchmetrics collection agrees ----------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Metric `SpearmanCorrcoef` will save all targets")
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_metric_collection_agrees_with_the_scorer(task_id: str, tmp_path: Path) -> None:
    import torch

    from tasks.glue.metric import glue_metrics

    refs_path = write_tiny_glue(tmp_path, task_id)
    refs = read_references(task_id, refs_path)
    preds = perturbed(task_id, refs)
    expected = score(task_id, refs_path, write_predictions(tmp_path / "pred.tsv", preds))
    labels = LAYOUTS[task_id].labels

    def tensor(values: list) -> torch.Tensor:
        return torch.tensor(values) if labels is None else torch.tensor([labels.index(v) for v in values])

    metrics = glue_metrics(task_id)
    ids = list(refs)
    for batch in (ids[:3], ids[3:]):
        metrics.update(tensor([preds[i] for i in batch]), tensor([refs[i] for i in batch]))
    got = {name: value.item() for name, value in metrics.compute().items()}
    assert got == pytest.approx(expected, rel=1e-5)
    assert all(0 < value < 100 for value in expected.values())


# --- bad input ---------------------------------------------------------------------------------------------------


@pytest.fixture
def rte(tmp_path: Path) -> Path:
    return write_tiny_glue(tmp_path, "rte")


def predictions_for(path: Path, *rows: str) -> Path:
    return tsv(path, "index\tprediction", *rows)


def test_wrong_prediction_header(rte: Path, tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"p\.tsv:1: expected the header 'index<TAB>prediction'.*found 'id\\tlabel'"):
        score("glue-rte", rte, tsv(tmp_path / "p.tsv", "id\tlabel", "0\tentailment"))


def test_unknown_label_names_the_line(rte: Path, tmp_path: Path) -> None:
    preds = predictions_for(tmp_path / "p.tsv", "0\tentailment", "1\tneutral")
    with pytest.raises(HarnessError, match=r"p\.tsv:3: label 'neutral' is not one of entailment, not_entailment"):
        score("glue-rte", rte, preds)


def test_duplicate_index(rte: Path, tmp_path: Path) -> None:
    preds = predictions_for(tmp_path / "p.tsv", "0\tentailment", "1\tentailment", "0\tentailment")
    with pytest.raises(HarnessError, match=r"p\.tsv:4: duplicate id 0 \(first on line 2\)"):
        score("glue-rte", rte, preds)


def test_missing_predictions_are_an_error(rte: Path, tmp_path: Path) -> None:
    rows = [f"{i}\t{label}" for i, label in read_references("glue-rte", rte).items()]
    with pytest.raises(HarnessError, match=r"no prediction for 2 of the 8 examples .*indices 6, 7; first on line 8"):
        score("glue-rte", rte, predictions_for(tmp_path / "p.tsv", *rows[:6]))


def test_extra_ids_are_an_error(rte: Path, tmp_path: Path) -> None:
    rows = [f"{i}\t{label}" for i, label in read_references("glue-rte", rte).items()]
    with pytest.raises(HarnessError, match=r"p\.tsv:10: index 99 is not an example of"):
        score("glue-rte", rte, predictions_for(tmp_path / "p.tsv", *rows, "99\tentailment"))


def test_non_integer_index(rte: Path, tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"p\.tsv:2: row id 'first' is not an integer"):
        score("glue-rte", rte, predictions_for(tmp_path / "p.tsv", "first\tentailment"))


def test_reference_header_without_label_column(tmp_path: Path) -> None:
    stsb = write_tiny_glue(tmp_path, "stsb")  # has no 'label' column
    with pytest.raises(HarnessError, match=r"dev\.tsv:1: header has no column 'label' \(the RTE/dev\.tsv layout"):
        score("glue-rte", stsb, predictions_for(tmp_path / "p.tsv", "0\tentailment"))


def test_cola_file_with_a_header_is_rejected(tmp_path: Path) -> None:
    test_split = tsv(tmp_path / "test.tsv", "index\tsentence", "0\tBill rolled out of the room .")
    with pytest.raises(HarnessError, match=r"test\.tsv:1: 2 fields, expected 4 \(the CoLA/dev\.tsv layout"):
        read_references("glue-cola", test_split)


def test_reference_row_with_wrong_field_count(tmp_path: Path) -> None:
    lines = tiny_glue_lines("qnli")
    lines[3] = lines[3].rsplit("\t", 1)[0]
    with pytest.raises(HarnessError, match=r"dev\.tsv:4: 3 tab-separated fields, expected 4"):
        read_references("glue-qnli", tsv(tmp_path / "dev.tsv", *lines))


def test_stsb_prediction_must_be_a_number(tmp_path: Path) -> None:
    refs = write_tiny_glue(tmp_path, "stsb")
    with pytest.raises(HarnessError, match=r"p\.tsv:2: score 'high' is not a finite number"):
        score("glue-stsb", refs, predictions_for(tmp_path / "p.tsv", "0\thigh"))


def test_constant_stsb_predictions_have_no_correlation(tmp_path: Path) -> None:
    refs = write_tiny_glue(tmp_path, "stsb")
    preds = write_predictions(tmp_path / "p.tsv", dict.fromkeys(range(8), 2.5))
    with pytest.raises(HarnessError, match=r"p\.tsv: pearson, spearman undefined"):
        score("glue-stsb", refs, preds)


def test_missing_reference_file(tmp_path: Path) -> None:
    with pytest.raises(HarnessError, match=r"nope\.tsv: file not found"):
        score("glue-wnli", tmp_path / "nope.tsv", tmp_path / "p.tsv")
