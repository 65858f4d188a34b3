"""XLNet's model against ``transformers``' XLNetModel / XLNetLMHeadModel (the reference check): one small random
configuration, the weights mapped by name, equal outputs of both streams for a given ``perm_mask``,
``target_mapping``, segments, padding and memory; equal parameter counts at Base and Large."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from reproductions.xlnet.model import XLNET_BASE, XLNET_LARGE, XLNet, XLNetConfig, XLNetLM
from reproductions.xlnet.weights import hf_to_state

transformers = pytest.importorskip("transformers")  # dev extra, pinned in pyproject.toml

SMALL = XLNetConfig(vocab=50, dim=32, layers=2, heads=4, head_dim=8, inner=64, mem_len=5)


def hf_config(c: XLNetConfig, **extra):  # noqa: ANN003, ANN201
    return transformers.XLNetConfig(
        vocab_size=c.vocab, d_model=c.dim, n_layer=c.layers, n_head=c.heads, d_inner=c.inner,
        ff_activation="gelu_new", untie_r=True, attn_type="bi", layer_norm_eps=c.eps, **extra,
    )  # fmt: skip


def models(config: XLNetConfig = SMALL, seed: int = 0, **extra) -> tuple:  # noqa: ANN003
    """transformers' LM head model with random weights (LayerNorms and biases too) and ours with them mapped."""
    torch.manual_seed(seed)
    hf = transformers.XLNetLMHeadModel(hf_config(config, mem_len=config.mem_len, **extra)).eval()
    with torch.no_grad():
        for param in hf.parameters():
            param.normal_(0.0, 0.3)
    ours = XLNetLM(config).eval()
    ours.load_state_dict(hf_to_state(hf.state_dict()))  # strict: every tensor mapped, none left over
    return hf, ours


def permutation_inputs(b: int = 2, t: int = 7, m: int = 3, seed: int = 1) -> dict[str, torch.Tensor]:
    """A random factorisation order per row; the last ``m`` of it are the targets (partial prediction)."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, SMALL.vocab, (b, t), generator=gen)
    perm = torch.zeros(b, t, t)
    mapping = torch.zeros(b, m, t)
    for row in range(b):
        order = torch.randperm(t, generator=gen)
        rank = torch.empty(t, dtype=torch.long)
        rank[order] = torch.arange(t)
        perm[row] = (rank[None, :] >= rank[:, None]).float()  # i may see j only if j comes before i in z
        mapping[row, torch.arange(m), order[-m:]] = 1.0
    segments = torch.tensor([[0] * 4 + [1] * (t - 4)] * b)
    return {"input_ids": ids, "perm_mask": perm, "target_mapping": mapping, "token_type_ids": segments}


def hf_streams(hf, **inputs) -> tuple[torch.Tensor, torch.Tensor, list]:  # noqa: ANN001
    """``(h, g, mems)`` of transformers' final layer (batch-first; mems time-first as it keeps them)."""
    out = hf.transformer(**inputs, output_hidden_states=True, use_mems=True)
    h, g = out.hidden_states[-2:]
    return h, g, out.mems


def test_both_streams_equal_transformers_with_memory_segments_and_padding():
    hf, ours = models()
    first, second = permutation_inputs(seed=1), permutation_inputs(seed=2)
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, :2] = 0  # left padding, as XLNet pads
    with torch.no_grad():
        _, _, hf_mems = hf_streams(hf, **first)
        h, g, _ = hf_streams(hf, **second, mems=hf_mems, attention_mask=mask)
        logits = hf(**second, mems=hf_mems, attention_mask=mask).logits
        mine = ours.transformer(**first)
        got = ours.transformer(**second, mems=mine.mems, attention_mask=mask)
        got_logits, _ = ours(**second, mems=mine.mems, attention_mask=mask)
    for layer, mem in enumerate(hf_mems):
        torch.testing.assert_close(mine.mems[layer], mem.transpose(0, 1), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got.h, h, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got.g, g, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got_logits, logits, rtol=1e-4, atol=1e-4)


def test_content_stream_alone_and_bidirectional_data_equal_transformers():
    hf, ours = models(replace(SMALL, bi_data=True, clamp_len=3), bi_data=True, clamp_len=3)
    ids = permutation_inputs()["input_ids"]
    with torch.no_grad():
        expected = hf.transformer(input_ids=ids).last_hidden_state
        got = ours.transformer(ids)
    assert got.g is None
    torch.testing.assert_close(got.h, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("config", "count"), [(XLNET_BASE, 116_718_336), (XLNET_LARGE, 360_268_800)])
def test_parameter_counts_equal_transformers(config: XLNetConfig, count: int):
    with torch.device("meta"):  # shapes only: no allocation of 117M / 360M parameters
        hf = transformers.XLNetModel(hf_config(config))
        ours = XLNet(config)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in hf.parameters()) == count
