"""ULMFiT's networks (Howard & Ruder, "Universal Language Model Fine-tuning for Text Classification", ACL 2018,
arXiv 1801.06146v5): the AWD-LSTM language model and the classifier built on its encoder.

Section 4.1: "We use the AWD-LSTM language model (Merity et al., 2017a) with an embedding size of 400, 3 layers,
1150 hidden activations per layer, and a BPTT batch size of 70. We apply dropout of 0.4 to layers, 0.3 to RNN
layers, 0.4 to input embedding layers, 0.05 to embedding layers, and weight dropout of 0.5 to the RNN
hidden-to-hidden matrix. The classifier has a hidden layer of size 50."

- :class:`AWDLSTMEncoder`: word embedding (400) with embedding dropout (whole words, 0.05), locked dropout on its
  output (0.4, "input embedding layers"), three single-layer LSTMs 400 -> 1150 -> 1150 -> 400 with DropConnect
  on each hidden-to-hidden matrix (0.5) and locked dropout between them (0.3, "RNN layers"). The last LSTM outputs
  the embedding size, so the softmax can share the embedding matrix (Merity et al.'s weight tying).
- :class:`LanguageModel`: the encoder, locked dropout on its output (0.4, "layers") and a linear decoder whose
  weight is the embedding matrix (tied), with a bias.
- :class:`TextClassifier` (Section 3.3): the same encoder read over the document in BPTT-sized chunks (BPT3C: each
  chunk starts from the state the previous one ended in; the states of the last ``max_len`` tokens are kept for
  pooling), concat pooling ``h_c = [h_T, maxpool(H), meanpool(H)]`` over the last layer's states, then two linear
  blocks, each batch norm -> dropout -> linear, ReLU after the first (50 units), softmax logits after the second.
  The first block's dropout is "0.4 to layers"; the second's, 0.1, is the released code's (not in the paper).

Shapes are batch-first. Padding is on the right; ``lengths`` say where each document ends, so ``h_T`` is the state
at its last real token and padding is left out of both pools. Layer groups (:meth:`layer_groups`), bottom to top,
are what discriminative fine-tuning and gradual unfreezing act on: embedding, LSTM 1, LSTM 2, LSTM 3 (and the
classifier head). The language model's groups follow the released code: the three LSTMs, then the tied
embedding/decoder on top.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from nets.lstm import DroppedEmbedding, LockedDropout, WeightDropLSTM

State = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: (h, c), each (1, B, H)


@dataclass(frozen=True)
class AWDConfig:
    """One AWD-LSTM configuration; dropouts as Section 4.1 names them."""

    emb: int = 400
    hidden: int = 1150
    layers: int = 3
    output_p: float = 0.4  # "0.4 to layers": the encoder's output
    hidden_p: float = 0.3  # "0.3 to RNN layers": between LSTMs
    input_p: float = 0.4  # "0.4 to input embedding layers": the embedding's output
    embed_p: float = 0.05  # "0.05 to embedding layers": whole word types
    weight_p: float = 0.5  # "weight dropout of 0.5 to the RNN hidden-to-hidden matrix"
    head_hidden: int = 50  # "The classifier has a hidden layer of size 50"
    head_p: float = 0.1  # the second block's dropout (released code)


# The paper's network and the budget tier's small one (same structure, sized for two CPU cores).
VARIANTS: dict[str, AWDConfig] = {
    "paper": AWDConfig(),
    "budget": AWDConfig(emb=64, hidden=128, layers=3),
}
PAPER_VOCAB = 60_000  # the vocabulary cap of the released fastai code (max_vocab=60000); the paper states none


class AWDLSTMEncoder(nn.Module):
    """Token ids ``(B, T)`` -> the last LSTM's outputs ``(B, T, emb)`` (after the dropouts) and the new state."""

    def __init__(self, vocab: int, config: AWDConfig = AWDConfig(), pad_id: int = 0) -> None:
        super().__init__()
        self.config, self.pad_id = config, pad_id
        self.embedding = DroppedEmbedding(vocab, config.emb, dropout=config.embed_p, padding_idx=pad_id)
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        with torch.no_grad():
            self.embedding.weight[pad_id].zero_()
        self.input_dropout = LockedDropout(config.input_p)
        sizes = [config.emb] + [config.hidden] * (config.layers - 1) + [config.emb]
        self.rnns = nn.ModuleList(
            WeightDropLSTM(sizes[i], sizes[i + 1], weight_dropout=config.weight_p) for i in range(config.layers)
        )
        self.hidden_dropouts = nn.ModuleList(LockedDropout(config.hidden_p) for _ in range(config.layers - 1))

    def forward(self, ids: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State, list[torch.Tensor]]:
        """-> outputs ``(B, T, emb)``, the new state, and each layer's outputs before dropout (for AR/TAR)."""
        x = self.input_dropout(self.embedding(ids))  # (B, T, emb)
        new_state, raw = [], []
        for index, rnn in enumerate(self.rnns):
            x, layer_state = rnn(x, state[index] if state is not None else None)
            new_state.append(layer_state)
            raw.append(x)
            if index < len(self.hidden_dropouts):
                x = self.hidden_dropouts[index](x)
        return x, new_state, raw

    def layer_groups(self) -> list[list[nn.Module]]:
        """Bottom to top: the embedding, then each LSTM."""
        return [[self.embedding], *[[rnn] for rnn in self.rnns]]


def detach_state(state: State) -> State:
    return [(h.detach(), c.detach()) for h, c in state]


