"""harness.profile: multiply-adds against closed forms (a Transformer LM at a stated length, attention and LSTM
kernels), named inputs made valid and deterministic, and a spec that disagrees with its model named in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from harness.errors import HarnessError
from harness.profile import count_macs, example_inputs, profile_model, run_forward
from harness.registry import InputSpec, ModelSpec
from nets.transformer import TransformerBlock
from tests.conftest import cli_json, harness_cli, write_dist_info

LM = "nets.transformer:TransformerLM"
VOCAB, DIM, LAYERS, HEADS, HIDDEN, T = 1000, 64, 2, 4, 256, 128


def lm_spec(t: int = T, mask: bool = True, **kwargs: int) -> ModelSpec:
    inputs = (InputSpec("input_ids", (1, t), "int64", high=VOCAB),)
    inputs += (InputSpec("attention_mask", (1, t), "int64", fill=1),) if mask else ()
    config = {"vocab": VOCAB, "dim": DIM, "layers": LAYERS, "heads": HEADS, "hidden": HIDDEN, "max_len": T, **kwargs}
    return ModelSpec(id="tiny-lm", build=LM, kwargs=config, dataset="text", inputs=inputs)


def transformer_lm_macs(t: int, layers: int, dim: int, hidden: int, vocab: int) -> int:
    """Per layer: Q, K, V and output projections 4·T·D², scores QK^T T·T·D, values AV T·T·D, feed-forward 2·T·D·F;
    then the tied output layer T·D·V. Masks do not reduce the count (the dense products are computed)."""
    per_layer = 4 * t * dim * dim + 2 * t * t * dim + 2 * t * dim * hidden
    return layers * per_layer + t * dim * vocab


@pytest.mark.parametrize("mask", [True, False])
def test_transformer_lm_macs_at_a_stated_length_match_the_closed_form(mask: bool) -> None:
    profile = profile_model(lm_spec(mask=mask))
    assert profile.macs == transformer_lm_macs(T, LAYERS, DIM, HIDDEN, VOCAB) == 24_969_216
    per_layer = 4 * DIM * DIM + 4 * DIM + 2 * DIM * HIDDEN + HIDDEN + DIM + 4 * DIM  # weights, biases, 2 LayerNorms
    assert profile.params == VOCAB * DIM + T * DIM + LAYERS * per_layer
    assert profile.input_shape == (1, T)
    names = {"input_ids": [1, T], "attention_mask": [1, T]} if mask else {"input_ids": [1, T]}
    assert profile.as_dict()["inputs"] == names


def test_the_attention_share_grows_with_the_square_of_the_length() -> None:
    short = profile_model(lm_spec(t=32)).macs
    assert short == transformer_lm_macs(32, LAYERS, DIM, HIDDEN, VOCAB)
    attention = lambda t: LAYERS * 2 * t * t * DIM  # noqa: E731
    assert profile_model(lm_spec(t=64)).macs - 2 * short == attention(64) - 2 * attention(32)


@pytest.mark.slow
def test_gpt_at_512_tokens() -> None:
    """OpenAI GPT (Radford et al. 2018): 12 layers, 768 wide, 3072 inner, 40478 tokens, 512 positions."""
    spec = ModelSpec(
        id="gpt-size", build=LM, dataset="text", kwargs={"vocab": 40478, "max_len": 512},
        inputs=(InputSpec("input_ids", (1, 512), "int64", high=40478),),
    )  # fmt: skip
    profile = profile_model(spec)
    assert profile.params == 116_534_784
    assert profile.macs == transformer_lm_macs(512, 12, 768, 3072, 40478) == 64_234_979_328


def test_attention_kernels_count_the_score_and_value_products() -> None:
    """Every way torch computes attention counts QK^T + AV: SDPA's CPU kernel, its bmm fallback, explicit matmuls,
    nn.MultiheadAttention's and nn.TransformerEncoderLayer's fused inference paths."""
    b, h, t, d = 2, 4, 10, 8
    q, k, v = (torch.randn(b, h, t, d) for _ in range(3))
    products = 2 * b * h * t * t * d
    explicit = lambda q, k, v: torch.softmax(q @ k.transpose(-1, -2) / d**0.5, -1) @ v  # noqa: E731
    assert count_macs(explicit, q, k, v) == products
    assert count_macs(F.scaled_dot_product_attention, q, k, v) == products
    assert count_macs(F.scaled_dot_product_attention, q, k, v, is_causal=True) == products  # dense, as computed
    dropout = lambda *qkv: F.scaled_dot_product_attention(*qkv, dropout_p=0.1)  # noqa: E731  (the bmm path)
    assert count_macs(dropout, q, k, v) == products
    dim, x = h * d, torch.randn(b, t, h * d)
    mha = nn.MultiheadAttention(dim, h, batch_first=True).eval()
    expected = b * (4 * t * dim * dim) + products
    assert count_macs(lambda x: mha(x, x, x, need_weights=False), x) == expected
    assert count_macs(lambda x: mha.train()(x, x, x), x) == expected
    layer = nn.TransformerEncoderLayer(dim, h, 64, batch_first=True)
    ffn = b * t * 2 * dim * 64
    assert count_macs(layer.eval(), x) == count_macs(layer.train(), x) == expected + ffn
    assert count_macs(TransformerBlock(dim, h, 64).eval(), x) == expected + ffn  # nets' block: the same count


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_counts_its_gate_matrices_once_per_step(bidirectional: bool) -> None:
    """nn.LSTM's oneDNN kernel (no projection) and its decomposed path (projection) by the same rule as nn.GRU."""
    t, i, hid, layers, directions = 7, 5, 12, 2, 1 + bidirectional
    x = torch.randn(1, t, i)
    lstm = nn.LSTM(i, hid, layers, batch_first=True, bidirectional=bidirectional)
    first, later = 4 * hid * (i + hid), 4 * hid * (directions * hid + hid)
    assert count_macs(lstm, x) == t * directions * (first + later)
    gru = nn.GRU(i, hid, batch_first=True)
    assert count_macs(gru, x) == t * 3 * hid * (i + hid)


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
def test_projected_lstm_is_counted_the_same_way() -> None:
    t, i, hid, proj = 7, 5, 12, 3
    lstm = nn.LSTM(i, hid, batch_first=True, proj_size=proj)
    assert count_macs(lstm, torch.randn(1, t, i)) == t * (4 * hid * (i + proj) + proj * hid)


