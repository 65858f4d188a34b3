"""The one safe weights loader: safetensors, torch files read with ``weights_only``, Lightning checkpoints."""

from __future__ import annotations

import pickle

import pytest
import torch
from safetensors.torch import save_file
from torch import nn

from harness.errors import HarnessError
from nets.weights import load_state, read_state


@pytest.mark.parametrize("kind", ["safetensors", "state_dict", "lightning"])
def test_every_format_loads_the_same_tensors(tmp_path, kind):
    source = nn.Linear(4, 3)
    state = source.state_dict()
    if kind == "safetensors":
        path = tmp_path / "w.safetensors"
        save_file(state, str(path))
    else:
        path = tmp_path / "w.ckpt"
        torch.save({"state_dict": {f"model.{k}": v for k, v in state.items()}} if kind == "lightning" else state, path)
    target = nn.Linear(4, 3)
    load_state(target, path)
    assert all(torch.equal(v, target.state_dict()[k]) for k, v in state.items())


def test_the_prefix_is_removed_only_when_every_key_has_it(tmp_path):
    path = tmp_path / "w.pt"
    torch.save({"state_dict": {"model.weight": torch.ones(1), "ema.weight": torch.zeros(1)}}, path)
    assert sorted(read_state(path)) == ["ema.weight", "model.weight"]
    assert sorted(read_state(path, prefix="")) == ["ema.weight", "model.weight"]


def test_errors_name_the_file(tmp_path):
    with pytest.raises(HarnessError, match=r"missing\.pt: weights file not found"):
        load_state(nn.Linear(4, 3), tmp_path / "missing.pt")
    other = tmp_path / "other.pt"
    torch.save(nn.Linear(4, 5).state_dict(), other)
    with pytest.raises(HarnessError, match=r"other\.pt: weights do not fit the model"):
        load_state(nn.Linear(4, 3), other)
    corrupt = tmp_path / "corrupt.safetensors"
    corrupt.write_bytes(b"not a safetensors file")
    with pytest.raises(HarnessError, match=r"corrupt\.safetensors: cannot read weights"):
        read_state(corrupt)


class Payload:
    """An arbitrary object: unpickling it would run code, so weights_only refuses it."""


def test_a_pickled_object_is_refused_not_run(tmp_path):
    path = tmp_path / "unsafe.pt"
    with path.open("wb") as f:
        pickle.dump({"weight": Payload()}, f)
    with pytest.raises(HarnessError, match=r"unsafe\.pt: cannot read weights"):
        read_state(path)
