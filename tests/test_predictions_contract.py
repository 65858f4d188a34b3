"""Contract over every registered task: a run's predictions, written by its metric, re-score to the metric's numbers.

For each task its example pair (``Task.example``: references and predictions in the official format) is turned into
what a system would feed the task's torchmetrics metric, in the data module's order, through the data module's
``scoring`` where the example data can build one. The metric then writes its predictions
(``write_predictions``, see harness.predictions) and the task's scorer reads them back: every value the metric
computed must come back, and so must the example's own official scores.

Tolerance: the classification and GLUE metrics compute in float32 and the scorers in float64 (a relative 1e-6 is
float32's precision); COCO's metric receives boxes as float32 tensors (an IoU moves by about 1e-7). Everything
else agrees exactly. A task whose predictions cannot be written is listed in ``UNWRITABLE`` with its reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness import configfile, registry, rescore
from harness.predictions import Scoring

# task id -> why its runs keep no predictions (none today: every registered task writes them)
UNWRITABLE: dict[str, str] = {}
# the metric's name for a scorer key where the two differ


def _classification(task_id: str, files: dict[str, Path], tmp: Path) -> tuple[Any, Scoring]:
    """Logits ranking each example's official guesses first, best first; labels as the references spell them."""
    import torch

    from tasks.imagenet.metric import accuracy_metrics
    from tasks.imagenet.score import read_predictions, read_references

    labels = read_references(files["references"])
    guesses = read_predictions(files["predictions"])
    classes = sorted(set(labels.values()) | {g for row in guesses.values() for g in row})
    ids = list(labels)
    logits = torch.zeros(len(ids), len(classes))
    for row, item_id in enumerate(ids):
        for rank, guess in enumerate(guesses[item_id]):
            logits[row, classes.index(guess)] = 10.0 - rank
    metric = accuracy_metrics(len(classes))
    metric.update(logits, torch.tensor([classes.index(labels[i]) for i in ids]))
    return metric, Scoring(task_id, files["references"], ids, labels=classes)


def _coco(task_id: str, files: dict[str, Path], tmp: Path) -> tuple[Any, Scoring]:
    """The tiny COCO copy through its data module: targets as the test loader serves them, the example's
    detections per image in loader order."""
    import json

    import torch

    from tasks.coco.data import CocoDetectionDataModule
    from tasks.coco.metric import CocoDetectionMetric

    data = CocoDetectionDataModule(data_root=files["references"].parent.parent)
    data.setup("test")
    scoring = data.scoring(0, tmp)
    detections = json.loads(files["predictions"].read_text())
    metric = CocoDetectionMetric()
    for index, image_id in enumerate(scoring.ids):
        mine = [d for d in detections if d["image_id"] == image_id]
        xywh = torch.tensor([d["bbox"] for d in mine], dtype=torch.float64).reshape(-1, 4)
        boxes = torch.cat([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], dim=1)
        pred = {"boxes": boxes, "scores": torch.tensor([d["score"] for d in mine]), "labels": torch.tensor(
            [d["category_id"] for d in mine], dtype=torch.long)}  # fmt: skip
        metric.update([pred], [data.val_dataset.target(index)])
    return metric, scoring


def _cityscapes(task_id: str, files: dict[str, Path], tmp: Path) -> tuple[Any, Scoring]:
    """The tiny Cityscapes copy through its data module; each example PNG read back as train ids."""
    import torch

    from tasks.cityscapes.data import CityscapesDataModule, load_train_ids
    from tasks.cityscapes.metric import CityscapesIoU

    data = CityscapesDataModule(data_root=files["references"].parent.parent)
    data.setup("test")
    scoring = data.scoring(0, tmp)
    metric = CityscapesIoU()
    for index, name in enumerate(scoring.ids):
        (png,) = files["predictions"].rglob(name)
        pred = torch.from_numpy(load_train_ids(png).astype("int64"))
        target = torch.from_numpy(load_train_ids(Path(str(data.val_dataset.labels[index]))).astype("int64"))
        metric.update(pred[None], target[None])
    return metric, scoring


