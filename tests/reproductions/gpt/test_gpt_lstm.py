"""Table 5's LSTM baseline (reproductions/gpt/lstm.py): GPT's framework with one 2048-unit LSTM for the Transformer
blocks; its parameter count by hand, left-to-right reading, padding after the real symbols, Figure 1's head on it,
and the GLUE configs' ``gpt-lstm`` override."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.runner import load_config, resolve_config
from reproductions.gpt.model import GPT, GPT_LSTM, GPTConfig, GPTForTask

CONFIGS = Path(__file__).resolve().parents[3] / "reproductions" / "gpt" / "configs"
TINY = GPTConfig(vocab=11, n_ctx=8, dim=6, layers=1, heads=1, hidden=6, block="lstm")


def test_parameter_count_by_hand():
    """W_e 40,478 x 2048 (tied output); the LSTM's W_ih, W_hh 8192 x 2048 each and two biases of 8192."""
    with torch.device("meta"):
        model = GPT(GPT_LSTM)
    assert model.positions is None and len(model.blocks) == 1
    assert sum(p.numel() for p in model.parameters()) == 40478 * 2048 + 2 * 8192 * 2048 + 2 * 8192 == 116_469_760


def test_reads_left_to_right_and_ignores_right_padding():
    torch.manual_seed(0)
    model = GPT(TINY).eval()
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    changed = ids.clone()
    changed[0, 3:] = torch.tensor([9, 10])
    a, b = model(ids), model(changed)
    assert torch.equal(a[:, :3], b[:, :3]) and not torch.allclose(a[:, 3:], b[:, 3:])
    assert a.shape == (1, 5, 11)


def test_task_head_reads_the_extract_state_for_each_answer():
    torch.manual_seed(0)
    model = GPTForTask(TINY, classes=2, kind="multiple_choice").eval()
    ids = torch.tensor([[[11, 1, 12, 2, 13, 0], [11, 1, 12, 3, 4, 13]]])  # <s> c $ a <e> (padded), two answers
    mask = (torch.arange(6) < torch.tensor([[5], [6]])).long()[None]
    scores, lm = model.logits(ids, mask)
    assert scores.shape == (1, 2) and lm.shape == (2, 6, 14)  # tokens and the 3 special rows
    alone = model.logits(ids[:, :1, :5], mask[:, :1, :5])[0]
    torch.testing.assert_close(scores[:, :1], alone)  # padding after <e> changes nothing


@pytest.mark.parametrize("task", ["cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte"])
def test_glue_configs_fine_tune_the_lstms_own_pre_training(task):
    config = load_config(CONFIGS / f"full-{task}.yaml", "full")
    lstm = resolve_config(config, "full", "gpt-lstm", 0, None)
    gpt = resolve_config(config, "full", "gpt", 0, None)
    assert lstm["init_from"] == {
        **gpt["init_from"],
        "model": "gpt-lstm",
        "prefixes": ["model.tokens.", "model.blocks."],
    }
    assert lstm["system"] == gpt["system"] and lstm["data"] == gpt["data"] and lstm["trainer"] == gpt["trainer"]
