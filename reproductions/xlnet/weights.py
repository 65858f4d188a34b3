"""XLNet's released weights (zihangdai/xlnet: ``xlnet_model.ckpt.*``, ``xlnet_config.json``, ``spiece.model``) as a
state dict of :class:`reproductions.xlnet.model.XLNetLM`.

TensorFlow is not installed here, so the checkpoint is read through a NumPy dump keyed by the TF variable names
(:func:`nets.tf_checkpoint.read_dump`), written once on any machine with TensorFlow::

    import numpy as np, tensorflow as tf
    reader = tf.train.load_checkpoint("xlnet_cased_L-24_H-1024_A-16/xlnet_model.ckpt")
    np.savez("xlnet-large.npz", **{n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()})

then ``python -m reproductions.xlnet.weights xlnet-large.npz xlnet_config.json OUT.safetensors``. The names
(``modeling.py`` of the release, scope ``model/transformer``): ``word_embedding/lookup_table`` ``(V, D)``,
``mask_emb/mask_emb`` ``(1, 1, D)``, ``r_w_bias`` / ``r_r_bias`` / ``r_s_bias`` ``(L, n, d)`` (``untie_r``; ``(n,
d)`` shared otherwise), ``seg_embed`` ``(L, 2, n, d)``, ``layer_<i>/rel_attn/{q,k,v,o,r}/kernel`` ``(D, n, d)``,
``layer_<i>/rel_attn/LayerNorm/{gamma,beta}``, ``layer_<i>/ff/layer_{1,2}/{kernel,bias}`` (kernels ``(in, out)``,
transposed for ``nn.Linear``), ``layer_<i>/ff/LayerNorm/{gamma,beta}``; and ``model/lm_loss/bias`` ``(V,)`` (the
LM's output weight is the tied embedding). Optimiser slots and ``global_step`` are ignored.

No maintained reader of the TF checkpoint format installs without TensorFlow (README.md, "Reading the TF
checkpoint"). The converted file is what the fine-tuning systems' ``checkpoint`` names (:func:`load_backbone`).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import torch
from torch import nn

from harness.errors import HarnessError
from nets.tf_checkpoint import read_dump
from nets.weights import read_state
from reproductions.xlnet.model import XLNetConfig

ROOT = "model/transformer/"
LAYER = re.compile(r"layer_(\d+)/(.+)")
PER_LAYER = {  # TF name inside layer_<i>/ -> ours inside transformer.layer.<i>., transposed?
    "rel_attn/q/kernel": ("rel_attn.q", False),
    "rel_attn/k/kernel": ("rel_attn.k", False),
    "rel_attn/v/kernel": ("rel_attn.v", False),
    "rel_attn/o/kernel": ("rel_attn.o", False),
    "rel_attn/r/kernel": ("rel_attn.r", False),
    "rel_attn/LayerNorm/gamma": ("rel_attn.layer_norm.weight", False),
    "rel_attn/LayerNorm/beta": ("rel_attn.layer_norm.bias", False),
    "ff/layer_1/kernel": ("ff.layer_1.weight", True),
    "ff/layer_1/bias": ("ff.layer_1.bias", False),
    "ff/layer_2/kernel": ("ff.layer_2.weight", True),
    "ff/layer_2/bias": ("ff.layer_2.bias", False),
    "ff/LayerNorm/gamma": ("ff.layer_norm.weight", False),
    "ff/LayerNorm/beta": ("ff.layer_norm.bias", False),
}
STACKED = ("r_w_bias", "r_r_bias", "r_s_bias", "seg_embed")  # one variable, its first axis the layer (untie_r)


def config_from_json(path: str | Path) -> XLNetConfig:
    """The release's ``xlnet_config.json`` (``n_token``, ``d_model``, ``n_layer``, ``n_head``, ``d_head``,
    ``d_inner``, ``ff_activation``) as an :class:`XLNetConfig`."""
    try:
        raw = json.loads(Path(path).read_text())
        activation = {"gelu": "gelu_tanh", "relu": "relu"}[raw["ff_activation"]]  # the release's gelu is tanh's
        return XLNetConfig(vocab=raw["n_token"], dim=raw["d_model"], layers=raw["n_layer"], heads=raw["n_head"],
                           head_dim=raw["d_head"], inner=raw["d_inner"], activation=activation)  # fmt: skip
    except (OSError, ValueError, KeyError) as exc:
        raise HarnessError(f"{path}: not an XLNet config ({type(exc).__name__}: {exc})") from exc


def _stacked(arrays: dict[str, np.ndarray], name: str, layers: int) -> list[np.ndarray]:
    """Per-layer slices of ``r_*_bias`` / ``seg_embed``: stacked ``(L, ...)`` (``untie_r``) or one shared tensor."""
    value = arrays[ROOT + name]
    stacked_ndim = 4 if name == "seg_embed" else 3
    if value.ndim == stacked_ndim:
        if value.shape[0] != layers:
            raise HarnessError(f"{ROOT}{name}: {value.shape[0]} layers, the config has {layers}")
        return list(value)
    return [value] * layers


def tf_to_state(arrays: dict[str, np.ndarray], layers: int) -> dict[str, torch.Tensor]:
    """Our :class:`XLNetLM` state dict from the TF variables ``arrays`` (see the module docstring)."""
    missing = [n for n in ("word_embedding/lookup_table", "mask_emb/mask_emb", *STACKED) if ROOT + n not in arrays]
    if missing or "model/lm_loss/bias" not in arrays:
        raise HarnessError(f"no variable {ROOT + missing[0] if missing else 'model/lm_loss/bias'!r} in the dump")
    state = {
        "transformer.word_embedding.weight": arrays[ROOT + "word_embedding/lookup_table"],
        "transformer.mask_emb": arrays[ROOT + "mask_emb/mask_emb"],
        "lm_bias": arrays["model/lm_loss/bias"],
    }
    for name in STACKED:
        for index, value in enumerate(_stacked(arrays, name, layers)):
            state[f"transformer.layer.{index}.rel_attn.{name}"] = value
    for key, value in arrays.items():
        match = LAYER.fullmatch(key.removeprefix(ROOT)) if key.startswith(ROOT) else None
        if match is None or match[2] not in PER_LAYER:
            continue
        ours, transpose = PER_LAYER[match[2]]
        state[f"transformer.layer.{match[1]}.{ours}"] = value.T if transpose else value
    return {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)) for k, v in state.items()}


def hf_to_state(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``transformers``' XLNetLMHeadModel state dict -> ours (the same names; its tied ``lm_loss.weight`` dropped,
    ``lm_loss.bias`` is our ``lm_bias``)."""
    out = {k: v for k, v in state.items() if k.startswith("transformer.")}
    out["lm_bias"] = state["lm_loss.bias"]
    return out


