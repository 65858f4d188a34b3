"""``harness new PAPER``: a new reproduction as its own installable package, outside the harness's repository.

The package it writes runs as written: an entry point registers the paper (docs/plugins.md), ``model.py`` holds a
small convolutional classifier standing in for the paper's network, ``system.py`` the LightningModule the smoke
tier trains and tests on scikit-learn's digits written in the ILSVRC layout (``tasks.imagenet``), and
``claims.yaml`` one architecture claim, the skeleton's own parameter count, which the ``arch`` tier judges
"reproduced". Everything is then replaced by the paper's own model, recipe and numbers.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import tempfile
from pathlib import Path
from string import Template

from harness import registry
from harness.claims import ARXIV_PATTERN
from harness.errors import HarnessError
from harness.pipeline_files import harness_checkout

PAPER_ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
PLACEHOLDER_ARXIV = "0000.00000v1"

PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "harness-$paper"
version = "0.1.0"
description = "A reproduction of $title for the paper harness"
requires-python = ">=3.11"
dependencies = ["paper-harness"]  # the harness: install this package into its environment (README)

# The entry point registers the paper under its id (the harness's docs/plugins.md).
[project.entry-points."harness.reproductions"]
$paper = "$package:REPRODUCTION"

[tool.setuptools.packages.find]
include = ["$package*"]

[tool.setuptools.package-data]
"*" = ["*.yaml", "configs/*.yaml", "configs/_base/*.yaml", "configs/sweeps/*.yaml"]
"""

INIT = '''\
"""$title (arXiv $arxiv): a reproduction for the paper harness.

Registered through the ``harness.reproductions`` entry point of pyproject.toml. Nothing heavy is imported here: the
model and the system are named by ``"module:attribute"`` strings and imported on use.
"""

from harness.registry import ModelSpec, Reproduction

REPRODUCTION = Reproduction(
    id="$paper",
    title="$title",
    arxiv="$arxiv",  # the arXiv id with its version (or url="https://..." for a paper without one)
    package="$package",  # the folder holding claims.yaml and configs/
    tasks=("imagenet-1k",),  # the task whose scorer reads this paper's predictions (top-1, top-5, error)
    models=(
        ModelSpec(
            id="$model",
            build="$package.model:SmallConvNet",
            kwargs={"width": 16, "num_classes": 10},
            input_shape=(1, 3, 32, 32),  # batch 1 at the resolution the paper counts parameters and MACs at
            dataset="digits",
        ),
    ),
)
'''

MODEL = '''\
"""$title (arXiv $arxiv): the model, as plain ``nn.Module``s.

A skeleton made by ``harness new``: a small convolutional classifier standing in for the paper's network. Replace it
with the paper's architecture, using its names and equations, with tensor shapes in comments.
"""

import torch
from torch import nn


class SmallConvNet(nn.Module):
    """Two 3x3 convolutions (the second with stride 2), global average pooling and a linear classifier."""

    def __init__(self, width: int = 16, num_classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(2 * width),
            nn.ReLU(inplace=True),
        )
        self.classifier = nn.Linear(2 * width, num_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        features = self.features(images)  # (N, 3, H, W) -> (N, 2w, H/2, W/2)
        return self.classifier(features.mean(dim=(2, 3)))  # global average pool (N, 2w) -> logits (N, classes)
'''