def test_example_inputs_are_valid_and_deterministic() -> None:
    spec = ModelSpec(
        id="speech", build="x:y", dataset="librispeech",
        inputs=(
            InputSpec("features", (2, 50, 80)),
            InputSpec("lengths", (2,), "int64", low=1, high=51),
            InputSpec("tokens", (2, 9), "int32", high=30),
            InputSpec("mask", (2, 9), "bool", fill=1),
        ),
    )  # fmt: skip
    torch.manual_seed(0)
    args, first = example_inputs(spec)
    torch.manual_seed(0)
    _, again = example_inputs(spec)
    assert args == [] and list(first) == ["features", "lengths", "tokens", "mask"]
    assert all(torch.equal(first[name], again[name]) for name in first)
    assert first["features"].dtype == torch.float32 and first["features"].std() > 0.5
    assert first["lengths"].min() >= 1 and first["lengths"].max() <= 50 and first["lengths"].dtype == torch.int64
    assert first["tokens"].max() < 30 and first["tokens"].dtype == torch.int32
    assert first["mask"].dtype == torch.bool and first["mask"].all()


def test_one_input_specs_are_fed_as_before() -> None:
    """A one-input spec: one positional tensor, torch.randn after the seed, exactly what profiling always drew."""
    spec = ModelSpec(id="mlp", build="x:y", input_shape=(1, 64), dataset="digits", test_input_shape=(2, 64))
    torch.manual_seed(3)
    (tensor,), kwargs = example_inputs(spec)
    torch.manual_seed(3)
    assert kwargs == {} and torch.equal(tensor, torch.randn(1, 64))
    assert example_inputs(spec, test=True)[0][0].shape == (2, 64)
    assert not spec.named_inputs and spec.input_specs()[0].shape == (1, 64)


BOW = "toy_paper.text_model:ToyBagOfWords"


def bow_spec(*inputs: InputSpec, **fields: object) -> ModelSpec:
    return ModelSpec(id="bad-bow", build=BOW, dataset="toy-text", inputs=inputs, **fields)