def convert(dump: str | Path, config: str | Path, out: str | Path) -> Path:
    """Read the ``.npz`` dump and the config, check every tensor fits :class:`XLNetLM`, write ``out`` (safetensors)."""
    from safetensors.torch import save_file

    from reproductions.xlnet.model import XLNetLM

    c = config_from_json(config)
    state = tf_to_state(read_dump(dump), c.layers)
    with torch.device("meta"):
        model = XLNetLM(c)
    try:
        model.load_state_dict(state, strict=True, assign=True)
    except RuntimeError as exc:
        raise HarnessError(f"{dump}: weights do not fit the config {config}: {exc}") from exc
    save_file(state, str(out))
    return Path(out)


def load_backbone(model: nn.Module, path: str | Path) -> None:
    """Every tensor of ``model`` (an :class:`XLNetLM`) from ``path``: :func:`convert`'s output (or a state dict of the
    same names, a system's ``model.`` prefix dropped). A missing, extra or mis-shaped tensor is one error naming the
    file and the first such tensor (``harness.checkpoints.load_into``)."""
    from harness.checkpoints import load_into

    load_into(model, read_state(path), None, f"{path} (XLNet weights)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dump", help=".npz of the TF checkpoint, keyed by variable name")
    parser.add_argument("config", help="the release's xlnet_config.json")
    parser.add_argument("out", help="the .safetensors file to write")
    args = parser.parse_args(argv)
    print(convert(args.dump, args.config, args.out))


if __name__ == "__main__":
    main()
