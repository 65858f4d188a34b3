"""ELMo model: the released biLM's size, the directions' context, padding, the scalar mix (Eq. 1) and the LM loss."""

from __future__ import annotations

import torch

from reproductions.elmo.model import (
    FILTERS,
    BiLM,
    Elmo,
    ScalarMix,
    budget_bilm,
    char_mask,
    masked_layer_norm,
    released_bilm,
    strip_boundaries,
)
from tasks.tokenizers.elmo import batch_char_ids


def tiny_bilm(**kwargs: object) -> BiLM:
    torch.manual_seed(0)
    return BiLM(lstm_dim=12, projection_dim=6, filters=((1, 4), (2, 4), (3, 8)), char_dim=4, **kwargs).eval()


def hdf5_params(filters=FILTERS, char_dim=16, highway=2, lstm=4096, proj=512, layers=2) -> int:
    """What the released HDF5 file holds, counted array by array (no padding row, no softmax)."""
    n = sum(count for _, count in filters)
    cnn = sum(width * char_dim * count + count for width, count in filters)
    lstm_layer = (proj + proj) * 4 * lstm + 4 * lstm + lstm * proj  # W_0, B, W_P_0
    return 261 * char_dim + cnn + highway * 2 * (n * n + n) + n * proj + proj + 2 * layers * lstm_layer


def test_released_bilm_size() -> None:
    assert sum(count for _, count in FILTERS) == 2048
    assert hdf5_params() == 93_600_848
    params = sum(p.numel() for p in released_bilm().parameters())
    assert params == hdf5_params() + 16  # plus the padding row of the character embedding, always 0


def test_budget_bilm_is_the_released_structure_smaller() -> None:
    model = budget_bilm(vocab_size=100)
    assert len(model.forward_lstms) == len(model.backward_lstms) == 2 and len(model.token.highways) == 2
    assert model.forward_lstms[0].cell.cell_clip == 3.0 and model.forward_lstms[0].cell.forget_bias == 1.0
    assert model.softmax.out_features == 100


def test_directions_see_only_their_context() -> None:
    model = tiny_bilm()
    chars = batch_char_ids([["the", "cat", "sat", "on", "mats"]])
    changed = chars.clone()
    changed[0, 3] = batch_char_ids([["dog"]])[0, 1]  # replace the third word ("sat")
    with torch.no_grad():
        (_, fa, ba), (_, fb, bb) = model.directions(chars), model.directions(changed)
    for layer in range(2):
        assert torch.equal(fa[layer][0, :3], fb[layer][0, :3])  # forward: positions before the change unchanged
        assert not torch.allclose(fa[layer][0, 3:], fb[layer][0, 3:])
        assert torch.equal(ba[layer][0, 4:], bb[layer][0, 4:])  # backward: positions after it unchanged
        assert not torch.allclose(ba[layer][0, :4], bb[layer][0, :4])


def test_padding_does_not_change_a_sentence() -> None:
    model = tiny_bilm()
    short, long = ["a", "short", "one"], ["a", "much", "longer", "sentence", "than", "that"]
    with torch.no_grad():
        alone = model(batch_char_ids([short]))
        batched = model(batch_char_ids([short, long]))
    assert batched.shape == (2, 3, 8, 12)
    assert torch.allclose(alone[0], batched[0, :, :5], atol=1e-6)
    assert torch.all(batched[0, 1:, 5:] == 0)  # LSTM layers are 0 past the end


def test_layers_and_residual() -> None:
    chars = batch_char_ids([["residual", "check"]])
    with torch.no_grad():
        skip, plain = tiny_bilm(skip_connections=True), tiny_bilm(skip_connections=False)
        x, forward, _ = skip.directions(chars)
        layers = skip(chars)
        _, forward_plain, _ = plain.directions(chars)
    assert torch.equal(layers[:, 0], torch.cat([x, x], dim=-1))  # h_0 = [x; x]
    assert torch.equal(forward[0], forward_plain[0])
    inner, _ = skip.forward_lstms[1](forward[0], char_mask(chars).sum(1))
    assert torch.allclose(forward[1], inner + forward[0])  # layer 2 output = LSTM(layer 1) + layer 1