def _squad(task_id: str, files: dict[str, Path], tmp: Path) -> tuple[Any, Scoring]:
    from tasks.squad.data import SquadDataModule
    from tasks.squad.metric import SquadMetric
    from tasks.squad.score import read_na_probs, read_predictions, read_references

    version = task_id.removeprefix("squad-v")
    scoring = SquadDataModule(data_root=files["references"].parent, version=version).scoring(0, tmp)
    golds = {q.qid: list(q.answers) for q in read_references(files["references"])[1]}
    answers = read_predictions(files["predictions"])
    probs = read_na_probs(files["na_probs"]) if "na_probs" in files else None
    metric = SquadMetric(version)
    for qid in scoring.ids:
        metric.update([answers[qid]], [golds[qid]], na_probs=[probs[qid]] if probs else None)
    return metric, scoring


def _glue(task_id: str, files: dict[str, Path], tmp: Path) -> tuple[Any, Scoring]:
    import torch

    from tasks.glue.data import GlueDataModule
    from tasks.glue.metric import glue_metrics
    from tasks.glue.score import read_predictions

    data = GlueDataModule(data_root=files["references"].parent.parent, task=task_id)
    scoring = data.scoring(0, tmp)
    examples = data.examples(data.dev_splits[0])
    predicted = read_predictions(task_id, files["predictions"])
    as_number = float if data.labels is None else data.labels.index
    preds = torch.tensor([as_number(predicted[e.id]) for e in examples])
    metric = glue_metrics(task_id)
    metric.update(preds, torch.tensor([e.label for e in examples]))
    return metric, scoring


def _librispeech(task_id: str, files: dict[str, Path], tmp: Path) -> tuple[Any, Scoring]:
    """Reference transcripts without audio (the example has none): ids passed to ``update`` as a batch has them."""
    from tasks.librispeech.metric import LibriSpeechWER
    from tasks.librispeech.score import read_references, read_transcripts

    references = read_references(files["references"])
    hypotheses = read_transcripts(files["predictions"], allow_empty=True)
    ids = list(references)
    metric = LibriSpeechWER()
    for utterance in ids:
        hypothesis = hypotheses[utterance].text if utterance in hypotheses else ""
        metric.update([hypothesis], [references[utterance].text], ids=[utterance])
    return metric, Scoring(task_id, files["references"], ids)


def _switchboard(task_id: str, files: dict[str, Path], tmp: Path) -> tuple[Any, Scoring]:
    """The example STM's scored segments in file order, two per batch, with the example's GLM."""
    from tasks.switchboard.metric import Hub5WER
    from tasks.switchboard.score import read_hypotheses, read_stm

    segments = [s for s in read_stm(files["references"]) if not s.ignored]
    hypotheses = read_hypotheses(files["predictions"])
    metric = Hub5WER(glm=files["glm"])
    for start in range(0, len(segments), 2):
        batch = segments[start : start + 2]
        preds = [hypotheses.get(s.id, (0, ""))[1] for s in batch]
        metric.update(preds, [s.text for s in batch], ids=[s.id for s in batch])
    return metric, Scoring(task_id, files["references"], [s.id for s in segments])


def _token_log_probs(task_id: str, files: dict[str, Path], tmp: Path) -> tuple[Any, Scoring]:
    """``wikitext-103``, ``lm1b``, ``debian-lm``: the example's log-probabilities with their tokens' ids (the
    vocabulary: the example's tokens, sorted), in two batches as a test loader serves them."""
    import torch

    from tasks.language_modeling.metric import TokenPerplexity

    rows = [line.split("\t") for line in files["predictions"].read_text(encoding="utf-8").splitlines()]
    vocab = sorted({token for token, _ in rows})
    targets = torch.tensor([vocab.index(token) for token, _ in rows])
    log_probs = torch.tensor([float(value) for _, value in rows], dtype=torch.float64)
    metric = TokenPerplexity()
    for part in (slice(0, 2), slice(2, None)):
        metric.update(log_probs[part][None], targets[part][None])
    return metric, Scoring(task_id, files["references"], range(len(rows)), labels=vocab)


def _debian_corpora(task_id: str, files: dict[str, Path], tmp: Path) -> tuple[Any, Scoring]:
    """``debian-lm`` as WikiText-103; the classification corpora as the other classifiers."""
    if task_id != "debian-lm":
        return _classification(task_id, files, tmp)
    return _token_log_probs(task_id, files, tmp)


