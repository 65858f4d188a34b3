"""A killed `harness run` resumes from its own last checkpoint and ends with the metrics of an uninterrupted run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, TOY_SRC

CONFIG = {
    "tier": "smoke", "model": "toy-mlp", "seed": 3, "protocol": "toy-holdout",
    "prepare": {"function": "toy_paper.system:write_digits"},
    "system": {"class_path": "toy_paper.system:ToySystem", "init_args": {"lr": 0.5}},
    "data": {"class_path": "toy_paper.system:DigitsData", "init_args": {"data_root": "data/toy-digits", "batch_size": 64}},
    "trainer": {"max_epochs": 4, "accelerator": "cpu", "enable_progress_bar": False, "enable_model_summary": False},
    "evaluate": [{"dataset": "digits", "split": "test"}],
}  # fmt: skip

# runs the toy paper's tier; with KILL_AT_EPOCH set, the process kills itself (SIGKILL) as that epoch starts,
# after Lightning saved the checkpoint of the epoch before
SCRIPT = """
import os, signal, sys
from pathlib import Path
import pytorch_lightning as pl
from harness import registry
from harness.runner import run

class Kill(pl.Callback):
    def on_train_epoch_start(self, trainer, module):
        if trainer.current_epoch == int(os.environ["KILL_AT_EPOCH"]):
            os.kill(os.getpid(), signal.SIGKILL)

if "KILL_AT_EPOCH" in os.environ:
    init = pl.Trainer.__init__
    pl.Trainer.__init__ = lambda self, **kw: init(self, **{**kw, "callbacks": [*kw["callbacks"], Kill()]})
paths = run(registry.reproduction("toy-paper"), "smoke", config_path=Path(sys.argv[1]))
print(paths[0])
"""


def run_toy(work: Path, site: Path, kill_at: int | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(TOY_SRC), str(REPO)])}
    if kill_at is not None:
        env["KILL_AT_EPOCH"] = str(kill_at)
    config = work / "resume.yaml"
    config.write_text(yaml.safe_dump(CONFIG))
    return subprocess.run(
        [sys.executable, "-c", SCRIPT, str(config)], cwd=work, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow  # three toy trainings in subprocesses: ~20 s on an idle machine
def test_a_killed_run_resumes_from_its_checkpoint_with_the_metrics_of_an_uninterrupted_run(
    tmp_path: Path, toy_site: Path
) -> None:
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    for work in (whole, killed):
        work.mkdir()
    done = run_toy(whole, toy_site)
    assert done.returncode == 0, done.stderr
    dead = run_toy(killed, toy_site, kill_at=2)
    assert dead.returncode == -9, dead.stderr
    checkpoints = list((killed / "results" / "lightning").glob("toy-paper/smoke/*/checkpoints/*.ckpt"))
    assert [p.name for p in checkpoints] == ["epoch=1-step=44.ckpt"]  # two epochs of 22 batches were saved
    again = run_toy(killed, toy_site)
    assert again.returncode == 0, again.stderr
    assert f"resuming from {checkpoints[0].relative_to(killed)}" in again.stderr
    record = json.loads((killed / again.stdout.strip()).read_text())
    expected = json.loads((whole / done.stdout.strip()).read_text())
    assert record["run_id"] == expected["run_id"]
    assert record["metrics"] == expected["metrics"]  # bit for bit: same weights, same shuffles after the restart
    assert not list((killed / "results" / "lightning").glob("toy-paper/smoke/*/checkpoints"))  # recorded: removed
