"""Trivial references the harness runs itself, on a tier config's own data: the floor a budget baseline must clear.

A budget claim is testable only where its baseline has learnt something (docs/verdicts.md, "Budget claims",
premise ``beats``). The references are fitted on the config's training split and scored on its test split(s), so
they see exactly the data the arms see:

- ``majority``: always the most frequent training label (ties: the smallest label);
- ``linear``: multinomial logistic regression (scikit-learn, L2, ``C = 1``) on the flattened inputs, or on the bag
  of words (of token ids, or of whitespace words for raw text) of a text batch;
- ``unigram``: for a corpus in the WikiText-103 layout (``debian-lm``), the add-one unigram model of the training
  split's words (``wiki.train.tokens``, each line's words and ``<eos>``, as WikiText's scorer streams them; one extra
  slot for unseen words), scored by WikiText-103's own scorer on the test references the data module serves (its
  ``scoring`` references, e.g. the first ``test_lines`` lines): word-level ``perplexity`` (also recorded as
  ``word_perplexity``), ``nll`` and ``tokens``. It is compared with a model's *word-level* perplexity.

Each writes one run record per ``evaluate`` entry, as model ``reference-<kind>``; the classifiers record ``top1``,
``accuracy`` (the same number, in %) and ``error`` (100 minus it), so a plan's premise can name it: ``{check: beats,
reference: reference-majority, ...}``. A classifier reference needs batches of ``(inputs, labels)`` or a mapping
with a ``label``/``labels`` entry; a semi-supervised module's labelled part (its ``labelled`` data module) is used
when it has one. Anything else is an error that says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.contract import Scored, capability, data_hash
from harness.errors import HarnessError
from harness.preparation import make_datamodule
from harness.records import code_version, make_run_id, new_record, now, record_path, run_provenance, write_record

KINDS = ("majority", "linear", "unigram")
LABEL_KEYS = ("label", "labels", "y", "target", "targets")
TOKEN_KEYS = ("input_ids", "tokens", "ids")


def _unpack(batch: Any, where: str) -> tuple[Any, Any]:
    if isinstance(batch, list | tuple) and len(batch) == 2:
        return batch[0], batch[1]
    if isinstance(batch, dict):
        key = next((k for k in LABEL_KEYS if k in batch), None)
        if key is not None:
            return {k: v for k, v in batch.items() if k != key}, batch[key]
    raise HarnessError(
        f"{where}: its batches are neither (inputs, labels) nor a mapping with one of {', '.join(LABEL_KEYS)}: the "
        "harness has no trivial reference for this data"
    )


def _features(inputs: Any) -> list[Any]:
    """One feature object per example: a flat float vector, or a bag of tokens (a Counter)."""
    import torch

    if isinstance(inputs, dict):
        key = next((k for k in TOKEN_KEYS if k in inputs), None)
        if key is None:
            raise HarnessError(f"text batches without any of {', '.join(TOKEN_KEYS)}: no linear reference")
        inputs = inputs[key]
    if isinstance(inputs, list | tuple) and inputs and isinstance(inputs[0], str):
        return [Counter(text.lower().split()) for text in inputs]
    if _ids_and_lengths(inputs):  # right-padded ids (B, T) and each row's length (B,): the RNN text batch
        ids, lengths = inputs
        return [Counter(int(t) for t in row[: int(n)]) for row, n in zip(ids, lengths, strict=True)]
    if isinstance(inputs, torch.Tensor) and not inputs.is_floating_point():
        return [Counter(int(t) for t in row if int(t) != 0) for row in inputs.reshape(len(inputs), -1)]
    if isinstance(inputs, torch.Tensor):
        return list(inputs.reshape(len(inputs), -1).float().numpy())
    raise HarnessError(f"inputs of type {type(inputs).__name__}: no linear reference")


def _ids_and_lengths(inputs: Any) -> bool:
    import torch

    if not (isinstance(inputs, list | tuple) and len(inputs) == 2):
        return False
    ids, lengths = inputs
    return (
        isinstance(ids, torch.Tensor) and isinstance(lengths, torch.Tensor) and ids.dim() == 2 and lengths.dim() == 1
        and not ids.is_floating_point() and not lengths.is_floating_point() and len(ids) == len(lengths)
    )  # fmt: skip


def collect(loader: Iterable[Any], where: str, features: bool) -> tuple[list[Any], np.ndarray]:
    """All examples of a loader: their features (when asked) and labels."""
    xs: list[Any] = []
    ys: list[int] = []
    for batch in loader:
        inputs, labels = _unpack(batch, where)
        ys += [int(label) for label in np.asarray(labels).reshape(-1)]
        if features:
            xs += _features(inputs)
    return xs, np.asarray(ys, dtype=np.int64)


def _design(train: list[Any], tests: Sequence[list[Any]]) -> tuple[Any, list[Any]]:
    """Dense rows as they are; bags of tokens as one sparse matrix over the training vocabulary."""
    if not train or not isinstance(train[0], Counter):
        return np.stack(train), [np.stack(x) if len(x) else np.zeros((0, len(train[0]))) for x in tests]
    from sklearn.feature_extraction import DictVectorizer

    vectorizer = DictVectorizer()
    matrix = vectorizer.fit_transform([{str(k): v for k, v in bag.items()} for bag in train])
    return matrix, [vectorizer.transform([{str(k): v for k, v in bag.items()} for bag in x]) for x in tests]


def predict(kind: str, train_x: list[Any], train_y: np.ndarray, tests: Sequence[list[Any]], sizes: Sequence[int]):
    """The reference's predictions on each test set (``sizes``: their lengths, for the majority class)."""
    if kind == "majority":
        counts = Counter(train_y.tolist())
        top = max(sorted(counts), key=lambda label: counts[label])  # sorted first: ties go to the smallest label
        return [np.full(size, top, dtype=np.int64) for size in sizes]
    from sklearn.linear_model import LogisticRegression

    train, test_sets = _design(train_x, tests)
    model = LogisticRegression(max_iter=1000, random_state=0).fit(train, train_y)
    return [model.predict(x) if x.shape[0] else np.zeros(0, dtype=np.int64) for x in test_sets]


