"""ELMo weights converter: an HDF5 file in bilm-tf's exact layout (dataset names, TF shapes, (i, j, f, o) gate columns,
261-row character table) written here with random weights, converted, and checked against a NumPy computation of the
released graph (TF conventions: ``x @ W``, forget bias 1, clipping, ``ResidualWrapper``, ``reverse_sequence``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from reproductions.elmo.check_bilm_tf import max_differences
from reproductions.elmo.convert import load_released
from reproductions.elmo.model import char_mask
from tasks.tokenizers.elmo import batch_char_ids

OPTIONS = {
    "lstm": {
        "cell_clip": 3,
        "use_skip_connections": True,
        "n_layers": 2,
        "proj_clip": 3,
        "projection_dim": 8,
        "dim": 24,
    },
    "char_cnn": {
        "embedding": {"dim": 4},
        "filters": [[1, 4], [2, 8], [3, 8]],
        "n_highway": 2,
        "n_characters": 262,
        "max_characters_per_token": 50,
        "activation": "relu",
    },
}
SENTENCES = [["Pretrained", "biLMs", "are", "fun", "."], ["ELMo", "!"], ["Deep", "contextualized", "word", "vectors"]]


def write_release(folder: Path, options: dict = OPTIONS, scale: float = 0.5) -> tuple[Path, Path, dict]:
    """Options JSON + HDF5 weights in bilm-tf's layout; returns the paths and the arrays written."""
    rng = np.random.default_rng(0)
    cnn, lstm = options["char_cnn"], options["lstm"]
    d, f, p, h = cnn["embedding"]["dim"], sum(n for _, n in cnn["filters"]), lstm["projection_dim"], lstm["dim"]
    shapes = {"char_embed": (261, d), "CNN_proj/W_proj": (f, p), "CNN_proj/b_proj": (p,)}
    for i, (width, n) in enumerate(cnn["filters"]):
        shapes |= {f"CNN/W_cnn_{i}": (1, width, d, n), f"CNN/b_cnn_{i}": (n,)}
    for i in range(cnn["n_highway"]):
        shapes |= {f"CNN_high_{i}/W_{k}": (f, f) for k in ("carry", "transform")}
        shapes |= {f"CNN_high_{i}/b_{k}": (f,) for k in ("carry", "transform")}
    for k in range(2):
        for j in range(lstm["n_layers"]):
            root = f"RNN_{k}/RNN/MultiRNNCell/Cell{j}/LSTMCell"
            shapes |= {f"{root}/W_0": (2 * p, 4 * h), f"{root}/B": (4 * h,), f"{root}/W_P_0": (h, p)}
    arrays = {name: (rng.standard_normal(shape) * scale).astype(np.float32) for name, shape in shapes.items()}
    with h5py.File(folder / "weights.hdf5", "w") as out:
        for name, array in arrays.items():
            out.create_dataset(name, data=array)
    (folder / "options.json").write_text(json.dumps(options))
    return folder / "options.json", folder / "weights.hdf5", arrays


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def reference_tokens(w: dict, chars: np.ndarray) -> np.ndarray:
    """bilm-tf's character encoder on ``chars (B, T, C)``: ``(B, T, P)``."""
    table = np.concatenate([np.zeros((1, w["char_embed"].shape[1]), np.float32), w["char_embed"]])
    e = table[chars]  # (B, T, C, d)
    pooled, i = [], 0
    while f"CNN/W_cnn_{i}" in w:
        kernel, width = w[f"CNN/W_cnn_{i}"][0], w[f"CNN/W_cnn_{i}"].shape[1]  # (width, d, n)
        windows = np.stack([e[:, :, s : s + width] for s in range(e.shape[2] - width + 1)], axis=2)  # (B,T,S,width,d)
        conv = np.einsum("btswd,wdn->btsn", windows, kernel) + w[f"CNN/b_cnn_{i}"]
        pooled.append(np.maximum(conv.max(axis=2), 0))
        i += 1
    x = np.concatenate(pooled, axis=-1)
    for i in range(2):
        carry = sigmoid(x @ w[f"CNN_high_{i}/W_carry"] + w[f"CNN_high_{i}/b_carry"])
        x = carry * np.maximum(x @ w[f"CNN_high_{i}/W_transform"] + w[f"CNN_high_{i}/b_transform"], 0) + (1 - carry) * x
    return x @ w["CNN_proj/W_proj"] + w["CNN_proj/b_proj"]


