"""Converter for ELMo's released weights (arXiv 1802.05365v2; allenai/bilm-tf's HDF5 weights + options JSON).

The released biLM is two files: ``*_options.json`` (``char_cnn``: ``embedding.dim``, ``filters``, ``n_highway``,
``n_characters`` = 262, ``activation``; ``lstm``: ``dim``, ``projection_dim``, ``n_layers``, ``cell_clip``,
``proj_clip``, ``use_skip_connections``) and ``*_weights.hdf5``, TensorFlow's variables by name (read for the layout
only; no code of bilm-tf is used). Layout and how each array maps onto :class:`reproductions.elmo.model.BiLM`:

| HDF5 dataset | shape | here |
|---|---|---|
| ``char_embed`` | ``(261, d)`` | ``token.embedding.weight[1:]`` (row 0, padding, stays 0) |
| ``CNN/W_cnn_{i}``, ``CNN/b_cnn_{i}`` | ``(1, width, d, n)``, ``(n,)`` | ``token.convolutions.{i}`` ``(n, d, width)`` |
| ``CNN_high_{i}/W_carry``, ``b_carry`` | ``(F, F)``, ``(F,)`` | ``token.highways.{i}.gate`` (``x @ W``: transposed) |
| ``CNN_high_{i}/W_transform``, ``b_transform`` | ``(F, F)``, ``(F,)`` | ``token.highways.{i}.transform`` |
| ``CNN_proj/W_proj``, ``b_proj`` | ``(F, P)``, ``(P,)`` | ``token.projection`` |
| ``RNN_{k}/RNN/MultiRNNCell/Cell{j}/LSTMCell/W_0`` | ``(I + P, 4H)`` | ``input_gates`` (``[:I]``), ``hidden_gates`` |
| ``.../LSTMCell/B`` | ``(4H,)`` | ``input_gates.bias`` |
| ``.../LSTMCell/W_P_0`` | ``(H, P)`` | ``projection.weight`` |

``RNN_0`` is the forward LM (``forward_lstms.{j}.cell``), ``RNN_1`` the backward one. TensorFlow's ``LSTMCell``
orders the gate columns (i, j, f, o), ``j`` the candidate; ``nets.lstm.LSTMPCell`` orders them (i, f, g, o), so the
columns are permuted, and TF's ``forget_bias = 1`` is the cell's ``forget_bias``.
The softmax is not in the file (bilm-tf does not dump it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from harness.errors import HarnessError
from reproductions.elmo.model import N_CHARACTERS, BiLM


def read_options(path: str | Path) -> dict[str, Any]:
    """The options JSON, checked for what :class:`BiLM` can build; errors name the file and the key."""
    try:
        options = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise HarnessError(f"{path}: cannot read ELMo options JSON: {error}") from None
    for section, key in [
        ("char_cnn", "filters"),
        ("char_cnn", "embedding"),
        ("lstm", "dim"),
        ("lstm", "projection_dim"),
    ]:
        if key not in options.get(section, {}):
            raise HarnessError(f"{path}: options field '{section}.{key}' is missing")
    cnn = options["char_cnn"]
    if cnn.get("n_characters", N_CHARACTERS) != N_CHARACTERS:
        raise HarnessError(f"{path}: options field 'char_cnn.n_characters' is {cnn['n_characters']}, expected 262")
    if cnn.get("activation", "relu") != "relu":
        raise HarnessError(
            f"{path}: options field 'char_cnn.activation' is {cnn['activation']!r}; only 'relu' is built"
        )
    return options


def bilm_from_options(options: dict[str, Any]) -> BiLM:
    """A :class:`BiLM` (no softmax) shaped as the options describe."""
    cnn, lstm = options["char_cnn"], options["lstm"]
    return BiLM(
        lstm_dim=lstm["dim"],
        projection_dim=lstm["projection_dim"],
        n_layers=lstm.get("n_layers", 1),
        cell_clip=lstm.get("cell_clip"),
        proj_clip=lstm.get("proj_clip"),
        skip_connections=lstm.get("use_skip_connections", False),
        char_dim=cnn["embedding"]["dim"],
        filters=[tuple(f) for f in cnn["filters"]],
        n_highway=cnn.get("n_highway", 0),
    )


def tf_gates_to_torch(matrix: np.ndarray) -> np.ndarray:
    """Permute the last axis from TF's gate order (i, j, f, o) to torch's (i, f, g=j, o)."""
    i, j, f, o = np.split(matrix, 4, axis=-1)
    return np.concatenate([i, f, j, o], axis=-1)


class Datasets:
    """``file[name]`` as a NumPy array; a dataset that is not in the file is one error naming it."""

    def __init__(self, weights: Any, path: str | Path) -> None:
        self.weights, self.path = weights, path

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.weights:
            raise HarnessError(f"{self.path}: dataset {name!r} missing from the ELMo weights")
        return self.weights[name][()]


def hdf5_state(weights: Datasets, model: BiLM) -> dict[str, np.ndarray]:
    """The model's state dict built from the datasets of a file in bilm-tf's layout."""
    state = {
        "token.embedding.weight": np.concatenate([np.zeros_like(weights["char_embed"][:1]), weights["char_embed"]])
    }
    for i in range(len(model.token.convolutions)):
        state[f"token.convolutions.{i}.weight"] = weights[f"CNN/W_cnn_{i}"][0].transpose(2, 1, 0)
        state[f"token.convolutions.{i}.bias"] = weights[f"CNN/b_cnn_{i}"]
    for i in range(len(model.token.highways)):
        for ours, theirs in (("gate", "carry"), ("transform", "transform")):
            state[f"token.highways.{i}.{ours}.weight"] = weights[f"CNN_high_{i}/W_{theirs}"].T
            state[f"token.highways.{i}.{ours}.bias"] = weights[f"CNN_high_{i}/b_{theirs}"]
    state["token.projection.weight"] = weights["CNN_proj/W_proj"].T
    state["token.projection.bias"] = weights["CNN_proj/b_proj"]
    for k, direction in enumerate(("forward_lstms", "backward_lstms")):
        for j, lstm in enumerate(getattr(model, direction)):
            root, cell = f"RNN_{k}/RNN/MultiRNNCell/Cell{j}/LSTMCell", f"{direction}.{j}.cell"
            kernel, inputs = tf_gates_to_torch(weights[f"{root}/W_0"]), lstm.cell.input_gates.in_features
            state[f"{cell}.input_gates.weight"] = kernel[:inputs].T
            state[f"{cell}.hidden_gates.weight"] = kernel[inputs:].T
            state[f"{cell}.input_gates.bias"] = tf_gates_to_torch(weights[f"{root}/B"])
            state[f"{cell}.projection.weight"] = weights[f"{root}/W_P_0"].T
    return state


def load_released(options_path: str | Path, weights_path: str | Path) -> BiLM:
    """The released biLM built from its options JSON and loaded from its HDF5 weights (eval mode).

    A dataset missing from the file, or one whose shape the options do not predict, is one error naming the file
    and the dataset.
    """
    import h5py  # heavy, and only the weights tier needs it

    model = bilm_from_options(read_options(options_path))
    try:
        with h5py.File(weights_path, "r") as weights:
            state = hdf5_state(Datasets(weights, weights_path), model)
    except OSError as error:
        raise HarnessError(f"{weights_path}: cannot read ELMo HDF5 weights: {error}") from None
    expected = model.state_dict()
    for key, value in state.items():
        if tuple(value.shape) != tuple(expected[key].shape):
            raise HarnessError(
                f"{weights_path}: {key} has shape {tuple(value.shape)}, the options give {tuple(expected[key].shape)}"
            )
    model.load_state_dict({key: torch.from_numpy(np.ascontiguousarray(value)) for key, value in state.items()})
    return model.eval()
