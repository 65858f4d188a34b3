"""GPT's training pieces: the released optimiser, word-level scoring of BPE symbols, layer transfer, the BPE file,
Figure 1's transformations, the configs; and (slow) the smoke chain end to end through `harness run`."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from harness.runner import load_config, resolve_config
from reproductions.gpt import transforms
from reproductions.gpt.data import budget_tokenizer, prepare_smoke
from reproductions.gpt.optim import OpenAIAdam
from reproductions.gpt.system import GPTFineTuneSystem, word_log_probs
from tasks.language_modeling.stream import encode_lines

CONFIGS = Path(__file__).resolve().parents[3] / "reproductions" / "gpt" / "configs"


def test_openai_adam_first_step_by_hand():
    matrix = torch.nn.Parameter(torch.tensor([[1.0, -2.0]]))
    bias = torch.nn.Parameter(torch.tensor([0.5]))
    matrix.grad, bias.grad = torch.tensor([[0.3, -0.4]]), torch.tensor([2.0])  # global norm sqrt(4.25) > 1
    OpenAIAdam([matrix, bias], lr=0.1, l2=0.01, max_grad_norm=1.0).step()
    scale = 1 / 4.25**0.5
    lr_t = 0.1 * (1 - 0.999) ** 0.5 / (1 - 0.9)
    for param, start, grad, decays in ((matrix, [1.0, -2.0], [0.3, -0.4], True), (bias, [0.5], [2.0], False)):
        g = torch.tensor(grad) * scale
        m, v = 0.1 * g, 0.001 * g * g
        update = m / (v.sqrt() + 1e-8) + (0.01 * torch.tensor(start) if decays else 0)
        torch.testing.assert_close(param.detach().reshape(-1), torch.tensor(start) - lr_t * update)


def test_word_log_probs_carry_a_word_across_batches():
    # words: [a b] [c] [d e | f] [g]  -- the third word's symbols straddle the two batches
    first, partial = word_log_probs(
        torch.tensor([-1.0, -2.0, -3.0, -4.0, -5.0]),
        torch.tensor([False, True, True, False, False]),
        torch.zeros((), dtype=torch.float64),
    )
    second, partial = word_log_probs(torch.tensor([-6.0, -7.0]), torch.tensor([True, True]), partial)
    assert first.tolist() == [-3.0, -3.0] and second.tolist() == [-15.0, -7.0] and partial.item() == 0.0
    none, partial = word_log_probs(torch.tensor([-1.0]), torch.tensor([False]), torch.tensor(-2.0, dtype=torch.float64))
    assert len(none) == 0 and partial.item() == -3.0


def test_transfer_layers_keeps_the_first_blocks_only():
    torch.manual_seed(0)
    system = GPTFineTuneSystem(model="gpt-budget", classes=45, transfer_layers=1)
    fresh = {k: v.clone() for k, v in system.state_dict().items()}
    parent = {
        k: v + 1.0 for k, v in fresh.items() if k.startswith(("model.tokens.", "model.positions.", "model.blocks."))
    }
    system.load_state_dict(parent, strict=False)  # what init_from's prefixes load
    system.on_fit_start()
    state = system.state_dict()
    assert torch.equal(state["model.tokens.weight"], parent["model.tokens.weight"])
    assert torch.equal(state["model.blocks.0.norm1.weight"], parent["model.blocks.0.norm1.weight"])
    assert torch.equal(state["model.blocks.1.attention.qkv.weight"], fresh["model.blocks.1.attention.qkv.weight"])
    assert torch.equal(state["model.blocks.2.norm2.bias"], fresh["model.blocks.2.norm2.bias"])
    nothing = GPTFineTuneSystem(model="gpt-budget", classes=45, transfer_layers=-1)
    assert {k for k in nothing._fresh} == set(parent)
    with pytest.raises(HarnessError, match="transfer_layers"):
        GPTFineTuneSystem(model="gpt-budget", transfer_layers=4)


def test_figure_1_transformations():
    special = transforms.Specials(100)
    assert transforms.classification([5, 6, 7], special, 2) == [100, 5, 6, 102]
    assert transforms.entailment([1], [2, 3], special, 9) == [100, 1, 101, 2, 3, 102]
    assert transforms.similarity([1], [2], special, 9) == [[100, 1, 101, 2, 102], [100, 2, 101, 1, 102]]
    choices = transforms.multiple_choice([1, 2], [[3], [4, 5]], special, 9)
    ids, mask = transforms.pad([choices])
    assert ids.shape == (1, 2, 7) and mask[0].sum(-1).tolist() == [6, 7]


@pytest.fixture(scope="module")
def smoke_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gpt-smoke")
    prepare_smoke(root)
    return root


def test_bpe_file_is_kept_and_counts_words(smoke_root):
    tokenizer = budget_tokenizer(smoke_root, 300)
    (kept,) = (smoke_root / "debian-lm-gpt-bpe-300").glob("*.json")
    assert kept.name == f"{tokenizer.digest}.json" == f"{hashlib.sha256(kept.read_bytes()).hexdigest()}.json"
    assert budget_tokenizer(smoke_root, 300).digest == tokenizer.digest  # reused, not trained again
    assert tokenizer.unk_token_id == 0 and tokenizer.eos_token_id == 1
    ids, ends = encode_lines(tokenizer, [" the <unk> of well @-@ known ", " "])
    assert len(ids) == len(ends) and sum(ends) == 6 + 2  # six words and two line ends
    assert ids[-1] == ids[-2] == 1  # each line ends with <eos>
    with pytest.raises(HarnessError, match="symbols; the model has"):
        budget_tokenizer(smoke_root, 20)  # the corpus's alphabet alone is larger than 20 symbols


def test_budget_overrides_set_what_the_claims_read():
    from harness import registry

    repro = registry.reproduction("gpt")
    config = load_config(CONFIGS / "budget.yaml", "budget")
    assert set(config["overrides"]) <= set(repro.model_ids())
    transfer = {}
    for model in ["gpt-budget", *config["overrides"]]:
        resolved = resolve_config(config, "budget", model, 1, None)
        args = resolved["system"]["init_args"]
        transfer[model] = (args["transfer_layers"], args["lm_coef"])
        assert resolved["init_from"]["seed"] == 0  # one pre-training for every fine-tuning seed
    assert transfer == {
        "gpt-budget": (3, 0.5),
        "gpt-budget-no-aux": (3, 0.0),
        "gpt-budget-no-pretrain": (-1, 0.5),
        "gpt-budget-transfer-0": (0, 0.5),
        "gpt-budget-transfer-1": (1, 0.5),
        "gpt-budget-transfer-2": (2, 0.5),
    }


@pytest.mark.slow
def test_smoke_chain_runs_end_to_end(tmp_path):
    """`harness run` on the smoke fine-tuning runs its pre-training first, then writes both records."""
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CONFIGS.parents[2]), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "gpt", "--tier", "smoke", "--config", str(CONFIGS / "smoke-finetune.yaml")], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    records = [json.loads(p.read_text()) for p in (tmp_path / "results" / "runs").glob("*.json")]
    by_dataset = {r["dataset"]: r for r in records}
    assert set(by_dataset) == {"debian-lm", "wordnet-lexname"}
    assert by_dataset["wordnet-lexname"]["parents"] == [by_dataset["debian-lm"]["run_id"]]
    assert by_dataset["debian-lm"]["metrics"]["perplexity"] > 1
    assert 0 <= by_dataset["wordnet-lexname"]["metrics"]["accuracy"] <= 100
