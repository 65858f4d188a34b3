"""nets.lstm: equal to torch's LSTM on copied weights where the maths is the same; dropout masks and clipping."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from nets.lstm import LSTMP, DroppedEmbedding, LockedDropout, LSTMPCell, WeightDropLSTM, reverse_padded


def test_weight_drop_lstm_without_dropout_is_nn_lstm() -> None:
    torch.manual_seed(0)
    ours = WeightDropLSTM(6, 8, num_layers=2, weight_dropout=0.5)
    plain = nn.LSTM(6, 8, num_layers=2, batch_first=True)
    plain.load_state_dict({k.removeprefix("lstm."): v for k, v in ours.state_dict().items()})
    x = torch.randn(3, 5, 6)
    torch.testing.assert_close(ours.eval()(x)[0], plain(x)[0])  # eval: no DropConnect
    ours.weight_dropout = 0.0
    torch.testing.assert_close(ours.train()(x)[0], plain(x)[0])


def test_weight_drop_is_dropconnect_on_hidden_to_hidden_weights() -> None:
    """In training, the output is nn.LSTM's with ``weight_hh`` replaced by one dropped copy for the whole pass."""
    torch.manual_seed(0)
    ours = WeightDropLSTM(6, 8, weight_dropout=0.5).train()
    x = torch.randn(3, 5, 6)
    torch.manual_seed(1)
    got, _ = ours(x)
    torch.manual_seed(1)
    dropped = F.dropout(ours.lstm.weight_hh_l0.detach(), 0.5, training=True)  # the same draw
    plain = nn.LSTM(6, 8, batch_first=True)
    plain.load_state_dict({**ours.lstm.state_dict(), "weight_hh_l0": dropped})
    torch.testing.assert_close(got, plain(x)[0])
    assert (dropped == 0).float().mean().item() > 0.4  # about half the connections are gone
    got.sum().backward()  # gradients reach the raw weights, zero exactly where a connection was dropped
    assert torch.equal(ours.lstm.weight_hh_l0.grad == 0, dropped == 0)
    assert (ours.lstm.weight_ih_l0.grad != 0).all()  # input-to-hidden weights are not dropped


def test_locked_dropout_shares_its_mask_over_time() -> None:
    torch.manual_seed(0)
    drop = LockedDropout(0.5).train()
    x = torch.rand(4, 10, 16) + 0.5  # no zeros of its own
    y = drop(x)
    kept = y != 0  # (B, T, D)
    assert torch.equal(kept, kept[:, :1].expand_as(kept))  # the same units dropped at every step
    assert 0.2 < kept.float().mean().item() < 0.8
    torch.testing.assert_close(y[kept], x[kept] * 2)
    assert torch.equal(drop.eval()(x), x)


def test_embedding_dropout_drops_whole_words() -> None:
    torch.manual_seed(0)
    embed = DroppedEmbedding(20, 8, dropout=0.5).train()
    ids = torch.arange(10).repeat(3)[None]  # ten words, three times each
    out = embed(ids)
    zero = (out == 0).all(dim=-1)[0]
    assert zero.any() and not zero.all()
    for word in range(10):  # every occurrence of a word is dropped or kept together
        assert len(set(zero[ids[0] == word].tolist())) == 1
    kept = ~zero
    torch.testing.assert_close(out[0, kept], embed.weight[ids[0, kept]] * 2)
    torch.testing.assert_close(embed.eval()(ids), embed.weight[ids])


def _copy_into_torch(cell: LSTMPCell, torchs: nn.LSTM) -> None:
    with torch.no_grad():
        torchs.weight_ih_l0.copy_(cell.input_gates.weight)
        torchs.bias_ih_l0.copy_(cell.input_gates.bias)
        torchs.weight_hh_l0.copy_(cell.hidden_gates.weight)
        torchs.bias_hh_l0.zero_()
        torchs.weight_hr_l0.copy_(cell.projection.weight)


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
def test_lstmp_without_clipping_equals_nn_lstm_with_projection() -> None:
    torch.manual_seed(0)
    ours = LSTMP(6, 12, 4)
    torchs = nn.LSTM(6, 12, proj_size=4, batch_first=True)
    _copy_into_torch(ours.cell, torchs)
    x = torch.randn(3, 7, 6)
    out, (h, c) = ours(x)
    expected, (h_t, c_t) = torchs(x)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close((h, c), (h_t[0], c_t[0]))


def test_clipping_bounds_the_cell_and_the_projection() -> None:
    torch.manual_seed(0)
    layer = LSTMP(6, 12, 4, cell_clip=3.0, proj_clip=0.5, forget_bias=1.0)
    with torch.no_grad():
        for p in layer.parameters():
            p.mul_(20)  # large weights: without clipping the cell grows past 3 and the projection past 0.5
    x = torch.randn(2, 30, 6)
    cells, state = [], (torch.zeros(2, 4), torch.zeros(2, 12))
    for step in range(30):
        _, state = layer.cell(x[:, step], state)
        cells.append(state[1])
    cells = torch.stack(cells)
    assert cells.abs().max() == 3.0
    out, _ = layer(x)
    assert out.abs().max() == 0.5
    unclipped = LSTMP(6, 12, 4, forget_bias=1.0)
    unclipped.load_state_dict(layer.state_dict())
    assert unclipped(x)[0].abs().max() > 0.5


def test_reverse_reads_each_sequence_backwards_within_its_length() -> None:
    torch.manual_seed(0)
    forward, backward = LSTMP(3, 5, 2), LSTMP(3, 5, 2, reverse=True)
    backward.load_state_dict(forward.state_dict())
    x, lengths = torch.randn(2, 6, 3), torch.tensor([6, 4])
    out, _ = backward(x, lengths)
    alone = forward(x[1:, :4].flip(1))[0].flip(1)  # the second sequence alone, read right to left
    torch.testing.assert_close(out[1, :4], alone[0])
    assert torch.equal(out[1, 4:], torch.zeros(2, 2))  # padding steps output zeros
    assert torch.equal(reverse_padded(torch.arange(6.0).expand(2, 6), lengths)[1], torch.tensor([3.0, 2, 1, 0, 4, 5]))
