"""Scale-out (harness.distributed): the trainer keys are checked before anything runs, a test set is split across
processes without the padding Lightning's DistributedSampler adds, the SLURM script renders from a config, and
(slow) a real 2-process DDP evaluation on CPU (gloo) writes one record equal to the single-process one."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch
import yaml
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, SequentialSampler, TensorDataset

from harness.distributed import check_trainer, render_sbatch, unpadded_loader, unpadded_test_loaders
from harness.errors import HarnessError
from harness.runner import check_arguments, load_config, resolve_config
from tests.conftest import REPO, harness_cli

WHERE = "cfg.yaml: key 'trainer'"
SLURM_VARS = ("SLURM_NTASKS", "SLURM_JOB_NAME", "SLURM_PROCID", "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "NODE_RANK")


@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in SLURM_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


# --- the trainer keys ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "trainer",
    [{}, {"strategy": "ddp", "devices": 2, "accelerator": "cpu"}, {"strategy": "fsdp", "devices": "0,1"},
     {"devices": [0, 1, 2, 3], "num_nodes": 1}, {"devices": -1, "strategy": "auto"}],
)  # fmt: skip
def test_trainer_keys_a_run_supports(trainer: dict, no_cluster: pytest.MonkeyPatch) -> None:
    check_trainer(trainer, WHERE)


@pytest.mark.parametrize(
    ("trainer", "message"),
    [
        ({"strategy": "ddp_spawn"}, "strategy 'ddp_spawn' is not one the runner supports; use one of auto, ddp"),
        ({"devices": 0}, "devices is a number of devices, -1, 'auto' or a list of indices, not 0"),
        ({"devices": True}, "not True"),
        ({"devices": "two"}, "not 'two'"),
        ({"num_nodes": 0}, "num_nodes is a positive integer, not 0"),
        ({"num_nodes": 2, "devices": 8}, r"num_nodes is 2 but this process was not started on a cluster: .*sbatch "
                                         r"--nodes=2 .*torchrun.*MASTER_ADDR"),
    ],
)  # fmt: skip
def test_bad_trainer_keys_are_one_error_naming_the_key(trainer: dict, message: str, no_cluster) -> None:
    with pytest.raises(HarnessError, match=message) as info:
        check_trainer(trainer, WHERE)
    assert str(info.value).startswith(WHERE)


def test_fsdp_cannot_save_a_checkpoint_yet(no_cluster) -> None:
    with pytest.raises(HarnessError, match="strategy 'fsdp' with save_checkpoint: true is not supported yet"):
        check_trainer({"strategy": "fsdp", "devices": 8}, WHERE, save_checkpoint=True)


def test_several_nodes_under_slurm_must_match_its_tasks(no_cluster: pytest.MonkeyPatch) -> None:
    no_cluster.setenv("SLURM_NTASKS", "16")
    no_cluster.setenv("SLURM_JOB_NAME", "efficientnet-full")
    check_trainer({"num_nodes": 2, "devices": 8, "strategy": "ddp"}, WHERE)
    with pytest.raises(HarnessError, match=r"2 x devices 4 = 8 processes, but the SLURM job runs 16 tasks"):
        check_trainer({"num_nodes": 2, "devices": 4, "strategy": "ddp"}, WHERE)


def test_a_config_asking_for_2_cpu_processes_validates(tmp_path: Path, no_cluster) -> None:
    path = ddp_config(tmp_path, tmp_path / "data", devices=2)
    resolved = resolve_config(load_config(path, "full"), "full", None, None, None, str(tmp_path / "w.safetensors"))
    check_arguments(path, resolved)
    resolved["trainer"]["num_nodes"] = 3
    with pytest.raises(HarnessError, match=rf"^{path}: key 'trainer': num_nodes is 3 but this process was not"):
        check_arguments(path, resolved)


# --- evaluation without padding -----------------------------------------------------------------------------------


def loader(n: int, **kwargs) -> DataLoader:
    return DataLoader(TensorDataset(torch.arange(n)), batch_size=2, **kwargs)


def seen(loaders: list[DataLoader]) -> list[int]:
    return sorted(int(x) for each in loaders for (batch,) in each for x in batch)


def test_an_odd_test_set_is_split_without_repeats() -> None:
    split = [unpadded_loader(loader(7), 2, rank, "test loader") for rank in (0, 1)]
    assert seen(split) == list(range(7))  # each example once: 4 on rank 0, 3 on rank 1
    assert [len(each.sampler) for each in split] == [4, 3]
    padded = [DataLoader(TensorDataset(torch.arange(7)), batch_size=2,
                         sampler=DistributedSampler(TensorDataset(torch.arange(7)), 2, rank, shuffle=False))
              for rank in (0, 1)]  # fmt: skip
    assert seen(padded) == [0, 0, 1, 2, 3, 4, 5, 6]  # what Lightning's own sampler would evaluate


def test_loaders_that_cannot_be_split_are_refused() -> None:
    with pytest.raises(HarnessError, match="test loader 1: a RandomSampler over a TensorDataset cannot be split"):
        unpadded_loader(loader(7, shuffle=True), 2, 0, "test loader 1")

    class Buckets(BatchSampler):
        pass

    custom = DataLoader(TensorDataset(torch.arange(7)), batch_sampler=Buckets(SequentialSampler(range(7)), 2, False))
    with pytest.raises(HarnessError, match=r"its own batch sampler \(Buckets\) cannot be split across 2 processes"):
        unpadded_loader(custom, 2, 0, "test loader")


class _Data(pl.LightningDataModule):
    """A data module whose hook the runner wraps; ``trainer`` is what Lightning attaches."""

    def test_dataloader(self) -> list[DataLoader]:
        return [loader(5), loader(3)]


class _Trainer:
    def __init__(self, world_size: int, global_rank: int) -> None:
        self.world_size, self.global_rank = world_size, global_rank


def test_the_wrapped_hook_splits_only_with_several_processes() -> None:
    from pytorch_lightning.utilities.model_helpers import is_overridden

    data = _Data()
    unpadded_test_loaders(data)
    assert is_overridden("test_dataloader", data)  # Lightning still finds the data module's own hook
    data.trainer = _Trainer(1, 0)
    assert seen(data.test_dataloader()) == seen([loader(5), loader(3)])
    per_rank = []
    for rank in (0, 1, 2):
        data.trainer = _Trainer(3, rank)
        per_rank += data.test_dataloader()
    assert seen(per_rank) == sorted([*range(5), *range(3)])


# --- SLURM --------------------------------------------------------------------------------------------------------


def test_the_sbatch_script_follows_the_config(tmp_path: Path) -> None:
    path = REPO / "reproductions" / "efficientnet" / "configs" / "full.yaml"
    config = load_config(path, "full")
    config["trainer"]["num_nodes"] = 4
    script = render_sbatch("efficientnet", "full", config, path, workdir=tmp_path, data_root="/data/imagenet",
                           extra=("--partition=gpu",))  # fmt: skip
    lines = script.splitlines()
    for line in ("#SBATCH --nodes=4", "#SBATCH --ntasks-per-node=8", "#SBATCH --gpus-per-node=8",
                 f"#SBATCH --chdir={tmp_path}", "#SBATCH --partition=gpu"):  # fmt: skip
        assert line in lines
    assert lines[-1] == (f"srun .venv/bin/harness run efficientnet --tier full --model efficientnet-b0 "
                         f"--config {path} --data-root /data/imagenet")  # fmt: skip
    out = tmp_path / "job.sbatch"
    out.write_text(script)
    assert subprocess.run(["bash", "-n", str(out)], capture_output=True).returncode == 0  # valid shell


def test_a_cpu_job_asks_for_no_gpus_and_devices_must_be_a_count(tmp_path: Path) -> None:
    config = {"model": "toy", "trainer": {"accelerator": "cpu", "devices": 2, "strategy": "ddp"}}
    assert "--gpus-per-node" not in render_sbatch("toy-paper", "full", config, tmp_path / "c.yaml", workdir=tmp_path)
    config["trainer"]["devices"] = "auto"
    with pytest.raises(HarnessError, match=r"c.yaml: key 'trainer': a SLURM job needs devices as a number"):
        render_sbatch("toy-paper", "full", config, tmp_path / "c.yaml", workdir=tmp_path)


def test_the_sbatch_command_writes_the_script(tmp_path: Path) -> None:
    out = tmp_path / "run.sbatch"
    done = subprocess.run(
        ["python", str(REPO / "scripts" / "sbatch.py"), "efficientnet", "--model", "efficientnet-b3", "--out", str(out)],
        capture_output=True, text=True, cwd=tmp_path, env=_env(),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "--tier full --model efficientnet-b3 --config" in out.read_text()


def _env() -> dict[str, str]:
    import os
    import sys

    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


# --- a real 2-process evaluation ----------------------------------------------------------------------------------


def ddp_config(folder: Path, data_root: Path, devices: int) -> Path:
    """A full-tier-style evaluation (given weights, no training) of EfficientNet-B0 at 32 px on the digits copy."""
    trainer = {"accelerator": "cpu", "devices": devices, "enable_progress_bar": False, "enable_model_summary": False}
    if devices > 1:
        trainer["strategy"] = "ddp"  # on CPU Lightning's process group is gloo
    config = {
        "tier": "full", "model": "efficientnet-b0", "seed": 0, "protocol": "center-crop-1.0", "fit": False,
        "system": {"class_path": "reproductions.efficientnet.system:EfficientNetSystem",
                   "init_args": {"num_classes": 10, "image_size": 32, "ema_decay": 0.0}},
        "data": {"class_path": "tasks.imagenet.data:ImageNetDataModule",
                 "init_args": {"data_root": str(data_root), "batch_size": 32, "image_size": 32, "crop_fraction": 1.0,
                               "num_workers": 0, "autoaugment": False}},
        "trainer": trainer,
        "evaluate": [{"dataset": "digits", "split": "val"}],
    }  # fmt: skip
    path = folder / f"full-{devices}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def evaluate(folder: Path, config: Path, weights: Path, data_root: Path) -> list[dict]:
    folder.mkdir()
    done = harness_cli("run", "efficientnet", "--tier", "full", "--config", str(config), "--checkpoint", str(weights),
                       "--data-root", str(data_root), cwd=folder)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(path.read_text()) for path in sorted((folder / "results" / "runs").glob("*.json"))]


@pytest.mark.slow
def test_ddp_on_2_cpu_processes_writes_one_record_equal_to_one_process(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    from reproductions.efficientnet.system import EfficientNetSystem
    from tasks.imagenet.fixtures import write_digits_ilsvrc

    data_root = write_digits_ilsvrc(tmp_path / "digits", size=32, val_every=7)  # 257 val images: odd
    assert len(list((data_root / "val").rglob("*.JPEG"))) == 257
    torch.manual_seed(0)
    weights = tmp_path / "weights.safetensors"
    save_file(EfficientNetSystem(num_classes=10, image_size=32).model.state_dict(), weights)
    (single,) = evaluate(tmp_path / "one", ddp_config(tmp_path, data_root, 1), weights, data_root)
    (ddp,) = evaluate(tmp_path / "two", ddp_config(tmp_path, data_root, 2), weights, data_root)
    assert ddp["config"]["trainer"]["devices"] == 2 and ddp["config"]["trainer"]["strategy"] == "ddp"
    assert set(ddp["metrics"]) == set(single["metrics"]) >= {"top1", "top5", "error"}
    assert ddp["metrics"] == pytest.approx(single["metrics"], rel=0, abs=1e-9)
    # 257 examples: a padded split would have counted 258, so top1 would be a multiple of 100/258, not of 100/257
    correct = single["metrics"]["top1"] * 257 / 100
    assert correct == pytest.approx(round(correct), abs=1e-6) and 0 < round(correct) < 257