SYSTEM = '''\
"""$title: the LightningModule the tiers train and test (``configs/<tier>.yaml`` names it).

The runner passes ``model`` (the harness model id) and the config's ``init_args``; each test loader's metrics are
logged as ``test/<metric>`` (``top1``, ``top5``, ``error``, percentages) by ``test_metrics``, one evaluator per test
loader (harness.evaluators), whose predictions the harness keeps with the run record in the task's official format.
"""

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from torch import nn

from harness.evaluators import per_test_loader
from $package import REPRODUCTION
from tasks.imagenet.metric import accuracy_metrics


class PaperSystem(pl.LightningModule):
    """Cross-entropy training with SGD and momentum; top-1, top-5 and error on each test loader."""

    def __init__(
        self, model: str = "$model", num_classes: int = 10, lr: float = 0.1, momentum: float = 0.9,
        weight_decay: float = 5e-4,
    ) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.model = REPRODUCTION.model(model).instantiate(num_classes=num_classes)
        self.test_metrics = nn.ModuleList()  # one collection per test loader, made in on_test_start

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.model(images)  # (N, 3, H, W) -> (N, num_classes) logits

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        images, labels = batch
        loss = F.cross_entropy(self(images), labels)
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def on_test_start(self) -> None:
        self.test_metrics = per_test_loader(self, lambda _: accuracy_metrics(self.hparams.num_classes))

    def test_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        images, labels = batch
        self.test_metrics[dataloader_idx].update(self(images), labels)

    def on_test_epoch_end(self) -> None:
        self.test_metrics.log(self)  # test/top1 ... (/dataloader_idx_<i> with several test loaders)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        hp = self.hparams
        return torch.optim.SGD(self.parameters(), lr=hp.lr, momentum=hp.momentum, weight_decay=hp.weight_decay)
'''

CLAIMS = """\
# What the paper reports, one entry per number or statement; the format is the harness's docs/plugins.md ("The
# claims file") and docs/verdicts.md. `harness claims --paper $paper` checks this file.
# The example is the skeleton model's own parameter count (0.005466 M), so `harness run $paper --tier arch` judges
# it "reproduced": replace it with the paper's numbers, each with its source and the paper's words in `quote`.
defaults: {paper: $paper, arxiv: $arxiv}
claims:
  - id: $model-params           # stable, unique within the paper
    source: example             # where in the paper: a table, figure or section
    kind: arch                  # arch | scalar | delta | trend
    model: $model
    dataset: digits
    split: none                 # arch claims: none
    metric: params_m
    value: 0.005466             # millions of parameters
    unit: M
    higher_is_better: false
    tolerance: 0.000001         # absolute, in the claim's unit
    notes: the skeleton's own count, written by `harness new`; not a number of the paper
"""

SMOKE = """\
# Smoke tier: the whole pipeline (prepare -> fit -> test -> run record) on CPU in seconds, on scikit-learn's digits
# written in the ILSVRC folder layout. It proves the pipeline runs; it never judges a paper's number.
tier: smoke
model: $model
seed: 0
prepare:
  function: tasks.imagenet.fixtures:write_digits_ilsvrc
  args: {}
system:
  class_path: $package.system:PaperSystem
  init_args: {num_classes: 10, lr: 0.1}
data:
  class_path: tasks.imagenet.data:ImageNetDataModule
  init_args: {data_root: data/smoke/$paper, batch_size: 64, image_size: 32, crop_fraction: 1.0, num_workers: 0}
trainer:
  max_epochs: 1
  accelerator: cpu
  devices: 1
  enable_checkpointing: false
  enable_progress_bar: false
  enable_model_summary: false
evaluate:
  - {dataset: digits, split: val}
"""

TEST = '''\
"""The reproduction's contract with the harness: registered, its claims valid, its model as its arch claim states,
its smoke tier runs to a record."""

from pathlib import Path

import pytest

from harness import registry
from harness.claims import registered_claims
from harness.profile import profile_model
from harness.records import read_record
from harness.runner import run


def test_registered_with_valid_claims() -> None:
    repro = registry.reproduction("$paper")
    assert {"arch", "smoke"} <= set(repro.tiers)
    assert [claim.id for claim in registered_claims("$paper")] == ["$model-params"]


def test_the_model_has_the_parameters_of_its_arch_claim() -> None:
    (claim,) = [c for c in registered_claims("$paper") if c.metric == "params_m"]
    profile = profile_model(registry.reproduction("$paper").model(claim.model))
    assert abs(profile.params / 1e6 - claim.value) <= claim.tolerance


def test_the_smoke_tier_writes_a_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # data/ and results/ are made here
    (path,) = run(registry.reproduction("$paper"), "smoke", runs_dir=tmp_path / "results" / "runs")
    record = read_record(path)
    assert record.paper == "$paper" and set(record.metrics) == {"top1", "top5", "error"}
'''

