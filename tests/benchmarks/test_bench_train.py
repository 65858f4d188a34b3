"""benchmarks/bench_train.py's measuring function on one tiny registered model for one step: the fields it returns
are consistent (never a timing: benchmarks print ratios, tests do not judge speed)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

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