IDS, MASK = InputSpec("token_ids", (1, 6), "int64", high=100), InputSpec("attention_mask", (1, 6), "int64", fill=1)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (lambda: bow_spec(IDS, MASK, InputSpec("segment_ids", (1, 6), "int64", high=2)),
         r"model 'bad-bow': ToyBagOfWords.forward\(token_ids, attention_mask\) has no argument for input 'segment_ids'"),
        (lambda: bow_spec(IDS), r"model 'bad-bow': .*argument 'attention_mask' has no default and no input spec"),
        (lambda: bow_spec(InputSpec("token_ids", (1, 6), "int64", high=500), MASK),
         r"model 'bad-bow': forward fails at its declared inputs \(token_ids \(1, 6\) int64, attention_mask \(1, 6\) "
         r"int64\): IndexError: index out of range"),
        (lambda: bow_spec(IDS, InputSpec("attention_mask", (1, 5), "int64", fill=1)),
         r"model 'bad-bow': forward fails at its declared inputs .*attention_mask \(1, 5\) int64\): RuntimeError"),
        (lambda: ModelSpec(id="bad-bow", build=BOW, dataset="toy-text", input_shape=(1, 6), input_dtype="int64"),
         r"model 'bad-bow': ToyBagOfWords.forward\(.*\) does not take exactly one input tensor"),
    ],
)  # fmt: skip
def test_a_spec_that_disagrees_with_its_model_is_named(toy: Path, spec, message: str) -> None:
    with pytest.raises(HarnessError, match=message) as err:
        profile_model(spec())
    assert "\n" not in str(err.value)
    with pytest.raises(HarnessError, match=message):  # the contract tests' path says the same
        run_forward(spec(), spec().instantiate(), test=True)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: InputSpec("ids", (1, 8), "int64"), "input 'ids': an integer input needs 'high'"),
        (lambda: InputSpec("ids", (1, 8), "int64", low=5, high=5), r"input 'ids': 'high' \(5\) must be above"),
        (lambda: InputSpec("ids", (1, 0)), r"input 'ids': shape \(1, 0\) must be"),
        (lambda: InputSpec("ids", (1, 8), "long", high=3), "input 'ids': unknown dtype 'long'"),
        (lambda: InputSpec("input-ids", (1, 8)), "input 'input-ids': the name must be a Python identifier"),
        (lambda: bow_spec(IDS, IDS), "model 'bad-bow': input names repeat"),
        (lambda: bow_spec(IDS, MASK, test_inputs=(MASK, IDS)), "model 'bad-bow': 'test_inputs' .* same order"),
        (lambda: bow_spec(IDS, MASK, input_shape=(1, 7)), r"'input_shape' \(1, 7\) is not the shape of the first"),
        (lambda: bow_spec(IDS, MASK, test_input_shape=(1, 3)), "with 'inputs', give 'test_inputs'"),
        (lambda: ModelSpec(id="m", build=BOW, dataset="x"), "model 'm': give 'input_shape'"),
        (lambda: ModelSpec(id="m", build=BOW, input_shape=(1, 2)), "model 'm': 'dataset' is required"),
    ],
)  # fmt: skip
def test_bad_specs_are_refused_where_they_are_written(make, message: str) -> None:
    with pytest.raises(HarnessError, match=message):
        make()


def test_cli_profiles_the_toy_two_input_model(toy_site: Path, tmp_path: Path) -> None:
    profile = cli_json("profile", "toy-bow", cwd=tmp_path, site=toy_site)
    # 100·16 + 16·16 + 16 + 16·10 + 10 parameters; 32·16·16 + 16·10 multiply-adds at 32 tokens
    assert profile == {"model": "toy-bow", "params": 2042, "macs": 8352, "input_shape": [1, 32],
                       "inputs": {"token_ids": [1, 32], "attention_mask": [1, 32]}}  # fmt: skip


def test_cli_names_a_plugin_spec_that_disagrees_with_its_model(toy_site: Path, tmp_path: Path) -> None:
    plugin = toy_site / "wrong_plugin"  # (the site folder is on the path, like site-packages)
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(
        "from harness.registry import InputSpec, ModelSpec, Reproduction\n"
        "REPRODUCTION = Reproduction(id='wrong', title='Wrong', arxiv='2001.00002v1', package='wrong_plugin', models=(\n"
        "    ModelSpec(id='wrong-bow', build='toy_paper.text_model:ToyBagOfWords', dataset='toy-text',\n"
        "              inputs=(InputSpec('input_ids', (1, 8), 'int64', high=100),)),))\n"
    )
    write_dist_info(toy_site, "wrong-plugin", {"harness.reproductions": {"wrong": "wrong_plugin:REPRODUCTION"}})
    done = harness_cli("profile", "wrong-bow", cwd=tmp_path, site=toy_site)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("harness: error: model 'wrong-bow': ")
    assert "has no argument for input 'input_ids'" in done.stderr
