"""One composed evaluator per test loader, built and logged in one place (the idea of detectron2's
``DatasetEvaluators``; the metrics themselves are torchmetrics ``Metric`` s, as STYLE.md's "accumulate per batch,
compute once").

A system makes its test evaluators in ``on_test_start``, updates loader ``dataloader_idx``'s in ``test_step`` and
logs them all in ``on_test_epoch_end``::

    def on_test_start(self) -> None:
        self.test_metrics = per_test_loader(self, lambda index: accuracy_metrics(self.hparams.num_classes))

    def test_step(self, batch, batch_idx, dataloader_idx=0) -> None:
        self.test_metrics[dataloader_idx].update(self(inputs), labels)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)

Each loader's evaluator is one metric (a torchmetrics ``Metric`` or ``MetricCollection``), or several named ones
(:class:`Composed`) whose results are merged: a metric name two of them give is an error, never one value silently
replacing the other.
Every value is logged under :func:`harness.contract.logged_key` (``test/<name>``, ``/dataloader_idx_<i>`` with several
loaders), the one spelling the runner reads back (:func:`harness.contract.loader_metrics`). ``test_metrics`` stays
indexable by loader, so the predictions keeper finds each loader's metric (harness.predictions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytorch_lightning as pl
from torch import nn

from harness.contract import TEST_PREFIX, logged_key
from harness.errors import HarnessError

Results = Callable[[nn.Module, int], Mapping[str, Any]]  # (loader's metric, loader index) -> name -> value


def computed(metric: nn.Module, index: int = 0) -> dict[str, Any]:
    """A metric's ``compute()`` as ``name -> value``: a collection's keys without the ``test/`` prefix it may carry."""
    values = metric.compute()
    if not isinstance(values, Mapping):
        raise HarnessError(
            f"{type(metric).__name__}.compute() returns one value, not a dict of metric names: give the evaluators "
            "results=named('<metric name>')"
        )
    return {str(name).removeprefix(TEST_PREFIX): value for name, value in values.items()}


def floats(metric: nn.Module, index: int = 0) -> dict[str, float]:
    """:func:`computed` as Python floats (logged in Lightning's float32, whatever the metric's dtype)."""
    return {name: float(value) for name, value in computed(metric, index).items()}


def counted(metric: nn.Module, index: int = 0) -> dict[str, Any]:
    """A metric's ``counts()``: its scorer's keys with the totals they come from (perplexity and tokens, WER and
    its edits)."""
    return dict(metric.counts())


def named(name: str) -> Results:
    """Results of a metric whose ``compute()`` is one value, logged as ``test/<name>``."""

    def results(metric: nn.Module, index: int = 0) -> dict[str, Any]:
        return {name: metric.compute()}

    return results


class Composed(nn.ModuleDict):
    """Several evaluators of one test loader, by name (each updated by the system with what it measures); their
    results are merged, and a metric name two of them give is an error."""


class LoaderEvaluators(nn.ModuleList):
    """The test evaluators of a system, one per test loader, in loader order (see the module docstring).

    ``results(metric, index)`` turns loader ``index``'s metric into ``name -> value`` (default :func:`computed`); the
    values are logged as they come (a tensor keeps its dtype), so what a record holds is what the metric computed.
    """

    def __init__(self, evaluators: Iterable[nn.Module], results: Results = computed) -> None:
        super().__init__(evaluators)
        self.results_of = results

    def results(self, index: int) -> dict[str, Any]:
        """Loader ``index``'s metrics by name: one metric's, or the union of its parts' (a name twice is an error)."""
        evaluator = self[index]
        if not isinstance(evaluator, Composed):
            return dict(self.results_of(evaluator, index))
        merged: dict[str, Any] = {}
        givers: dict[str, str] = {}
        for part, metric in evaluator.items():
            for name, value in self.results_of(metric, index).items():
                if name in merged:
                    raise HarnessError(
                        f"test loader {index}: metric {name!r} is given by both evaluators {givers[name]!r} and "
                        f"{part!r}: rename one (each metric name is logged once per loader)"
                    )
                merged[name], givers[name] = value, part
        return merged

    def log(self, system: pl.LightningModule) -> None:
        """Log every loader's metrics as ``test/<name>[/dataloader_idx_<i>]``. The metrics keep what they
        accumulated (its predictions can still be written) until the next test's ``on_test_start`` makes fresh ones."""
        for index in range(len(self)):
            for name, value in self.results(index).items():
                system.log(logged_key(name, index, len(self)), value, add_dataloader_idx=False)


def per_test_loader(
    system: pl.LightningModule, make: Callable[[int], nn.Module], results: Results = computed
) -> LoaderEvaluators:
    """A fresh evaluator for each of the trainer's test loaders (``make(index)``), on the system's device."""
    loaders = len(system.trainer.num_test_batches)
    return LoaderEvaluators((make(index) for index in range(loaders)), results).to(system.device)
