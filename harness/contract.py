"""What a data module and a system give the runner, declared as typing Protocols (docs/plugins.md).

Required: the data module is a Lightning ``LightningDataModule`` (``setup``, ``train_dataloader``,
``test_dataloader`` ...) and the system a ``LightningModule`` that logs each test loader's metrics as
``test/<name>`` (:func:`logged_key`; :mod:`harness.evaluators` builds one evaluator per test loader and logs them so).

Optional, each its own runtime-checkable Protocol, found by ``isinstance`` and then checked for its shape
(:func:`capability`), so that a plugin written to another shape gets one error naming what to change:

- :class:`Verifiable` (data module): ``verify()`` raises :class:`HarnessError` naming a missing or malformed file,
  before training starts;
- :class:`DataHashed` (data module): ``data_hash``, an attribute (or property) holding the sha256 of the data read,
  set by ``setup``; the run's provenance carries it;
- :class:`CitesArtifacts` (data module or system): ``record_artifacts``, a mapping of name -> path or value that
  every record of the run cites (a tokenizer trained in the run, the scorer that computed the AP);
- :class:`Evaluated` (system): ``test_metrics``, one metric per test loader in loader order (what
  :func:`harness.evaluators.per_test_loader` makes), whose predictions the runner keeps;
- :class:`Scored` (data module): ``scoring(dataloader_idx, folder) -> Scoring``, how a test loader's predictions
  are scored (harness.predictions);
- :class:`WritesPredictions` (a test loader's metric): ``write_predictions(folder, scoring) -> {"predictions": ...}``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sized
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from harness.errors import HarnessError

TEST_PREFIX = "test/"
LOADER_SUFFIX = "/dataloader_idx_"  # Lightning's own spelling, kept: a plain ``self.log`` in test_step matches it


@runtime_checkable
class Verifiable(Protocol):
    def verify(self) -> None: ...


@runtime_checkable
class DataHashed(Protocol):
    data_hash: str | None


@runtime_checkable
class CitesArtifacts(Protocol):
    record_artifacts: Mapping[str, str | Path]


@runtime_checkable
class Evaluated(Protocol):
    test_metrics: Sized  # one metric per test loader, in order (harness.evaluators.per_test_loader)


@runtime_checkable
class Scored(Protocol):
    def scoring(self, dataloader_idx: int, folder: Path) -> Any: ...  # harness.predictions.Scoring


@runtime_checkable
class WritesPredictions(Protocol):
    def write_predictions(self, folder: Path, scoring: Any) -> Mapping[str, Path]: ...


# Each capability's member, what it must be (a method: None; a value: the types it may have), and what to change.
_SHAPES: dict[type, tuple[str, tuple[type, ...] | None, str]] = {
    Verifiable: ("verify", None, "make 'verify' a method 'def verify(self) -> None' that raises HarnessError"),
    DataHashed: ("data_hash", (str, type(None)), "make 'data_hash' an attribute (or @property): a sha256 string"),
    CitesArtifacts: ("record_artifacts", (Mapping,), "make 'record_artifacts' an attribute: a dict of name -> path"),
    Evaluated: ("test_metrics", (Sized,), "make 'test_metrics' one metric per test loader (harness.evaluators)"),
    Scored: ("scoring", None, "make 'scoring' a method 'def scoring(self, dataloader_idx, folder) -> Scoring'"),
    WritesPredictions: ("write_predictions", None, "make 'write_predictions' a method (folder, scoring) -> files"),
}

P = TypeVar("P")


def capability(owner: Any, protocol: type[P]) -> P | None:
    """``owner`` as ``protocol`` when it has that capability, ``None`` when it has not; a member of the wrong shape
    (``data_hash`` written as a method, ``verify`` as a value) is a :class:`HarnessError` naming what to change."""
    if not isinstance(owner, protocol):
        return None
    name, types, fix = _SHAPES[protocol]
    member = getattr(owner, name)
    if callable(member) if types is None else isinstance(member, types):
        return owner
    what = "a method" if inspect.ismethod(member) else f"a {type(member).__name__}"
    raise HarnessError(f"{type(owner).__name__}.{name} is {what}: {fix} (docs/plugins.md)")


def data_hash(datamodule: Any) -> str | None:
    """The data module's ``data_hash`` (``None`` when it declares none)."""
    hashed = capability(datamodule, DataHashed)
    return None if hashed is None else hashed.data_hash


def cited_artifacts(*owners: Any) -> dict[str, str]:
    """What the data module and system ask every record to cite (their ``record_artifacts``), as strings."""
    cited = {}
    for owner in owners:
        citing = capability(owner, CitesArtifacts)
        cited.update({name: str(value) for name, value in (citing.record_artifacts if citing else {}).items()})
    return cited


def logged_key(name: str, index: int, loaders: int) -> str:
    """The key a test metric is logged under: ``test/<name>``, plus ``/dataloader_idx_<index>`` with several test
    loaders (the spelling Lightning gives a metric logged in ``test_step``)."""
    return f"{TEST_PREFIX}{name}{LOADER_SUFFIX}{index}" if loaders > 1 else f"{TEST_PREFIX}{name}"


def loader_metrics(logged: Mapping[str, Any], index: int) -> dict[str, float]:
    """The metrics of test loader ``index`` from what ``trainer.test`` returned for it, keyed by name: the inverse of
    :func:`logged_key` (what a system logs at the epoch's end, named for another loader, Lightning also puts in this
    loader's results: it is left out)."""
    suffix = f"{LOADER_SUFFIX}{index}"
    metrics = {}
    for key, value in logged.items():
        key = key.removesuffix(suffix)
        if key.startswith(TEST_PREFIX) and LOADER_SUFFIX not in key:
            metrics[key.removeprefix(TEST_PREFIX)] = float(value)
    return metrics
