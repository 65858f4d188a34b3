"""nets.transformer against torch's own attention and encoder layer (copied weights), and the masks' meaning."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from nets.transformer import MultiHeadSelfAttention, TransformerBlock, TransformerLM

DIM, HEADS, HIDDEN, T = 32, 4, 64, 7


def _copy_attention(ours: MultiHeadSelfAttention, theirs: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        theirs.in_proj_weight.copy_(ours.qkv.weight)
        theirs.in_proj_bias.copy_(ours.qkv.bias)
        theirs.out_proj.weight.copy_(ours.out.weight)
        theirs.out_proj.bias.copy_(ours.out.bias)


def _padding() -> torch.Tensor:
    padding = torch.zeros(2, T, dtype=torch.bool)
    padding[1, 4:] = True  # the second sequence has 4 real tokens
    return padding


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("padded", [False, True])
def test_attention_equals_torch_multihead_attention(causal: bool, padded: bool) -> None:
    torch.manual_seed(0)
    ours, theirs = MultiHeadSelfAttention(DIM, HEADS).eval(), nn.MultiheadAttention(DIM, HEADS, batch_first=True)
    _copy_attention(ours, theirs.eval())
    x = torch.randn(2, T, DIM)
    padding = _padding() if padded else None
    future = torch.ones(T, T, dtype=torch.bool).triu(1) if causal else None  # torch: True = may not attend
    expected, _ = theirs(x, x, x, key_padding_mask=padding, attn_mask=future, need_weights=False)
    got = ours(x, causal=causal, padding=padding)
    real = ~padding if padded else torch.ones(2, T, dtype=torch.bool)  # padding queries' outputs are unused
    torch.testing.assert_close(got[real], expected[real], rtol=1e-5, atol=1e-5)
    assert torch.isfinite(got).all()


def _copy_block(ours: TransformerBlock, theirs: nn.TransformerEncoderLayer) -> None:
    _copy_attention(ours.attention, theirs.self_attn)
    pairs = [(ours.feed_forward[0], theirs.linear1), (ours.feed_forward[2], theirs.linear2)]
    pairs += [(ours.norm1, theirs.norm1), (ours.norm2, theirs.norm2)]
    with torch.no_grad():
        for mine, torchs in pairs:
            torchs.weight.copy_(mine.weight)
            torchs.bias.copy_(mine.bias)


@pytest.mark.parametrize("pre_norm", [False, True])
@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_block_equals_torch_encoder_layer(pre_norm: bool, activation: str) -> None:
    torch.manual_seed(0)
    ours = TransformerBlock(DIM, HEADS, HIDDEN, dropout=0.0, attention_dropout=0.0, activation=activation,
                            pre_norm=pre_norm).eval()  # fmt: skip
    theirs = nn.TransformerEncoderLayer(DIM, HEADS, HIDDEN, dropout=0.0, activation=activation, batch_first=True,
                                        norm_first=pre_norm).eval()  # fmt: skip
    _copy_block(ours, theirs)
    x = torch.randn(2, T, DIM)
    torch.testing.assert_close(ours(x), theirs(x), rtol=1e-5, atol=1e-5)
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    torch.testing.assert_close(ours(x, causal=True), theirs(x, src_mask=future), rtol=1e-5, atol=1e-5)


def _lm() -> TransformerLM:
    torch.manual_seed(0)
    return TransformerLM(vocab=50, dim=DIM, layers=2, heads=HEADS, hidden=HIDDEN, max_len=16, dropout=0.0).eval()


def test_causal_mask_blocks_the_future() -> None:
    lm = _lm()
    ids = torch.randint(0, 50, (1, 10))
    changed = ids.clone()
    changed[0, 6] = (ids[0, 6] + 1) % 50
    before, after = lm(ids), lm(changed)
    torch.testing.assert_close(before[:, :6], after[:, :6], rtol=0, atol=0)  # earlier positions: bit-identical
    assert (before[:, 6:] - after[:, 6:]).abs().amax(dim=-1).min() > 1e-4  # position 6 and later all change


def test_padding_mask_hides_padded_tokens() -> None:
    lm = _lm()
    ids = torch.randint(0, 50, (2, 9))
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, :3] = 0  # left padding: three pad tokens before six real ones
    padded = lm(ids, attention_mask=mask)
    other = ids.clone()
    other[1, :3] = torch.randint(0, 50, (3,))  # different pad tokens must not change the real tokens' outputs
    torch.testing.assert_close(padded[1, 3:], lm(other, attention_mask=mask)[1, 3:], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(padded[0], lm(ids[:1])[0], rtol=1e-5, atol=1e-5)  # a full row is unchanged
    assert torch.isfinite(padded).all()


def test_padded_block_equals_the_unpadded_sequence() -> None:
    torch.manual_seed(0)
    block = TransformerBlock(DIM, HEADS, HIDDEN, dropout=0.0, attention_dropout=0.0).eval()
    x = torch.randn(2, T, DIM)
    got = block(x, padding=_padding())  # bidirectional: only the padding mask keeps keys 4.. away
    torch.testing.assert_close(got[1, :4], block(x[1:, :4])[0], rtol=1e-5, atol=1e-5)
    assert not torch.allclose(got[1, :4], block(x[1:])[0, :4], atol=1e-4)  # (without the mask it would differ)


def test_lm_ties_output_to_token_embedding_and_counts_gpt_parameters() -> None:
    lm = _lm()
    assert sum(p.data_ptr() == lm.tokens.weight.data_ptr() for p in lm.parameters()) == 1  # one matrix, used twice
    logits = lm(torch.randint(0, 50, (1, 5)))
    states = lm.hidden_states(torch.randint(0, 50, (1, 5)))
    assert logits.shape == (1, 5, 50) and states.shape == (1, 5, DIM)
    # GPT (Radford et al. 2018): 12 layers, 768 wide, 3072 inner, 512 positions, 40478 BPE tokens
    per_layer = 4 * 768 * 768 + 4 * 768 + 2 * 768 * 3072 + 3072 + 768 + 4 * 768
    with torch.device("meta"):
        gpt = TransformerLM(vocab=40478, max_len=512)
    assert sum(p.numel() for p in gpt.parameters()) == 40478 * 768 + 512 * 768 + 12 * per_layer == 116_534_784


def test_pre_norm_lm_has_a_final_norm_and_dropout_is_off_in_eval() -> None:
    torch.manual_seed(0)
    lm = TransformerLM(vocab=20, dim=16, layers=1, heads=2, hidden=32, max_len=8, dropout=0.5, pre_norm=True)
    assert isinstance(lm.final_norm, nn.LayerNorm)
    ids = torch.randint(0, 20, (2, 8))
    torch.testing.assert_close(lm.eval()(ids), lm(ids))
    assert not torch.equal(lm.train()(ids), lm(ids))
    with pytest.raises(ValueError, match="exceeds the 8 learned positions"):
        lm(torch.zeros(1, 9, dtype=torch.long))