def _text_task(task_id: str, files: dict[str, Path], tmp: Path) -> tuple[Any, Scoring]:
    """SNLI, SciTail, SST-5, RACE, Story Cloze, DPRD: the example's data folder through ``TextTaskDataModule``, the
    example's answers as one-hot scores in loader order, in two batches."""
    import torch

    from tasks.text_data import AnswerAccuracy, TextTaskDataModule
    from tasks.text_files import prediction_columns, read_answers

    data = TextTaskDataModule(task_id, files["references"].parent)
    data.setup()
    scoring = data.scoring(0, tmp)
    answers = read_answers(files["predictions"], prediction_columns(task_id), data.labels)
    guesses = torch.tensor([data.labels.index(answers[item_id][0]) for item_id in scoring.ids])
    targets = torch.tensor([record.label for record in data.records(data.spec.splits[2])])
    scores = torch.nn.functional.one_hot(guesses, data.num_classes).float()
    metric = AnswerAccuracy()
    for part in (slice(0, 2), slice(2, None)):
        metric.update(scores[part], targets[part])
    return metric, scoring


def _conll2003(task_id: str, files: dict[str, Path], tmp: Path) -> tuple[Any, Scoring]:
    """The example's predicted tags (the last column of its conlleval file) per sentence of the tiny eng.testb."""
    from tasks.conll2003.data import Conll2003DataModule
    from tasks.conll2003.metric import ConllNerMetric

    data = Conll2003DataModule(files["references"].parent)
    scoring = data.scoring(0, tmp)
    rows = [line.split(" ") for line in files["predictions"].read_text().splitlines()]
    guessed = {number: fields[-1] for number, fields in enumerate(rows, start=1) if len(fields) == 5}
    metric = ConllNerMetric()
    for sentence in data.sentences("testb"):
        metric.update([[guessed[sentence.id + i] for i in range(len(sentence.tags))]], [list(sentence.tags)])
    return metric, scoring


def _conll2012(task_id: str, files: dict[str, Path], tmp: Path) -> tuple[Any, Scoring]:
    """The tiny test split through its data module (gold), the example response read as the same items (preds)."""
    from tasks.conll2012.data import Conll2012DataModule, coref_document, srl_sentences
    from tasks.conll2012.metric import CorefMetric, SrlMetric
    from tasks.conll2012.reader import read_documents

    task = "srl" if task_id == "srl-conll2012" else "coref"
    data = Conll2012DataModule(files["references"].parents[6], task=task)
    scoring = data.scoring(0, tmp)
    responses = read_documents(files["predictions"])
    if task == "srl":
        predicted = {s.id: dict(s.frames) for doc in responses for s in srl_sentences(doc)}
        metric = SrlMetric()
        for item in data.items("test"):
            metric.update([predicted[item.id]], [dict(item.frames)], ids=[item.id])
    else:
        predicted = {doc.name: coref_document(doc).clusters for doc in responses}
        metric = CorefMetric()
        for item in data.items("test"):
            metric.update([predicted[item.id]], [item.clusters])
    return metric, scoring


# the scorer's package -> how to feed that family's metric from its example pair
FEEDERS: dict[str, Callable[[str, dict[str, Path], Path], tuple[Any, Scoring]]] = {
    "tasks.imagenet": _classification,
    "tasks.classification": _classification,
    "tasks.fashion_mnist": _classification,
    "tasks.transfer": _classification,
    "tasks.text_classification": _classification,
    "tasks.coco": _coco,
    "tasks.cityscapes": _cityscapes,
    "tasks.squad": _squad,
    "tasks.glue": _glue,
    "tasks.librispeech": _librispeech,
    "tasks.debian_corpora": _debian_corpora,
    "tasks.language_modeling": _token_log_probs,
    "tasks.entailment": _text_task,
    "tasks.sst": _text_task,
    "tasks.multiple_choice": _text_task,
    "tasks.dprd": _text_task,
    "tasks.switchboard": _switchboard,
    "tasks.conll2003": _conll2003,
    "tasks.conll2012": _conll2012,
}