def reference_lstm(w: dict, root: str, x: np.ndarray, clip: float = 3.0) -> np.ndarray:
    """TF's LSTMCell(num_proj, cell_clip, proj_clip, forget_bias=1) over one sequence ``x (T, I)``."""
    hidden = w[f"{root}/W_P_0"].shape[0]
    h, c, out = np.zeros(w[f"{root}/W_P_0"].shape[1]), np.zeros(hidden), []
    for step in x:
        i, j, f, o = np.split(np.concatenate([step, h]) @ w[f"{root}/W_0"] + w[f"{root}/B"], 4)
        c = np.clip(sigmoid(f + 1.0) * c + sigmoid(i) * np.tanh(j), -clip, clip)
        h = np.clip((sigmoid(o) * np.tanh(c)) @ w[f"{root}/W_P_0"], -clip, clip)
        out.append(h)
    return np.stack(out)


def reference_layers(w: dict, chars: np.ndarray, lengths: list[int]) -> list[np.ndarray]:
    """Per sentence: its 3 layers ``(3, n, 2P)``, each direction run on the sentence alone (reversed for RNN_1)."""
    tokens, result = reference_tokens(w, chars), []
    for b, n in enumerate(lengths):
        x, directions = tokens[b, :n], []
        for k, order in ((0, slice(None)), (1, slice(None, None, -1))):
            inputs, outs = x[order], []
            for j in range(2):
                out = reference_lstm(w, f"RNN_{k}/RNN/MultiRNNCell/Cell{j}/LSTMCell", inputs)
                out = out + inputs if j > 0 else out  # ResidualWrapper on the second layer
                outs.append(out[order])
                inputs = out
            directions.append(outs)
        result.append(
            np.stack(
                [np.concatenate([x, x], -1)] + [np.concatenate(pair, -1) for pair in zip(*directions, strict=True)]
            )
        )
    return result


def test_converted_weights_reproduce_the_reference(tmp_path: Path) -> None:
    options, weights, arrays = write_release(tmp_path)
    model = load_released(options, weights)
    chars = batch_char_ids(SENTENCES)
    with torch.no_grad():
        layers = model(chars).numpy()  # (B, 3, T, 2P)
    lengths = char_mask(chars).sum(1).tolist()
    assert lengths == [len(s) + 2 for s in SENTENCES]
    for b, expected in enumerate(reference_layers(arrays, chars.numpy(), lengths)):
        np.testing.assert_allclose(layers[b, :, : lengths[b]], expected, atol=2e-5)
        assert np.all(layers[b, 1:, lengths[b] :] == 0)
    assert torch.all(model.token.embedding.weight[0] == 0)


def test_missing_dataset_is_one_error_naming_it(tmp_path: Path) -> None:
    options, weights, _ = write_release(tmp_path)
    with h5py.File(weights, "a") as out:
        del out["CNN_high_1/W_carry"]
    with pytest.raises(HarnessError, match=r"weights.hdf5: dataset 'CNN_high_1/W_carry' missing from the ELMo weights"):
        load_released(options, weights)


def test_options_that_disagree_with_the_file(tmp_path: Path) -> None:
    options, weights, _ = write_release(tmp_path)
    wrong = json.loads(options.read_text())
    wrong["lstm"]["dim"] = 32
    options.write_text(json.dumps(wrong))
    with pytest.raises(HarnessError, match=r"weights.hdf5: .*input_gates.weight has shape \(96, 8\), the options give"):
        load_released(options, weights)
    wrong["char_cnn"]["n_characters"] = 261  # the training-time value; bilm-tf requires 262 for inference
    options.write_text(json.dumps(wrong))
    with pytest.raises(HarnessError, match=r"options.json: options field 'char_cnn.n_characters' is 261, expected 262"):
        load_released(options, weights)


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("BILM_TF_FIXTURES"), reason="set BILM_TF_FIXTURES=<bilm-tf>/tests/fixtures/model"
)
def test_bilm_tf_fixture_outputs() -> None:
    """bilm-tf's own TensorFlow outputs for its fixture model (reproductions.elmo.check_bilm_tf; not in this repo)."""
    assert max(max_differences(Path(os.environ["BILM_TF_FIXTURES"]))) < 1e-5