README = """\
# $title: a reproduction for the paper harness

arXiv $arxiv. Made by `harness new $paper`; registered with the harness through the `harness.reproductions` entry
point in `pyproject.toml`.

Install it, editable, into the environment that has the harness (its `.venv`), then check that it is registered:

```
pip install -e .
harness list
harness claims --paper $paper
```

| what | command |
|---|---|
| the architecture claims (parameters, multiply-adds) | `harness run $paper --tier arch` |
| the whole pipeline on tiny data, proving it runs | `harness run $paper --tier smoke` |
| this repository's DVC pipeline (dvc.yaml, params.yaml) | `harness pipeline generate`, then `dvc repro` |
| the tests | `python -m pytest tests` |

`$package/` holds `model.py` (plain `nn.Module`s), `system.py` (the LightningModule), `claims.yaml` (what the paper
reports) and `configs/<tier>.yaml` (one file per tier); the harness's docs/plugins.md describes each.
"""

GITIGNORE = "/results/\n/data/\n/.venv\n/build/\n__pycache__/\n*.egg-info/\n"


def default_dest(paper: str, cwd: Path | None = None) -> Path:
    """``harness-<paper>`` in the current folder, or beside the harness's checkout when the current folder lies in it
    (a plugin is its own repository, never a folder of the harness's)."""
    cwd = (cwd or Path.cwd()).resolve()
    checkout = harness_checkout()
    inside = checkout is not None and (cwd == checkout or checkout in cwd.parents)
    return (checkout.parent if inside else cwd) / f"harness-{paper}"


def check_new(paper: str, dest: Path, arxiv: str) -> str:
    """The package name for ``paper``; an error naming the problem when the id, the folder or the arXiv id is bad."""
    if not PAPER_ID.match(paper):
        raise HarnessError(f"paper id {paper!r}: lowercase letters and digits in words joined by '-', e.g. 'my-paper'")
    if paper == "report" or paper in registry.reproductions():
        raise HarnessError(
            f"paper id {paper!r} is taken (registered, or the pipeline's last stage); see `harness list`"
        )
    package = paper.replace("-", "_")
    if importlib.util.find_spec(package) is not None:
        raise HarnessError(f"paper id {paper!r}: a module named {package!r} is importable already; choose another id")
    if not re.match(ARXIV_PATTERN, arxiv):
        raise HarnessError(f"--arxiv {arxiv!r}: an arXiv id with its version, e.g. 1905.11946v5")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise HarnessError(f"{dest}: exists and is not an empty folder; pass --dest with a new folder")
    return package


def scaffold(paper: str, dest: Path, title: str | None = None, arxiv: str | None = None) -> Path:
    """Write the plugin package for ``paper`` at ``dest`` (all files or none) and return ``dest``."""
    arxiv = arxiv or PLACEHOLDER_ARXIV
    package = check_new(paper, dest, arxiv)
    values = {"paper": paper, "package": package, "model": f"{paper}-net", "arxiv": arxiv,
              "title": (title or f"The paper {paper}").replace('"', "'")}  # fmt: skip
    files = {
        "pyproject.toml": PYPROJECT, "README.md": README, ".gitignore": GITIGNORE,
        f"{package}/__init__.py": INIT, f"{package}/model.py": MODEL, f"{package}/system.py": SYSTEM,
        f"{package}/claims.yaml": CLAIMS, f"{package}/configs/smoke.yaml": SMOKE, f"tests/test_{package}.py": TEST,
    }  # fmt: skip
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.partial-"))
    try:
        for name, template in files.items():
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_text(Template(template).substitute(values), encoding="utf-8")
        if dest.exists():
            dest.rmdir()  # empty (checked above)
        os.rename(staging, dest)
    except OSError as exc:
        raise HarnessError(f"{dest}: cannot write the new package: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest
