"""GPT's model against ``transformers``' OpenAIGPTModel (the reference check), the converter on files in the
release's exact layout, and the fine-tuning heads of Figure 1."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from harness.errors import HarnessError
from reproductions.gpt.model import GPT, GPT_1, GPTConfig, GPTForTask, lm_loss
from reproductions.gpt.weights import convert, hf_to_state, read_vocabulary, released_to_state

transformers = pytest.importorskip("transformers")  # dev extra, pinned in pyproject.toml

SMALL = GPTConfig(vocab=60, n_ctx=16, dim=32, layers=2, heads=4, hidden=128)


def hf_model(config: GPTConfig = SMALL, seed: int = 0):
    """transformers' OpenAIGPTModel with random weights (biases and LayerNorms randomised too)."""
    torch.manual_seed(seed)
    hf_config = transformers.OpenAIGPTConfig(
        vocab_size=config.vocab, n_positions=config.n_ctx, n_embd=config.dim, n_layer=config.layers,
        n_head=config.heads, afn="gelu",  # transformers' "gelu" for openai-gpt is the tanh approximation
    )  # fmt: skip
    model = transformers.OpenAIGPTModel(hf_config).eval()
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.3)
    return model


def test_hidden_states_equal_transformers():
    hf = hf_model()
    ours = GPT(SMALL).eval()
    ours.load_state_dict(hf_to_state(hf.state_dict()))  # strict: every tensor mapped, none left over
    ids = torch.randint(0, SMALL.vocab, (3, 11))
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0  # right padding, as the released code pads
    with torch.no_grad():
        expected = hf(input_ids=ids, attention_mask=mask).last_hidden_state
        got = ours.hidden_states(ids, mask)
    real = mask.bool()
    torch.testing.assert_close(got[real], expected[real], rtol=1e-5, atol=1e-5)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in hf.parameters())


def test_full_size_parameter_count_equals_transformers():
    with torch.device("meta"):  # shapes only: no 116M-parameter allocation
        hf = transformers.OpenAIGPTModel(transformers.OpenAIGPTConfig())
        ours = GPT(GPT_1)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in hf.parameters()) == 116_534_784


def write_release(folder: Path, hf) -> None:
    """The release's files from a transformers model: params_shapes.json + 10 shards in the TF variable order."""
    state = {k: v.numpy() for k, v in hf.state_dict().items()}
    arrays = [state["positions_embed.weight"], state["tokens_embed.weight"]]
    layers = hf.config.n_layer
    for i in range(layers):
        for module in ("attn.c_attn", "attn.c_proj", "ln_1", "mlp.c_fc", "mlp.c_proj", "ln_2"):
            weight, bias = state[f"h.{i}.{module}.weight"], state[f"h.{i}.{module}.bias"]
            arrays += [weight[None] if weight.ndim == 2 else weight, bias]  # conv weights (1, in, out)
    (folder / "params_shapes.json").write_text(json.dumps([list(a.shape) for a in arrays]))
    flat = np.concatenate([a.reshape(-1) for a in arrays]).astype(np.float32)
    for index, shard in enumerate(np.array_split(flat, 10)):
        np.save(folder / f"params_{index}.npy", shard)
    symbols = [f"s{i}</w>" for i in range(hf.config.vocab_size)]
    (folder / "encoder_bpe_40000.json").write_text(json.dumps({s: i for i, s in enumerate(symbols)}))
    (folder / "vocab_40000.bpe").write_text("#version: 0.2\ns 0</w>\ns 1\n")


def test_converter_reads_the_release_layout(tmp_path):
    hf = hf_model(seed=1)
    write_release(tmp_path, hf)
    state = convert(tmp_path, tmp_path / "gpt.safetensors")
    ours = GPT(SMALL).eval()
    ours.load_state_dict({k.removeprefix("model."): v for k, v in state.items()})
    ids = torch.randint(0, SMALL.vocab, (2, 9))
    with torch.no_grad():
        torch.testing.assert_close(ours.hidden_states(ids), hf(input_ids=ids).last_hidden_state, rtol=1e-5, atol=1e-5)
    from safetensors.torch import load_file

    assert load_file(str(tmp_path / "gpt.safetensors")).keys() == state.keys()
    encoder, merges = read_vocabulary(tmp_path)
    assert len(encoder) == SMALL.vocab and merges == [("s", "0</w>"), ("s", "1")]


def test_converter_errors_name_the_file(tmp_path):
    write_release(tmp_path, hf_model())
    (tmp_path / "params_7.npy").unlink()
    with pytest.raises(HarnessError, match=r"params_7\.npy: missing"):
        convert(tmp_path, tmp_path / "out.safetensors")
    np.save(tmp_path / "params_7.npy", np.zeros(3, np.float32))
    with pytest.raises(HarnessError, match="params_shapes.json describes"):
        convert(tmp_path, tmp_path / "out.safetensors")
    (tmp_path / "vocab_40000.bpe").write_text("t h\n")
    with pytest.raises(HarnessError, match=r"vocab_40000\.bpe:1: expected the '#version' header"):
        read_vocabulary(tmp_path)
    with pytest.raises(HarnessError, match="2 embeddings"):
        released_to_state([np.zeros((4, 2))] * 3)


def test_task_heads_follow_figure_1():
    torch.manual_seed(0)
    ids = torch.randint(0, SMALL.vocab + 3, (4, 2, 10))
    mask = torch.ones_like(ids)
    mask[:, :, 8:] = 0
    similarity = GPTForTask(SMALL, classes=3, kind="similarity").eval()
    with torch.no_grad():
        scores = similarity(ids, mask)
        swapped = similarity(ids.flip(1), mask.flip(1))
    assert scores.shape == (4, 3)
    torch.testing.assert_close(scores, swapped)  # both orderings added: the order of the pair does not matter
    choice = GPTForTask(SMALL, kind="multiple_choice").eval()
    with torch.no_grad():
        scores, lm = choice.logits(ids, mask)
    assert scores.shape == (4, 2) and lm.shape == (8, 10, SMALL.vocab + 3)
    single = GPTForTask(SMALL, classes=5).eval()
    with torch.no_grad():
        h = single.hidden_states(ids[:, 0], mask[:, 0])
        expected = single.classifier(h[:, 7])  # the last real token: the extract token
        torch.testing.assert_close(single(ids[:, 0], mask[:, 0]), expected)
    with pytest.raises(ValueError, match="task kind"):
        GPTForTask(SMALL, kind="regression")


def test_lm_loss_counts_real_tokens_only():
    logits = torch.zeros(1, 4, 5)
    logits[0, 0, 2] = 10.0  # confident and right about token 1
    ids = torch.tensor([[0, 2, 3, 4]])
    mask = torch.tensor([[1, 1, 0, 0]])
    assert lm_loss(logits, ids, mask).item() == pytest.approx(4 * np.exp(-10.0), rel=1e-3)
