"""Google's released BERT checkpoints (google-research/bert: ``bert_model.ckpt.index`` /
``.data-00000-of-00001``, ``bert_config.json``, ``vocab.txt``) as a state dict of :class:`nets.bert.BertEncoder`.

The TF checkpoint is read through a NumPy dump of its variables (:mod:`nets.tf_checkpoint`, written once on a
machine with TensorFlow; its docstring has the command), then::

    python -m nets.bert_weights bert-base-uncased.npz uncased_L-12_H-768_A-12/bert_config.json OUT.safetensors

Variables of the release (``modeling.py``, scope ``bert``) and where they go (TF dense kernels are ``(in, out)`` and
are transposed to ``nn.Linear``'s ``(out, in)``):

==============================================================  =================================================
``bert/embeddings/word_embeddings`` ``(V, D)``                   ``tokens.weight``
``bert/embeddings/position_embeddings`` ``(P, D)``               ``positions.weight``
``bert/embeddings/token_type_embeddings`` ``(2, D)``             ``segments.weight``
``bert/embeddings/LayerNorm/{gamma,beta}``                       ``norm.{weight,bias}``
``bert/encoder/layer_<i>/attention/self/{query,key,value}/*``    ``blocks.<i>.attention.qkv`` (rows q, k, v)
``bert/encoder/layer_<i>/attention/output/dense/*``              ``blocks.<i>.attention.out``
``bert/encoder/layer_<i>/attention/output/LayerNorm/*``          ``blocks.<i>.norm1``
``bert/encoder/layer_<i>/intermediate/dense/*`` ``(D, F)``       ``blocks.<i>.feed_forward.0``
``bert/encoder/layer_<i>/output/dense/*`` ``(F, D)``             ``blocks.<i>.feed_forward.2``
``bert/encoder/layer_<i>/output/LayerNorm/*``                    ``blocks.<i>.norm2``
``bert/pooler/dense/{kernel,bias}``                              ``pooler.0.{weight,bias}``
==============================================================  =================================================

The pre-training heads go to a second file on request (``--heads OUT``, :func:`heads_to_state`), keyed as
:class:`nets.masked_lm.BertPreTraining`'s (the MLM head's output projection is the word embeddings, tied, so it has no
tensor of its own):

==============================================================  =================================================
``cls/predictions/transform/dense/{kernel,bias}`` ``(D, D)``     ``mlm.transform.0.{weight,bias}``
``cls/predictions/transform/LayerNorm/{gamma,beta}``             ``mlm.transform.2.{weight,bias}``
``cls/predictions/output_bias`` ``(V,)``                         ``mlm.bias``
``cls/seq_relationship/output_weights`` ``(2, D)``               ``next_sentence.weight`` (already ``(out, in)``)
``cls/seq_relationship/output_bias`` ``(2,)``                    ``next_sentence.bias``
==============================================================  =================================================

Left out: a fine-tuned classifier's ``output_weights`` / ``output_bias``, optimiser slots and ``global_step``.
Every ``bert/`` variable must be one of the above with the shape ``bert_config.json`` gives it, and every one of
them must be there: otherwise one error names the dump and the tensor. The architecture (post-LN blocks, GELU
with ``erf`` as the release's ``gelu``, LayerNorm epsilon 1e-12, token type embeddings, the ``tanh`` pooler on
``[CLS]``) is :mod:`nets.bert`'s.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import torch

from harness.errors import HarnessError
from nets.bert import BertEncoder, BertSize
from nets.tf_checkpoint import is_bookkeeping, read_dump

EMBEDDINGS = {  # TF name -> ours (a BertEncoder key), transposed?
    "bert/embeddings/word_embeddings": ("tokens.weight", False),
    "bert/embeddings/position_embeddings": ("positions.weight", False),
    "bert/embeddings/token_type_embeddings": ("segments.weight", False),
    "bert/embeddings/LayerNorm/gamma": ("norm.weight", False),
    "bert/embeddings/LayerNorm/beta": ("norm.bias", False),
    "bert/pooler/dense/kernel": ("pooler.0.weight", True),
    "bert/pooler/dense/bias": ("pooler.0.bias", False),
}
PER_LAYER = {  # TF name inside bert/encoder/layer_<i>/ -> ours inside blocks.<i>., transposed?
    "attention/output/dense/kernel": ("attention.out.weight", True),
    "attention/output/dense/bias": ("attention.out.bias", False),
    "attention/output/LayerNorm/gamma": ("norm1.weight", False),
    "attention/output/LayerNorm/beta": ("norm1.bias", False),
    "intermediate/dense/kernel": ("feed_forward.0.weight", True),
    "intermediate/dense/bias": ("feed_forward.0.bias", False),
    "output/dense/kernel": ("feed_forward.2.weight", True),
    "output/dense/bias": ("feed_forward.2.bias", False),
    "output/LayerNorm/gamma": ("norm2.weight", False),
    "output/LayerNorm/beta": ("norm2.bias", False),
}
HEADS = {  # TF name -> ours (a nets.masked_lm.BertPreTraining key), transposed?
    "cls/predictions/transform/dense/kernel": ("mlm.transform.0.weight", True),
    "cls/predictions/transform/dense/bias": ("mlm.transform.0.bias", False),
    "cls/predictions/transform/LayerNorm/gamma": ("mlm.transform.2.weight", False),
    "cls/predictions/transform/LayerNorm/beta": ("mlm.transform.2.bias", False),
    "cls/predictions/output_bias": ("mlm.bias", False),
    "cls/seq_relationship/output_weights": ("next_sentence.weight", False),
    "cls/seq_relationship/output_bias": ("next_sentence.bias", False),
}
QKV = ("query", "key", "value")  # attention/self/<name>/{kernel,bias}: stacked, in this order, into attention.qkv
LAYER = "bert/encoder/layer_{}/"


def config_from_json(path: str | Path) -> tuple[BertSize, int]:
    """The release's ``bert_config.json`` as a :class:`BertSize` and the number of token types."""
    try:
        raw = json.loads(Path(path).read_text())
        size = BertSize(vocab=raw["vocab_size"], dim=raw["hidden_size"], layers=raw["num_hidden_layers"],
                        heads=raw["num_attention_heads"], hidden=raw["intermediate_size"],
                        max_len=raw["max_position_embeddings"], dropout=raw["hidden_dropout_prob"])  # fmt: skip
        activation, types = raw.get("hidden_act", "gelu"), raw.get("type_vocab_size", 2)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HarnessError(f"{path}: not a BERT config ({type(exc).__name__}: {exc})") from exc
    if activation != "gelu":
        raise HarnessError(f"{path}: hidden_act {activation!r}; nets.bert implements the release's 'gelu' only")
    return size, types


