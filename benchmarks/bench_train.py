"""Benchmark: training throughput and model FLOPs utilisation (MFU) of every registered model's training step, with
bf16 autocast, channels_last and torch.compile each on and off, against the plain fp32 eager step measured in the
same run on the same device.

    .venv/bin/python benchmarks/bench_train.py [--device cpu|cuda] [--models ID,...] [--quick] [--batch B]
        [--steps N] [--warmup N] [--modes all|plain] [--peak-tflops T] [--json FILE]

The models are the registry's (``harness models``), built from their papers' configs (``ModelSpec.instantiate``)
at the inputs the registry declares for them (harness.profile makes them): the paper's input size with the batch
dimension set to ``--batch``, or with ``--quick`` the contract tests' small inputs at their own batch, one warm-up
step and one measured step. A training step is forward, a surrogate loss (the mean square of every floating-point
output, as tests/test_contract.py uses: the harness has no data here, and the loss costs nothing next to the
model), backward and an SGD update; throughput is images (samples) per second, or tokens per second where the
first input is token ids ``(batch, length)``.

FLOPs are counted once per model by ``torch.utils.flop_counter.FlopCounterMode`` over one fp32 eager step
(forward and backward, with harness.profile's kernels it does not count itself); the same count serves every
mode, so a mode's MFU is ``flops / step time / peak``. Peak: ``--peak-tflops``; else on CUDA the vendor's dense
bf16 or fp32 peak for a known card (table below); else on CPU an estimate, threads x clock x FLOPs per cycle
from /proc/cpuinfo (32 with AVX2+FMA, 64 with AVX-512), which is an upper bound the machine never reaches.

Each row prints the mode, step time, throughput, achieved TFLOP/s, MFU and the ratio of its throughput to the
plain fp32 eager reference. ``channels_last`` applies to 4-D image inputs only (other models skip those modes).
A mode that fails (e.g. torch.compile without a compiler, bf16 on an old card) prints its error and the run goes
on. The load average is printed first: on a shared machine the numbers move with it.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import torch

from harness import registry
from harness.profile import _uncounted_kernels, example_tensor
from harness.registry import INTEGER_DTYPES, ModelSpec

# dense peak TFLOP/s from the vendors' datasheets: name substring -> (bf16, fp32); the first match wins
CUDA_PEAKS = (
    ("H100 PCIe", (756.0, 51.2)),
    ("H100", (989.4, 66.9)),
    ("H200", (989.4, 66.9)),
    ("A100", (312.0, 19.5)),
    ("L40S", (362.0, 91.6)),
    ("L4", (121.0, 30.3)),
    ("A10", (125.0, 31.2)),
)
MODES = tuple(
    {"bf16": bf16, "channels_last": cl, "compile": comp}
    for comp, cl, bf16 in itertools.product((False, True), repeat=3)
)
REFERENCE = {"bf16": False, "channels_last": False, "compile": False}


# --- inputs and the step -------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Batch:
    args: list
    kwargs: dict
    size: int  # the batch dimension
    units: int  # samples, or tokens, per step
    unit: str  # "samples" or "tokens"


def batch_inputs(spec: ModelSpec, batch: int | None, quick: bool, device: str) -> Batch:
    """The registry's inputs (test-sized with ``quick``), batch dimension set to ``batch`` when given, on ``device``.
    The unit is ``tokens`` when the first input is token ids ``(batch, length)``, else ``samples``."""
    specs = spec.input_specs(test=quick)
    if batch is not None:
        specs = tuple(dataclasses.replace(each, shape=(batch, *each.shape[1:])) for each in specs)
    tensors = {each.name: example_tensor(each).to(device) for each in specs}
    first = specs[0]
    tokens = first.dtype in INTEGER_DTYPES and len(first.shape) == 2
    args, kwargs = ([], tensors) if spec.named_inputs else (list(tensors.values()), {})
    units = first.shape[0] * (first.shape[1] if tokens else 1)
    return Batch(args, kwargs, first.shape[0], units, "tokens" if tokens else "samples")


def float_outputs(output: Any) -> list[torch.Tensor]:
    """The floating-point tensors of a model's output: a tensor, or tuples, lists and dicts of them."""
    if isinstance(output, torch.Tensor):
        return [output] if output.is_floating_point() else []
    values = output.values() if isinstance(output, dict) else output if isinstance(output, list | tuple) else []
    return [t for value in values for t in float_outputs(value)]


