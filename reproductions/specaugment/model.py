"""Listen, Attend and Spell as SpecAugment trains it: LAS-d-w (Park et al., arXiv 1904.08779v3, Section 3.1).

The paper: the log-mel spectrogram (with deltas: :mod:`reproductions.specaugment.features`) "is passed into a
2-layer Convolutional Neural Network (CNN) with max-pooling and with stride of 2"; its output goes through ``d``
stacked bidirectional LSTMs with cell size ``w``, whose outputs an attention-based decoder attends to; the decoder
is a 2-layer RNN (LSTM) emitting word pieces (16k for LibriSpeech, 1k for Switchboard). The settings the paper
does not print are taken from tensorflow/lingvo's released LibriSpeech config (``lingvo/tasks/asr/params/
librispeech.py``, read for facts) and its decoder defaults (``lingvo/tasks/asr/decoder.py``):

- CNN: two 3x3 convolutions of 32 filters, stride 2 in time and frequency (lingvo: ``conv_filter_shapes``
  ``(3, 3, ., 32)`` twice, ``conv_filter_strides (2, 2)``), each followed by batch norm and ReLU; no separate
  max-pooling layer (the strides do the down-sampling, as in lingvo). Time ``T -> ceil(T / 4)``, 80 mel -> 20.
  The input has 3 channels: static, delta, delta-delta.
- Encoder: ``d`` bidirectional LSTM layers, ``w`` cells per direction, outputs concatenated (``2w``; lingvo's
  ``source_dim`` 2048 for w = 1024).
- Decoder: 2 LSTM layers of 1024 cells (lingvo ``rnn_layers 2``, ``rnn_cell_dim 1024``) for every LAS-d-w;
  additive attention (lingvo's default ``AdditiveAttention``); the softmax sees the decoder output and the
  attention context (lingvo ``softmax_uses_attention``); the previous context is fed with the previous token.
  Embedding and attention sizes (512 each) are not printed by the paper nor set in that config: ours.

Shapes: features ``(B, T, 80, 3)``, lengths ``(B,)`` valid frames, decoder input tokens ``(B, U)`` (``bos``
first, teacher forcing) -> logits ``(B, U, V)``. :func:`recognize_batch` decodes with
:func:`nets.beam_search.beam_search_batch`: length normalisation, shallow fusion with :class:`LSTMLanguageModel`
(Section 3.3: ``log P(y|x) + lambda log P_LM(y)``) and the coverage penalty ``c`` over the speller's attention
(lingvo's definition, :class:`nets.beam_search.Coverage`).

Variational weight noise (Graves 2011, as lingvo's ``global_vn`` applies it): :func:`noisy_weights` lists the
tensors lingvo perturbs in these layers (``AddGlobalVN`` of its LSTM cells: weights and biases; embedding;
additive attention: its three matrices; softmax: weight and bias), not the convolutional front end, which lingvo
leaves clean; our attention's key bias (lingvo's attention has none) stays clean too.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from nets.beam_search import BeamConfig, Coverage, Hypothesis, beam_search_batch
from nets.lstm import reverse_padded

# LAS-d-w: depth d, width w; the paper's decoder (2 x 1024) unless a row says otherwise.
VARIANTS: dict[str, dict[str, int]] = {
    "las-4-1024": {"depth": 4, "width": 1024},
    "las-6-1024": {"depth": 6, "width": 1024},
    "las-6-1280": {"depth": 6, "width": 1280},
    # the budget tier's small LAS (ours, not the paper's): decoder, embedding and attention scaled down with it
    "las-2-128": {"depth": 2, "width": 128, "decoder_dim": 256, "embed_dim": 64, "attention_dim": 128},
}
DECODER_DIM = 1024
DECODER_LAYERS = 2
EMBED_DIM = 512
ATTENTION_DIM = 512
CONV_CHANNELS = 32


def subsampled_lengths(lengths: Tensor) -> Tensor:
    """Frames after two stride-2 convolutions (kernel 3, padding 1): ``ceil(ceil(T / 2) / 2)``."""
    for _ in range(2):
        lengths = (lengths - 1) // 2 + 1
    return lengths


class ConvSubsampler(nn.Module):
    """Two 3x3 stride-2 conv + BN + ReLU layers: ``(B, T, F, C) -> (B, ceil(T/4), ceil(F/4) * 32)``."""

    def __init__(self, in_channels: int = 3, channels: int = CONV_CHANNELS) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for cin in (in_channels, channels):
            layers += [
                nn.Conv2d(cin, channels, 3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(channels),
                nn.ReLU(),
            ]
        self.net = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        y = self.net(x.permute(0, 3, 1, 2))  # (B, 32, T/4, F/4)
        return y.permute(0, 2, 1, 3).flatten(2)  # (B, T/4, 32 * F/4)


class BiLSTM(nn.Module):
    """One bidirectional LSTM layer over padded sequences: the backward LSTM reads each sequence reversed within its
    length (:func:`nets.lstm.reverse_padded`), so padding never reaches a valid output. ``(B, T, I) -> (B, T, 2H)``."""

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.forward_lstm = nn.LSTM(input_size, hidden_size, batch_first=True)
        self.backward_lstm = nn.LSTM(input_size, hidden_size, batch_first=True)

    def forward(self, x: Tensor, lengths: Tensor) -> Tensor:
        ahead, _ = self.forward_lstm(x)
        behind, _ = self.backward_lstm(reverse_padded(x, lengths))
        return torch.cat([ahead, reverse_padded(behind, lengths)], dim=-1)


class Listener(nn.Module):
    """CNN subsampler then ``d`` BiLSTM layers of ``w`` cells: ``(B, T, 80, 3) -> (B, T/4, 2w)``, new lengths."""

    def __init__(self, depth: int, width: int, n_mels: int = 80, in_channels: int = 3) -> None:
        super().__init__()
        self.subsample = ConvSubsampler(in_channels)
        size = CONV_CHANNELS * ((n_mels - 1) // 4 + 1)
        self.layers = nn.ModuleList(BiLSTM(size if i == 0 else 2 * width, width) for i in range(depth))

    def forward(self, features: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        x = self.subsample(features)
        lengths = subsampled_lengths(lengths).clamp(1, x.shape[1])
        mask = (torch.arange(x.shape[1], device=x.device)[None, :] < lengths[:, None])[..., None]  # (B, T', 1)
        for layer in self.layers:
            x = layer(x, lengths) * mask
        return x, lengths


class AdditiveAttention(nn.Module):
    """``e_j = v^T tanh(W_h h_j + W_s s)``, softmax over valid ``j``, context ``sum_j a_j h_j``."""

    def __init__(self, source_dim: int, query_dim: int, dim: int = ATTENTION_DIM) -> None:
        super().__init__()
        self.keys = nn.Linear(source_dim, dim)
        self.query = nn.Linear(query_dim, dim, bias=False)
        self.v = nn.Linear(dim, 1, bias=False)

    def forward(self, keys: Tensor, memory: Tensor, mask: Tensor, query: Tensor) -> tuple[Tensor, Tensor]:
        """``keys (B, T, A)`` (projected memory), ``memory (B, T, S)``, ``mask (B, T)``, ``query (B, Q)`` -> the
        context ``(B, S)`` and the attention weights ``(B, T)`` (0 on padding)."""
        scores = self.v(torch.tanh(keys + self.query(query)[:, None])).squeeze(-1)  # (B, T)
        weights = scores.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return torch.bmm(weights[:, None], memory).squeeze(1), weights


class Speller(nn.Module):
    """2-layer LSTM decoder with additive attention; one step maps the previous token and state to logits."""

    def __init__(
        self,
        vocab_size: int,
        source_dim: int,
        decoder_dim: int = DECODER_DIM,
        embed_dim: int = EMBED_DIM,
        attention_dim: int = ATTENTION_DIM,
    ) -> None:
        super().__init__()
        self.decoder_dim = decoder_dim
        self.embed = nn.Embedding(vocab_size, embed_dim)
        sizes = [embed_dim + source_dim] + [decoder_dim] * (DECODER_LAYERS - 1)
        self.cells = nn.ModuleList(nn.LSTMCell(size, decoder_dim) for size in sizes)
        self.attention = AdditiveAttention(source_dim, decoder_dim, attention_dim)
        self.output = nn.Linear(decoder_dim + source_dim, vocab_size)

    def initial_state(self, memory: Tensor) -> tuple[Tensor, ...]:
        """``(h_1, c_1, h_2, c_2, context)``, zeros, batch first (beam search reorders dimension 0)."""
        zeros = memory.new_zeros(memory.shape[0], self.decoder_dim)
        return (*[zeros] * (2 * DECODER_LAYERS), memory.new_zeros(memory.shape[0], memory.shape[2]))

    def step(self, token: Tensor, state: tuple[Tensor, ...], keys: Tensor, memory: Tensor, mask: Tensor) -> Any:
        """``token (B,)`` -> logits ``(B, V)``, the new state and this step's attention weights ``(B, T)``."""
        x = torch.cat([self.embed(token), state[-1]], dim=-1)
        new: list[Tensor] = []
        for i, cell in enumerate(self.cells):
            h, c = cell(x, (state[2 * i], state[2 * i + 1]))
            new += [h, c]
            x = h
        context, weights = self.attention(keys, memory, mask, x)
        return self.output(torch.cat([x, context], dim=-1)), (*new, context), weights


