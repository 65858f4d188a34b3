"""Per-example evidence for a delta claim, from the predictions every run keeps (harness.predictions).

The seed-level interval of a delta claim (docs/verdicts.md) treats the test set as fixed: it sees the run-to-run
noise of training, not the noise of which examples happened to be in the test set. A test set of 300 utterances or
297 digits leaves a difference of a point or two well inside that second noise. Each run record names its test
split's predictions in the task's official format and the references they were scored against, so the same
scorer's arithmetic can be redone one example at a time:

- :func:`per_example_scores`: a record's metric split into one ``(numerator, denominator)`` pair per example, keyed
  by example id, so that corpus-level metrics aggregate as the official scorer does: accuracy, top-5 and error
  ``(correct or wrong, 1)``; WER ``(word errors, reference words)`` from jiwer's alignment of each utterance (the
  counts ``tasks.librispeech.score`` sums); SQuAD exact match and F1 ``(score, 1)``; perplexity ``(NLL sum, tokens)``
  per reference line. The official scorer is run on the same files first, and the per-example scores must
  re-aggregate to its value, so a file it refuses, or any drift between the two, gives no evidence rather than
  wrong evidence.
- :func:`paired_example_test`: model minus baseline over the shared test examples. For a metric that is 0 or 1 per
  example (accuracy, top-5, error, exact match), the p-value is McNemar's exact test; otherwise (WER, F1,
  perplexity) it is read off a paired bootstrap over examples. The interval is the paired bootstrap's either way.
- :func:`hierarchical_bootstrap`: seeds resampled within each arm, then examples (the same resampled examples for
  both arms, the test set being shared), the difference of arm means recomputed: one interval for both sources of
  noise.

**Several seeds per arm, McNemar.** The unit of the test is the example: each example's correctness is averaged
over its arm's seeds (``m_i``), and an example counts for an arm when its mean is better than the other arm's
(``b``: ours better, ``c``: the baseline better; equal means are concordant and drop out, as in McNemar). The
p-value is the exact two-sided binomial test of ``b`` among ``b + c`` at 1/2. With one seed per arm this is exactly
McNemar's exact test on the 2x2 table; with several it is the sign test on the per-example differences, which keeps
the examples (the independent draws) as the sample. Pooling every seed pair's discordant pairs instead would count
each example several times as if independent, and a majority vote per example has ties at even seed counts. The
exact (conservative) p-value is the default; ``mid_p=True`` gives the mid-p value (the exact one minus the
probability of the observed table), which is closer to nominal size.

**Bootstrap.** An arm's value is the mean over its seeds of each seed's metric, recomputed on the resampled
examples (``sum w_i * numerator_i / sum w_i * denominator_i`` per seed, so WER stays corpus-level). The interval is
the percentile 95% interval of the resampled differences; the two-sided p-value is the one that interval inverts,
``2 * (min(#(d* <= 0), #(d* >= 0)) + 1) / (B + 1)`` capped at 1, so ``p < 0.05`` exactly when 0 lies outside (up to
the resampling's granularity). Resampling is deterministic given ``seed`` (a numpy ``Generator``).
:data:`DEFAULT_RESAMPLES` (2,000) keeps a 10,000-example x 5-seed pair of arms under a second on one core
(benchmarks/bench_evidence.py measures it).

**Which examples.** Only the ids present in every run of both arms are compared; the evidence says how many were
dropped. Runs scored against different references (``references_sha256`` differ) are not compared at all.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness import registry
from harness.errors import HarnessError
from harness.records import RunRecord, references_sha256
from harness.registry import load_object
from harness.rescore import scorer_key

CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 2000
CHUNK = 250  # resamples drawn at once: a 10,000-example chunk of weights is 20 MB
AGREEMENT = 1e-9  # relative: the per-example sums against the official scorer, both in float64
PERCENT = 100.0
LABEL_METRICS = ("top1", "accuracy", "top5", "error")
# the task's score target -> the reader of its reference labels, and whether that reader takes the task id first
LABEL_READERS: dict[str, tuple[str, bool]] = {
    "tasks.imagenet.score:score": ("tasks.imagenet.score:read_references", False),
    "tasks.fashion_mnist.score:score": ("tasks.fashion_mnist.score:read_reference_labels", False),
    "tasks.debian_corpora.score:score_classification": ("tasks.debian_corpora.score:read_reference_labels", False),
}
LABEL_MODULES_WITH_TASK_ID = ("tasks.classification.score", "tasks.text_classification.score", "tasks.transfer.score")
PERPLEXITY_SCORERS = {
    "tasks.language_modeling.score:score_perplexity": "wikitext",
    "tasks.debian_corpora.score:score_perplexity": "wikitext",
    "tasks.language_modeling.score:score_lm1b": "lm1b",
}
SQUAD_SCORERS = {"tasks.squad.score:score_v1": "v1", "tasks.squad.score:score_v2": "v2"}


@dataclass(frozen=True, eq=False)
class ExampleScores:
    """One run's metric, one ``(numerator, denominator)`` pair per test example.

    The run's value is ``scale * sum(numerators) / sum(denominators)`` (``aggregate="ratio"``) or
    ``exp(sum(numerators) / sum(denominators))`` (``"exp-ratio"``: perplexity from NLL sums and token counts).
    ``binary``: every numerator is 0 or 1 over a denominator of 1 by construction (accuracy, error, exact match).
    """

    run_id: str
    seed: int
    task: str
    metric: str
    ids: tuple[str, ...]
    numerators: np.ndarray
    denominators: np.ndarray
    scale: float = PERCENT
    aggregate: str = "ratio"
    binary: bool = False
    references_sha256: str | None = None

    def value(self) -> float:
        """The metric over all examples, as the official scorer computes it."""
        return float(_aggregate(self.aggregate, self.scale, self.numerators.sum(), self.denominators.sum()))


@dataclass(frozen=True)
class ExampleEvidence:
    """Per-example evidence on a difference ``ours - theirs`` in the metric's unit.

    ``method``: ``"mcnemar"``, ``"paired-bootstrap"``, ``"hierarchical-bootstrap"``, or ``"none"`` when there is no
    evidence (``reason`` says why; the numbers are then ``None``). ``low``/``high``: the 95% percentile interval;
    ``n_examples``: the examples compared, ``n_dropped``: those left out for being absent from some run.
    """

    method: str
    metric: str | None = None
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    n_examples: int = 0
    n_dropped: int = 0
    n_seeds_ours: int = 0
    n_seeds_theirs: int = 0
    n_resamples: int = 0
    reason: str = ""

    def row(self) -> dict[str, Any]:
        return asdict(self)


def no_evidence(reason: str, **fields: Any) -> ExampleEvidence:
    return ExampleEvidence(method="none", reason=f"no per-example evidence: {reason}", **fields)


def _aggregate(kind: str, scale: float, numerator: Any, denominator: Any) -> Any:
    ratio = np.asarray(numerator, dtype=float) / np.asarray(denominator, dtype=float)
    return np.exp(ratio) if kind == "exp-ratio" else scale * ratio


# --- per-example scores from a record's kept files --------------------------------------------------------------


@dataclass(frozen=True)
class _Split:
    """What an extractor returns: ids and per-example pairs, with how they aggregate."""

    ids: list[str]
    numerators: list[float]
    denominators: list[float]
    scale: float = PERCENT
    aggregate: str = "ratio"
    binary: bool = False


Extractor = Callable[[Any, str, Mapping[str, Path]], _Split]


def per_example_scores(record: RunRecord, results_dir: Path, metric: str | None = None) -> ExampleScores | None:
    """The per-example contributions to ``metric`` (default: the record's only metric) of a record's kept
    predictions, or ``None`` when there are none to give; :func:`example_scores_or_reason` says why."""
    found = example_scores_or_reason(record, results_dir, metric)
    return found if isinstance(found, ExampleScores) else None


def example_scores_or_reason(record: RunRecord, results_dir: Path, metric: str | None = None) -> ExampleScores | str:
    """:func:`per_example_scores`, or the reason in words there are none (never an exception for bad files)."""
    if metric is None:
        if len(record.metrics) != 1:
            return f"run {record.run_id} records {len(record.metrics)} metrics; name the one to split by example"
        (metric,) = record.metrics
    try:
        return _scores(record, Path(results_dir), metric)
    except HarnessError as exc:
        return f"run {record.run_id}: {exc}"


def _scores(record: RunRecord, results_dir: Path, metric: str) -> ExampleScores | str:
    artifacts = record.artifacts
    if "predictions" not in artifacts or "task" not in artifacts:
        return f"run {record.run_id} kept no predictions"
    task = registry.task(artifacts["task"])
    extractor = _extractor(task, metric)
    if isinstance(extractor, str):
        return extractor
    paths = _paths(record, task, results_dir)
    if isinstance(paths, str):
        return paths
    official = _official_value(task, metric, paths)
    split = extractor(task, metric, paths)
    scores = ExampleScores(
        run_id=record.run_id, seed=record.seed, task=task.id, metric=metric, ids=tuple(split.ids),
        numerators=np.asarray(split.numerators, dtype=float), denominators=np.asarray(split.denominators, dtype=float),
        scale=split.scale, aggregate=split.aggregate, binary=split.binary,
        references_sha256=artifacts.get("references_sha256"),
    )  # fmt: skip
    if not math.isclose(scores.value(), official, rel_tol=AGREEMENT, abs_tol=AGREEMENT):
        return (
            f"run {record.run_id}: the per-example {metric} re-aggregates to {scores.value()!r}, the {task.id} scorer "
            f"gives {official!r} (harness.evidence no longer follows the scorer)"
        )
    return scores


def _paths(record: RunRecord, task: Any, results_dir: Path) -> dict[str, Path] | str:
    """The scorer's files by argument name, checked present and, where the record names it, the references' hash."""
    artifacts = record.artifacts
    names = [name for name in ("references", "predictions", *task.options) if name in artifacts]
    paths = {name: results_dir / artifacts[name] for name in names}
    for name in ("references", "predictions"):
        if name not in paths or not paths[name].exists():
            return f"run {record.run_id}: its {name} {str(paths.get(name, ''))!r} are missing (artifacts.{name})"
    expected = artifacts.get("references_sha256")
    if expected and references_sha256(paths["references"]) != expected:
        return f"run {record.run_id}: its references {paths['references']} changed since it was scored"
    return paths


def _official_value(task: Any, metric: str, paths: Mapping[str, Path]) -> float:
    files = dict(paths)
    with warnings.catch_warnings():  # missing predictions etc.: the scorer's own warnings, already seen at the run
        warnings.simplefilter("ignore")
        scored = task.scorer()(files.pop("references"), files.pop("predictions"), **files)
    key = scorer_key(metric, scored)
    if key is None:
        raise HarnessError(f"the {task.id} scorer gives no {metric!r} (it gives {', '.join(sorted(scored))})")
    return float(scored[key])


def _extractor(task: Any, metric: str) -> Extractor | str:
    """The function splitting ``metric`` of ``task`` by example, or why there is none."""
    target = task.score
    module = target.partition(":")[0]
    if target in LABEL_READERS or module in LABEL_MODULES_WITH_TASK_ID:
        return _labels if metric in LABEL_METRICS else _unsupported_metric(task, metric, LABEL_METRICS)
    if module == "tasks.glue.score":
        from tasks.glue.score import layout

        ok = metric == "accuracy" and "accuracy" in layout(task.id).metrics
        return _glue if ok else _unsupported_metric(task, metric, ("accuracy",), why="not a mean over examples")
    if target == "tasks.librispeech.score:score":
        return _wer if metric == "wer" else _unsupported_metric(task, metric, ("wer",))
    if target in SQUAD_SCORERS:
        return _squad if metric in ("exact_match", "exact", "f1") else _unsupported_metric(task, metric, ("f1",))
    if target in PERPLEXITY_SCORERS:
        return _perplexity if metric in ("perplexity", "nll") else _unsupported_metric(task, metric, ("perplexity",))
    return f"task {task.id!r} ({target}) has no per-example split in harness.evidence"


def _unsupported_metric(task: Any, metric: str, known: Sequence[str], why: str = "") -> str:
    because = f" ({why})" if why else ""
    return f"metric {metric!r} of task {task.id!r} has no per-example split{because}; it splits {', '.join(known)}"


def _labels(task: Any, metric: str, paths: Mapping[str, Path]) -> _Split:
    """Top-1 / top-5 correctness (or top-1 error) of every reference id; a missing prediction is wrong, as the
    scorer counts it."""
    from tasks.imagenet.score import read_predictions

    reader, with_id = LABEL_READERS.get(task.score, (f"{task.score.partition(':')[0]}:read_reference_labels", True))
    read = load_object(reader)
    labels = read(task.id, paths["references"]) if with_id else read(paths["references"])
    guesses = read_predictions(paths["predictions"])
    guessed = 5 if metric == "top5" else 1
    hits = [float(label in guesses.get(item_id, [])[:guessed]) for item_id, label in labels.items()]
    numerators = [1.0 - hit for hit in hits] if metric == "error" else hits
    return _Split(list(labels), numerators, [1.0] * len(hits), binary=True)


def _glue(task: Any, metric: str, paths: Mapping[str, Path]) -> _Split:
    from tasks.glue.score import read_predictions, read_references

    references = read_references(task.id, paths["references"])
    predictions = read_predictions(task.id, paths["predictions"])
    hits = [float(predictions[index] == label) for index, label in references.items()]
    return _Split([str(index) for index in references], hits, [1.0] * len(hits), binary=True)


def _wer(task: Any, metric: str, paths: Mapping[str, Path]) -> _Split:
    """Word errors (substitutions + deletions + insertions) and reference words of each utterance, from one
    ``jiwer.process_words`` over the split (the alignment ``tasks.librispeech.score.word_counts`` sums)."""
    import jiwer

    from tasks.librispeech.score import read_references, read_transcripts

    references = read_references(paths["references"])
    hypotheses = read_transcripts(paths["predictions"], allow_empty=True)
    ids = list(references)
    texts = [references[utterance].text for utterance in ids]
    heard = [hypotheses[utterance].text if utterance in hypotheses else "" for utterance in ids]
    aligned = jiwer.process_words(texts, heard)
    errors = [sum(_chunk_errors(chunk) for chunk in sentence) for sentence in aligned.alignments]
    return _Split(ids, [float(e) for e in errors], [float(len(text.split())) for text in texts])


def _chunk_errors(chunk: Any) -> int:
    if chunk.type in ("substitute", "delete"):
        return chunk.ref_end_idx - chunk.ref_start_idx
    if chunk.type == "insert":
        return chunk.hyp_end_idx - chunk.hyp_start_idx
    return 0


def _squad(task: Any, metric: str, paths: Mapping[str, Path]) -> _Split:
    """Each question's exact match or F1 (its maximum over the gold answers, the official scripts' rule); a v1.1
    question without a prediction scores 0."""
    from tasks.squad.score import question_scores_v1, question_scores_v2, read_predictions, read_references

    _, questions = read_references(paths["references"])
    answers = read_predictions(paths["predictions"])
    score = question_scores_v2 if SQUAD_SCORERS[task.score] == "v2" else question_scores_v1
    pairs = [score(answers[q.qid], q.answers) if q.qid in answers else (0, 0.0) for q in questions]
    exact = metric != "f1"
    values = [float(em if exact else f1) for em, f1 in pairs]
    return _Split([q.qid for q in questions], values, [1.0] * len(values), binary=exact)


def _perplexity(task: Any, metric: str, paths: Mapping[str, Path]) -> _Split:
    """NLL sum and token count of each reference line (a line is the example: WikiText's lines with their
    ``<eos>``, One Billion Word's sentences)."""
    from tasks.language_modeling import score

    references = paths["references"]
    if PERPLEXITY_SCORERS[task.score] == "lm1b":
        references = score.lm1b_references_file(references)
        stream = score.lm1b_stream(references)
    else:
        references = score.references_file(references)
        stream = score.reference_stream(references)
    nll: dict[int, float] = {}
    tokens: dict[int, float] = {}
    for (line, _), predicted in zip(stream, score.text_lines(paths["predictions"]), strict=True):
        nll[line] = nll.get(line, 0.0) - float(predicted.partition("\t")[2])
        tokens[line] = tokens.get(line, 0.0) + 1.0
    kind, scale = ("exp-ratio", 1.0) if metric == "perplexity" else ("ratio", 1.0)
    return _Split([str(line) for line in nll], list(nll.values()), list(tokens.values()), scale, kind)


# --- the two arms on their shared examples ----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _Arms:
    """Both arms' per-seed scores on the shared examples, rows = seeds, columns = examples in one order."""

    metric: str
    ours_num: np.ndarray
    ours_den: np.ndarray
    theirs_num: np.ndarray
    theirs_den: np.ndarray
    scale: float
    aggregate: str
    binary: bool
    dropped: int

    @property
    def n_examples(self) -> int:
        return self.ours_num.shape[1]

    def counts(self) -> dict[str, int]:
        return {
            "n_examples": self.n_examples, "n_dropped": self.dropped,
            "n_seeds_ours": self.ours_num.shape[0], "n_seeds_theirs": self.theirs_num.shape[0],
        }  # fmt: skip

    def arm_values(self, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each seed's metric under example ``weights`` (resamples x examples): (resamples x seeds) per arm, from one
        product with every arm's numerators and denominators stacked."""
        k, j = self.ours_num.shape[0], self.theirs_num.shape[0]
        sums = weights @ np.concatenate([self.ours_num, self.theirs_num, self.ours_den, self.theirs_den]).T
        ours = _aggregate(self.aggregate, self.scale, sums[:, :k], sums[:, k + j : 2 * k + j])
        theirs = _aggregate(self.aggregate, self.scale, sums[:, k : k + j], sums[:, 2 * k + j :])
        return ours, theirs

    def estimate(self) -> float:
        ours, theirs = self.arm_values(np.ones((1, self.n_examples)))
        return float(ours.mean() - theirs.mean())


def _align(ours: Sequence[ExampleScores], theirs: Sequence[ExampleScores]) -> _Arms | str:
    """Both arms on the ids every run has, or why they cannot be compared."""
    if not ours or not theirs:
        return f"{len(ours)} run(s) with per-example scores against {len(theirs)} for the baseline"
    runs = [*ours, *theirs]
    first = runs[0]
    for other in runs[1:]:
        for name in ("task", "metric", "aggregate", "scale"):
            if getattr(other, name) != getattr(first, name):
                return f"runs {first.run_id} and {other.run_id} differ in {name}"
    hashes = {run.references_sha256 for run in runs if run.references_sha256}
    if len(hashes) > 1:
        return f"the runs were scored against {len(hashes)} different references (references_sha256 differ)"
    shared = set(first.ids).intersection(*(run.ids for run in runs[1:]))
    union = set(first.ids).union(*(run.ids for run in runs[1:]))
    if not shared:
        return "the runs share no example id"
    order = [item_id for item_id in first.ids if item_id in shared]

    (ours_num, ours_den), (theirs_num, theirs_den) = _matrices(ours, order), _matrices(theirs, order)
    binary = all(run.binary for run in runs)
    return _Arms(
        first.metric, ours_num, ours_den, theirs_num, theirs_den, first.scale, first.aggregate, binary,
        len(union) - len(shared),
    )  # fmt: skip


def _matrices(arm: Sequence[ExampleScores], order: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """An arm's numerators and denominators, one row per run, one column per id of ``order``."""
    rows = []
    for run in arm:
        where = {item_id: index for index, item_id in enumerate(run.ids)}
        columns = np.array([where[item_id] for item_id in order], dtype=np.intp)
        rows.append((run.numerators[columns], run.denominators[columns]))
    return np.stack([num for num, _ in rows]), np.stack([den for _, den in rows])


# --- the tests ----------------------------------------------------------------------------------------------------


def mcnemar_p(ours_better: int, theirs_better: int, mid_p: bool = False) -> float:
    """Two-sided exact McNemar p-value of the discordant counts (binomial at 1/2); ``mid_p``: the mid-p value."""
    from scipy.stats import binom

    discordant = ours_better + theirs_better
    if discordant == 0:
        return 1.0
    fewer = min(ours_better, theirs_better)
    p = 2.0 * binom.cdf(fewer, discordant, 0.5)
    if mid_p:
        p -= binom.pmf(fewer, discordant, 0.5)
    return float(min(1.0, p))


def example_weights(rng: np.random.Generator, n: int, resamples: int) -> np.ndarray:
    """How often each of ``n`` examples is drawn in each of ``resamples`` draws of ``n`` with replacement
    (resamples x examples, float for the products)."""
    drawn = rng.integers(0, n, size=(resamples, n), dtype=np.int64)
    drawn += (np.arange(resamples, dtype=np.int64) * n)[:, None]
    return np.bincount(drawn.ravel(), minlength=resamples * n).reshape(resamples, n).astype(float)


def _resampled_differences(arms: _Arms, n_resamples: int, seed: int, resample_seeds: bool) -> np.ndarray:
    """``ours - theirs`` (means over seeds) for each resample: examples drawn once per resample and shared by both
    arms; with ``resample_seeds``, each arm's seeds drawn with replacement too."""
    rng = np.random.default_rng(seed)
    differences = []
    for start in range(0, n_resamples, CHUNK):
        size = min(CHUNK, n_resamples - start)
        ours, theirs = arms.arm_values(example_weights(rng, arms.n_examples, size))
        if resample_seeds:
            rows = np.arange(size)[:, None]
            ours = ours[rows, rng.integers(0, ours.shape[1], size=ours.shape)]
            theirs = theirs[rows, rng.integers(0, theirs.shape[1], size=theirs.shape)]
        differences.append(ours.mean(axis=1) - theirs.mean(axis=1))
    return np.concatenate(differences)


def _interval(differences: np.ndarray) -> tuple[float, float, float]:
    """Percentile interval and the two-sided p-value it inverts."""
    tail = (1.0 - CONFIDENCE) / 2.0
    low, high = np.quantile(differences, [tail, 1.0 - tail])
    below, above = int(np.sum(differences <= 0)), int(np.sum(differences >= 0))
    p = min(1.0, 2.0 * (min(below, above) + 1) / (len(differences) + 1))
    return float(low), float(high), p


def _direction(low: float, high: float, higher_is_better: bool) -> str:
    if low > 0 or high < 0:
        better = (low > 0) == higher_is_better
        return "favours the model" if better else "favours the baseline"
    return "contains 0"


def paired_example_test(
    ours: Sequence[ExampleScores],
    theirs: Sequence[ExampleScores],
    higher_is_better: bool,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    mid_p: bool = False,
) -> ExampleEvidence:
    """Model (``ours``, one per seed) minus baseline over the shared examples: McNemar's exact test for a 0/1 metric,
    else a paired bootstrap over examples; the interval is the paired bootstrap's (see the module docstring)."""
    arms = _align(ours, theirs)
    if isinstance(arms, str):
        return no_evidence(arms)
    differences = _resampled_differences(arms, n_resamples, seed, resample_seeds=False)
    low, high, p_value = _interval(differences)
    estimate = arms.estimate()
    if not arms.binary:
        reason = f"paired bootstrap over {arms.n_examples} examples: 95% interval [{low:.4g}, {high:.4g}] "
        return ExampleEvidence(
            "paired-bootstrap", arms.metric, estimate, low, high, p_value, **arms.counts(), n_resamples=n_resamples,
            reason=reason + f"{_direction(low, high, higher_is_better)}, p={p_value:.3g}{_dropped(arms)}",
        )  # fmt: skip
    per_example = arms.ours_num.mean(axis=0) - arms.theirs_num.mean(axis=0)
    sign = 1.0 if higher_is_better else -1.0
    better, worse = int(np.sum(sign * per_example > 0)), int(np.sum(sign * per_example < 0))
    p_value = mcnemar_p(better, worse, mid_p)
    kind = "mid-p" if mid_p else "exact"
    reason = (
        f"McNemar ({kind}) over {arms.n_examples} examples: the model better on {better}, the baseline on {worse} "
        f"(p={p_value:.3g}); paired bootstrap 95% interval [{low:.4g}, {high:.4g}]{_dropped(arms)}"
    )
    return ExampleEvidence(
        "mcnemar", arms.metric, estimate, low, high, p_value, **arms.counts(), n_resamples=n_resamples, reason=reason
    )


def hierarchical_bootstrap(
    ours: Sequence[ExampleScores],
    theirs: Sequence[ExampleScores],
    higher_is_better: bool,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> ExampleEvidence:
    """Model minus baseline with seeds resampled within each arm and examples resampled (shared by both arms):
    the percentile 95% interval of the difference of arm means."""
    arms = _align(ours, theirs)
    if isinstance(arms, str):
        return no_evidence(arms)
    differences = _resampled_differences(arms, n_resamples, seed, resample_seeds=True)
    low, high, p_value = _interval(differences)
    counts = arms.counts()
    reason = (
        f"hierarchical bootstrap over {counts['n_seeds_ours']} and {counts['n_seeds_theirs']} seeds and "
        f"{arms.n_examples} examples: 95% interval [{low:.4g}, {high:.4g}] {_direction(low, high, higher_is_better)}"
        f"{_dropped(arms)}"
    )
    return ExampleEvidence(
        "hierarchical-bootstrap", arms.metric, arms.estimate(), low, high, p_value, **counts,
        n_resamples=n_resamples, reason=reason,
    )  # fmt: skip


def _dropped(arms: _Arms) -> str:
    return f"; {arms.dropped} example(s) absent from some run left out" if arms.dropped else ""


def example_evidence(
    ours: Sequence[RunRecord],
    theirs: Sequence[RunRecord],
    results_dir: Path,
    metric: str,
    higher_is_better: bool,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[ExampleEvidence, ExampleEvidence]:
    """The paired test and the hierarchical bootstrap of a delta claim's records (one per seed and arm), from
    their kept predictions under ``results_dir``; both ``method="none"`` with the first run's reason when some run
    has no per-example scores."""
    loaded = {side: [example_scores_or_reason(r, results_dir, metric) for r in records] for side, records in
              (("ours", ours), ("theirs", theirs))}  # fmt: skip
    reasons = [found for found in (*loaded["ours"], *loaded["theirs"]) if isinstance(found, str)]
    if reasons:
        missing = no_evidence(reasons[0] + (f" (and {len(reasons) - 1} more run(s))" if len(reasons) > 1 else ""))
        return missing, missing
    options = {"n_resamples": n_resamples, "seed": seed}
    return (
        paired_example_test(loaded["ours"], loaded["theirs"], higher_is_better, **options),
        hierarchical_bootstrap(loaded["ours"], loaded["theirs"], higher_is_better, **options),
    )