class LanguageModel(nn.Module):
    """AWD-LSTM language model: ``input_ids (B, T)`` -> next-token logits ``(B, T, vocab)``."""

    def __init__(self, vocab: int, config: AWDConfig = AWDConfig(), pad_id: int = 0) -> None:
        super().__init__()
        self.encoder = AWDLSTMEncoder(vocab, config, pad_id)
        self.output_dropout = LockedDropout(config.output_p)
        self.decoder = nn.Linear(config.emb, vocab)
        self.decoder.weight = self.encoder.embedding.weight  # tied
        nn.init.zeros_(self.decoder.bias)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.step(input_ids)[0]

    def step(self, ids: torch.Tensor, state: State | None = None) -> tuple[torch.Tensor, State, list, torch.Tensor]:
        """One BPTT window: logits, the new state, raw layer outputs and the dropped last output (for AR/TAR)."""
        outputs, state, raw = self.encoder(ids, state)
        dropped = self.output_dropout(outputs)
        return self.decoder(dropped), state, raw, dropped

    def layer_groups(self) -> list[list[nn.Module]]:
        """The released code's split: the three LSTMs, then the tied embedding and the decoder (its bias)."""
        return [[rnn] for rnn in self.encoder.rnns] + [[self.encoder.embedding, self.decoder]]


class PoolingClassifier(nn.Module):
    """Concat pooling and two linear blocks: ``[h_T, max, mean] (B, 3·emb)`` -> logits ``(B, classes)``."""

    def __init__(self, emb: int, classes: int, hidden: int = 50, dropouts: tuple[float, float] = (0.4, 0.1)) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.BatchNorm1d(3 * emb),
            nn.Dropout(dropouts[0]),
            nn.Linear(3 * emb, hidden),
            nn.ReLU(),
            nn.BatchNorm1d(hidden),
            nn.Dropout(dropouts[1]),
            nn.Linear(hidden, classes),
        )

    @staticmethod
    def concat_pool(outputs: torch.Tensor, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
        """``outputs (B, T, D)``; each document's states ``start <= t < end`` (``(B,)`` each) are pooled:
        ``[h_T, maxpool, meanpool]``, ``(B, 3D)``, where ``h_T`` is the state at ``end - 1``."""
        steps = torch.arange(outputs.shape[1], device=outputs.device)[None, :]
        real = ((steps >= start[:, None]) & (steps < end[:, None]))[..., None]  # (B, T, 1)
        last = outputs[torch.arange(outputs.shape[0], device=outputs.device), end - 1]  # h_T
        maximum = outputs.masked_fill(~real, float("-inf")).max(dim=1).values
        mean = (outputs * real).sum(dim=1) / (end - start)[:, None].to(outputs.dtype)
        return torch.cat([last, maximum, mean], dim=1)

    def forward(self, outputs: torch.Tensor, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
        return self.layers(self.concat_pool(outputs, start, end))


class TextClassifier(nn.Module):
    """``input_ids (B, T)`` (right-padded) and ``lengths (B,)`` -> class logits ``(B, classes)``, reading the
    document in chunks of ``bptt`` tokens (BPT3C) and pooling over the states of its last ``max_len`` tokens."""

    def __init__(
        self,
        vocab: int,
        classes: int,
        config: AWDConfig = AWDConfig(),
        pad_id: int = 0,
        bptt: int = 70,
        max_len: int = 1400,
    ) -> None:
        super().__init__()
        self.encoder = AWDLSTMEncoder(vocab, config, pad_id)
        self.head = PoolingClassifier(config.emb, classes, config.head_hidden, (config.output_p, config.head_p))
        self.bptt, self.max_len = bptt, max_len

    def encode(self, input_ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, int]:
        """BPT3C: the last layer's outputs ``(B, T', emb)`` from the first chunk any document pools over, and the
        position that chunk starts at. Chunks before it run without gradients (they only pass their state on);
        each chunk starts from the previous one's final state, detached, so gradients stay within a chunk."""
        skip_until = int((lengths - self.max_len).clamp(min=0).min())
        state, kept, first = None, [], None
        for start in range(0, input_ids.shape[1], self.bptt):
            chunk = input_ids[:, start : start + self.bptt]
            if start + chunk.shape[1] <= skip_until:
                with torch.no_grad():
                    _, state, _ = self.encoder(chunk, state)
                continue
            first = start if first is None else first
            outputs, state, _ = self.encoder(chunk, state)
            state = detach_state(state)
            kept.append(outputs)
        return torch.cat(kept, dim=1), first

    def forward(self, input_ids: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        if lengths is None:
            lengths = torch.full((input_ids.shape[0],), input_ids.shape[1], device=input_ids.device)
        lengths = lengths.to(input_ids.device).clamp(min=1)
        outputs, first = self.encode(input_ids, lengths)
        start = (lengths - self.max_len).clamp(min=0) - first  # each document's last max_len tokens
        return self.head(outputs, start, lengths - first)

    def layer_groups(self) -> list[list[nn.Module]]:
        """Bottom to top: the embedding, each LSTM, the classifier head (Figure 1c's unfreezing order, reversed)."""
        return [*self.encoder.layer_groups(), [self.head]]


def reverse_documents(ids: torch.Tensor, lengths: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Each right-padded document ``ids`` (B, T) read right to left, still right-padded: what the backward model of
    Section 3.3 reads (the data modules' ``backwards: true``). ``lengths`` (B,) say where each document ends."""
    positions = lengths[:, None] - 1 - torch.arange(ids.shape[1], device=ids.device)  # (B, T): source column
    reversed_ids = ids.gather(1, positions.clamp(min=0))
    return reversed_ids.masked_fill(positions < 0, pad_id)