class LAS(nn.Module):
    """LAS-d-w: :class:`Listener` (CNN + ``d`` BiLSTMs of ``w``) and :class:`Speller`."""

    def __init__(
        self, depth: int, width: int, vocab_size: int = 16384, n_mels: int = 80, in_channels: int = 3, **speller: int
    ) -> None:
        super().__init__()
        self.listener = Listener(depth, width, n_mels, in_channels)
        self.speller = Speller(vocab_size, 2 * width, **speller)

    def encode(self, features: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Memory ``(B, T', 2w)``, its projected attention keys and the valid mask ``(B, T')``."""
        memory, lengths = self.listener(features, lengths)
        mask = torch.arange(memory.shape[1], device=memory.device)[None, :] < lengths[:, None]
        return memory, self.speller.attention.keys(memory), mask

    def forward(self, features: Tensor, lengths: Tensor, targets: Tensor) -> Tensor:
        """Teacher forcing: ``targets (B, U)`` are the decoder inputs (``bos`` first) -> logits ``(B, U, V)``."""
        memory, keys, mask = self.encode(features, lengths)
        state = self.speller.initial_state(memory)
        logits = []
        for u in range(targets.shape[1]):
            out, state, _ = self.speller.step(targets[:, u], state, keys, memory, mask)
            logits.append(out)
        return torch.stack(logits, dim=1)


def las(variant: str = "las-4-1024", vocab_size: int = 16384, n_mels: int = 80, in_channels: int = 3) -> LAS:
    """Build LAS-d-w by name (:data:`VARIANTS`)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown LAS variant {variant!r}; known: {', '.join(VARIANTS)}")
    return LAS(vocab_size=vocab_size, n_mels=n_mels, in_channels=in_channels, **VARIANTS[variant])


def noisy_weights(model: LAS) -> list[str]:
    """The names of the parameters variational weight noise perturbs (module docstring): all but the convolutional
    front end's and the attention's key bias."""
    return [
        name
        for name, _ in model.named_parameters()
        if not name.startswith("listener.subsample.") and name != "speller.attention.keys.bias"
    ]


# The shallow-fusion LM by name: the paper says only "an LSTM language model"; its size was not read, so the one
# variant is the budget tier's (ours).
LM_VARIANTS: dict[str, dict[str, int]] = {"lstm-lm-2-256": {"dim": 256, "layers": 2}}


def lstm_lm(variant: str = "lstm-lm-2-256", vocab_size: int = 31) -> LSTMLanguageModel:
    """Build the fusion LM by name (:data:`LM_VARIANTS`)."""
    if variant not in LM_VARIANTS:
        raise ValueError(f"unknown LM variant {variant!r}; known: {', '.join(LM_VARIANTS)}")
    return LSTMLanguageModel(vocab_size, **LM_VARIANTS[variant])


class LSTMLanguageModel(nn.Module):
    """The shallow-fusion LM: embedding, ``layers`` LSTM layers, softmax. ``(B, U) -> (B, U, V)``. It is trained on
    sentences framed as ``<s> y </s>`` (:mod:`reproductions.specaugment.lm`), so beam search can start it at ``<s>``."""

    def __init__(self, vocab_size: int, dim: int = 1024, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.lstm = nn.LSTM(dim, dim, num_layers=layers, batch_first=True)
        self.output = nn.Linear(dim, vocab_size)

    def forward(self, tokens: Tensor) -> Tensor:
        return self.output(self.lstm(self.embed(tokens))[0])

    def step(self, prefixes: Tensor, state: Any) -> tuple[Tensor, Any]:
        """Beam-search step: log-probabilities of the next token ``(K, V)``; state ``(h, c)`` each ``(K, L, H)``."""
        hidden = (
            None if state is None else (state[0].transpose(0, 1).contiguous(), state[1].transpose(0, 1).contiguous())
        )
        out, (h, c) = self.lstm(self.embed(prefixes[:, -1:]), hidden)
        return self.output(out[:, -1]).log_softmax(-1), (h.transpose(0, 1), c.transpose(0, 1))


def recognize_batch(
    model: LAS,
    features: Tensor,
    lengths: Tensor,
    search: BeamConfig,
    lm: LSTMLanguageModel | None = None,
    coverage_penalty: float = 0.0,
) -> list[list[Hypothesis]]:
    """Beam search over a batch ``features (B, T, 80, 3)`` with valid ``lengths (B,)``: each utterance's hypotheses,
    best first (the paper's beam is 8). The utterances are searched independently, but every decoder step runs once
    for the live beams of all of them: the encoder output rides in the search state, one row per beam. ``lm``: the
    language model fused with ``search.lm_weight``; ``coverage_penalty`` > 0: the coverage penalty ``c`` over the
    speller's attention on the encoder frames."""
    memory, keys, mask = model.encode(features, lengths)

    def step(prefixes: Tensor, state: Any) -> tuple[Tensor, Any]:
        speller_state, _, *source = state
        logits, speller_state, weights = model.speller.step(prefixes[:, -1], speller_state, *source)
        return logits.log_softmax(-1), (speller_state, weights, *source)

    coverage = None
    if coverage_penalty:
        valid = mask.sum(dim=1).tolist()  # encoder frames per utterance
        coverage = Coverage(beta=coverage_penalty, attention=lambda state: state[1], source_lengths=valid)

    return beam_search_batch(
        step,
        search,
        sources=features.shape[0],
        state=(model.speller.initial_state(memory), mask.float(), keys, memory, mask),
        lm_step=None if lm is None else lm.step,
        coverage=coverage,
        device=features.device,
    )


def recognize(model: LAS, features: Tensor, length: int, search: BeamConfig, **fusion: Any) -> list[Hypothesis]:
    """Beam search over one utterance ``features (T, 80, 3)``: :func:`recognize_batch` of a batch of one (``fusion``
    its ``lm`` and ``coverage_penalty``)."""
    lengths = torch.tensor([length], device=features.device)
    return recognize_batch(model, features[None], lengths, search, **fusion)[0]