def computed(metric: Any) -> dict[str, float]:
    """The metric's values as plain floats (a collection's dict, a metric's dict, or LibriSpeech's counts)."""
    if hasattr(metric, "counts"):
        return metric.counts()
    return {key.split("/")[-1]: float(value) for key, value in metric.compute().items()}


def agree(expected: dict[str, float], scored: dict[str, float]) -> list[str]:
    """Keys whose scorer value differs from ``expected`` beyond float32 precision (NaN equals NaN)."""
    wrong = []
    for key, value in expected.items():
        got = scored[key if key in scored else rescore.METRIC_ALIASES[key]]
        if not (math.isnan(value) and math.isnan(got)) and got != pytest.approx(value, rel=1e-6, abs=1e-6):
            wrong.append(f"{key}: metric {value!r}, scorer {got!r}")
    return wrong


@pytest.mark.parametrize("task_id", sorted(registry.tasks()))
def test_metric_writes_predictions_that_rescore_to_its_values(task_id: str, tmp_path: Path) -> None:
    task = registry.task(task_id)
    if task_id in UNWRITABLE:
        pytest.skip(f"{task_id} keeps no predictions: {UNWRITABLE[task_id]}")
    family = task.score.partition(":")[0].rpartition(".")[0]
    assert family in FEEDERS, f"task {task_id}: add its metric to FEEDERS (or to UNWRITABLE, with the reason)"
    files = registry.load_object(task.example)(tmp_path / "example", task_id)
    (tmp_path / "out").mkdir()
    metric, scoring = FEEDERS[family](task_id, files, tmp_path / "out")
    assert scoring.task == task_id
    written = metric.write_predictions(tmp_path / "out", scoring)
    assert set(written) <= {"predictions", *task.options}
    scored = task.scorer()(
        scoring.references, written["predictions"], **{k: v for k, v in written.items() if k != "predictions"}
    )
    values = {k: v for k, v in computed(metric).items() if k in scored or rescore.METRIC_ALIASES.get(k) in scored}
    assert values, f"no value of {task_id}'s metric is one of its scorer's keys {sorted(scored)}"
    assert not agree(values, scored)
    options = {name: files[name] for name in task.options if name in files}
    official = task.scorer()(files["references"], files["predictions"], **options)
    assert not agree(official, scored), "the written predictions score differently from the example's own"


def test_a_metric_holding_more_predictions_than_the_split_has_examples_is_an_error(tmp_path: Path) -> None:
    import torch

    from harness.errors import HarnessError
    from tasks.imagenet.metric import accuracy_metrics

    metric = accuracy_metrics(3)
    metric.update(torch.eye(3), torch.arange(3))
    with pytest.raises(HarnessError, match=r"holds 3 predictions but the cifar-10 test split \(refs.csv\) has 2"):
        metric.write_predictions(tmp_path, Scoring("cifar-10", Path("refs.csv"), ["0", "1"]))


def test_reset_drops_the_kept_predictions_and_forward_keeps_them() -> None:
    """``forward`` (``metric(preds, target)``) resets the metric internally to compute one batch's value: what was
    kept before that batch stays; ``reset`` (as Lightning resets what a system logs) drops it all."""
    import torch

    from tasks.cityscapes.metric import CityscapesIoU
    from tasks.imagenet.metric import accuracy_metrics
    from tasks.librispeech.metric import LibriSpeechWER
    from tasks.squad.metric import SquadMetric

    classification, cityscapes, squad, speech = accuracy_metrics(3), CityscapesIoU(), SquadMetric(), LibriSpeechWER()
    for _ in range(2):
        classification(torch.eye(3), torch.arange(3))
        cityscapes(torch.zeros(2, 4, 4, dtype=torch.long), torch.zeros(2, 4, 4, dtype=torch.long))
        squad(["an answer"], [["an answer"]], ids=["q"])
        speech(["A WORD"], ["A WORD"], ids=["1-2-3"])
    kept = (len(classification.kept_guesses()), len(cityscapes.kept_pngs), len(squad.answers), len(speech.hypotheses))
    assert kept == (6, 4, 2, 2) and squad.qids == ["q", "q"] and speech.utterance_ids == ["1-2-3", "1-2-3"]
    for metric in (*classification.values(), cityscapes, squad, speech):
        metric.reset()
    assert len(classification.kept_guesses()) == 0
    assert cityscapes.kept_pngs == squad.answers == squad.qids == speech.hypotheses == speech.utterance_ids == []


