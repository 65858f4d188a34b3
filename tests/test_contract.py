"""Contracts over the registries: every registered task, model and reproduction, so adding one adds its tests.

- task: its example files score to exactly its keys (SQuAD v2.0 with no-answer probabilities adds the
  best-threshold keys, as the official script does);
- model: builds, runs forward and backward at its test input(s), one tensor or named inputs, and gives finite
  outputs and gradients (the toy plugin's models too);
- reproduction: its claims file validates and judges to not-run without results, and its smoke config fits
  and tests one batch through the real data module and system, writing a run record.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from harness import registry
from harness.claims import registered_claims

TASKS = sorted(registry.tasks())
MODELS = sorted(registry.models())
PAPERS = sorted(registry.reproductions())


@pytest.mark.parametrize("task_id", TASKS)
def test_task_example_scores_to_its_keys(task_id: str, tmp_path: Path) -> None:
    task = registry.task(task_id)
    assert task.example, f"task {task_id} has no example writer"
    files = registry.load_object(task.example)(tmp_path, task_id)
    options = {name: files[name] for name in task.options if name in files}
    result = task.scorer()(files["references"], files["predictions"], **options)
    extra = {"best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"} if "na_probs" in options else set()
    assert set(result) == set(task.keys) | extra
    assert all(isinstance(v, int | float) and math.isfinite(v) for v in result.values())


@pytest.mark.parametrize("task_id", TASKS)
def test_task_names_its_data_module_metric_and_version(task_id: str) -> None:
    """Every task's ``data`` is a LightningDataModule and its ``metric`` makes a torchmetrics metric (a Metric class
    or a factory of one), both importable; its version is a positive integer."""
    import inspect

    import pytorch_lightning as pl
    from torchmetrics import Metric

    task = registry.task(task_id)
    assert issubclass(task.data_module(), pl.LightningDataModule)
    metric = task.test_metric()
    assert issubclass(metric, Metric) if inspect.isclass(metric) else inspect.isfunction(metric)
    assert isinstance(task.version, int) and task.version >= 1


def test_a_task_of_the_old_shape_is_told_what_to_add() -> None:
    with pytest.raises(registry.HarnessError, match="task 'old': give 'data', 'metric', 'version': data='package"):
        registry.Task(id="old", title="Old", score="old.score:score", keys=("accuracy",))


def _float_tensors(output: Any) -> list[Any]:
    """The floating-point tensors in a model's output: a tensor, or tuples, lists and dicts of them."""
    import torch

    if isinstance(output, torch.Tensor):
        return [output] if output.is_floating_point() else []
    values = output.values() if isinstance(output, dict) else output if isinstance(output, list | tuple) else []
    return [t for value in values for t in _float_tensors(value)]


def check_forward_backward(spec: registry.ModelSpec) -> None:
    """Forward at the spec's test inputs (one tensor or named inputs), then backward through every parameter."""
    import torch

    from harness.profile import run_forward

    torch.manual_seed(0)
    module = spec.instantiate().train()
    outputs = _float_tensors(run_forward(spec, module, test=True))
    batch = spec.input_specs(test=True)[0].shape[0]
    assert outputs and outputs[0].shape[0] == batch and all(torch.isfinite(t).all() for t in outputs)
    sum(t.float().pow(2).mean() for t in outputs if t.requires_grad).backward()
    grads = [p.grad for p in module.parameters() if p.requires_grad]
    assert grads and all(g is not None and torch.isfinite(g).all() for g in grads)


# models whose forward/backward runs behind @pytest.mark.slow: building them alone takes tens of seconds on 2 cores
SLOW_MODELS = {
    "xlnet-large": "360 M parameters; xlnet-budget-* run the same code in the default suite",
    "xlnet-base": "117 M parameters and its embedding's 32,000 rows; xlnet-budget-* run the same code",
    "uda-bert-large": "335 M parameters; uda-bert-base and uda-budget-text run the same code (nets.bert)",
    "uda-bert-finetune": "BERT large again (another checkpoint of the same network)",
    "gpt-lstm": "116 M parameters (a 40,478 x 2048 embedding); tests/reproductions/gpt/test_gpt_lstm runs it tiny",
    **{f"gpt-transfer-{k}": "GPT again (Figure 2's sweep: the same network as gpt)" for k in range(13)},
    **{
        f"gpt-updates-{n}": "GPT again (Figure 2: the same network after fewer updates)"
        for n in (1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
    },
}


@pytest.mark.parametrize(
    "model_id", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW_MODELS else m for m in MODELS]
)
def test_model_forward_backward(model_id: str) -> None:
    check_forward_backward(registry.models()[model_id][1])


def test_plugin_models_forward_backward(toy: Path) -> None:
    """Models a third-party plugin registers (the toy plugin's: one-input MLPs and a two-input text model)."""
    specs = registry.reproduction("toy-paper").models
    assert any(spec.named_inputs for spec in specs)
    for spec in specs:
        check_forward_backward(spec)


@pytest.mark.parametrize("paper", PAPERS)
def test_claims_load_and_start_not_run(paper: str) -> None:
    from harness.verdicts import judge_all

    claims = registered_claims(paper)
    assert claims, f"{paper} has no claims"
    assert {v.status for v in judge_all(claims, [])} == {"not-run"}


@pytest.mark.parametrize("paper", [p for p in PAPERS if "smoke" in registry.reproduction(p).tiers])
def test_smoke_config_fits_one_batch(paper: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A single-fit paper trains one batch; a paper that runs its own tiers runs its (seconds-long) smoke study."""
    from harness import runner
    from harness.records import read_record

    monkeypatch.chdir(tmp_path)
    repro = registry.reproduction(paper)
    if repro.runner is not None:
        paths = registry.load_object(repro.runner)(
            repro, repro.config_path("smoke"), tier="smoke", model=None, seed=None, data_root=None,
            runs_dir=tmp_path / "runs",
        )  # fmt: skip
    else:
        config = runner.load_config(repro.config_path("smoke"), "smoke")
        resolved = runner.resolve_config(config, "smoke", None, None, None)
        limits = {"max_steps": 1, "limit_val_batches": 1, "limit_test_batches": 1}
        resolved["trainer"] = {**resolved.get("trainer", {}), **limits}
        paths = runner.run_training(repro, resolved, runs_dir=tmp_path / "runs")
    records = [read_record(path) for path in paths]
    assert records and all(r.tier == "smoke" for r in records)
    assert all(math.isfinite(v) for r in records if r.status == "ok" for v in r.metrics.values())
