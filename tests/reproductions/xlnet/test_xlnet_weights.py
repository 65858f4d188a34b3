"""The converter of XLNet's released TF checkpoint, on a NumPy dump in the checkpoint's variable layout (names,
shapes, stacked per-layer biases, ``(in, out)`` dense kernels) that the test writes from a small random model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from nets.weights import read_state
from reproductions.xlnet.model import XLNetConfig, XLNetLM
from reproductions.xlnet.weights import config_from_json, convert

SMALL = XLNetConfig(vocab=40, dim=16, layers=2, heads=2, head_dim=8, inner=32)
T = "model/transformer/"


def release_dump(model: XLNetLM) -> dict[str, np.ndarray]:
    """What ``tf.train.load_checkpoint`` gives for the release's variables, with two optimiser slots beside them."""
    s = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    layers = model.config.layers
    dump = {
        T + "word_embedding/lookup_table": s["transformer.word_embedding.weight"],
        T + "mask_emb/mask_emb": s["transformer.mask_emb"],
        "model/lm_loss/bias": s["lm_bias"],
        "global_step": np.array(1000),
        T + "word_embedding/lookup_table/adam_m": np.zeros_like(s["transformer.word_embedding.weight"]),
    }
    for name in ("r_w_bias", "r_r_bias", "r_s_bias", "seg_embed"):
        dump[T + name] = np.stack([s[f"transformer.layer.{i}.rel_attn.{name}"] for i in range(layers)])
    for i in range(layers):
        p, q = f"transformer.layer.{i}.", f"{T}layer_{i}/"
        for w in "qkvor":
            dump[f"{q}rel_attn/{w}/kernel"] = s[f"{p}rel_attn.{w}"]
        for tf_name, ours in (("rel_attn/LayerNorm", "rel_attn.layer_norm"), ("ff/LayerNorm", "ff.layer_norm")):
            dump[f"{q}{tf_name}/gamma"], dump[f"{q}{tf_name}/beta"] = s[f"{p}{ours}.weight"], s[f"{p}{ours}.bias"]
        for n in (1, 2):
            dump[f"{q}ff/layer_{n}/kernel"] = s[f"{p}ff.layer_{n}.weight"].T
            dump[f"{q}ff/layer_{n}/bias"] = s[f"{p}ff.layer_{n}.bias"]
    return dump


def write_release(folder: Path, model: XLNetLM) -> tuple[Path, Path]:
    np.savez(folder / "dump.npz", **release_dump(model))
    c = model.config
    config = {"d_head": c.head_dim, "d_inner": c.inner, "d_model": c.dim, "ff_activation": "gelu",
              "n_head": c.heads, "n_layer": c.layers, "n_token": c.vocab, "untie_r": True}  # fmt: skip
    (folder / "xlnet_config.json").write_text(json.dumps(config))
    return folder / "dump.npz", folder / "xlnet_config.json"


def test_converted_weights_give_the_same_outputs(tmp_path: Path) -> None:
    torch.manual_seed(0)
    source = XLNetLM(SMALL).eval()
    dump, config = write_release(tmp_path, source)
    assert config_from_json(config) == SMALL
    out = convert(dump, config, tmp_path / "xlnet.safetensors")
    target = XLNetLM(config_from_json(config)).eval()
    target.load_state_dict(read_state(out))
    ids = torch.randint(0, SMALL.vocab, (2, 6))
    mapping = torch.eye(6)[None, 4:].repeat(2, 1, 1)
    perm = torch.ones(2, 6, 6).triu()  # a left-to-right order: i sees j < i
    with torch.no_grad():
        expected, _ = source(ids, perm_mask=perm, target_mapping=mapping)
        got, _ = target(ids, perm_mask=perm, target_mapping=mapping)
    torch.testing.assert_close(got, expected)


def test_missing_variable_is_named(tmp_path: Path) -> None:
    dump, config = write_release(tmp_path, XLNetLM(SMALL))
    arrays = dict(np.load(dump))
    del arrays[T + "r_r_bias"]
    np.savez(dump, **arrays)
    with pytest.raises(HarnessError, match="model/transformer/r_r_bias"):
        convert(dump, config, tmp_path / "out.safetensors")


def test_wrong_shape_names_the_dump(tmp_path: Path) -> None:
    dump, config = write_release(tmp_path, XLNetLM(SMALL))
    arrays = dict(np.load(dump))
    arrays[T + "layer_1/ff/layer_1/kernel"] = arrays[T + "layer_1/ff/layer_1/kernel"][:, :5]
    np.savez(dump, **arrays)
    with pytest.raises(HarnessError, match="dump.npz: weights do not fit"):
        convert(dump, config, tmp_path / "out.safetensors")
