"""Runs on several processes, devices or nodes: the ``trainer`` keys that choose them, checked before anything runs;
evaluation that sees every test example exactly once; and the SLURM batch script of a multi-node run.

A tier config asks for several processes with Lightning's own Trainer arguments::

    trainer: {accelerator: gpu, devices: 8, num_nodes: 4, strategy: ddp}     # or fsdp for the large LMs

With ``strategy: ddp`` every process runs the whole ``harness run`` command (Lightning starts the other local
processes by running the same command again; SLURM's ``srun`` or ``torchrun`` start them on every node), so the
runner writes the records, the checkpoint and the database only on global rank 0, and the others exit after the
test. Lightning splits a test set with a ``DistributedSampler``, which pads it by repeating examples until every
process has the same number: metrics would count those twice. :func:`unpadded_test_loaders` gives each process
every ``world_size``-th example instead (Lightning's ``UnrepeatedDistributedSampler``, the one it uses for
prediction), and the metrics, torchmetrics states gathered across processes, see each example once. This relies on
test steps that log torchmetrics metrics (computed and synchronised once, at the end) rather than per-step values
with ``sync_dist``: processes may run one batch more or fewer. See docs/scale-out.md.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

# strategies where each process runs the whole command (the harness's model); spawn/fork strategies start workers
# from inside the Trainer and hand results back to one process, which the runner does not support
STRATEGIES = (
    "auto", "ddp", "ddp_find_unused_parameters_false", "ddp_find_unused_parameters_true", "fsdp", "fsdp_cpu_offload",
    "single_device",
)  # fmt: skip
DOC = "docs/scale-out.md"


# --- checking the trainer keys -------------------------------------------------------------------------------------


def _check_devices(devices: Any, where: str) -> None:
    """``devices``: a positive integer, -1 (all), ``"auto"``, a list of device indices or a string of them."""
    if isinstance(devices, bool):
        raise HarnessError(f"{where}: devices is a number of devices, -1, 'auto' or a list of indices, not {devices!r}")
    if isinstance(devices, int) and (devices >= 1 or devices == -1):
        return
    if isinstance(devices, str) and (devices == "auto" or all(p.strip().isdigit() for p in devices.split(",") if p)):
        return
    if isinstance(devices, list) and devices and all(isinstance(i, int) and not isinstance(i, bool) and i >= 0
                                                     for i in devices):  # fmt: skip
        return
    raise HarnessError(f"{where}: devices is a number of devices, -1, 'auto' or a list of indices, not {devices!r}")


def cluster_launched() -> str | None:
    """The launcher that started this process on several nodes: ``"slurm"`` (srun inside a batch job),
    ``"torchelastic"`` (torchrun), ``"manual"`` (MASTER_ADDR and NODE_RANK set by hand), or ``None``."""
    from lightning_fabric.plugins.environments import SLURMEnvironment, TorchElasticEnvironment

    if SLURMEnvironment.detect():
        return "slurm"
    if TorchElasticEnvironment.detect():
        return "torchelastic"
    if {"MASTER_ADDR", "NODE_RANK"} <= os.environ.keys():
        return "manual"
    return None


def _check_nodes(nodes: Any, devices: Any, where: str) -> None:
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise HarnessError(f"{where}: num_nodes is a positive integer, not {nodes!r}")
    launcher = cluster_launched() if nodes > 1 else None
    if nodes > 1 and launcher is None:
        raise HarnessError(
            f"{where}: num_nodes is {nodes} but this process was not started on a cluster: submit it with SLURM "
            f"(sbatch --nodes={nodes} --ntasks-per-node=<devices>; scripts/sbatch.py writes the script), start it "
            f"with torchrun on each node, or set MASTER_ADDR, MASTER_PORT, NODE_RANK and WORLD_SIZE there ({DOC})"
        )
    tasks = os.environ.get("SLURM_NTASKS")
    if launcher == "slurm" and isinstance(devices, int) and devices >= 1 and tasks and int(tasks) != nodes * devices:
        raise HarnessError(
            f"{where}: num_nodes {nodes} x devices {devices} = {nodes * devices} processes, but the SLURM job runs "
            f"{tasks} tasks: submit with --nodes={nodes} --ntasks-per-node={devices}"
        )


def check_trainer(trainer: dict[str, Any], where: str, save_checkpoint: bool = False) -> None:
    """The ``strategy``, ``devices`` and ``num_nodes`` keys of a config's ``trainer`` (``where``: ``"<config>: key
    'trainer'"``): values Lightning takes, a strategy the runner supports, and several nodes only under a launcher.
    ``save_checkpoint`` with FSDP is refused: rank 0 alone would gather the sharded weights and wait forever."""
    strategy = trainer.get("strategy", "auto")
    if strategy not in STRATEGIES:
        raise HarnessError(
            f"{where}: strategy {strategy!r} is not one the runner supports; use one of {', '.join(STRATEGIES)} "
            "(every process runs the whole command; spawn and fork strategies are not supported)"
        )
    if save_checkpoint and strategy.startswith("fsdp"):
        raise HarnessError(f"{where}: strategy {strategy!r} with save_checkpoint: true is not supported yet ({DOC})")
    devices = trainer.get("devices", "auto")
    _check_devices(devices, where)
    _check_nodes(trainer.get("num_nodes", 1), devices, where)


# --- evaluation without padding ------------------------------------------------------------------------------------


def unpadded_loader(loader: Any, num_replicas: int, rank: int, where: str) -> Any:
    """``loader`` (a DataLoader over a sized dataset, in order) restricted to examples ``rank, rank + num_replicas,
    ...``, nothing repeated; any other loader is an error naming ``where`` (it cannot be split without guessing)."""
    from pytorch_lightning.overrides.distributed import UnrepeatedDistributedSampler
    from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, IterableDataset, SequentialSampler

    if not isinstance(loader, DataLoader) or isinstance(loader.sampler, DistributedSampler):
        return loader
    if isinstance(loader.dataset, IterableDataset) or not isinstance(loader.sampler, SequentialSampler):
        raise HarnessError(
            f"{where}: a {type(loader.sampler).__name__} over a {type(loader.dataset).__name__} cannot be split "
            f"across {num_replicas} processes without repeating or skipping examples; evaluate with devices: 1"
        )
    if type(loader.batch_sampler) is not BatchSampler:
        raise HarnessError(f"{where}: its own batch sampler ({type(loader.batch_sampler).__name__}) cannot be split "
                           f"across {num_replicas} processes; evaluate with devices: 1")  # fmt: skip
    sampler = UnrepeatedDistributedSampler(loader.dataset, num_replicas=num_replicas, rank=rank, shuffle=False)
    return DataLoader(
        loader.dataset, batch_size=loader.batch_size, sampler=sampler, num_workers=loader.num_workers,
        collate_fn=loader.collate_fn, pin_memory=loader.pin_memory, drop_last=loader.drop_last,
        timeout=loader.timeout, worker_init_fn=loader.worker_init_fn, generator=loader.generator,
        multiprocessing_context=loader.multiprocessing_context, prefetch_factor=loader.prefetch_factor,
        persistent_workers=loader.persistent_workers,
    )  # fmt: skip


def unpadded_test_loaders(datamodule: Any) -> None:
    """Make ``datamodule.test_dataloader`` split its loaders without padding whenever its trainer runs more than one
    process (:func:`unpadded_loader`); with one process the loaders are returned as they are."""
    original = datamodule.test_dataloader

    @functools.wraps(original)  # Lightning still sees the data module's own hook (is_overridden follows __wrapped__)
    def test_dataloader() -> Any:
        loaders = original()
        trainer = getattr(datamodule, "trainer", None)
        if trainer is None or trainer.world_size <= 1:
            return loaders
        name = type(datamodule).__name__
        if isinstance(loaders, list | tuple):
            return [unpadded_loader(each, trainer.world_size, trainer.global_rank, f"{name} test loader {index}")
                    for index, each in enumerate(loaders)]  # fmt: skip
        return unpadded_loader(loaders, trainer.world_size, trainer.global_rank, f"{name} test loader")

    datamodule.test_dataloader = test_dataloader


def is_rank_zero() -> bool:
    """Whether this process is global rank 0 (or the only process): Lightning's own record of the rank, set from
    the launcher's environment (RANK, LOCAL_RANK, SLURM_PROCID) and updated once a Trainer has set up."""
    from lightning_fabric.utilities.rank_zero import rank_zero_only

    return getattr(rank_zero_only, "rank", 0) == 0


