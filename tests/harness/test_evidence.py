"""harness.evidence: per-example scores from kept predictions, McNemar, the paired and hierarchical bootstraps."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from harness import registry
from harness.evidence import (
    DEFAULT_RESAMPLES,
    ExampleScores,
    example_evidence,
    example_scores_or_reason,
    hierarchical_bootstrap,
    mcnemar_p,
    paired_example_test,
    per_example_scores,
)
from harness.records import read_record, references_sha256, write_record
from tests.conftest import make_record

# every task harness.evidence splits, with the metrics of its example pair (Task.example) it is checked on
SPLIT_TASKS = {
    "cifar-10": ("top1", "top5", "error"),
    "fashion-mnist": ("top1", "error"),
    "imagenet-1k": ("top1", "top5", "error"),
    "food-101": ("top1",),
    "imdb": ("accuracy", "error"),
    "wordnet-lexname": ("accuracy", "error"),
    "fortune-category": ("accuracy", "error"),
    "glue-sst2": ("accuracy",),
    "librispeech": ("wer",),
    "espeak-speech": ("wer",),
    "squad-v1.1": ("exact_match", "f1"),
    "squad-v2.0": ("exact", "f1"),
    "debian-lm": ("perplexity", "nll"),
    "wikitext-103": ("perplexity",),
    "lm1b": ("perplexity",),
}
# registered tasks none of whose keys is split: not a mean over examples (COCO AP, mIoU, span F1, CoLA's MCC,
# STS-B's correlations), a scorer with its own alignment (Switchboard's GLM and sclite rules), or not done yet
# (the answer-accuracy tasks of tasks.text_files: each reads its gold labels its own way)
UNSPLIT = {
    "cityscapes-semantic", "coco-detection", "conll2003-ner", "coref-conll2012", "srl-conll2012", "glue-cola",
    "glue-stsb", "switchboard", "dprd", "race", "race-h", "race-m", "scitail", "snli", "sst-5", "story-cloze",
}  # fmt: skip


def scores(metric: str, values, seed: int = 0, ids=None, binary: bool = True, words=None, sha: str | None = "ab"):
    values = np.asarray(values, dtype=float)
    ids = tuple(ids) if ids is not None else tuple(str(i) for i in range(len(values)))
    denominators = np.ones(len(values)) if words is None else np.asarray(words, dtype=float)
    return ExampleScores(
        f"run-{seed}", seed, "cifar-10", metric, ids, values, denominators, binary=binary, references_sha256=sha
    )


def kept_example(results: Path, task_id: str, seed: int = 0, metrics: dict[str, float] | None = None) -> Path:
    """A record of ``task_id`` whose artifacts are the task's example pair, copied under ``results/artifacts``."""
    task = registry.task(task_id)
    files = registry.load_object(task.example)(results / "made" / f"{task_id}-{seed}", task_id)
    folder = results / "artifacts" / f"{task_id}-{seed}"
    artifacts = {"task": task_id, "references_sha256": references_sha256(files["references"])}
    for name, path in files.items():
        target = folder / name / path.name
        target.parent.mkdir(parents=True)
        (shutil.copytree if path.is_dir() else shutil.copy)(path, target)
        artifacts[name] = target.relative_to(results).as_posix()
    record = make_record(
        run_id=f"toy-paper.m.budget.{task_id}.test.s{seed}", dataset=task_id, tier="budget", seed=seed,
        metrics=metrics or {"error": 0.0}, artifacts=artifacts,
    )  # fmt: skip
    return write_record(record, results / "runs")


# --- McNemar ------------------------------------------------------------------------------------------------------


