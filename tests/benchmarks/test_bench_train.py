"""benchmarks/bench_train.py's measuring function on one tiny registered model for one step: the fields it returns
are consistent (never a timing: benchmarks print ratios, tests do not judge speed)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from harness import registry

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_train.py"
MODEL = "mlp-bn-w1-standard"  # sgd-width's smallest: a BN MLP on 28x28 images


def bench() -> ModuleType:
    """The benchmark script as a module (benchmarks/ is not a package)."""
    if "bench_train" not in sys.modules:
        spec = importlib.util.spec_from_file_location("bench_train", BENCH)
        sys.modules["bench_train"] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules["bench_train"])
    return sys.modules["bench_train"]


@pytest.mark.parametrize("bf16", [False, True])
def test_one_step_gives_positive_throughput_and_flops(bf16: bool) -> None:
    bt = bench()
    spec = registry.models()[MODEL][1]
    mode = {"bf16": bf16, "channels_last": False, "compile": False}
    row = bt.measure(spec, mode, device="cpu", quick=True, warmup=1, steps=1, peak_tflops=1.0)
    assert row["model"] == MODEL and row["device"] == "cpu" and row["bf16"] is bf16
    test_shape = spec.input_specs(test=True)[0].shape
    assert row["batch"] == test_shape[0] and row["unit"] == "samples" and row["units_per_step"] == test_shape[0]
    assert row["step_s"] > 0 and row["throughput"] == pytest.approx(row["units_per_step"] / row["step_s"])
    # forward + backward of the MLP: at least 2 x 2 x the multiply-adds of its first layer (784 inputs)
    assert row["flops_per_step"] >= 4 * 784 * test_shape[0]
    assert row["mfu"] == pytest.approx(row["achieved_tflops"] / 1.0) and row["mfu"] > 0


def test_token_models_count_tokens_and_the_reference_comes_first() -> None:
    bt = bench()
    tokens = next(
        spec for _, spec in registry.models().values()
        if spec.named_inputs and spec.inputs[0].dtype == "int64" and len(spec.inputs[0].shape) == 2
    )  # fmt: skip
    batch = bt.batch_inputs(tokens, 3, True, "cpu")
    length = tokens.input_specs(test=True)[0].shape[1]
    assert (batch.size, batch.unit, batch.units) == (3, "tokens", 3 * length)
    assert all(t.shape[0] == 3 for t in batch.kwargs.values()) and not batch.args
    assert bt.MODES[0] == bt.REFERENCE and len(bt.MODES) == 8 == len({tuple(m.values()) for m in bt.MODES})
    options = bt.parse(["--quick", "--models", MODEL, "--modes", "plain"])
    (row,) = bt.bench_model(registry.models()[MODEL][1], options, (bt.REFERENCE,))
    assert row["ratio"] == pytest.approx(1.0)


def test_mode_sets_and_distinct_networks() -> None:
    bt = bench()
    assert bt.MODE_SETS["eager"] == tuple(m for m in bt.MODES if not m["compile"]) and len(bt.MODE_SETS["eager"]) == 4
    assert bt.MODE_SETS["compile"][0] == bt.REFERENCE and all(m["compile"] for m in bt.MODE_SETS["compile"][1:])
    models = registry.models()
    # a sweep's ids build one network; another paper's id does not
    assert bt.network_key(models["gpt-transfer-0"][1]) == bt.network_key(models["gpt-transfer-5"][1])
    assert bt.network_key(models["gpt-transfer-0"][1]) != bt.network_key(models["gpt-budget"][1])


def test_json_is_written_row_by_row(tmp_path) -> None:
    bt = bench()
    out = tmp_path / "rows.json"
    bt.main(["--quick", "--models", f"{MODEL},{MODEL}", "--distinct", "--modes", "plain", "--json", str(out)])
    rows = json.loads(out.read_text())
    assert [row["model"] for row in rows] == [MODEL] and rows[0]["ratio"] == pytest.approx(1.0)


def test_step_flops_are_three_forwards_because_the_counter_overcounts_grouped_conv_backward() -> None:
    """Why step_flops counts the forward only: FlopCounterMode charges a depthwise convolution's backward ~groups
    times its forward, where a dense one gets the expected 2 x forward."""
    from torch.utils.flop_counter import FlopCounterMode

    def forward_backward(groups: int) -> tuple[int, int]:
        conv = torch.nn.Conv2d(16, 16, 3, padding=1, groups=groups, bias=False)
        x = torch.randn(2, 16, 8, 8, requires_grad=True)
        with FlopCounterMode(display=False) as forward:
            conv(x)
        with FlopCounterMode(display=False) as both:
            conv(x).sum().backward()
        return forward.get_total_flops(), both.get_total_flops()

    dense, depthwise = forward_backward(1), forward_backward(16)
    assert dense[1] == 3 * dense[0] and depthwise[1] > 10 * depthwise[0]
    bt = bench()
    spec = registry.models()["efficientnet-b0"][1]
    inputs = bt.batch_inputs(spec, 1, True, "cpu")
    with FlopCounterMode(display=False) as forward, torch.no_grad():
        bt.build(spec, "cpu")(*inputs.args, **inputs.kwargs)
    assert bt.step_flops(spec, inputs.args, inputs.kwargs, "cpu") == 3 * forward.get_total_flops() > 0


def test_recount_keeps_the_times_and_derives_the_rest(tmp_path) -> None:
    bt = bench()
    row = {"model": MODEL, "device": "cuda", **bt.REFERENCE, "batch": 4, "unit": "samples", "units_per_step": 4,
           "step_s": 0.5, "throughput": 8.0, "flops_per_step": 1, "achieved_tflops": 0.0, "mfu": 0.0, "ratio": 1.0}  # fmt: skip
    failed = {"model": MODEL, "device": "cuda", **bt.REFERENCE, "error": "OutOfMemoryError"}
    source, out = tmp_path / "rows.json", tmp_path / "recounted.json"
    source.write_text(json.dumps([row, failed]))
    bt.main(["--recount", str(source), "--peak-tflops", "2", "--json", str(out)])
    recounted, still_failed = json.loads(out.read_text())
    spec = registry.models()[MODEL][1]
    inputs = bt.batch_inputs(spec, 4, False, "cpu")
    assert recounted["flops_per_step"] == bt.step_flops(spec, inputs.args, inputs.kwargs, "cpu") > 1
    assert recounted["step_s"] == 0.5 and recounted["throughput"] == 8.0
    assert recounted["achieved_tflops"] == pytest.approx(recounted["flops_per_step"] / 0.5 / 1e12)
    assert recounted["mfu"] == pytest.approx(recounted["achieved_tflops"] / 2) and still_failed == failed
