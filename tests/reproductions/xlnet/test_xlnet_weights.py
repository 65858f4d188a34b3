"""The converter of XLNet's released TF checkpoint, on a NumPy dump in the checkpoint's variable layout (names,
shapes, stacked per-layer biases, ``(in, out)`` dense kernels) that the test writes from a small random model; its
output loaded into every fine-tuning system (``checkpoint``), and the layer-wise rate decay of Table 8."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from nets.weights import read_state
from reproductions.xlnet.model import SIZES, XLNetConfig, XLNetLM
from reproductions.xlnet.system import XLNetSquadSystem, XLNetTaskSystem, adam_linear, layer_rates
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


# --- the converted weights in the fine-tuning systems (``checkpoint``) ---------------------------------------------

TINY = "xlnet-tiny"  # SMALL registered as a size for these tests only
SYSTEMS = {
    "glue-classification": (XLNetTaskSystem, {"task": "glue-rte", "kind": "classification", "classes": 2}),
    "glue-regression": (XLNetTaskSystem, {"task": "glue-stsb", "kind": "regression", "classes": 1}),
    "race": (XLNetTaskSystem, {"task": "race", "kind": "multiple_choice", "classes": 4}),
    "text-classification": (XLNetTaskSystem, {"task": "yelp-5", "kind": "classification", "classes": 5}),
    "squad-v1.1": (XLNetSquadSystem, {"version": "1.1"}),
    "squad-v2.0": (XLNetSquadSystem, {"version": "2.0", "layer_decay": 0.75}),
}


@pytest.fixture
def tiny_size(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(SIZES, TINY, SMALL)
    return TINY


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> tuple[XLNetLM, Path]:
    """A random SMALL model and its converter output (``convert`` on a dump in the release's layout)."""
    torch.manual_seed(1)
    source = XLNetLM(SMALL)
    folder = tmp_path_factory.mktemp("released")
    return source, convert(*write_release(folder, source), folder / "xlnet-small.safetensors")


@pytest.mark.parametrize("name", SYSTEMS)
def test_converted_weights_load_into_each_fine_tuning_system(name: str, tiny_size: str, released) -> None:  # noqa: ANN001
    source, path = released
    cls, kwargs = SYSTEMS[name]
    system = cls(model=tiny_size, checkpoint=str(path), **kwargs)
    assert system.hparams.checkpoint == str(path)
    got = system.model.state_dict()
    for key, value in source.state_dict().items():
        torch.testing.assert_close(got[key], value, rtol=0, atol=0, msg=key)
    untouched = cls(model=tiny_size, **kwargs).model.state_dict()  # without checkpoint: a fresh initialisation
    assert not torch.equal(untouched["transformer.word_embedding.weight"], source.transformer.word_embedding.weight)


def test_weights_of_another_shape_are_one_line_naming_file_and_tensor(tiny_size: str, tmp_path: Path) -> None:
    wider = XLNetLM(replace(SMALL, inner=48))
    path = convert(*write_release(tmp_path, wider), tmp_path / "wider.safetensors")
    with pytest.raises(HarnessError) as caught:
        XLNetTaskSystem(model=tiny_size, task="glue-rte", checkpoint=str(path))
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path} (XLNet weights): tensor ")
    assert re.search(
        r"tensor 'transformer\.layer\.0\.ff\.layer_1\.\w+' has shape \(48\b.* in the checkpoint, \(32\b", message
    )


def test_weights_missing_a_tensor_name_it(tiny_size: str, released, tmp_path: Path) -> None:  # noqa: ANN001
    from safetensors.torch import save_file

    state = read_state(released[1])
    del state["transformer.layer.1.rel_attn.r_s_bias"]
    save_file(state, str(tmp_path / "partial.safetensors"))
    with pytest.raises(
        HarnessError, match=r"partial.safetensors \(XLNet weights\): has no tensor 'transformer\.layer\.1"
    ):
        XLNetSquadSystem(model=tiny_size, checkpoint=str(tmp_path / "partial.safetensors"))


def test_layer_wise_decay_scales_each_layers_rate(tiny_size: str) -> None:
    system = XLNetSquadSystem(model=tiny_size, layer_decay=0.5)
    rates = layer_rates(system, 0.5)
    assert rates["model.transformer.layer.1.rel_attn.q"] == 1.0  # the top layer: the full rate
    assert rates["model.transformer.layer.0.ff.layer_1.weight"] == 0.5  # one layer down: 0.5^1
    assert rates["model.transformer.word_embedding.weight"] == rates["head.start.weight"] == 1.0

    class Trainer:
        estimated_stepping_batches = 10

    optimizer = adam_linear(system, 1e-3, 0.1, 0.01, Trainer(), layer_decay=0.5)["optimizer"]
    lrs = {id(p): group["initial_lr"] for group in optimizer.param_groups for p in group["params"]}
    named = dict(system.named_parameters())
    assert lrs[id(named["model.transformer.layer.0.rel_attn.q"])] == pytest.approx(5e-4)
    assert lrs[id(named["model.transformer.layer.1.rel_attn.q"])] == pytest.approx(1e-3)
    assert len(lrs) == len(named)
