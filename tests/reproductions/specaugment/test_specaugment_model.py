"""LAS-d-w (shapes, padding, registration), beam search with LM fusion, and the B / D / L schedules."""

from __future__ import annotations

import math

import pytest
import torch

from harness import registry
from nets.beam_search import BeamConfig
from reproductions.specaugment.model import LAS, LSTMLanguageModel, las, recognize, recognize_batch, subsampled_lengths
from reproductions.specaugment.schedules import SCHEDULES, label_smoothing, learning_rate, scaled, weight_noise_on


def small_las(vocab: int = 12) -> LAS:
    torch.manual_seed(0)
    return LAS(depth=2, width=16, vocab_size=vocab, n_mels=16, decoder_dim=32, embed_dim=8, attention_dim=16).eval()


def test_registered_variants_and_their_layers() -> None:
    repro = registry.reproduction("specaugment")
    assert repro.model_ids() == ["las-4-1024", "las-6-1024", "las-6-1280", "las-2-128", "lstm-lm-2-256"]
    assert repro.tiers[0] == "arch"
    with pytest.raises(ValueError, match="unknown LAS variant"):
        las("las-2-10")


def test_two_stride_two_convs_quarter_the_frames() -> None:
    assert subsampled_lengths(torch.tensor([1, 4, 5, 8, 9, 1000])).tolist() == [1, 1, 2, 2, 3, 250]
    model = small_las()
    memory, lengths = model.listener(torch.randn(2, 37, 16, 3), torch.tensor([37, 21]))
    assert memory.shape == (2, 10, 32) and lengths.tolist() == [10, 6]  # 2w outputs, ceil(T / 4) steps
    assert torch.equal(memory[1, 6:], torch.zeros(4, 32))


def test_padding_does_not_change_an_utterance_s_outputs() -> None:
    """The backward LSTM reads within each length: a padded copy gives the same logits as the short original
    (batch norm in eval mode; the conv sees zero padding beyond the end, so compare frames a receptive field away)."""
    model = small_las()
    short = torch.randn(1, 40, 16, 3)
    padded = torch.cat([short, torch.zeros(1, 24, 16, 3)], dim=1)
    targets = torch.tensor([[1, 4, 5, 6]])
    a = model(short, torch.tensor([40]), targets)
    b = model(padded, torch.tensor([40]), targets)
    assert torch.allclose(a, b, atol=1e-5)


def test_beam_search_scores_are_the_model_s_log_probabilities() -> None:
    """``recognize`` runs the same decoder as teacher forcing: a hypothesis's log P is the forward pass's."""
    model = small_las()
    features = torch.randn(30, 16, 3)
    with torch.no_grad():
        hyps = recognize(model, features, 30, BeamConfig(bos=1, eos=2, beam_size=3, max_len=6))
        for hyp in hyps:
            inputs = torch.tensor([[1, *hyp.tokens[:-1]]])
            log_probs = model(features[None], torch.tensor([30]), inputs)[0].log_softmax(-1)
            expected = log_probs.gather(1, torch.tensor(hyp.tokens)[:, None]).sum()
            assert math.isclose(hyp.log_prob, float(expected), rel_tol=1e-4)
    assert [h.score for h in hyps] == sorted((h.score for h in hyps), reverse=True)


def test_shallow_fusion_adds_the_weighted_lm_log_probability() -> None:
    model, lm = small_las(), LSTMLanguageModel(12, dim=8, layers=2).eval()
    features = torch.randn(30, 16, 3)
    with torch.no_grad():
        hyp = recognize(model, features, 30, BeamConfig(bos=1, eos=2, beam_size=4, max_len=5, lm_weight=0.35), lm=lm)[0]
        inputs = torch.tensor([[1, *hyp.tokens[:-1]]])
        targets = torch.tensor(hyp.tokens)
        am = model(features[None], torch.tensor([30]), inputs)[0].log_softmax(-1)
        lm_lp = lm(inputs)[0].log_softmax(-1)
        expected = (am + 0.35 * lm_lp).gather(1, targets[:, None]).sum()
    assert math.isclose(hyp.log_prob, float(expected), rel_tol=1e-4)


def test_a_padded_batch_decodes_each_utterance_as_alone() -> None:
    """``recognize_batch`` over utterances of different lengths, zero-padded, finds what each alone finds."""
    torch.manual_seed(3)
    model, lm = small_las(), LSTMLanguageModel(12, dim=8, layers=2).eval()
    lengths = [30, 17, 24, 9]
    utterances = [torch.randn(n, 16, 3) for n in lengths]
    batch = torch.nn.utils.rnn.pad_sequence(utterances, batch_first=True)
    search = BeamConfig(bos=1, eos=2, beam_size=3, max_len=7, alpha=0.5, lm_weight=0.2)
    with torch.no_grad():
        together = recognize_batch(model, batch, torch.tensor(lengths), search, lm=lm)
        alone = [recognize(model, x, len(x), search, lm=lm) for x in utterances]
    for got, expected in zip(together, alone, strict=True):
        assert [h.tokens for h in got] == [h.tokens for h in expected]
        assert [h.log_prob for h in got] == pytest.approx([h.log_prob for h in expected], rel=1e-5)


def test_label_smoothed_loss_trains_a_small_las() -> None:
    model = small_las().train()
    features, lengths = torch.randn(2, 24, 16, 3), torch.tensor([24, 18])
    targets = torch.tensor([[1, 5, 6, 7, 2], [1, 8, 9, 2, 0]])
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-2)
    losses = []
    for _ in range(6):
        logits = model(features, lengths, targets[:, :-1])
        loss = torch.nn.functional.cross_entropy(
            logits.transpose(1, 2), targets[:, 1:], ignore_index=0, label_smoothing=0.1
        )
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0]


def test_schedules_ramp_hold_and_decay_to_a_hundredth() -> None:
    b = SCHEDULES["B"]
    assert (b.s_r, b.s_noise, b.s_i, b.s_f) == (500, 10_000, 20_000, 80_000)
    assert (SCHEDULES["D"].s_i, SCHEDULES["L"].s_f) == (40_000, 320_000)
    assert learning_rate(0, b) == 0 and learning_rate(250, b) == pytest.approx(5e-4)
    assert learning_rate(500, b) == learning_rate(20_000, b) == 1e-3
    assert learning_rate(50_000, b) == pytest.approx(1e-4)  # half-way through the decay: 1e-3 * 0.01 ** 0.5
    assert learning_rate(80_000, b) == pytest.approx(1e-5) == learning_rate(200_000, b)
    assert not weight_noise_on(9_999, b) and weight_noise_on(10_000, b)
    assert label_smoothing(19_999, b) == 0.1 and label_smoothing(20_000, b) == 0.0
    small = scaled(b, 0.01)
    assert (small.s_r, small.s_i, small.s_f) == (5, 200, 800)