# --- SLURM ---------------------------------------------------------------------------------------------------------

SBATCH_TEMPLATE = """#!/bin/bash
# {paper} {tier} ({model}): {nodes} node(s) x {devices} device(s), strategy {strategy}; from {config}
# Written by scripts/sbatch.py; submit with: sbatch {script_name}
#SBATCH --job-name={job_name}
#SBATCH --nodes={nodes}
#SBATCH --ntasks-per-node={devices}
{gpus}#SBATCH --cpus-per-task={cpus_per_task}
#SBATCH --time={time}
#SBATCH --chdir={workdir}
#SBATCH --output=%x-%j.out
{extra}
set -euo pipefail
# srun starts one task per device on every node; Lightning reads SLURM_PROCID, SLURM_LOCALID and SLURM_NODEID,
# and the first node's address for the rendezvous, from SLURM's environment. Only global rank 0 writes the record.
srun .venv/bin/harness run {paper} --tier {tier} --model {model}{config_arg}{data_root_arg}
"""


def render_sbatch(
    paper: str,
    tier: str,
    config: dict[str, Any],
    config_path: Path,
    *,
    workdir: Path,
    data_root: str | None = None,
    time: str = "72:00:00",
    cpus_per_task: int = 8,
    extra: tuple[str, ...] = (),
) -> str:
    """The sbatch script of a run: ``--nodes`` and ``--ntasks-per-node`` from the config's ``trainer.num_nodes``
    and ``trainer.devices`` (an integer: SLURM needs the count), so the job and Lightning agree on the world size."""
    trainer = config.get("trainer") or {}
    devices, nodes = trainer.get("devices", 1), trainer.get("num_nodes", 1)
    where = f"{config_path}: key 'trainer'"
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise HarnessError(f"{where}: a SLURM job needs devices as a number per node, not {devices!r}")
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise HarnessError(f"{where}: num_nodes is a positive integer, not {nodes!r}")
    model = config["model"]
    return SBATCH_TEMPLATE.format(
        paper=paper, tier=tier, model=model, nodes=nodes, devices=devices, strategy=trainer.get("strategy", "auto"),
        config=config_path, script_name=f"{paper}-{tier}-{model}.sbatch", job_name=f"{paper}-{tier}-{model}",
        cpus_per_task=cpus_per_task, time=time, workdir=workdir, extra="\n".join(f"#SBATCH {e}" for e in extra),
        gpus="" if trainer.get("accelerator") == "cpu" else f"#SBATCH --gpus-per-node={devices}\n",
        config_arg=f" --config {config_path}", data_root_arg=f" --data-root {data_root}" if data_root else "",
    )  # fmt: skip
