"""Contracts over the registries: every registered task, model and reproduction, so adding one adds its tests.

- task: its example files score to exactly its keys (SQuAD v2.0 with no-answer probabilities adds the
  best-threshold keys, as the official script does);
- model: builds, runs forward and backward at its test input, and gives finite outputs and gradients;
- reproduction: its claims file validates and judges to not-run without results, and its smoke config fits
  and tests one batch through the real data module and system, writing a run record.
"""

from __future__ import annotations

import math
from pathlib import Path

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
    extra = {"best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"} if options else set()
    assert set(result) == set(task.keys) | extra
    assert all(isinstance(v, int | float) and math.isfinite(v) for v in result.values())


@pytest.mark.parametrize("model_id", MODELS)
def test_model_forward_backward(model_id: str) -> None:
    import torch

    _, spec = registry.models()[model_id]
    torch.manual_seed(0)
    module = spec.instantiate().train()
    shape = spec.test_input_shape or spec.input_shape
    example = torch.randn(shape) if spec.input_dtype.startswith("float") else torch.zeros(shape, dtype=torch.long)
    output = module(example)
    assert output.shape[0] == shape[0] and torch.isfinite(output).all()
    output.float().pow(2).mean().backward()
    grads = [p.grad for p in module.parameters() if p.requires_grad]
    assert grads and all(g is not None and torch.isfinite(g).all() for g in grads)


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
