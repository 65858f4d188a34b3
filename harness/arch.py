"""The ``arch`` tier: every model of a paper (or one) profiled at its inputs (harness.profile), one run record each.

It needs no config: what is profiled (the builder, its arguments and the input shapes) is the record's config.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness import profile
from harness.errors import HarnessError
from harness.records import (
    RUNS_DIR,
    code_version,
    make_run_id,
    new_record,
    now,
    record_path,
    run_provenance,
    write_record,
)
from harness.registry import Reproduction

# set by a stage's pool worker (harness.stage.run_in_worker): profiles kept across the per-model commands it is
# given, by what was profiled, so it profiles each network once (ids of a sweep build one); else one call's own
PROFILE_CACHE: dict[str, Any] | None = None


def arch_config(spec: Any) -> dict[str, Any]:
    """What an arch run profiles, the config its record keeps: the builder, its arguments and the inputs."""
    config = {"build": spec.build, "kwargs": dict(spec.kwargs), "input_shape": list(spec.input_shape)}
    if spec.inputs:  # named inputs: every one is part of what was profiled
        config["inputs"] = {each.name: list(each.shape) for each in spec.inputs}
    return config


def network_key(spec: Any) -> str:
    """One string per network at its inputs: ids that differ only in how the network is trained share it."""
    return yaml.safe_dump(arch_config(spec), sort_keys=True)


def run_arch(repro: Reproduction, model: str | None = None, runs_dir: Path = RUNS_DIR) -> list[Path]:
    """Profile each model (or one) and record ``params_m`` and ``macs_m`` at tier ``arch``, split ``none``."""
    specs = [repro.model(model)] if model else list(repro.models)
    if not specs:
        raise HarnessError(f"reproduction {repro.id!r} registers no models: nothing to profile")
    written, profiles = [], PROFILE_CACHE if PROFILE_CACHE is not None else {}
    for spec in specs:
        config = arch_config(spec)
        run_id = make_run_id(repro.id, spec.id, "arch", spec.dataset, "none", config, 0)
        if record_path(run_id, runs_dir).exists():
            written.append(record_path(run_id, runs_dir))
            continue
        started = now()
        # ids that differ only in how the network is trained (e.g. a sweep's) build the same network: profile it once
        key = network_key(spec)
        if key not in profiles:
            profiles[key] = profile.profile_model(spec)
        prof = profiles[key]
        metrics = {"params_m": prof.params / 1e6, "macs_m": prof.macs / 1e6, "params": prof.params, "macs": prof.macs}
        record = new_record(
            run_id=run_id, paper=repro.id, model=spec.id, tier="arch", dataset=spec.dataset, split="none", seed=0,
            metrics=metrics, started_at=started, provenance=run_provenance(config, code=code_version(repro.id)),
            protocol="flopcounter-macs", config=config,
        )  # fmt: skip
        written.append(write_record(record, runs_dir))
    return written