def scores(predictions: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    accuracy = 100.0 * float(np.mean(predictions == labels)) if len(labels) else float("nan")
    return {"top1": accuracy, "accuracy": accuracy, "error": 100.0 - accuracy}


def unigram_log_probs(train: Path, references: Path) -> tuple[list[str], list[float]]:
    """The add-one unigram model of ``train``'s token stream, applied to ``references``' stream: its tokens and their
    natural-log probabilities (an unseen word gets the one extra slot's share)."""
    from tasks.language_modeling.score import reference_stream

    counts = Counter(token for _, token in reference_stream(train))
    total = sum(counts.values()) + len(counts) + 1  # add one to every seen word and to the unseen slot
    tokens = [token for _, token in reference_stream(references)]
    return tokens, [float(np.log((counts.get(token, 0) + 1) / total)) for token in tokens]


def unigram_scores(data: Any, resolved: dict[str, Any], folder: Path) -> list[dict[str, float]]:
    """Word-level perplexity of the add-one unigram model on each test loader's references (WikiText's scorer)."""
    from tasks.language_modeling.score import score_perplexity, write_log_probs

    top = Path(resolved["data"]["init_args"].get("data_root") or ".")
    corpus = getattr(getattr(data, "hparams", None), "corpus", None) or getattr(data, "corpus", None)
    folders = [top / corpus, top] if isinstance(corpus, str) else [top]  # a data root that holds the corpus folder
    root = next((folder for folder in folders if (folder / "wiki.train.tokens").is_file()), top)
    train = root / "wiki.train.tokens"
    if not train.is_file():
        raise HarnessError(f"{train}: no training split in the WikiText-103 layout: the unigram reference needs one")
    found = []
    for index, _ in enumerate(resolved["evaluate"]):
        scored = capability(data, Scored)
        references = scored.scoring(index, folder).references if scored else root / "wiki.test.tokens"
        tokens, log_probs = unigram_log_probs(train, Path(references))
        predictions = write_log_probs(folder / f"unigram-{index}.txt", tokens, log_probs)
        metrics = score_perplexity(Path(references), predictions)
        found.append({**metrics, "word_perplexity": metrics["perplexity"]})
    return found


def _supervised(datamodule: Any) -> Any:
    return getattr(datamodule, "labelled", None) or datamodule


def _classifier_scores(kind: str, data: Any, resolved: dict[str, Any], where: str) -> list[dict[str, float]]:
    train_x, train_y = collect(data.train_dataloader(), where, kind == "linear")
    loaders = data.test_dataloader()
    loaders = loaders if isinstance(loaders, list | tuple) else [loaders]
    tests = [collect(loader, where, kind == "linear") for loader in loaders]
    if len(tests) != len(resolved["evaluate"]):
        raise HarnessError(f"{where}: {len(tests)} test loader(s), but 'evaluate' lists {len(resolved['evaluate'])}")
    predicted = predict(kind, train_x, train_y, [x for x, _ in tests], [len(y) for _, y in tests])
    return [scores(prediction, labels) for prediction, (_, labels) in zip(predicted, tests, strict=True)]


def _unigram(data: Any, resolved: dict[str, Any]) -> list[dict[str, float]]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="harness-unigram-") as folder:
        return unigram_scores(data, resolved, Path(folder))


def run_reference(repro: Any, resolved: dict[str, Any], kind: str, runs_dir: Path) -> list[Path]:
    """Fit the ``kind`` reference on ``resolved``'s data and write one record per ``evaluate`` entry."""
    if kind not in KINDS:
        raise HarnessError(f"unknown reference {kind!r}; the harness runs: {', '.join(KINDS)}")
    datamodule = make_datamodule(resolved)
    datamodule.setup("fit")
    datamodule.setup("test")
    data = _supervised(datamodule)
    where = type(data).__name__
    started = now()
    metrics = _unigram(data, resolved) if kind == "unigram" else _classifier_scores(kind, data, resolved, where)
    model = f"reference-{kind}"
    key = {"reference": kind, "data": resolved["data"], "tier": resolved["tier"], "model": model,
           "seed": resolved["seed"], "evaluate": resolved["evaluate"]}  # fmt: skip
    key["data"] = {**key["data"], "init_args": {k: v for k, v in key["data"]["init_args"].items() if k != "data_root"}}
    provenance = run_provenance(key, data_hash(data), code_version(repro.id))
    written = []
    for entry, scored in zip(resolved["evaluate"], metrics, strict=True):
        run_id = make_run_id(repro.id, model, resolved["tier"], entry["dataset"], entry["split"], key, key["seed"])
        if record_path(run_id, runs_dir).exists():
            written.append(record_path(run_id, runs_dir))
            continue
        record = new_record(
            run_id=run_id, paper=repro.id, model=model, tier=resolved["tier"], dataset=entry["dataset"],
            split=entry["split"], seed=key["seed"], metrics=scored, started_at=started,
            provenance=provenance, protocol=resolved.get("protocol"), config=key,
        )  # fmt: skip
        written.append(write_record(record, runs_dir))
    return written