def test_mcnemar_is_the_exact_binomial_on_the_discordant_pairs_and_mid_p_subtracts_the_observed_table() -> None:
    # b = 7, c = 2 of 9 discordant pairs: P(X <= 2) = (1 + 9 + 36) / 512, two-sided 92/512; mid-p 92/512 - 36/512
    assert mcnemar_p(7, 2) == pytest.approx(92 / 512) == pytest.approx(binomtest(2, 9, 0.5).pvalue)
    assert mcnemar_p(2, 7, mid_p=True) == pytest.approx(56 / 512)
    assert mcnemar_p(15, 3) == pytest.approx(binomtest(15, 18, 0.5).pvalue)
    assert mcnemar_p(4, 4) == 1.0 and mcnemar_p(4, 4, mid_p=True) == pytest.approx(1.0) and mcnemar_p(0, 0) == 1.0


def test_one_seed_per_arm_is_mcnemars_table_and_the_estimate_the_accuracy_difference() -> None:
    # 20 examples: both right on 8, both wrong on 3, only ours right on 7, only the baseline right on 2
    ours = [1] * 8 + [0] * 3 + [1] * 7 + [0] * 2
    theirs = [1] * 8 + [0] * 3 + [0] * 7 + [1] * 2
    evidence = paired_example_test([scores("top1", ours)], [scores("top1", theirs)], higher_is_better=True)
    assert evidence.method == "mcnemar" and evidence.p_value == pytest.approx(92 / 512)
    assert evidence.estimate == pytest.approx(100 * (7 - 2) / 20)
    assert (evidence.n_examples, evidence.n_seeds_ours, evidence.n_seeds_theirs) == (20, 1, 1)
    assert "the model better on 7, the baseline on 2" in evidence.reason
    assert evidence.low <= evidence.estimate <= evidence.high


def test_for_error_the_model_is_better_where_it_errs_less() -> None:
    ours_wrong = [0] * 7 + [1] * 2 + [0] * 5
    theirs_wrong = [1] * 7 + [0] * 2 + [0] * 5
    evidence = paired_example_test([scores("error", ours_wrong)], [scores("error", theirs_wrong)], False)
    assert "the model better on 7, the baseline on 2" in evidence.reason
    assert evidence.estimate == pytest.approx(100 * (2 - 7) / 14) and evidence.p_value == pytest.approx(92 / 512)


def test_several_seeds_count_an_example_by_its_mean_correctness_over_each_arms_seeds() -> None:
    ours = [scores("top1", [1, 1, 1], 0), scores("top1", [1, 0, 0], 1)]
    theirs = [scores("top1", [0, 1, 1], 0), scores("top1", [1, 1, 0], 1), scores("top1", [0, 0, 0], 2)]
    evidence = paired_example_test(ours, theirs, True)
    # per-example means: ours (1, 1/2, 1/2), theirs (1/3, 2/3, 1/3): ours better on 0 and 2, the baseline on 1
    assert "the model better on 2, the baseline on 1" in evidence.reason
    assert evidence.p_value == pytest.approx(binomtest(2, 3, 0.5).pvalue)
    assert evidence.estimate == pytest.approx(100 * (2 / 3 - 4 / 9))
    assert (evidence.n_seeds_ours, evidence.n_seeds_theirs) == (2, 3)


# --- the bootstraps -----------------------------------------------------------------------------------------------


def wer_arms(rng: np.random.Generator, n: int, seeds: int, rates: tuple[float, float]):
    words = rng.integers(3, 25, n)
    arms = []
    for rate in rates:
        arms.append([scores("wer", rng.binomial(words, rate), s, binary=False, words=words) for s in range(seeds)])
    return arms, words


def test_identical_arms_give_zero_with_a_zero_width_interval_and_p_one() -> None:
    run = scores("top1", [1, 0, 1, 1, 0, 1])
    for test in (paired_example_test, hierarchical_bootstrap):
        evidence = test([run], [run], True)
        assert (evidence.estimate, evidence.low, evidence.high, evidence.p_value) == (0.0, 0.0, 0.0, 1.0)


