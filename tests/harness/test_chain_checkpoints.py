"""The checkpoint store: safetensors files named by their sha256 next to the run records, verified on load."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from harness import checkpoints
from harness.errors import HarnessError
from harness.records import file_sha256


def _net(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))


def test_weights_are_stored_once_by_their_hash_next_to_the_records(tmp_path: Path) -> None:
    runs = tmp_path / "results" / "runs"
    artifacts = checkpoints.save_state(_net(0).state_dict(), runs)
    path, sha = Path(artifacts["checkpoint"]), artifacts["checkpoint_sha256"]
    assert path == tmp_path / "results" / "checkpoints" / f"{sha}.safetensors" and file_sha256(path) == sha
    assert checkpoints.save_state(_net(0).state_dict(), runs) == artifacts  # the same weights: the same file
    assert checkpoints.save_state(_net(1).state_dict(), runs) != artifacts
    assert sorted(p.name for p in path.parent.iterdir()) == sorted(
        [path.name, f"{checkpoints.save_state(_net(1).state_dict(), runs)['checkpoint_sha256']}.safetensors"]
    )  # no temp files left behind
    path.write_bytes(b"damaged")
    assert checkpoints.save_state(_net(0).state_dict(), runs) == artifacts and file_sha256(path) == sha  # repaired


def test_tied_weights_are_stored_and_loaded(tmp_path: Path) -> None:
    net = _net(0)
    net[2].weight = nn.Parameter(torch.zeros(2, 3))
    tied = nn.ModuleDict({"a": net[2], "b": net[2]})  # two names, one tensor (as tied embeddings are)
    sha = checkpoints.save_state(tied.state_dict(), tmp_path / "runs")["checkpoint_sha256"]
    state = checkpoints.load_state(sha, tmp_path / "runs", "a test")
    assert set(state) == {"a.weight", "a.bias", "b.weight", "b.bias"} and state["b.weight"].equal(torch.zeros(2, 3))


def test_loading_copies_every_tensor_or_the_named_prefixes(tmp_path: Path) -> None:
    source, target = _net(0), _net(1)
    checkpoints.load_into(target, source.state_dict(), None, "ckpt")
    assert all(a.equal(b) for a, b in zip(source.state_dict().values(), target.state_dict().values(), strict=True))
    head = _net(2)
    checkpoints.load_into(head, source.state_dict(), ["0."], "ckpt")
    assert head[0].weight.equal(source[0].weight) and not head[2].weight.equal(source[2].weight)


@pytest.mark.parametrize(
    ("state", "prefixes", "message"),
    [
        ({"0.weight": torch.zeros(3, 4)}, None, "ckpt: has no tensor '0.bias' of the system (3 missing)"),
        ({"0.weight": torch.zeros(3, 5)}, ["0."], "ckpt: tensor '0.weight' has shape (3, 5) in the checkpoint, (3, 4)"),
        ({"9.weight": torch.zeros(1)}, ["9."], "ckpt: tensor '9.weight' is not in the system"),
        ({"0.weight": torch.zeros(3, 4)}, ["2."], "ckpt: no tensor's name starts with '2.' (init_from.prefixes)"),
    ],
)
def test_a_checkpoint_that_does_not_fit_is_named(state: dict, prefixes: list | None, message: str) -> None:
    with pytest.raises(HarnessError) as err:
        checkpoints.load_into(_net(0), state, prefixes, "ckpt")
    assert str(err.value).startswith(message)