def release_shapes(size: BertSize, type_vocab: int = 2) -> dict[str, tuple[int, ...]]:
    """Every variable of the released BERT of this size, TF name -> TF shape."""
    d, f = size.dim, size.hidden
    shapes = {
        "bert/embeddings/word_embeddings": (size.vocab, d),
        "bert/embeddings/position_embeddings": (size.max_len, d),
        "bert/embeddings/token_type_embeddings": (type_vocab, d),
        "bert/embeddings/LayerNorm/gamma": (d,),
        "bert/embeddings/LayerNorm/beta": (d,),
        "bert/pooler/dense/kernel": (d, d),
        "bert/pooler/dense/bias": (d,),
    }
    per_layer = {name: (d, d) if name.endswith("kernel") else (d,) for name in PER_LAYER}
    per_layer |= {"intermediate/dense/kernel": (d, f), "intermediate/dense/bias": (f,), "output/dense/kernel": (f, d)}
    per_layer |= {f"attention/self/{w}/{p}": (d, d) if p == "kernel" else (d,) for w in QKV for p in ("kernel", "bias")}
    for i in range(size.layers):
        shapes |= {LAYER.format(i) + name: shape for name, shape in per_layer.items()}
    return shapes


def check_release(arrays: dict[str, np.ndarray], size: BertSize, type_vocab: int, source: str | Path) -> None:
    """Every variable of :func:`release_shapes` present with its shape, and no other ``bert/`` weight; the first
    mismatch is one error naming ``source`` and the tensor."""
    expected = release_shapes(size, type_vocab)
    what = f"BERT with {size.layers} layers, hidden {size.dim}, feed-forward {size.hidden}, vocabulary {size.vocab}"
    for name, shape in expected.items():
        if name not in arrays:
            raise HarnessError(f"{source}: no tensor {name!r} (the config gives {what})")
        if tuple(arrays[name].shape) != shape:
            raise HarnessError(
                f"{source}: tensor {name!r} has shape {tuple(arrays[name].shape)}; the config gives {what}, so {shape}"
            )
    extra = sorted(n for n in arrays if n.startswith("bert/") and n not in expected and not is_bookkeeping(n))
    if extra:
        raise HarnessError(f"{source}: tensor {extra[0]!r} is not a variable of {what}")


def tf_to_state(
    arrays: dict[str, np.ndarray], size: BertSize, type_vocab: int = 2, source: str | Path = "dump"
) -> dict[str, torch.Tensor]:
    """:class:`BertEncoder`'s state dict from the release's variables ``arrays`` (checked by :func:`check_release`)."""
    check_release(arrays, size, type_vocab, source)
    state = {ours: arrays[tf].T if transpose else arrays[tf] for tf, (ours, transpose) in EMBEDDINGS.items()}
    for i in range(size.layers):
        layer, block = LAYER.format(i), f"blocks.{i}."
        for tf, (ours, transpose) in PER_LAYER.items():
            state[block + ours] = arrays[layer + tf].T if transpose else arrays[layer + tf]
        kernels, biases = ([arrays[f"{layer}attention/self/{w}/{p}"] for w in QKV] for p in ("kernel", "bias"))
        state[block + "attention.qkv.weight"] = np.concatenate([k.T for k in kernels])  # (3D, D): rows q, k, v
        state[block + "attention.qkv.bias"] = np.concatenate(biases)
    return {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)) for k, v in state.items()}