def test_the_paired_bootstrap_of_wer_is_corpus_level_and_covers_the_true_difference() -> None:
    rng = np.random.default_rng(7)
    (ours, theirs), words = wer_arms(rng, 2000, 1, (0.20, 0.25))
    evidence = paired_example_test(ours, theirs, higher_is_better=False)
    assert evidence.method == "paired-bootstrap" and evidence.n_resamples == DEFAULT_RESAMPLES
    corpus = 100 * (ours[0].numerators.sum() - theirs[0].numerators.sum()) / words.sum()
    assert evidence.estimate == pytest.approx(corpus)  # sum of errors over sum of words, not a mean of ratios
    assert evidence.low < -5.0 < evidence.high and evidence.high < 0 and evidence.p_value < 0.01
    assert "favours the model" in evidence.reason


def test_the_hierarchical_bootstrap_covers_the_true_difference_and_adds_the_seeds_noise() -> None:
    rng = np.random.default_rng(3)
    n, seeds = 1000, 4
    truth = rng.random(n) * 0.6 + 0.2  # each example's chance of being right, shared by the two models
    ours = [scores("top1", rng.random(n) < truth + 0.03 + 0.02 * rng.standard_normal(), s) for s in range(seeds)]
    theirs = [scores("top1", rng.random(n) < truth + 0.02 * rng.standard_normal(), s) for s in range(seeds)]
    paired = paired_example_test(ours, theirs, True)
    nested = hierarchical_bootstrap(ours, theirs, True)
    assert nested.method == "hierarchical-bootstrap" and nested.low < 3.0 < nested.high
    assert nested.estimate == paired.estimate
    assert nested.high - nested.low > paired.high - paired.low  # the seeds' spread widens it


def test_resampling_is_deterministic_given_its_seed() -> None:
    (ours, theirs), _ = wer_arms(np.random.default_rng(1), 300, 3, (0.3, 0.32))
    first = hierarchical_bootstrap(ours, theirs, False, seed=11, n_resamples=500)
    assert hierarchical_bootstrap(ours, theirs, False, seed=11, n_resamples=500) == first
    assert hierarchical_bootstrap(ours, theirs, False, seed=12, n_resamples=500).low != first.low
    assert paired_example_test(ours, theirs, False, seed=5) == paired_example_test(ours, theirs, False, seed=5)


# --- which examples -----------------------------------------------------------------------------------------------


def test_only_the_ids_every_run_has_are_compared_and_the_dropped_are_counted() -> None:
    ours = scores("top1", [1, 1, 0, 1], ids=["a", "b", "c", "d"])
    theirs = scores("top1", [0, 1, 0, 1, 1], ids=["e", "d", "c", "b", "a"])
    evidence = paired_example_test([ours], [theirs], True)
    assert (evidence.n_examples, evidence.n_dropped) == (4, 1) and "1 example(s) absent" in evidence.reason
    assert evidence.estimate == pytest.approx(100 * (3 / 4 - 3 / 4))  # a, b, c, d: both 3 right, paired by id


def test_runs_scored_against_different_references_are_refused() -> None:
    evidence = hierarchical_bootstrap([scores("top1", [1, 0], sha="ab")], [scores("top1", [1, 1], sha="cd")], True)
    assert evidence.method == "none" and evidence.estimate is None
    assert evidence.reason == (
        "no per-example evidence: the runs were scored against 2 different references (references_sha256 differ)"
    )
    disjoint = paired_example_test([scores("top1", [1], ids=["x"])], [scores("top1", [1], ids=["y"])], True)
    assert disjoint.reason == "no per-example evidence: the runs share no example id"
    other = paired_example_test([scores("top1", [1])], [scores("error", [0])], True)
    assert other.method == "none" and "differ in metric" in other.reason


# --- per-example scores from a record's files ---------------------------------------------------------------------


