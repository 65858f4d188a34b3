"""Hardware in a run record's provenance: what decides the kernels a run used (CPU model and ISA flags, accelerator,
math libraries) and the settings that add noise (threads, determinism); ``machine_key`` names the machine kind."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import pytest
import torch

from harness import records, store
from tests.conftest import make_record

EPYC = """processor	: 0
vendor_id	: AuthenticAMD
cpu family	: 25
model name	: AMD EPYC 7B13
flags		: fpu vme sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 sha_ni vaes clzero

processor	: 1
vendor_id	: AuthenticAMD
model name	: AMD EPYC 7B13
flags		: fpu avx512f
"""
GRACE = """processor	: 0
BogoMIPS	: 2000.00
Features	: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm sve asimddp bf16 i8mm sve2
CPU implementer	: 0x41
CPU architecture: 8
CPU part	: 0xd4f
"""
OLD = {"cpus": 2, "machine": "x86_64", "system": "Linux"}  # what records held before the CPU was recorded


def test_a_record_names_the_cpu_its_flags_threads_and_libraries() -> None:
    hw = records.run_provenance({"lr": 0.1}).hardware
    recorded = {"cpu_model", "cpu_vendor", "cpu_flags", "isa", "cpus", "usable_cpus", "thread_env", "torch"}
    assert recorded <= set(hw), f"missing: {sorted(recorded - set(hw))}"
    cpu = records.parse_cpuinfo(Path("/proc/cpuinfo").read_text())  # the parser's own test: below
    assert hw["cpu_model"] == (cpu.get("model") or platform.processor()) and hw["cpu_model"].strip()
    assert (hw["cpu_vendor"], hw["cpu_flags"]) == (cpu.get("vendor"), cpu["flags"])
    assert set(cpu["flags"]) <= set(records.KERNEL_FLAGS) and hw["isa"] == records.isa_level(cpu["flags"])
    assert (hw["cpus"], hw["usable_cpus"]) == (os.cpu_count(), len(os.sched_getaffinity(0)))
    libs = hw["torch"]
    assert (libs["threads"], libs["interop_threads"]) == (torch.get_num_threads(), torch.get_num_interop_threads())
    assert libs["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert libs["mkldnn"] == torch.backends.mkldnn.is_available() and libs["mkl"] == torch.backends.mkl.is_available()
    config = torch.__config__.show()
    assert libs["onednn_version"] and f"v{libs['onednn_version']} " in config  # e.g. "MKL-DNN v3.12.0 (Git Hash"
    assert libs["mkl_version"] is None or f"Version {libs['mkl_version']}" in config
    assert f"BLAS_INFO={libs['blas']}," in config
    assert libs["float32_matmul_precision"] == torch.get_float32_matmul_precision()
    assert ("accelerator" in hw) == torch.cuda.is_available()
    json.dumps(hw)  # the store keeps it as JSON


def test_settings_a_run_changes_are_read_on_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    try:
        torch.set_num_threads(1)
        torch.use_deterministic_algorithms(True, warn_only=True)
        hw = records.hardware()
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)
    assert hw["thread_env"] == {"OMP_NUM_THREADS": "3"} and hw["torch"]["threads"] == 1
    assert hw["torch"]["deterministic_algorithms"] is True and hw["torch"]["deterministic_warn_only"] is True
    after = records.hardware()["torch"]
    assert after["threads"] == threads and after["deterministic_algorithms"] is deterministic


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (EPYC, {"model": "AMD EPYC 7B13", "vendor": "AuthenticAMD", "flags": ["avx", "avx2", "f16c", "fma", "sse4_2"]}),
        (GRACE, {"model": "ARM Neoverse-V2", "vendor": "ARM",
                 "flags": ["asimd", "asimddp", "asimdhp", "bf16", "i8mm", "sve", "sve2"]}),
        (GRACE.replace("0xd4f", "0xd99"), {"model": "ARM part 0xd99", "vendor": "ARM",
                                            "flags": ["asimd", "asimddp", "asimdhp", "bf16", "i8mm", "sve", "sve2"]}),
        ("", {"flags": []}),
    ],
)  # fmt: skip
def test_cpuinfo_gives_the_first_processors_model_vendor_and_kernel_flags(text: str, expected: dict) -> None:
    assert records.parse_cpuinfo(text) == expected


NEW = {
    **OLD, "cpu_model": "AMD EPYC 7B13 64-Core Processor", "cpu_vendor": "AuthenticAMD", "usable_cpus": 2,
    "cpu_flags": ["avx", "avx2", "fma", "sse4_2"], "thread_env": {}, "torch": {"threads": 2, "cpu_capability": "AVX2"},
}  # fmt: skip


@pytest.mark.parametrize(
    ("hardware", "key"),
    [
        (OLD, "x86_64 (unrecorded cpu)"),
        ({}, "unknown (unrecorded cpu)"),
        ({**OLD, "accelerator": "NVIDIA H200", "devices": 8}, "NVIDIA H200"),  # old records named the GPU already
        (NEW, "AMD EPYC 7B13 / avx2"),
        ({**NEW, "accelerator": "NVIDIA H200", "devices": 1, "cuda": "12.4"}, "NVIDIA H200"),
        ({**NEW, "cpu_model": "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz"}, "Intel Xeon CPU E5-2680 v4 / avx2"),
        ({**NEW, "cpu_flags": [*NEW["cpu_flags"], "avx512f", "amx_tile"]}, "AMD EPYC 7B13 / amx"),
        ({**NEW, "cpu_flags": ["sse4_2"]}, "AMD EPYC 7B13 / sse4.2"),  # a VM that masks AVX is another machine
        ({**NEW, "cpu_model": "ARM Neoverse-V2", "cpu_flags": ["asimd", "sve", "sve2"]}, "ARM Neoverse-V2 / sve2"),
        ({**NEW, "cpu_model": "Apple M2", "cpu_flags": []}, "Apple M2"),
        ({"cpu_model": "AMD EPYC 7B13", "isa": "avx2"}, "AMD EPYC 7B13 / avx2"),  # a hand-made record names its level
        ({"cpu_model": 3, "cpu_flags": "avx2", "machine": None, "accelerator": ""}, "unknown (unrecorded cpu)"),
        ({"cpu_model": "AMD  EPYC\n7B13", "cpu_flags": "avx2"}, "AMD EPYC 7B13"),  # a hand-made record's odd types
    ],
)
def test_machine_key_of_old_and_new_records(hardware: dict, key: str) -> None:
    assert records.machine_key(hardware) == key


def test_machine_key_ignores_the_settings_of_one_run() -> None:
    other_run = {**NEW, "usable_cpus": 1, "thread_env": {"OMP_NUM_THREADS": "1"}, "torch": {"threads": 1}}
    assert records.machine_key(other_run) == records.machine_key(NEW)
    assert records.machine_key(records.hardware()) == records.machine_key(json.loads(json.dumps(records.hardware())))


def test_run_ids_do_not_depend_on_the_hardware(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same run on another machine finds the same record: hardware is provenance, not identity."""
    args = ("toy-paper", "toy-mlp", "smoke", "digits", "test", {"lr": 0.5}, 0)
    here = records.make_run_id(*args)

    def unreadable(*_):
        raise AssertionError("make_run_id read the hardware")

    for name in ("hardware", "_machine", "_accelerator", "_torch_libraries", "_read_cpuinfo", "_usable_cpus"):
        monkeypatch.setattr(records, name, unreadable)
    monkeypatch.setattr(records.platform, "machine", lambda: "aarch64")
    monkeypatch.setattr(records.os, "cpu_count", lambda: 256)
    assert records.make_run_id(*args) == here


def test_old_and_new_hardware_are_ingested_and_read_back(toy: Path) -> None:
    runs, db = toy / "results" / "runs", toy / "results" / "harness.duckdb"
    old = make_record(seed=0, provenance={"git_sha": "abc", "git_dirty": False, "config_hash": "c", "hardware": OLD})
    new = make_record(seed=1, provenance={**old.provenance.model_dump(), "hardware": records.hardware()})
    for record in (old, new):
        records.write_record(record, runs)
    result = store.ingest(runs_dir=runs, db_path=db)
    assert (result.total, result.errors) == (2, [])
    rows = store.query("SELECT seed, CAST(hardware AS VARCHAR) AS hw FROM runs ORDER BY seed", db_path=db)
    stored = [json.loads(row["hw"]) for row in rows]
    assert stored == [OLD, records.hardware()]
    keys = [records.machine_key(hw) for hw in stored]
    assert keys[0] == "x86_64 (unrecorded cpu)" and keys[1] == records.machine_key(records.hardware()) != keys[0]
