"""Benchmark: training throughput and model FLOPs utilisation (MFU) of every registered model's training step, with
bf16 autocast, channels_last and torch.compile each on and off, against the plain fp32 eager step measured in the
same run on the same device.

    .venv/bin/python benchmarks/bench_train.py [--device cpu|cuda] [--models ID,...] [--quick] [--batch B]
        [--steps N] [--warmup N] [--modes all|plain|eager|compile] [--distinct] [--peak-tflops T]
        [--json FILE]

The models are the registry's (``harness models``), built from their papers' configs (``ModelSpec.instantiate``)
at the inputs the registry declares for them (harness.profile makes them): the paper's input size with the batch
dimension set to ``--batch``, or with ``--quick`` the contract tests' small inputs at their own batch, one warm-up
step and one measured step. A training step is forward, a surrogate loss (the mean square of every floating-point
output, as tests/test_contract.py uses: the harness has no data here, and the loss costs nothing next to the
model), backward and an SGD update; throughput is images (samples) per second, or tokens per second where the
first input is token ids ``(batch, length)``.

FLOPs are counted once per model: 3 x the fp32 forward's, counted by ``torch.utils.flop_counter.FlopCounterMode``
on the meta device (with harness.profile's kernels it does not count itself; see ``step_flops``); the same count
serves every mode, so a mode's MFU is ``flops / step time / peak``. Peak: ``--peak-tflops``; else on CUDA the
vendor's dense bf16 peak for a known card (table below), in every mode; else on CPU an estimate, threads x clock x
FLOPs per cycle from /proc/cpuinfo (32 with AVX2+FMA, 64 with AVX-512), which is an upper bound the machine never
reaches.

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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from harness import registry
from harness.arch import network_key
from harness.profile import _uncounted_kernels, example_tensor
from harness.registry import INTEGER_DTYPES, ModelSpec

# dense bf16 peak TFLOP/s from the vendors' datasheets: name substring -> peak; the first match wins
CUDA_PEAKS = (
    ("H100 PCIe", 756.0),
    ("H100", 989.4),
    ("H200", 989.4),
    ("A100", 312.0),
    ("L40S", 362.0),
    ("L4", 121.0),
    ("A10", 125.0),
)
MODES = tuple(
    {"bf16": bf16, "channels_last": cl, "compile": comp}
    for comp, cl, bf16 in itertools.product((False, True), repeat=3)
)
REFERENCE = {"bf16": False, "channels_last": False, "compile": False}
MODE_SETS = {
    "all": MODES,
    "plain": (REFERENCE,),
    "eager": tuple(mode for mode in MODES if not mode["compile"]),
    "compile": (REFERENCE, *(mode for mode in MODES if mode["compile"])),
}


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


def build(spec: ModelSpec, device: str) -> torch.nn.Module:
    """The model in training mode on ``device``, its parameters made there (a large model's initialisation on the
    host would cost more than its steps on a GPU); ``.to`` moves whatever a module made on the host on purpose."""
    with torch.device(device):
        model = spec.instantiate()
    return model.train().to(device)


def step_flops(spec: ModelSpec, args: list, kwargs: dict, device: str) -> int:
    """Model FLOPs of one training step: 3 x the fp32 forward's, counted by FlopCounterMode (backward = 2 x forward,
    the usual MFU convention). The backward is not counted itself: FlopCounterMode counts a grouped convolution's
    weight gradient once per group too many (x64 for a 64-channel depthwise one, test_bench_train.py), which made
    depthwise and CondConv networks' counts 10-100 times too large. The forward runs on the meta device (shapes
    only: no memory, no time), or on ``device`` where a module cannot."""
    from torch.utils.flop_counter import FlopCounterMode

    def forward_flops(where: str) -> int:
        torch.manual_seed(0)
        model = build(spec, where)
        moved = [a.to(where) for a in args], {name: t.to(where) for name, t in kwargs.items()}
        counter = FlopCounterMode(display=False, custom_mapping=_uncounted_kernels())
        with counter, torch.no_grad():
            model(*moved[0], **moved[1])
        return counter.get_total_flops()

    try:
        return 3 * forward_flops("meta")
    except Exception:  # noqa: BLE001 -- an op without a meta kernel: count on the real device
        return 3 * forward_flops(device)


def recount(rows: list[dict], peak: float | None) -> list[dict]:
    """Rows of an earlier run (``--json``) with their FLOPs counted anew by ``step_flops`` at each row's batch, and
    achieved TFLOP/s and MFU (against ``peak``) derived again from their measured step times, which stay as they
    were. For a run on a card made before a counting fix: the card is not needed to correct it."""
    models = registry.models()
    flops: dict[tuple[str, int], int] = {}
    for row in rows:
        if "step_s" not in row:
            continue
        key = (row["model"], row["batch"])
        if key not in flops:
            inputs = batch_inputs(models[row["model"]][1], row["batch"], False, "cpu")
            flops[key] = step_flops(models[row["model"]][1], inputs.args, inputs.kwargs, "cpu")
        achieved = flops[key] / row["step_s"] / 1e12
        row.update(flops_per_step=flops[key], achieved_tflops=achieved, mfu=achieved / peak if peak else None)
    return rows


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
    model = build(spec, device)
    if mode["channels_last"]:
        for param in model.parameters():  # 4-D kernels only: Module.to refuses CondConv's 5-D expert kernels
            if param.dim() == 4:
                param.data = param.data.contiguous(memory_format=torch.channels_last)
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


def peak_tflops(device: str, override: float | None) -> float | None:
    """One denominator for every mode: on CUDA the card's dense bf16 peak (fp32 convolutions run on the tensor cores
    as TF32 by default, so an fp32 peak would be exceeded), on CPU the fp32 estimate."""
    if override:
        return override
    if device == "cpu":
        return cpu_peak_tflops()
    name = torch.cuda.get_device_name(0)
    return next((peak for key, peak in CUDA_PEAKS if key in name), None)


def applicable(spec: ModelSpec, mode: dict[str, bool], quick: bool) -> bool:
    """channels_last only for one 4-D (image) input."""
    specs = spec.input_specs(test=quick)
    return not mode["channels_last"] or (not spec.named_inputs and len(specs[0].shape) == 4)


def bench_model(spec: ModelSpec, options: argparse.Namespace, modes: tuple[dict[str, bool], ...]) -> Iterator[dict]:
    """Every applicable mode of one model, the reference first, row by row; each row gets ``ratio`` to the
    reference's throughput."""
    settings = {"device": options.device, "batch": options.batch, "quick": options.quick,
                "warmup": options.warmup, "steps": options.steps}  # fmt: skip
    flops = reference = None
    for mode in modes:
        if not applicable(spec, mode, options.quick):
            continue
        peak = peak_tflops(options.device, options.peak_tflops)
        try:
            row = measure(spec, mode, flops=flops, peak_tflops=peak, **settings)
        except Exception as exc:  # noqa: BLE001 -- a mode that cannot run is reported, the others still are
            row = {"model": spec.id, "device": options.device, **mode, "error": f"{type(exc).__name__}: {exc}"[:200]}
            if options.device == "cuda":
                torch.cuda.empty_cache()  # an out-of-memory mode leaves its blocks cached
        flops = row.get("flops_per_step", flops)
        if mode == REFERENCE:
            reference = row.get("throughput")
        row["ratio"] = row["throughput"] / reference if reference and "throughput" in row else None
        yield row


