"""The evaluator contract: capabilities found through Protocols (a wrong shape is one error naming the fix), one
evaluator per test loader logged under ``test/<name>[/dataloader_idx_<i>]`` and read back by the runner."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics import MeanMetric, MetricCollection

from harness.contract import (
    CitesArtifacts,
    DataHashed,
    Verifiable,
    capability,
    cited_artifacts,
    data_hash,
    loader_metrics,
    logged_key,
)
from harness.errors import HarnessError
from harness.evaluators import Composed, LoaderEvaluators, per_test_loader
from tasks.metrics import accuracy_metrics


def test_a_record_keeps_its_own_loaders_metrics_only():
    """What a system logs at the test epoch's end, Lightning puts in every loader's results: each record keeps the
    metrics named for its own loader (or for none)."""
    results = [
        {"test/accuracy/dataloader_idx_0": 50.0, "test/accuracy/dataloader_idx_1": 75.0, "test/tokens": 3.0},
        {"test/accuracy/dataloader_idx_0": 50.0, "test/accuracy/dataloader_idx_1": 75.0, "train/loss": 1.0},
    ]
    assert loader_metrics(results[0], 0) == {"accuracy": 50.0, "tokens": 3.0}
    assert loader_metrics(results[1], 1) == {"accuracy": 75.0}


def test_the_logged_key_is_what_the_runner_reads_back():
    assert logged_key("top1", 0, 1) == "test/top1"
    assert logged_key("top1", 1, 2) == "test/top1/dataloader_idx_1"
    assert loader_metrics({logged_key("wer", 1, 3): 2.5}, 1) == {"wer": 2.5}


class _Data:
    def __init__(self) -> None:
        self.data_hash = "ab" * 32
        self.record_artifacts = {"tokenizer": Path("t.json")}

    def verify(self) -> None:
        pass


class _OldData:
    """Written to the old shape: ``data_hash`` a method, ``verify`` a value, ``record_artifacts`` a list."""

    verify = True
    record_artifacts = ["t.json"]

    def data_hash(self) -> str:
        return "ab" * 32


def test_capabilities_are_found_by_protocol():
    data = _Data()
    assert capability(data, Verifiable) is data and data_hash(data) == "ab" * 32
    assert cited_artifacts(data, object()) == {"tokenizer": "t.json"}
    assert capability(object(), DataHashed) is None and data_hash(object()) is None
    assert cited_artifacts(object()) == {}


@pytest.mark.parametrize(
    ("protocol", "message"),
    [
        (DataHashed, "_OldData.data_hash is a method: make 'data_hash' an attribute (or @property): a sha256 string"),
        (Verifiable, "_OldData.verify is a bool: make 'verify' a method"),
        (CitesArtifacts, "_OldData.record_artifacts is a list: make 'record_artifacts' an attribute: a dict"),
    ],
)
def test_a_plugin_of_the_old_shape_is_told_what_to_change(protocol: type, message: str):
    with pytest.raises(HarnessError, match="docs/plugins.md") as caught:
        capability(_OldData(), protocol)
    assert message in str(caught.value)


def test_a_metric_name_two_evaluators_give_is_an_error():
    def composed(second: nn.Module) -> LoaderEvaluators:
        parts = Composed({"accuracy": accuracy_metrics(3), "second": second})
        for part in parts.values():
            part.update(torch.eye(3), torch.tensor([0, 1, 1]))
        return LoaderEvaluators([parts])

    with pytest.raises(
        HarnessError, match="metric '(top1|top5|error)' is given by both evaluators 'accuracy' and 'second'"
    ):
        composed(accuracy_metrics(3)).results(0)
    merged = composed(MetricCollection({"mean_score": MeanMetric()})).results(0)
    assert set(merged) == {"top1", "top5", "error", "mean_score"} and float(merged["top1"]) == pytest.approx(200 / 3)


def test_a_metric_of_one_value_needs_a_name():
    metric = MeanMetric()
    metric.update(torch.tensor(1.0))
    with pytest.raises(HarnessError, match=r"results=named\('<metric name>'\)"):
        LoaderEvaluators([metric]).results(0)


class _Classifier(pl.LightningModule):
    """Two test loaders; ``central``: the evaluators log at the epoch's end, else Lightning logs the metric objects
    in test_step (the shape the systems had before harness.evaluators): the two must give the same numbers."""

    def __init__(self, central: bool) -> None:
        super().__init__()
        self.central = central
        self.linear = nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)

    def on_test_start(self) -> None:
        prefix = "" if self.central else "test/"
        self.test_metrics = per_test_loader(self, lambda _: accuracy_metrics(3, prefix=prefix))

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        x, y = batch
        self.test_metrics[dataloader_idx].update(self(x), y)
        if not self.central:
            self.log_dict(self.test_metrics[dataloader_idx])

    def on_test_epoch_end(self) -> None:
        if self.central:
            self.test_metrics.log(self)


def _results(central: bool) -> list[dict[str, float]]:
    torch.manual_seed(0)
    loaders = [DataLoader(TensorDataset(torch.randn(n, 4), torch.randint(0, 3, (n,))), batch_size=7) for n in (19, 30)]
    trainer = pl.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False, accelerator="cpu")
    torch.manual_seed(1)
    return trainer.test(_Classifier(central), dataloaders=loaders, verbose=False)


def test_central_logging_gives_the_names_and_values_lightning_gave():
    central, per_step = _results(True), _results(False)
    assert {f"test/{name}/dataloader_idx_1" for name in ("top1", "top5", "error")} <= set(central[1])
    for index in range(2):
        assert loader_metrics(central[index], index) == loader_metrics(per_step[index], index)
