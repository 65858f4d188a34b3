"""ELMo's budget tier: the biLM's sentence pieces and vocabulary, the task model with and without ELMo, the systems'
losses and metrics, and the two-stage chain through the runner on the tiny Debian corpora (the biLM's ``bilm.``
tensors are what the task model's ELMo holds after loading)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import yaml

from harness import registry, runner
from harness.checkpoints import load_state
from harness.runner import load_config, resolve_config
from reproductions.elmo import BUDGET_TASK_MODELS
from reproductions.elmo.budget import BiLMPerplexity, BiLMSystem, BudgetClassifierSystem
from reproductions.elmo.classifier import budget_classifier
from reproductions.elmo.data import MAX_TEXT_TOKENS, BiLMDataModule, encode_texts, is_text, pieces, softmax_vocabulary
from tasks.debian_corpora.data import prepare_smoke

CONFIGS = Path(__file__).resolve().parents[3] / "reproductions" / "elmo" / "configs"


@pytest.fixture(scope="module")
def tiny_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("elmo-budget")
    prepare_smoke(root)
    return root


def test_pieces_are_lines_cut_and_headings_skipped() -> None:
    lines = [" = Title = ", " ", " a b c d e ", " f "]
    kept = [line for line in lines if is_text(line)]
    assert kept == [" a b c d e ", " f "]
    assert pieces(kept, 2) == [["a", "b"], ["c", "d"], ["e"], ["f"]]


def test_softmax_vocabulary_specials_first_then_by_count() -> None:
    vocab = softmax_vocabulary([" b a b c <unk> ", " c b "], 5)
    assert list(vocab) == ["<S>", "</S>", "<unk>", "b", "c"]  # b 3, c 2; a (1) falls out
    with pytest.raises(Exception, match="vocab_size must exceed 3"):
        softmax_vocabulary(["a"], 3)


def test_bilm_batches_frame_every_piece(tiny_root: Path) -> None:
    data = BiLMDataModule(tiny_root, vocab_size=40, max_tokens=5, train_lines=None, test_lines=10, batch_size=4)
    data.setup()
    assert data.data_hash == json.loads((tiny_root / "debian-lm" / "corpus.json").read_text())["data_hash"]
    assert all(1 <= len(piece) <= 5 for piece in data.train_pieces + data.test_pieces)
    chars, ids = next(iter(data.test_dataloader()))
    first = data.test_pieces[0]
    assert chars.shape[1] == ids.shape[1] == max(len(p) for p in data.test_pieces[:64]) + 2
    unk = data.vocab["<unk>"]
    assert ids[0, : len(first) + 2].tolist() == [0, *(data.vocab.get(t, unk) for t in first), 1]  # <S> ... </S>
    assert (chars[0, len(first) + 2 :] == 0).all()


def test_encode_texts_tokenises_as_the_corpus_and_cuts_long_texts() -> None:
    chars, words = encode_texts(["a well-known word\\nagain", "x " * 100])
    assert words.shape == (2, MAX_TEXT_TOKENS)
    assert chars.shape == (2, MAX_TEXT_TOKENS + 2, 50)
    assert (words[0] > 0).sum() == 6  # a well @-@ known word again
    assert (words[0, 6:] == 0).all()


@pytest.mark.parametrize("model", ["elmo-budget-task", "elmo-budget-task-elmo", "elmo-budget-task-elmo-top"])
def test_task_model_variants_differ_only_in_elmo(model: str) -> None:
    classifier = budget_classifier(model, 7)
    assert (classifier.input.elmo is None) == (model == "elmo-budget-task")
    if classifier.input.elmo is not None:
        assert classifier.input.elmo.mixes[0].top_only == model.endswith("-top")
        assert not any(p.requires_grad for p in classifier.input.elmo.bilm.parameters())
    chars, words = encode_texts(["one two three", "four"])
    classifier.eval()
    logits = classifier(chars, words)
    assert logits.shape == (2, 7)
    assert torch.allclose(classifier(*encode_texts(["four"]))[0], logits[1], atol=1e-5)  # padding is inert


def test_classifier_system_learns_one_batch() -> None:
    torch.manual_seed(0)
    system = BudgetClassifierSystem("elmo-budget-task-elmo", num_classes=3, lr=1e-2)
    chars, words = encode_texts(["a cat", "a dog runs", "the sun"])
    labels = torch.tensor([0, 1, 2])
    optimiser = system.configure_optimizers()
    first = None
    for step in range(30):
        loss = system.training_step(((chars, words), labels), step)
        first = float(loss) if first is None else first
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    assert float(loss) < first / 2


def test_bilm_perplexity_is_the_exp_of_each_directions_mean_nll() -> None:
    metric = BiLMPerplexity()
    metric.update(torch.tensor(1.0), torch.tensor(2.0), 10)
    metric.update(torch.tensor(3.0), torch.tensor(2.0), 30)
    got = metric.compute()
    fwd, bwd = math.exp((10 + 90) / 40), math.exp(2.0)
    assert got == pytest.approx({"perplexity_fwd": fwd, "perplexity_bwd": bwd, "perplexity": (fwd + bwd) / 2})


def test_bilm_system_keeps_its_softmax_beside_the_bilm() -> None:
    system = BiLMSystem(vocab_size=50)
    names = set(system.state_dict())
    assert "softmax.weight" in names and not any(n.startswith("bilm.softmax") for n in names)
    task = BudgetClassifierSystem("elmo-budget-task-elmo").state_dict()
    bilm = {n[len("bilm.") :] for n in names if n.startswith("bilm.")}
    assert bilm == {n[len("model.input.elmo.bilm.") :] for n in task if n.startswith("model.input.elmo.bilm.")}


def test_budget_configs_differ_only_in_elmo() -> None:
    config = load_config(CONFIGS / "budget.yaml", "budget")
    runs = {m: resolve_config(config, "budget", m, 3, None) for m in BUDGET_TASK_MODELS}
    assert {m: r["model"] for m, r in runs.items()} == {m: m for m in BUDGET_TASK_MODELS}
    for key in ("data", "trainer", "evaluate", "system", "prepare"):
        assert len({json.dumps(r[key], sort_keys=True) for r in runs.values()}) == 1
    assert "init_from" not in runs["elmo-budget-task"]  # no biLM to load
    assert runs["elmo-budget-task-elmo"]["init_from"] == runs["elmo-budget-task-elmo-top"]["init_from"]
    assert runs["elmo-budget-task-elmo"]["init_from"]["seed"] == 0  # one biLM for every seed


def _tiny_chain(folder: Path, root: Path) -> Path:
    """The budget configs, written to ``folder`` with the tiny corpora and a few steps."""
    bilm = load_config(CONFIGS / "budget-bilm.yaml", "budget")
    bilm["data"]["init_args"].update(data_root=str(root), vocab_size=60, train_lines=None, test_lines=20)
    bilm["system"]["init_args"]["vocab_size"] = 60
    bilm["trainer"]["max_steps"] = 3
    task = load_config(CONFIGS / "budget.yaml", "budget")
    task["data"]["init_args"].update(data_root=str(root / "wordnet-lexname"), per_class=2)
    task["trainer"]["max_epochs"] = 1
    task["save_checkpoint"] = True  # to read the task model's weights back
    for name, config in (("budget-bilm.yaml", bilm), ("budget.yaml", task)):
        (folder / name).write_text(yaml.safe_dump(config), encoding="utf-8")
    return folder / "budget.yaml"


def test_the_chain_runs_and_the_task_model_holds_the_trained_bilm(
    tiny_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "results" / "runs"
    [path] = runner.run(
        registry.reproduction("elmo"), "budget", seed=1, config_path=_tiny_chain(tmp_path, tiny_root), runs_dir=runs
    )
    records = {r["dataset"]: r for r in (json.loads(p.read_text()) for p in runs.glob("*.json"))}
    lm, task = records["debian-lm"], records["wordnet-lexname"]
    assert task["run_id"] == json.loads(path.read_text())["run_id"]
    assert task["parents"] == [lm["run_id"]] and lm["seed"] == 0 and task["seed"] == 1
    assert lm["protocol"] == "bilm-vocab10k-pieces20"
    assert lm["metrics"]["perplexity"] == pytest.approx(
        (lm["metrics"]["perplexity_fwd"] + lm["metrics"]["perplexity_bwd"]) / 2
    )
    assert set(task["metrics"]) >= {"accuracy", "error"}
    parent = load_state(lm["artifacts"]["checkpoint_sha256"], runs, "the biLM stage")
    child = load_state(task["artifacts"]["checkpoint_sha256"], runs, "the task stage")
    assert any(name.startswith("softmax.") for name in parent)
    bilm = {name[len("bilm.") :]: value for name, value in parent.items() if name.startswith("bilm.")}
    held = {
        name[len("model.input.elmo.bilm.") :]: v
        for name, v in child.items()
        if name.startswith("model.input.elmo.bilm.")
    }
    assert bilm.keys() == held.keys() and all(torch.equal(bilm[n], held[n]) for n in bilm)  # loaded, then frozen
    assert task["artifacts"]["predictions"].startswith(f"artifacts/{task['run_id']}/")


def test_elmo_cache_gives_the_layers_of_a_plain_pass_and_computes_each_sentence_once() -> None:
    torch.manual_seed(0)
    classifier = budget_classifier("elmo-budget-task-elmo", 5)
    elmo = classifier.input.elmo
    elmo.mixes[0].weights.data = torch.tensor([0.3, -0.2, 0.5])
    elmo.dropout.p = 0.0
    chars, _ = encode_texts(["a short one", "a somewhat longer sentence than that", "x"])
    elmo.train()
    (plain,), mask = elmo(chars)
    elmo.cache = {}
    (first,), cached_mask = elmo(chars[[1, 0]])  # another batch: other order, other padding
    assert len(elmo.cache) == 2 and torch.equal(cached_mask, mask[[1, 0]])
    (again,), _ = elmo(chars)
    assert len(elmo.cache) == 3
    assert torch.allclose(again, plain, atol=1e-6) and torch.allclose(first, plain[[1, 0]], atol=1e-6)
    elmo.eval()
    elmo(encode_texts(["not kept at test time"])[0])
    assert len(elmo.cache) == 3