def heads_to_state(
    arrays: dict[str, np.ndarray], size: BertSize, source: str | Path = "dump"
) -> dict[str, torch.Tensor]:
    """The pre-training heads of :data:`HEADS` as :class:`nets.masked_lm.BertPreTraining` keys; every one must be in
    ``arrays`` with the release's shape for ``size``, else one error names ``source`` and the tensor."""
    d = size.dim
    shapes = {"cls/predictions/transform/dense/kernel": (d, d), "cls/predictions/output_bias": (size.vocab,),
              "cls/seq_relationship/output_weights": (2, d), "cls/seq_relationship/output_bias": (2,)}  # fmt: skip
    state = {}
    for tf, (ours, transpose) in HEADS.items():
        shape = shapes.get(tf, (d,))
        if tf not in arrays or tuple(arrays[tf].shape) != shape:
            found = "absent" if tf not in arrays else f"of shape {tuple(arrays[tf].shape)}"
            raise HarnessError(f"{source}: pre-training head tensor {tf!r} is {found}; the config gives {shape}")
        state[ours] = arrays[tf].T if transpose else arrays[tf]
    return {k: torch.from_numpy(np.ascontiguousarray(v, dtype=np.float32)) for k, v in state.items()}


_HF_LAYER = re.compile(r"encoder\.layer\.(\d+)\.(.+)")
_HF_NAMES = {  # transformers' BertModel names -> ours
    "embeddings.word_embeddings.weight": "tokens.weight",
    "embeddings.position_embeddings.weight": "positions.weight",
    "embeddings.token_type_embeddings.weight": "segments.weight",
    "embeddings.LayerNorm.weight": "norm.weight",
    "embeddings.LayerNorm.bias": "norm.bias",
    "pooler.dense.weight": "pooler.0.weight",
    "pooler.dense.bias": "pooler.0.bias",
}
_HF_PER_LAYER = {
    "attention.output.dense": "attention.out",
    "attention.output.LayerNorm": "norm1",
    "intermediate.dense": "feed_forward.0",
    "output.dense": "feed_forward.2",
    "output.LayerNorm": "norm2",
}


def hf_to_state(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``transformers``' ``BertModel`` state dict (or a task model's, its keys under ``bert.``) -> ours; buffers and
    heads are left out."""
    state = {k.removeprefix("bert."): v for k, v in state.items()}
    out = {ours: state[hf] for hf, ours in _HF_NAMES.items()}
    layers = sorted({int(m[1]) for k in state if (m := _HF_LAYER.fullmatch(k))})
    for i in layers:
        hf, block = f"encoder.layer.{i}.", f"blocks.{i}."
        for name, ours in _HF_PER_LAYER.items():
            for p in ("weight", "bias"):
                out[f"{block}{ours}.{p}"] = state[f"{hf}{name}.{p}"]
        for p in ("weight", "bias"):
            out[f"{block}attention.qkv.{p}"] = torch.cat([state[f"{hf}attention.self.{w}.{p}"] for w in QKV])
    return out


def convert(dump: str | Path, config: str | Path, out: str | Path, heads: str | Path | None = None) -> Path:
    """Read the ``.npz`` dump and ``bert_config.json``, check every tensor against the config, load them into a
    :class:`BertEncoder` of that size (nothing missing, nothing left over) and write ``out`` (safetensors); with
    ``heads``, write the pre-training heads there too (:func:`heads_to_state`)."""
    from safetensors.torch import save_file

    size, type_vocab = config_from_json(config)
    arrays = read_dump(dump)
    state = tf_to_state(arrays, size, type_vocab, dump)
    head_state = heads_to_state(arrays, size, dump) if heads is not None else None
    with torch.device("meta"):
        encoder = BertEncoder(size, type_vocab)
    try:
        encoder.load_state_dict(state, strict=True, assign=True)
    except RuntimeError as exc:
        raise HarnessError(f"{dump}: weights do not fit the config {config}: {exc}") from exc
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out))
    if head_state is not None:
        Path(heads).parent.mkdir(parents=True, exist_ok=True)
        save_file(head_state, str(heads))
    return Path(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dump", help=".npz of the TF checkpoint, keyed by variable name (nets.tf_checkpoint)")
    parser.add_argument("config", help="the release's bert_config.json")
    parser.add_argument("out", help="the .safetensors file to write (BertEncoder's keys)")
    parser.add_argument("--heads", help="also write the pre-training heads (cls/*) to this .safetensors file")
    args = parser.parse_args(argv)
    print(convert(args.dump, args.config, args.out, args.heads))


if __name__ == "__main__":
    main()