def make_step(model: torch.nn.Module, bf16: bool, device: str):
    """One training step as a function of the inputs: forward (under bf16 autocast when asked), surrogate loss,
    backward, SGD update."""
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-4)

    def step(args: list, kwargs: dict) -> None:
        with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=bf16):
            outputs = float_outputs(model(*args, **kwargs))
            loss = sum(t.float().pow(2).mean() for t in outputs if t.requires_grad)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return step


def step_flops(spec: ModelSpec, args: list, kwargs: dict, device: str) -> int:
    """FLOPs of one fp32 eager training step (forward + backward), counted by FlopCounterMode."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    model = spec.instantiate().train().to(device)
    counter = FlopCounterMode(display=False, custom_mapping=_uncounted_kernels())
    with counter:
        make_step(model, False, device)(args, kwargs)
    return counter.get_total_flops()


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


# --- measuring -----------------------------------------------------------------------------------------------------


def timed_steps(step, args: list, kwargs: dict, device: str, warmup: int, steps: int) -> float:
    """Seconds per step, the mean over ``steps`` after ``warmup`` steps (compilation happens there)."""
    for _ in range(warmup):
        step(args, kwargs)
    synchronize(device)
    start = time.perf_counter()
    for _ in range(steps):
        step(args, kwargs)
    synchronize(device)
    return (time.perf_counter() - start) / steps


def _prepared(spec: ModelSpec, mode: dict[str, bool], args: list, kwargs: dict, device: str):
    """The model (channels_last, compiled as ``mode`` says), its step and the inputs in the matching layout."""
    torch.manual_seed(0)
    model = spec.instantiate().train().to(device)
    if mode["channels_last"]:
        model = model.to(memory_format=torch.channels_last)
        args = [a.contiguous(memory_format=torch.channels_last) for a in args]
    if mode["compile"]:
        torch._dynamo.reset()  # a fresh cache per model: many models share a forward's code (its recompile limit)
        model = torch.compile(model)
    return make_step(model, mode["bf16"], device), args, kwargs


def measure(
    spec: ModelSpec,
    mode: dict[str, bool],
    *,
    device: str = "cpu",
    batch: int | None = None,
    quick: bool = False,
    warmup: int = 2,
    steps: int = 5,
    flops: int | None = None,
    peak_tflops: float | None = None,
) -> dict[str, Any]:
    """One model in one mode: a row with its step time, throughput (``unit`` per second), FLOPs per step,
    achieved TFLOP/s and MFU (``None`` without a peak). ``flops`` is counted here when not given."""
    torch.manual_seed(0)
    inputs = batch_inputs(spec, batch, quick, device)
    if flops is None:
        flops = step_flops(spec, inputs.args, inputs.kwargs, device)
    step, args, kwargs = _prepared(spec, mode, inputs.args, inputs.kwargs, device)
    seconds = timed_steps(step, args, kwargs, device, warmup, steps)
    achieved = flops / seconds / 1e12
    return {
        "model": spec.id, "device": device, **mode, "batch": inputs.size, "unit": inputs.unit,
        "units_per_step": inputs.units, "step_s": seconds, "throughput": inputs.units / seconds,
        "flops_per_step": flops, "achieved_tflops": achieved,
        "mfu": achieved / peak_tflops if peak_tflops else None,
    }  # fmt: skip


# --- peaks ---------------------------------------------------------------------------------------------------------


def cpu_peak_tflops() -> float | None:
    """threads x clock x fp32 FLOPs per cycle (FMA: 2 per lane; AVX2 8 lanes x 2 units, AVX-512 16 x 2)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    mhz = [float(line.split(":", 1)[1]) for line in info.splitlines() if line.startswith("cpu MHz")]
    per_cycle = 64 if "avx512f" in flags else 32 if {"avx2", "fma"} <= set(flags) else 8
    return torch.get_num_threads() * max(mhz) * 1e6 * per_cycle / 1e12 if mhz else None


