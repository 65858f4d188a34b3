"""ELMo's SNLI task model (arXiv 1802.05365v2, Sec. 4 "Textual entailment", Tables 1-3): ESIM, the Enhanced
Sequential Inference Model of Chen, Zhu, Ling, Wei, Jiang & Inkpen, "Enhanced LSTM for Natural Language Inference",
ACL 2017 (arXiv 1609.06038), with and without ELMo.

ESIM as Chen et al. define it (Sec. 3.1-3.3), for premise ``a`` and hypothesis ``b``:

- input encoding: a biLSTM over each sentence's word vectors, ``a_i`` and ``b_j`` (``(B, N, 2h)``);
- local inference: soft alignment ``e_ij = a_i . b_j``, ``ã_i = sum_j softmax_j(e_ij) b_j``,
  ``b̃_j = sum_i softmax_i(e_ij) a_i``; enhancement ``m_a = [a; ã; a - ã; a ⊙ ã]`` (and ``m_b`` alike);
- composition: a one-layer ReLU feed-forward projection ``F`` of ``m`` to ``h`` (Chen et al.'s, and the same in
  AllenNLP's ``esim.jsonnet``, the code ELMo's authors released), then a second biLSTM;
- pooling: average and max over each sentence's positions, ``v = [v_a,ave; v_a,max; v_b,ave; v_b,max]`` (``8h``);
- classifier: an MLP with one ``tanh`` hidden layer of ``h`` units and 3 outputs (Chen et al.; AllenNLP uses ReLU);
  dropout 0.5 on the word vectors, on the projection's output and before each classifier layer; ``h = 300``.

ELMo (Sec. 3.3, Table 3): "[x_k; ELMo_k]" into the input biLSTM and, with a second mix of its own weights,
"[h_k; ELMo_k]" at that biLSTM's output, which is what the soft alignment reads. :data:`VARIANTS` is Table 2's and
Table 3's rows: the baseline, all layers at the input and output (``esim-elmo``, Table 1's model; the same as Table
3's ``esim-elmo-input-output``), the top layer only at both, input only, output only. ELMo's dropout is 0.5; its
``lambda`` is the system's ``l2``.

Where the paper is silent (its supplement, which gives the settings, was not read): the word vectors are 300-dim
embeddings of hashed lower-cased words trained from scratch (no GloVe here), with the ELMo variants keeping them
beside ELMo (Sec. 3.3's ``[x_k; ELMo_k]``; AllenNLP's ``esim_elmo.jsonnet`` drops them); no character CNN (ESIM has
none).

Inputs: ``premise_chars (B, N + 2, 50)``, ``premise_words (B, N)``, ``hypothesis_chars (B, M + 2, 50)``,
``hypothesis_words (B, M)``; output: logits ``(B, 3)`` over ``tasks.entailment.SNLI_LABELS``.
"""

from __future__ import annotations

import torch
from torch import nn

from reproductions.elmo.layers import TokenInput, masked_max, masked_mean, masked_softmax, packed_lstm, task_bilm
from reproductions.elmo.model import BiLM

# model id -> (ELMo at the task RNN's input, ELMo at its output, the top biLM layer only)
VARIANTS = {
    "esim": (False, False, False),
    "esim-elmo": (True, True, False),
    "esim-elmo-top": (True, True, True),
    "esim-elmo-input": (True, False, False),
    "esim-elmo-input-output": (True, True, False),
    "esim-elmo-output": (False, True, False),
}


class ESIM(nn.Module):
    """See the module docstring; ``bilm=None`` is the baseline."""

    def __init__(
        self,
        bilm: BiLM | None = None,
        elmo_input: bool = True,
        elmo_output: bool = True,
        top_only: bool = False,
        word_dim: int = 300,
        hidden: int = 300,
        n_classes: int = 3,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.input = TokenInput(word_dim, 0, bilm, elmo_input, elmo_output, top_only, dropout, elmo_dropout=dropout)
        self.encoder = nn.LSTM(self.input.dim, hidden, batch_first=True, bidirectional=True)
        width = 2 * hidden + (self.input.elmo_dim if self.input.elmo_output else 0)  # [h_k; ELMo_k]
        self.projection = nn.Sequential(nn.Linear(4 * width, hidden), nn.ReLU(), nn.Dropout(dropout))  # F
        self.composition = nn.LSTM(hidden, hidden, batch_first=True, bidirectional=True)
        self.classifier = nn.Sequential(  # the MLP: one tanh hidden layer
            nn.Dropout(dropout), nn.Linear(8 * hidden, hidden), nn.Tanh(),
            nn.Dropout(dropout), nn.Linear(hidden, n_classes),
        )  # fmt: skip

    def encode(self, chars: torch.Tensor, words: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Input encoding ``(B, N, width)`` (with ELMo's output mix appended) and the mask ``(B, N)``."""
        x, elmo, mask = self.input(chars, words)
        h = packed_lstm(self.encoder, x, mask)
        return (h if elmo is None else torch.cat([h, elmo], dim=-1)), mask

    def compose(self, a: torch.Tensor, aligned: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``m = [a; ã; a - ã; a ⊙ ã]`` -> ``F`` -> biLSTM -> ``[average; max]`` ``(B, 4h)``."""
        m = torch.cat([a, aligned, a - aligned, a * aligned], dim=-1)
        v = packed_lstm(self.composition, self.projection(m), mask)
        return torch.cat([masked_mean(v, mask), masked_max(v, mask)], dim=-1)

    def forward(
        self,
        premise_chars: torch.Tensor,
        premise_words: torch.Tensor,
        hypothesis_chars: torch.Tensor,
        hypothesis_words: torch.Tensor,
    ) -> torch.Tensor:
        a, mask_a = self.encode(premise_chars, premise_words)  # (B, N, width)
        b, mask_b = self.encode(hypothesis_chars, hypothesis_words)  # (B, M, width)
        e = a @ b.transpose(1, 2)  # (B, N, M)
        a_aligned = masked_softmax(e, mask_b[:, None, :], dim=2) @ b  # ã (B, N, width)
        b_aligned = masked_softmax(e, mask_a[:, :, None], dim=1).transpose(1, 2) @ a  # b̃ (B, M, width)
        v = torch.cat([self.compose(a, a_aligned, mask_a), self.compose(b, b_aligned, mask_b)], dim=-1)  # (B, 8h)
        return self.classifier(v)

    def penalty(self) -> torch.Tensor:
        return self.input.penalty()


def esim(variant: str = "esim", bilm: str = "released") -> ESIM:
    """One of :data:`VARIANTS`, with the released biLM's shape (weights loaded by the system) or ``bilm="tiny"``."""
    elmo_input, elmo_output, top_only = VARIANTS[variant]
    if not (elmo_input or elmo_output):
        return ESIM(None, False, False)
    return ESIM(task_bilm(bilm), elmo_input, elmo_output, top_only)
