"""Improving Language Understanding by Generative Pre-Training (Radford, Narasimhan, Salimans & Sutskever, OpenAI
2018; no arXiv id: https://cdn.openai.com/research-covers/language-unsupervised/language_understanding_paper.pdf).

The model of Section 3 and 4.1, with the details the released fine-tuning code (openai/finetune-transformer-lm,
``train.py``) fixes where the report is silent:

- Eq. 2: ``h_0 = U W_e + W_p``, ``h_l = transformer_block(h_{l-1})`` for ``l = 1..n``, ``P(u) = softmax(h_n W_e^T)``:
  learned position embeddings, the output layer tied to the token embedding.
- A block is post-LN (Figure 1, left; ``block`` in the release): ``n = LN(x + Attn(x))``, ``h = LN(n + MLP(n))``,
  masked (causal) multi-head self-attention scaled by ``1/sqrt(d_head)``, a 4x-wide position-wise layer with GELU
  (the release's tanh approximation), LayerNorm epsilon 1e-5 (:class:`nets.transformer.TransformerBlock`).
- Dropout 0.1 on the residual branches and the attention weights; the release applies the embedding dropout to the
  embedding *matrix* (``we = dropout(we)``), whose dropped copy both embeds the input and gives the LM logits.
- Initialisation N(0, 0.02) for every weight, zero biases, LayerNorm gains 1 (Section 4.1).
- Fine-tuning adds only ``W_y`` and the embeddings of the special tokens (Section 3.2): start ``<s>``, delimiter
  ``$`` and extract ``<e>``, ids ``vocab``, ``vocab + 1``, ``vocab + 2`` (the release's ``_start_``,
  ``_delimiter_``, ``_classify_``). They are a separate table here, so a pre-trained checkpoint's token table loads
  unchanged; the LM output covers the tokens and the special tokens (the release multiplies by its whole embedding
  matrix, position rows included, whose logits are never a target).
- The task head reads the last block's state at the extract token, ``h_l^m`` (Eq. 3), dropout 0.1, then ``W_y``.
  Figure 1's input transformations are :mod:`reproductions.gpt.transforms`; a batch holds one sequence per example
  (classification, entailment: ids ``(B, T)``) or several (similarity: both orders ``(B, 2, T)``, representations
  added before ``W_y``; multiple choice: one per answer ``(B, K, T)``, one score each, softmax over the K).

GPT as released: 40,478 tokens (40,000 BPE merges plus the base symbols), 512 positions, 768 states, 12 layers, 12
heads, 3072 inner states: 116,534,784 parameters without the special tokens (the count ``transformers``'
``OpenAIGPTModel`` has too; tests/reproductions/gpt check both).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from nets.transformer import TransformerBlock

N_SPECIAL = 3  # start, delimiter, extract
TASK_KINDS = ("classification", "entailment", "similarity", "multiple_choice")


@dataclass(frozen=True)
class GPTConfig:
    """One row per model size (the release's ``n_vocab``, ``n_ctx``, ``n_embd``, ``n_layer``, ``n_head``)."""

    vocab: int = 40478
    n_ctx: int = 512
    dim: int = 768
    layers: int = 12
    heads: int = 12
    hidden: int = 3072
    dropout: float = 0.1  # residual (``resid_pdrop``)
    attention_dropout: float = 0.1  # ``attn_pdrop``
    embedding_dropout: float = 0.1  # ``embd_pdrop``
    classifier_dropout: float = 0.1  # ``clf_pdrop``
    block: str = "transformer"  # or "lstm": Table 5's baseline (reproductions.gpt.lstm), no position embeddings


GPT_1 = GPTConfig()
# The budget tier's model (README.md): a BPE vocabulary of 4,000 trained on debian-lm, 64 positions, 3 layers.
GPT_BUDGET = GPTConfig(vocab=4000, n_ctx=64, dim=128, layers=3, heads=4, hidden=512)
# Table 5's "single layer 2048 unit LSTM" in the same framework (reproductions/gpt/lstm.py says what is chosen).
GPT_LSTM = GPTConfig(dim=2048, layers=1, heads=1, hidden=2048, block="lstm")


class GPT(nn.Module):
    """The decoder-only Transformer LM of Eq. 2, with ``n_special`` extra embeddings for fine-tuning."""

    def __init__(self, config: GPTConfig = GPT_1, n_special: int = 0) -> None:
        super().__init__()
        self.config, self.n_special = config, n_special
        c = config
        self.tokens = nn.Embedding(c.vocab, c.dim)  # W_e
        self.special = nn.Embedding(n_special, c.dim) if n_special else None
        self.positions = nn.Embedding(c.n_ctx, c.dim) if c.block == "transformer" else None  # W_p
        self.blocks = nn.ModuleList(_block(c) for _ in range(c.layers))
        self.apply(init_weights)

    def embedding_matrix(self) -> torch.Tensor:
        """``(vocab + n_special, D)``: the token rows then the special rows, embedding dropout applied in training."""
        rows = self.tokens.weight if self.special is None else torch.cat([self.tokens.weight, self.special.weight])
        return F.dropout(rows, self.config.embedding_dropout, self.training)

    def hidden_states(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, embedding: torch.Tensor | None = None
    ) -> torch.Tensor:
        """``h_n`` ``(B, T, D)`` for ids ``(B, T)``; ``attention_mask`` 1 for a real token, 0 for padding."""
        t = input_ids.shape[-1]
        if t > self.config.n_ctx:
            raise ValueError(f"sequence length {t} exceeds the {self.config.n_ctx} learned positions")
        embedding = self.embedding_matrix() if embedding is None else embedding
        h = F.embedding(input_ids, embedding)  # h_0 = U W_e + W_p
        if self.positions is not None:
            h = h + F.dropout(self.positions.weight[:t], self.config.embedding_dropout, self.training)
        padding = None if attention_mask is None else attention_mask == 0
        for block in self.blocks:
            h = block(h, causal=True, padding=padding)
        return h

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Next-token logits ``(B, T, vocab + n_special)``: ``h_n W_e^T``."""
        embedding = self.embedding_matrix()
        return self.hidden_states(input_ids, attention_mask, embedding) @ embedding.T


class GPTForTask(GPT):
    """GPT with the fine-tuning head ``W_y`` for one of Figure 1's task kinds (:data:`TASK_KINDS`).

    ``forward`` returns the task logits: ``(B, classes)``, or ``(B, K)`` for multiple choice (one score per answer).
    :meth:`logits` returns them with the LM logits of every sequence, for the auxiliary objective (Eq. 5)."""

    def __init__(self, config: GPTConfig = GPT_1, classes: int = 2, kind: str = "classification") -> None:
        if kind not in TASK_KINDS:
            raise ValueError(f"unknown task kind {kind!r}; known: {', '.join(TASK_KINDS)}")
        super().__init__(config, N_SPECIAL)
        self.kind = kind
        self.classifier = nn.Linear(config.dim, 1 if kind == "multiple_choice" else classes)  # W_y
        init_weights(self.classifier)

    def logits(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, lm: bool = True
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(task logits, LM logits (N, T, vocab + 3))`` where N counts every sequence of the batch (``lm=False``:
        no LM logits, ``None``)."""
        shape = input_ids.shape  # (B, T) or (B, S, T): S sequences per example
        ids = input_ids.reshape(-1, shape[-1])
        mask = torch.ones_like(ids) if attention_mask is None else attention_mask.reshape(-1, shape[-1])
        embedding = self.embedding_matrix()
        h = self.hidden_states(ids, mask, embedding)  # (N, T, D)
        last = mask.sum(-1).clamp(min=1) - 1  # the extract token ends each sequence
        h_m = h[torch.arange(len(ids), device=ids.device), last]  # (N, D): h_l^m
        h_m = F.dropout(h_m, self.config.classifier_dropout, self.training).view(*shape[:-1], -1)
        if self.kind == "similarity":
            h_m = h_m.sum(1)  # both orderings, added element-wise
        scores = self.classifier(h_m)
        scores = scores.squeeze(-1) if self.kind == "multiple_choice" else scores
        return scores, (h @ embedding.T if lm else None)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.logits(input_ids, attention_mask, lm=False)[0]


def _block(c: GPTConfig) -> nn.Module:
    if c.block == "lstm":
        from reproductions.gpt.lstm import LSTMBlock

        return LSTMBlock(c.dim, c.dropout)
    if c.block != "transformer":
        raise ValueError(f"unknown block {c.block!r}; known: transformer, lstm")
    return TransformerBlock(c.dim, c.heads, c.hidden, c.dropout, c.attention_dropout, "gelu_tanh", eps=1e-5)


def init_weights(module: nn.Module, std: float = 0.02) -> None:
    """Section 4.1: weights N(0, 0.02), biases 0; LayerNorm keeps gain 1 and bias 0."""
    if isinstance(module, nn.Linear | nn.Embedding):
        nn.init.normal_(module.weight, 0.0, std)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


def lm_loss(lm_logits: torch.Tensor, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The auxiliary objective ``L_1(C)`` as released: per sequence, the mean negative log-likelihood of each real
    token given those before it; averaged over the sequences. ``lm_logits`` ``(N, T, V)``, ids and mask ``(N, T)``."""
    ids, mask = input_ids.reshape(-1, input_ids.shape[-1]), mask.reshape(-1, mask.shape[-1]).float()
    nll = F.cross_entropy(lm_logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")  # (N, T-1)
    return ((nll * mask[:, 1:]).sum(1) / mask[:, 1:].sum(1).clamp(min=1)).mean()


# reproductions.gpt.variants names each model id's size
SIZES = {"gpt": GPT_1, "gpt-budget": GPT_BUDGET, "gpt-lstm": GPT_LSTM}


def language_model(size: str = "gpt") -> GPT:
    """The pre-training model of ``size`` (``gpt``: GPT as released)."""
    return GPT(SIZES[size])


def task_model(size: str = "gpt", classes: int = 2, kind: str = "classification") -> GPTForTask:
    """A fine-tuning model of ``size`` with ``classes`` outputs for task ``kind``."""
    return GPTForTask(SIZES[size], classes, kind)