def test_scalar_mix_equation_1() -> None:
    torch.manual_seed(0)
    layers, mask = torch.randn(2, 3, 4, 6), torch.ones(2, 4, dtype=torch.bool)
    mix = ScalarMix(3, l2=0.5)
    assert torch.allclose(mix(layers, mask), layers.mean(1))  # w = 0: the average of the layers, gamma = 1
    with torch.no_grad():
        mix.weights.copy_(torch.tensor([0.0, 1.0, 2.0]))
        mix.gamma.fill_(2.0)
    s = torch.softmax(torch.tensor([0.0, 1.0, 2.0]), 0)
    assert torch.allclose(mix(layers, mask), 2.0 * (s[:, None, None] * layers).sum(1))
    assert torch.isclose(mix.penalty(), torch.tensor(0.5 * 5.0))  # lambda * ||w||^2
    top = ScalarMix(3, top_only=True)
    assert torch.equal(top(layers, mask), layers[:, -1]) and top.penalty() == 0


def test_masked_layer_norm_uses_unmasked_entries_only() -> None:
    torch.manual_seed(0)
    x, mask = torch.randn(2, 5, 3) * 4 + 7, torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    y = masked_layer_norm(x, mask)[mask]
    assert torch.isclose(y.mean(), torch.tensor(0.0), atol=1e-5) and torch.isclose(
        y.std(unbiased=False), torch.tensor(1.0)
    )


def test_strip_boundaries() -> None:
    chars = batch_char_ids([["one"], ["two", "words"]])
    layers = torch.arange(4.0)[None, None, :, None].expand(2, 1, 4, 1)  # position index as the value
    inner, mask = strip_boundaries(layers, char_mask(chars))
    assert mask.tolist() == [[True, False], [True, True]]
    assert inner[:, 0, :, 0].tolist() == [[1.0, 0.0], [1.0, 2.0]]


def test_lm_loss_trains() -> None:
    torch.manual_seed(0)
    model = BiLM(lstm_dim=16, projection_dim=8, filters=((1, 4), (2, 8)), char_dim=4, vocab_size=5, dropout=0.0)
    chars = batch_char_ids([["a", "b", "c"], ["b", "c"]])
    ids = torch.tensor([[0, 2, 3, 4, 1], [0, 3, 4, 1, 1]])  # <S>=0 </S>=1, a b c = 2 3 4
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    first = sum(model.lm_loss(chars, ids)).item()
    for _ in range(10):
        optimizer.zero_grad()
        loss = sum(model.lm_loss(chars, ids))
        loss.backward()
        optimizer.step()
    assert loss.item() < first / 2


def test_elmo_for_a_task_model() -> None:
    bilm = tiny_bilm()
    elmo = Elmo(bilm, n_mixes=2, dropout=0.0, l2=0.1).train()
    chars = batch_char_ids([["frozen", "biLM"], ["two", "mixes", "here"]])
    (first, second), mask = elmo(chars)
    assert first.shape == second.shape == (2, 3, 12) and mask.tolist() == [[True, True, False], [True, True, True]]
    assert not bilm.training and not any(p.requires_grad for p in bilm.parameters())
    with torch.no_grad():
        elmo.mixes[1].weights.copy_(torch.tensor([0.0, 0.0, 5.0]))  # the output mix leans on the top layer
    (first, second), _ = elmo(chars)
    assert not torch.allclose(first, second)
    loss = first.sum() + second.sum() + elmo.penalty()
    loss.backward()
    assert elmo.mixes[0].weights.grad is not None and elmo.mixes[1].gamma.grad is not None
    assert torch.isclose(elmo.penalty(), torch.tensor(0.1 * 25.0))