@pytest.mark.parametrize("task_id", sorted(SPLIT_TASKS))
def test_the_per_example_scores_of_every_split_task_re_aggregate_to_its_scorer(task_id: str, tmp_path: Path) -> None:
    results = tmp_path / "results"
    record = read_record(kept_example(results, task_id))
    task = registry.task(task_id)
    with warnings.catch_warnings():  # the example pairs leave some references unpredicted on purpose
        warnings.simplefilter("ignore")
        files = {name: results / record.artifacts[name] for name in ("references", "predictions", *task.options) if
                 name in record.artifacts}  # fmt: skip
        scored = task.scorer()(files.pop("references"), files.pop("predictions"), **files)
    for metric in SPLIT_TASKS[task_id]:
        found = per_example_scores(record, results, metric)
        assert found is not None, example_scores_or_reason(record, results, metric)
        expected = scored[metric] if metric in scored else scored["top1"]  # accuracy: the image tasks' top1
        assert found.value() == pytest.approx(expected, rel=1e-12) and len(found.ids) == len(set(found.ids))
        assert found.references_sha256 == record.artifacts["references_sha256"] and found.seed == 0


def test_wer_splits_into_each_utterances_errors_and_reference_words(tmp_path: Path) -> None:
    results = tmp_path / "results"
    (results / "artifacts").mkdir(parents=True)
    references = results / "artifacts" / "1-2.trans.txt"
    references.write_text("1-2-0000 A B C D\n1-2-0001 X Y\n1-2-0002 P Q R\n", encoding="utf-8")
    predictions = results / "artifacts" / "hypotheses.txt"
    predictions.write_text("1-2-0000 a c d e e\n1-2-0002 P Q R\n", encoding="utf-8")  # 1-2-0001: no line, all deleted
    artifacts = {
        "task": "librispeech",
        "references": "artifacts/1-2.trans.txt",
        "predictions": "artifacts/hypotheses.txt",
    }
    record = make_record(dataset="librispeech", metrics={"wer": 100 * 5 / 9}, artifacts=artifacts)
    found = per_example_scores(record, results)
    assert found.ids == ("1-2-0000", "1-2-0001", "1-2-0002") and not found.binary
    assert found.numerators.tolist() == [3.0, 2.0, 0.0]  # 1 deletion + 2 insertions; 2 deletions; none
    assert found.denominators.tolist() == [4.0, 2.0, 3.0] and found.value() == pytest.approx(100 * 5 / 9)


def test_what_cannot_be_split_is_none_with_its_reason(tmp_path: Path) -> None:
    results = tmp_path / "results"
    coco = make_record(metrics={"ap": 1.0}, artifacts={"task": "coco-detection", "predictions": "p", "references": "r"})
    assert per_example_scores(coco, results) is None
    assert "task 'coco-detection' (tasks.coco.score:score) has no per-example split" in example_scores_or_reason(
        coco, results
    )
    mcc = make_record(metrics={"mcc": 1.0}, artifacts={"task": "glue-cola", "predictions": "p", "references": "r"})
    assert example_scores_or_reason(mcc, results) == (
        "metric 'mcc' of task 'glue-cola' has no per-example split (not a mean over examples); it splits accuracy"
    )
    bare = make_record()
    assert example_scores_or_reason(bare, results) == f"run {bare.run_id} kept no predictions"
    several = make_record(metrics={"top1": 1.0, "error": 99.0})
    assert "records 2 metrics; name the one" in example_scores_or_reason(several, results)
    gone = make_record(metrics={"top1": 1.0}, artifacts={"task": "cifar-10", "predictions": "p.csv", "references": "r"})
    assert "its references" in example_scores_or_reason(gone, results) and "are missing" in example_scores_or_reason(
        gone, results
    )


def test_changed_references_and_files_the_scorer_refuses_give_reasons_not_errors(tmp_path: Path) -> None:
    results = tmp_path / "results"
    record = read_record(kept_example(results, "cifar-10", metrics={"top1": 50.0}))
    predictions = results / record.artifacts["predictions"]
    predictions.write_text("id,prediction\nnot-an-id,3\n", encoding="utf-8")
    assert "is not in" in example_scores_or_reason(record, results)
    (results / record.artifacts["references"]).write_text("id,label\n0,1\n", encoding="utf-8")
    assert "changed since it was scored" in example_scores_or_reason(record, results)


