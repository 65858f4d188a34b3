"""What a newcomer meets first: piping into ``head``, finding models, "did you mean" on typos, missing data."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import HarnessError
from tests.conftest import TOY_SRC, cli_json, harness_cli


def test_stdout_closed_early_is_not_a_traceback(toy_site: Path, tmp_path: Path) -> None:
    """``harness list --json | head``: the reader closes the pipe before the harness writes; no traceback."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(toy_site), str(TOY_SRC), os.environ.get("PYTHONPATH", "")])}
    exe = Path(sys.executable).parent / "harness"
    proc = subprocess.Popen([str(exe), "list", "--json"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip
    proc.stdout.close()  # like `head` exiting at once: every write the harness makes meets a closed pipe
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert stderr == ""


def test_models_filter_and_show_their_paper(toy_site: Path, tmp_path: Path) -> None:
    table = harness_cli("models", "--paper", "toy-paper", cwd=tmp_path, site=toy_site).stdout.splitlines()
    assert table[0].split() == ["model", "paper", "dataset"]
    assert [line.split() for line in table[1:]] == [
        ["toy-bow", "toy-paper", "toy-text"], ["toy-mlp", "toy-paper", "digits"],
        ["toy-mlp-wide", "toy-paper", "digits"],
    ]  # fmt: skip
    assert cli_json("models", "MLP-W", "--paper", "toy-paper", cwd=tmp_path, site=toy_site) == ["toy-mlp-wide"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("run", "toy-papr"), "unknown paper 'toy-papr' (did you mean 'toy-paper'?)"),
        (
            ("run", "toy-paper", "--model", "toy-mlpp"),
            "no model 'toy-mlpp' (did you mean 'toy-mlp' or 'toy-mlp-wide'?)",
        ),
        (("score", "toy-digit", "--references", "a", "--predictions", "b"), "(did you mean 'toy-digits'?)"),
        (
            ("run", "efficientnet", "--tier", "full"),
            "data root missing (expected train/ and val/ of ILSVRC-2012 in it); pass --data-root DIR",
        ),
    ],
)
def test_unknown_ids_and_missing_data_say_what_to_type(toy_site: Path, tmp_path: Path, args, message: str) -> None:
    done = harness_cli(*args, cwd=tmp_path, site=toy_site)
    lines = [line for line in done.stderr.splitlines() if line.startswith("harness: error")]
    assert done.returncode == 2 and len(lines) == 1 and message in lines[0], done.stderr


def test_unknown_dataset_suggests_the_close_one() -> None:
    from tasks.fashion_mnist.data import load_split

    with pytest.raises(HarnessError, match=r"unknown dataset 'fashion-mnst' \(did you mean 'fashion-mnist'\?\)"):
        load_split("fashion-mnst", "train")
