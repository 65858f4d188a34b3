"""The converter of Google's released BERT checkpoints (:mod:`nets.bert_weights`), on a NumPy dump in the release's
exact layout (variable names, TF shapes, ``(in, out)`` kernels) that the test writes from a small random model; and
:mod:`nets.bert` against ``transformers``' ``BertModel`` (the reference check): one small configuration, random
weights, the same outputs and the same parameter counts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from nets.bert import SIZES, BertEncoder, BertSize, encoder_parameter_count
from nets.bert_weights import config_from_json, convert, hf_to_state
from nets.weights import read_state

SMALL = BertSize(vocab=40, dim=16, layers=2, heads=2, hidden=24, max_len=12, dropout=0.1)


def randomised(module: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Every parameter (LayerNorms and biases too) drawn at random, so a swapped or untransposed tensor shows."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for param in module.parameters():
            param.normal_(0.0, 0.3)
    return module.eval()


def release_dump(encoder: BertEncoder) -> dict[str, np.ndarray]:
    """What ``tf.train.load_checkpoint`` gives for the release's ``bert_model.ckpt``: the ``bert/`` variables, the
    pre-training heads, ``global_step`` and an optimiser slot."""
    s = {k: v.detach().numpy() for k, v in encoder.state_dict().items()}
    e = "bert/embeddings/"
    dump = {
        e + "word_embeddings": s["tokens.weight"],
        e + "position_embeddings": s["positions.weight"],
        e + "token_type_embeddings": s["segments.weight"],
        e + "LayerNorm/gamma": s["norm.weight"],
        e + "LayerNorm/beta": s["norm.bias"],
        "bert/pooler/dense/kernel": s["pooler.0.weight"].T,
        "bert/pooler/dense/bias": s["pooler.0.bias"],
        "cls/predictions/output_bias": np.zeros(SMALL.vocab, np.float32),
        "cls/seq_relationship/output_weights": np.zeros((2, SMALL.dim), np.float32),
        "global_step": np.array(1000),
        e + "word_embeddings/adam_m": np.zeros_like(s["tokens.weight"]),
    }
    d = encoder.blocks[0].attention.out.in_features
    for i in range(len(encoder.blocks)):
        b, q = f"blocks.{i}.", f"bert/encoder/layer_{i}/"
        qkv_w, qkv_b = s[b + "attention.qkv.weight"], s[b + "attention.qkv.bias"]
        for n, name in enumerate(("query", "key", "value")):
            dump[f"{q}attention/self/{name}/kernel"] = qkv_w[n * d : (n + 1) * d].T
            dump[f"{q}attention/self/{name}/bias"] = qkv_b[n * d : (n + 1) * d]
        for tf, ours in (("attention/output/dense", "attention.out"), ("intermediate/dense", "feed_forward.0"),
                         ("output/dense", "feed_forward.2")):  # fmt: skip
            dump[f"{q}{tf}/kernel"], dump[f"{q}{tf}/bias"] = s[f"{b}{ours}.weight"].T, s[f"{b}{ours}.bias"]
        for tf, ours in (("attention/output/LayerNorm", "norm1"), ("output/LayerNorm", "norm2")):
            dump[f"{q}{tf}/gamma"], dump[f"{q}{tf}/beta"] = s[f"{b}{ours}.weight"], s[f"{b}{ours}.bias"]
    return dump


def write_release(folder: Path, encoder: BertEncoder, size: BertSize = SMALL) -> tuple[Path, Path]:
    np.savez(folder / "dump.npz", **release_dump(encoder))
    config = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": size.dropout,
              "hidden_size": size.dim, "initializer_range": 0.02, "intermediate_size": size.hidden,
              "max_position_embeddings": size.max_len, "num_attention_heads": size.heads,
              "num_hidden_layers": size.layers, "type_vocab_size": 2, "vocab_size": size.vocab}  # fmt: skip
    (folder / "bert_config.json").write_text(json.dumps(config))
    return folder / "dump.npz", folder / "bert_config.json"


def inputs() -> dict[str, torch.Tensor]:
    ids = torch.tensor([[2, 7, 9, 31, 3, 0, 0], [2, 5, 3, 11, 17, 39, 3]])
    return {
        "input_ids": ids,
        "attention_mask": (ids != 0).long(),
        "token_type_ids": torch.tensor([[0] * 7, [0] * 3 + [1] * 4]),
    }


def test_the_release_layout_converts_to_the_same_encoder(tmp_path: Path) -> None:
    source = randomised(BertEncoder(SMALL))
    dump, config = write_release(tmp_path, source)
    assert config_from_json(config) == (SMALL, 2)
    target = BertEncoder(SMALL).eval()
    target.load_state_dict(read_state(convert(dump, config, tmp_path / "bert.safetensors")))  # strict
    with torch.no_grad():
        (expected, expected_pooled), (got, got_pooled) = source(**inputs()), target(**inputs())
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    torch.testing.assert_close(got_pooled, expected_pooled, rtol=0, atol=0)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("drop", "bert/encoder/layer_1/attention/self/key/bias"),
        ("untransposed", "bert/encoder/layer_0/intermediate/dense/kernel"),
        ("extra layer", "bert/encoder/layer_2/output/dense/bias"),
    ],
)
def test_a_mismatch_names_the_file_and_tensor(tmp_path: Path, change: str, named: str) -> None:
    dump, config = write_release(tmp_path, BertEncoder(SMALL))
    arrays = dict(np.load(dump))
    if change == "drop":
        del arrays[named]
    elif change == "untransposed":
        arrays[named] = arrays[named].T  # (F, D) where the release has (D, F)
    else:
        arrays[named] = arrays["bert/encoder/layer_1/output/dense/bias"]
    np.savez(dump, **arrays)
    with pytest.raises(HarnessError) as error:
        convert(dump, config, tmp_path / "out.safetensors")
    message = str(error.value)
    assert message.startswith(f"{dump}: ") and repr(named) in message and "\n" not in message
    assert not (tmp_path / "out.safetensors").exists()


def test_a_config_that_is_not_bert_is_named(tmp_path: Path) -> None:
    (tmp_path / "bert_config.json").write_text('{"hidden_size": 16}')
    with pytest.raises(HarnessError, match="bert_config.json: not a BERT config"):
        config_from_json(tmp_path / "bert_config.json")


transformers = pytest.importorskip("transformers")  # dev extra, pinned in pyproject.toml


def hf_config(size: BertSize) -> object:
    return transformers.BertConfig(
        vocab_size=size.vocab, hidden_size=size.dim, num_hidden_layers=size.layers, num_attention_heads=size.heads,
        intermediate_size=size.hidden, max_position_embeddings=size.max_len, type_vocab_size=2, hidden_act="gelu",
        layer_norm_eps=1e-12, hidden_dropout_prob=size.dropout, attention_probs_dropout_prob=size.dropout,
    )  # fmt: skip


def test_same_outputs_as_transformers_bert() -> None:
    hf = randomised(transformers.BertModel(hf_config(SMALL), add_pooling_layer=True))
    ours = BertEncoder(SMALL).eval()
    ours.load_state_dict(hf_to_state(hf.state_dict()))  # strict: every tensor mapped, none left over
    with torch.no_grad():
        expected = hf(**inputs())
        hidden, pooled = ours(**inputs())
    real = inputs()["attention_mask"].bool()  # padded positions' states are unused (and differ by the masking)
    torch.testing.assert_close(hidden[real], expected.last_hidden_state[real], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(pooled, expected.pooler_output, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size", ["base", "large"])
def test_same_parameter_count_as_transformers_bert(size: str) -> None:
    """BERT base 109,482,240 and large 335,141,888 parameters, counted from the configuration, in ours and in
    ``transformers``' BertModel with its pooler (both built on the meta device: shapes only)."""
    with torch.device("meta"):
        hf = transformers.BertModel(hf_config(SIZES[size]))
        ours = BertEncoder(SIZES[size])
    count = encoder_parameter_count(SIZES[size])
    assert sum(p.numel() for p in ours.parameters()) == count == sum(p.numel() for p in hf.parameters())
    assert count == {"base": 109_482_240, "large": 335_141_888}[size]