def scorer_key(metric: str, scored: dict[str, float]) -> str:
    """The scorer's key for a record's metric name (harness.rescore's rule); every record metric has one."""
    key = rescore.scorer_key(metric, scored)
    assert key is not None, f"the scorer gives no value for the record's metric {metric!r}: {sorted(scored)}"
    return key


# the smoke run in the default suite (seconds): Cityscapes label-id PNGs against gtFine/val under the data root
FAST_SMOKE = ("mobilenetv3", "smoke-lraspp.yaml")


# known gaps, tracked in the papers' issues (none today): strict, so the test says when one is closed
KEPT_NO_PREDICTIONS: dict[tuple[str, str], str] = {}


def is_chain_stage(path: Path) -> bool:
    """A config with ``init_from`` runs only under ``harness run``, after its parent (the papers' chain tests)."""
    return "init_from" in configfile.read(path).tree  # init_from may come from a base


def smoke_runs() -> list[Any]:
    """Every smoke config of every paper the harness runs itself (a paper with its own ``runner``, the SGD width
    sweep, keeps no predictions: docs/plugins.md), but the later stages of chains; all but FAST_SMOKE are slow
    (10-30 s each)."""
    runs = []
    for paper, repro in registry.reproductions().items():
        if repro.runner is not None:
            continue
        for path in sorted((repro.root / "configs").glob("smoke*.yaml")):
            if is_chain_stage(path):
                continue
            marks = () if (paper, path.name) == FAST_SMOKE else (pytest.mark.slow,)
            if (paper, path.name) in KEPT_NO_PREDICTIONS:
                marks = (*marks, pytest.mark.xfail(reason=KEPT_NO_PREDICTIONS[paper, path.name], strict=True))
            runs.append(pytest.param(paper, path.name, marks=marks, id=f"{paper}-{path.stem}"))
    return runs


SMOKE_RUNS = smoke_runs()


@pytest.mark.parametrize(("paper", "config_name"), SMOKE_RUNS)
def test_a_smoke_run_keeps_predictions_that_harness_score_turns_into_its_record(
    paper: str, config_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One training step, then the whole test split: the record names its predictions, and the real ``harness
    score`` command on them (run from the results folder) gives the record's metrics."""
    import json

    from harness import runner
    from harness.predictions import references_sha256
    from harness.records import read_record
    from harness.rescore import rescore_args
    from tests.conftest import harness_cli

    monkeypatch.chdir(tmp_path)
    repro = registry.reproduction(paper)
    config = runner.load_config(repro.root / "configs" / config_name, "smoke")
    resolved = runner.resolve_config(config, "smoke", None, None, None)
    resolved["trainer"] = {**resolved["trainer"], "max_epochs": 1, "max_steps": 1, "limit_val_batches": 0}
    paths = runner.run_training(repro, resolved, runs_dir=tmp_path / "results" / "runs")
    assert len(paths) == len(resolved["evaluate"])
    for path in paths:  # one record per evaluated split (several test loaders: MNLI's two dev sets, RACE's three)
        record = read_record(path)
        artifacts = record.artifacts
        assert artifacts["predictions"].startswith(f"artifacts/{record.run_id}/")
        assert artifacts["references_sha256"] == references_sha256(tmp_path / "results" / artifacts["references"])
        done = harness_cli("score", *rescore_args(artifacts, Path(".")), "--json", cwd=tmp_path / "results")
        assert done.returncode == 0, done.stderr
        scored = json.loads(done.stdout)
        for metric, value in record.metrics.items():
            got = scored[scorer_key(metric, scored)]
            assert got == pytest.approx(value, rel=1e-6, abs=1e-6, nan_ok=True) or (got is None and math.isnan(value))
        done = harness_cli("rescore", record.run_id, "--json", cwd=tmp_path)  # the same, as one command from the run id
        assert done.returncode == 0, done.stderr
        rows = json.loads(done.stdout)
        assert {row["metric"] for row in rows} == set(record.metrics) and all(row["agrees"] for row in rows)
