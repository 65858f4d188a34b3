"""Table 5's LSTM baseline of "Improving Language Understanding by Generative Pre-Training" (Radford et al. 2018; no
arXiv id): "a single layer 2048 unit LSTM using the same framework" in place of GPT's 12 Transformer blocks.

The report says nothing else about it. What is chosen here, so that it is GPT's framework with only the block
swapped (:class:`reproductions.gpt.model.GPT` with ``GPTConfig(block="lstm")``):

- Eq. 2 with ``transformer_block`` replaced by one LSTM layer of 2048 units: ``h_1 = LSTM(U W_e)``,
  ``P(u) = softmax(h_1 W_e^T)``. Eq. 2 ties the output layer to ``W_e``, so the token embeddings are as wide as the
  LSTM's state, 2048 (no projection); the special tokens of fine-tuning are 2048-wide rows too.
- No position embeddings ``W_p``: the recurrence gives the order (an LSTM with learned positions is not the
  baseline's usual form, and the report names none).
- Dropout 0.1 on the embedding matrix (as GPT's, the released ``embd_pdrop``) and on the LSTM's outputs (GPT's
  residual dropout); every weight N(0, 0.02) and the biases 0, as Section 4.1 initialises GPT (for a 2048-unit
  recurrent matrix that is a spectral radius of about 0.9).
- ``nn.LSTM``'s two bias vectors (TensorFlow's LSTM has one; the second adds 8,192 redundant parameters).
- Pre-training and fine-tuning exactly as GPT's (configs: ``full-pretrain.yaml --model gpt-lstm``, the GLUE
  configs' ``gpt-lstm`` override): 512-symbol sequences, the same optimiser, schedules, auxiliary LM objective
  (lambda 0.5) and the task head ``W_y`` on the state at the extract token; padding is on the right, so the states
  of real symbols never see it.

With the released vocabulary (40,478 symbols): 82,898,944 embedding and 33,570,816 LSTM parameters, 116,469,760 in
all, within 0.1% of GPT's 116,534,784 (a coincidence of the tied 2048-wide embedding, not a choice made to match).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class LSTMBlock(nn.Module):
    """One LSTM layer standing where GPT's Transformer blocks stand: ``(B, T, D) -> (B, T, D)``, left to right."""

    def __init__(self, dim: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.lstm = nn.LSTM(dim, dim, batch_first=True)
        self.dropout = dropout
        for name, weight in self.lstm.named_parameters():
            (nn.init.zeros_ if name.startswith("bias") else lambda w: nn.init.normal_(w, 0.0, 0.02))(weight)

    def forward(self, h: torch.Tensor, causal: bool = True, padding: torch.Tensor | None = None) -> torch.Tensor:
        """``causal`` and ``padding`` are the Transformer block's arguments: an LSTM reads left to right, and the
        padding follows every real symbol, so neither changes what a real symbol's state sees."""
        return F.dropout(self.lstm(h)[0], self.dropout, self.training)