def peak_tflops(device: str, bf16: bool, override: float | None) -> float | None:
    if override:
        return override
    if device == "cpu":
        return cpu_peak_tflops()
    name = torch.cuda.get_device_name(0)
    return next((peaks[0 if bf16 else 1] for key, peaks in CUDA_PEAKS if key in name), None)


def applicable(spec: ModelSpec, mode: dict[str, bool], quick: bool) -> bool:
    """channels_last only for one 4-D (image) input."""
    specs = spec.input_specs(test=quick)
    return not mode["channels_last"] or (not spec.named_inputs and len(specs[0].shape) == 4)


def bench_model(spec: ModelSpec, options: argparse.Namespace, modes: tuple[dict[str, bool], ...]) -> list[dict]:
    """Every applicable mode of one model, the reference first; each row gets ``ratio`` to the reference."""
    settings = {"device": options.device, "batch": options.batch, "quick": options.quick,
                "warmup": options.warmup, "steps": options.steps}  # fmt: skip
    rows: list[dict[str, Any]] = []
    flops = None
    for mode in modes:
        if not applicable(spec, mode, options.quick):
            continue
        peak = peak_tflops(options.device, mode["bf16"], options.peak_tflops)
        try:
            row = measure(spec, mode, flops=flops, peak_tflops=peak, **settings)
        except Exception as exc:  # noqa: BLE001 -- a mode that cannot run is reported, the others still are
            row = {"model": spec.id, "device": options.device, **mode, "error": f"{type(exc).__name__}: {exc}"[:200]}
        flops = row.get("flops_per_step", flops)
        rows.append(row)
    reference = rows[0].get("throughput") if rows else None
    for row in rows:
        row["ratio"] = row["throughput"] / reference if reference and "throughput" in row else None
    return rows


# --- the command ---------------------------------------------------------------------------------------------------


def describe(row: dict[str, Any]) -> str:
    mode = "+".join(name for name in ("bf16", "channels_last", "compile") if row[name]) or "fp32 eager"
    if "error" in row:
        return f"{row['model']:<28} {mode:<28} failed: {row['error']}"
    mfu = f"{100 * row['mfu']:6.2f}%" if row["mfu"] is not None else "     -"
    return (f"{row['model']:<28} {mode:<28} {row['step_s'] * 1000:9.1f} ms {row['throughput']:10.1f} {row['unit']}/s "
            f"{row['achieved_tflops']:8.4f} TFLOP/s  MFU {mfu}  x{row['ratio']:.2f}")  # fmt: skip


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--models", help="comma-separated model ids (default: every registered model)")
    parser.add_argument("--quick", action="store_true", help="test-sized inputs, 1 warm-up and 1 measured step")
    parser.add_argument("--batch", type=int, help="batch size (default: 32 on cuda, 4 on cpu; --quick: the tests')")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--modes", choices=("all", "plain"), default="all", help="plain: fp32 eager only")
    parser.add_argument("--peak-tflops", type=float, help="the device's peak, for MFU (default: known or estimated)")
    parser.add_argument("--json", type=Path, help="also write the rows as a JSON list to this file")
    options = parser.parse_args(argv)
    if options.quick:
        options.warmup, options.steps = 1, 1
    elif options.batch is None:
        options.batch = 32 if options.device == "cuda" else 4
    return options


def main(argv: list[str] | None = None) -> None:
    options = parse(argv)
    models = registry.models()
    ids = options.models.split(",") if options.models else sorted(models)
    unknown = [i for i in ids if i not in models]
    if unknown:
        sys.exit(f"bench_train: unknown model id(s) {', '.join(unknown)} (see `harness models`)")
    device = torch.cuda.get_device_name(0) if options.device == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}; device {device}; torch {torch.__version__}")
    modes = MODES if options.modes == "all" else (REFERENCE,)
    rows = []
    for model_id in ids:
        for row in bench_model(models[model_id][1], options, modes):
            print(describe(row), flush=True)
            rows.append(row)
    if options.json:
        options.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