# --- the command ---------------------------------------------------------------------------------------------------


def describe(row: dict[str, Any]) -> str:
    mode = "fp32 eager" if (name := mode_name(row)) == "fp32" else name
    if "error" in row:
        return f"{row['model']:<28} {mode:<28} failed: {row['error']}"
    mfu = f"{100 * row['mfu']:6.2f}%" if row["mfu"] is not None else "     -"
    return (f"{row['model']:<28} {mode:<28} {row['step_s'] * 1000:9.1f} ms {row['throughput']:10.1f} {row['unit']}/s "
            f"{row['achieved_tflops']:8.4f} TFLOP/s  MFU {mfu}  x{row['ratio']:.2f}")  # fmt: skip


def mode_name(mode: dict[str, bool]) -> str:
    return "+".join(name for name in ("bf16", "channels_last", "compile") if mode[name]) or "fp32"


def modes_named(text: str) -> tuple[dict[str, bool], ...]:
    """A set's name (``all``, ``plain``, ``eager``, ``compile``) or modes by name, comma-separated: ``fp32`` (the
    reference, always measured first), ``bf16``, ``bf16+channels_last+compile``, ..."""
    if text in MODE_SETS:
        return MODE_SETS[text]
    by_name = {mode_name(mode): mode for mode in MODES}
    unknown = [name for name in text.split(",") if name not in by_name]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown mode(s) {', '.join(unknown)}; known: {', '.join(by_name)}")
    return (REFERENCE, *(by_name[name] for name in text.split(",") if name != "fp32"))


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--models", help="comma-separated model ids (default: every registered model)")
    parser.add_argument("--quick", action="store_true", help="test-sized inputs, 1 warm-up and 1 measured step")
    parser.add_argument("--batch", type=int, help="batch size (default: 32 on cuda, 4 on cpu; --quick: the tests')")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument(
        "--modes",
        default="all",
        help="all; plain (fp32 eager only); eager (the four without compile); compile (the reference and the compiled "
        "ones); or modes by name, comma-separated, e.g. fp32,bf16+compile",
    )
    parser.add_argument(
        "--distinct",
        action="store_true",
        help="skip an id that builds the same network at the same inputs as an earlier one (sweeps)",
    )
    parser.add_argument("--peak-tflops", type=float, help="the device's peak, for MFU (default: known or estimated)")
    parser.add_argument("--json", type=Path, help="also write the rows as a JSON list to this file")
    parser.add_argument(
        "--recount",
        type=Path,
        metavar="ROWS_JSON",
        help="measure nothing: count the FLOPs of an earlier run's rows anew (see recount), print them "
        "and write them to --json; give the card's --peak-tflops for its MFU",
    )
    options = parser.parse_args(argv)
    try:
        options.mode_set = modes_named(options.modes)
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    if options.quick:
        options.warmup, options.steps = 1, 1
    elif options.batch is None:
        options.batch = 32 if options.device == "cuda" else 4
    return options


def main(argv: list[str] | None = None) -> None:
    options = parse(argv)
    if options.recount:
        rows = recount(json.loads(options.recount.read_text()), options.peak_tflops)
        for row in rows:
            print(describe(row))
        if options.json:
            options.json.write_text(json.dumps(rows, indent=1) + "\n")
        return
    models = registry.models()
    ids = options.models.split(",") if options.models else sorted(models)
    unknown = [i for i in ids if i not in models]
    if unknown:
        sys.exit(f"bench_train: unknown model id(s) {', '.join(unknown)} (see `harness models`)")
    device = torch.cuda.get_device_name(0) if options.device == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())}; device {device}; torch {torch.__version__}")
    modes = options.mode_set
    rows, seen = [], set()
    for model_id in ids:
        spec = models[model_id][1]
        if options.distinct:
            key = network_key(spec)  # the arch tier's: a sweep's ids build one network
            if key in seen:
                continue
            seen.add(key)
        for row in bench_model(spec, options, modes):
            print(describe(row), flush=True)
            rows.append(row)
            if options.json:  # after every row, so a run stopped part-way keeps what it measured
                options.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