def test_example_evidence_judges_records_and_names_the_run_without_scores(tmp_path: Path) -> None:
    results = tmp_path / "results"
    ours = [read_record(kept_example(results, "cifar-10", seed, {"top1": 0.0})) for seed in (0, 1)]
    theirs = [read_record(kept_example(results, "cifar-10", seed + 2, {"top1": 0.0})) for seed in (0, 1)]
    paired, nested = example_evidence(ours, theirs, results, "top1", True, n_resamples=200)
    assert paired.method == "mcnemar" and nested.method == "hierarchical-bootstrap"
    assert paired.estimate == nested.estimate == 0.0 and paired.p_value == 1.0  # the same example predictions
    bare = make_record(metrics={"top1": 0.0})
    none, _ = example_evidence([*ours, bare], theirs, results, "top1", True)
    assert none.method == "none" and none.reason == f"no per-example evidence: run {bare.run_id} kept no predictions"


# --- end to end: a real run's kept predictions ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MobileNetV3's smoke tier (one training step on 32 px digits, then the 360-image test split: about 7 s)."""
    import os

    from harness import runner

    work = tmp_path_factory.mktemp("e2e")
    here = Path.cwd()
    os.chdir(work)
    try:
        repro = registry.reproduction("mobilenetv3")
        resolved = runner.resolve_config(
            runner.load_config(repro.config_path("smoke"), "smoke"), "smoke", None, None, None
        )
        resolved["trainer"] = {**resolved["trainer"], "max_epochs": 1, "max_steps": 1, "limit_val_batches": 0}
        (path,) = runner.run_training(repro, resolved, runs_dir=work / "results" / "runs")
    finally:
        os.chdir(here)
    return path


def test_a_real_runs_kept_predictions_split_into_examples_that_re_aggregate_to_its_record(smoke_run: Path) -> None:
    record = read_record(smoke_run)
    results = smoke_run.parent.parent
    assert set(record.metrics) == {"top1", "top5", "error"}
    for metric, value in record.metrics.items():
        found = per_example_scores(record, results, metric)
        assert found is not None and found.run_id == record.run_id and len(found.ids) > 100
        assert found.value() == pytest.approx(value, rel=1e-6)  # the record's float32 accumulation against float64
        assert set(np.unique(found.numerators)) <= {0.0, 1.0} and found.binary
    top1 = per_example_scores(record, results, "top1")
    error = per_example_scores(record, results, "error")
    assert np.array_equal(top1.numerators + error.numerators, np.ones(len(top1.ids))) and top1.ids == error.ids
    itself = paired_example_test([top1], [top1], True)
    assert (itself.method, itself.estimate, itself.p_value, itself.n_examples) == ("mcnemar", 0.0, 1.0, len(top1.ids))


@pytest.mark.parametrize("task_id", sorted(registry.tasks()))
def test_every_registered_task_and_key_gives_scores_or_a_reason_never_an_error(task_id: str, tmp_path: Path) -> None:
    results = tmp_path / "results"
    task = registry.task(task_id)
    if task.example is None:
        pytest.skip(f"{task_id} ships no example pair")
    record = read_record(kept_example(results, task_id))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = {key: example_scores_or_reason(record, results, key) for key in task.keys}
    splits = {key for key, value in found.items() if isinstance(value, ExampleScores)}
    assert splits >= set(SPLIT_TASKS.get(task_id, ())) & set(task.keys)
    assert bool(splits) == (task_id not in UNSPLIT), splits  # a task harness.evidence does not split: only reasons
    for key, value in found.items():
        assert isinstance(value, ExampleScores) or (isinstance(value, str) and value), (key, value)
