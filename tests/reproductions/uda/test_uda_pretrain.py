"""BERT_FINETUNE's first stage (Appendix E.1): the masked-LM data module's examples on a tiny Yelp-2 copy and an extra
file of unlabelled texts, a 2-step fit of :class:`BertPretrainSystem` that stores its checkpoint, the chain into a
UDA fine-tuning run (``init_from``), and the four full pre-training configs with the fine-tuning configs that start
from them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import yaml

from harness import registry
from harness.checkpoints import load_state
from harness.config import validate
from harness.errors import HarnessError
from harness.records import read_record
from harness.runner import check_arguments, load_config, resolve_config, run
from reproductions.uda.data import MaskedLMDataModule
from reproductions.uda.system import BertPretrainSystem, UDASystem
from tasks.text_classification.fixtures import write_tiny_text_classification

CONFIGS = Path("reproductions/uda/configs").resolve()
TASKS = ("yelp-2", "yelp-5", "amazon-2", "amazon-5")
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
EXTRA = [
    f"{text} Order {number}."
    for number in range(4)
    for text in (
        "The soup was cold. The waiter was kind! Would I go back? Maybe next year.",
        "Great kettle. It boils fast. The lid is loose though.",
        "A fine violin for a beginner. The case arrived broken. Support replaced it.",
    )
]


@pytest.fixture
def corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A tiny Yelp-2 copy, 12 extra texts (one a line) and a vocabulary of their words (the tokenizer artifact is
    written under the test's folder)."""
    monkeypatch.chdir(tmp_path)
    root = write_tiny_text_classification(tmp_path / "yelp-2", dataset="yelp-2", per_class=6, test_per_class=2)
    extra = tmp_path / "unlabelled.txt"
    extra.write_text("\n".join(EXTRA) + "\n", encoding="utf-8")
    texts = [p.read_text(encoding="utf-8") for p in root.rglob("*.csv")] + EXTRA
    words = sorted({w.lower() for t in texts for w in re.findall(r"\w+|[^\w\s]", t)} - set(SPECIALS))
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"{p}\n" for p in SPECIALS + words), encoding="utf-8")
    return {"data_root": str(root), "unlabelled_extra": str(extra), "vocab": str(vocab), "size": len(SPECIALS + words)}


def module(corpus: dict[str, str], **changes: object) -> MaskedLMDataModule:
    args = {"task": "yelp-2", "data_root": corpus["data_root"], "unlabelled_extra": corpus["unlabelled_extra"],
            "vocab": corpus["vocab"], "max_tokens": 24, "held_out": 4, "batch_size": 4, "eval_batch_size": 4,
            "seed": 0}  # fmt: skip
    data = MaskedLMDataModule(**{**args, **changes})
    data.verify()
    data.setup()
    return data


def test_examples_are_fixed_length_sentence_pairs(corpus: dict[str, str]) -> None:
    data = module(corpus)
    assert len(data.train_texts) == 12 + 12 - 4 and len(data.test_texts) == 4
    assert sorted(data.train_texts + data.test_texts) == sorted(data._texts())  # a split of the texts, each once
    assert set(EXTRA) <= set(data._texts())
    tok = data.tokenizer
    cls, sep, pad = tok.cls_token_id, tok.sep_token_id, tok.pad_token_id
    assert data.mask_id == tok.mask_token_id == 4 and pad == 0
    labels = set()
    for index in range(len(data.train_texts)):
        item = data.example(data.train_texts, index, 0)
        ids, types, real = item["input_ids"], item["token_type_ids"], item["attention_mask"].bool()
        assert ids.shape == types.shape == (24,) and ids[0] == cls and (ids[~real] == pad).all()
        seps = (ids == sep).nonzero()[:, 0].tolist()
        assert len(seps) == 2 and seps[1] == int(real.sum()) - 1  # [CLS] A [SEP] B [SEP]
        assert types[: seps[0] + 1].eq(0).all() and types[seps[0] + 1 : seps[1] + 1].eq(1).all()
        assert torch.equal(item["candidates"], real & (ids != cls) & (ids != sep))
        labels.add(int(item["next_sentence_label"]))
        again = data.example(data.train_texts, index, 0)
        assert all(torch.equal(item[k], again[k]) for k in item)  # drawn from (seed, index)
    assert labels == {0, 1}
    single = module(corpus, next_sentence=False).example(data.train_texts, 0, 0)
    assert single["token_type_ids"].eq(0).all() and (single["input_ids"] == sep).sum() == 1
    batch = next(iter(data.train_dataloader()))
    assert batch["input_ids"].shape == (4, 24) and data.record_artifacts["tokenizer"].startswith("results/tokenizers/")


def test_the_held_out_texts_do_not_depend_on_the_run_seed(corpus: dict[str, str]) -> None:
    assert module(corpus, seed=0).test_texts == module(corpus, seed=5).test_texts
    with pytest.raises(HarnessError, match="held_out"):
        module(corpus, held_out=40)


def test_system_refuses_a_mask_id_the_vocabulary_does_not_have(corpus: dict[str, str]) -> None:
    system = BertPretrainSystem(model="uda-budget-text", vocab_size=corpus["size"], mask_id=103)
    system.trainer = type("T", (), {"datamodule": module(corpus)})()
    with pytest.raises(HarnessError, match=r"mask_id is 103 but the data module's vocabulary has \[MASK\] 4"):
        system.setup("fit")


def write_chain(tmp_path: Path, corpus: dict[str, str]) -> Path:
    """A 2-step pre-training config and a 1-step UDA fine-tuning config that starts from its encoder."""
    trainer = {"max_steps": 2, "max_epochs": -1, "accelerator": "cpu", "devices": 1, "enable_checkpointing": False,
               "limit_val_batches": 0, "num_sanity_val_steps": 0, "enable_progress_bar": False}  # fmt: skip
    pretrain = {
        "tier": "smoke", "model": "uda-budget-text", "seed": 0, "save_checkpoint": True,
        "system": {"class_path": "reproductions.uda.system:BertPretrainSystem",
                   "init_args": {"vocab_size": corpus["size"], "mask_id": 4, "max_predictions": 4, "lr": 1e-3,
                                 "num_threads": 1}},
        "data": {"class_path": "reproductions.uda.data:MaskedLMDataModule",
                 "init_args": {"task": "yelp-2", "data_root": corpus["data_root"], "vocab": corpus["vocab"],
                               "unlabelled_extra": corpus["unlabelled_extra"], "max_tokens": 24, "held_out": 4,
                               "batch_size": 4, "eval_batch_size": 4}},
        "trainer": trainer, "evaluate": [{"dataset": "yelp-2-unlabelled", "split": "held-out"}],
    }  # fmt: skip
    finetune = {
        "tier": "smoke", "model": "uda-budget-text", "seed": 1,
        "init_from": {"config": "pretrain.yaml", "seed": 0, "prefixes": ["model.encoder."]},
        "system": {"class_path": "reproductions.uda.system:UDASystem",
                   "init_args": {"num_classes": 2, "vocab_size": corpus["size"], "objective": "supervised",
                                 "tsa": "none", "optimizer": "bert-adamw", "lr": 1e-5, "schedule": "bert-linear",
                                 "num_threads": 1}},
        "data": {"class_path": "reproductions.uda.data:TextUDADataModule",
                 "init_args": {"task": "yelp-2", "data_root": corpus["data_root"], "per_class": 2,
                               "batch_size": 2, "unlabelled_ratio": 0, "steps_per_epoch": 1, "augment": "none",
                               "vocab": corpus["vocab"], "vocab_size": corpus["size"], "max_tokens": 24}},
        "trainer": {**trainer, "max_steps": 1}, "evaluate": [{"dataset": "yelp-2", "split": "test"}],
    }  # fmt: skip
    (tmp_path / "pretrain.yaml").write_text(yaml.safe_dump(pretrain))
    (tmp_path / "finetune.yaml").write_text(yaml.safe_dump(finetune))
    return tmp_path / "finetune.yaml"


def test_two_steps_store_a_checkpoint_that_a_uda_run_starts_from(tmp_path: Path, corpus: dict[str, str]) -> None:
    """The fine-tuning config's ``init_from`` runs the pre-training stage first (2 steps, held-out metrics, a
    checkpoint), then starts the classifier's encoder from that checkpoint's ``model.encoder.`` tensors."""
    runs = tmp_path / "results" / "runs"
    [child_path] = run(
        registry.reproduction("uda"), tier="smoke", config_path=write_chain(tmp_path, corpus), runs_dir=runs
    )
    child = read_record(child_path)
    [parent_id] = child.parents
    parent = read_record(runs / f"{parent_id}.json")
    assert parent.model == "uda-budget-text" and (parent.dataset, parent.split) == ("yelp-2-unlabelled", "held-out")
    metrics = parent.metrics
    assert {"loss", "mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy"} <= set(metrics)
    assert metrics["loss"] == pytest.approx(metrics["mlm_loss"] + metrics["nsp_loss"]) and metrics["mlm_loss"] > 0
    state = load_state(parent.artifacts["checkpoint_sha256"], runs, "test")
    assert {k.split(".")[1] for k in state} == {"encoder", "mlm", "next_sentence"}
    assert "model.mlm.bias" in state and not any("decoder" in k for k in state)  # the projection is tied
    fresh = UDASystem(model="uda-budget-text", num_classes=2, vocab_size=corpus["size"])
    from harness.checkpoints import load_into

    load_into(fresh, state, ["model.encoder."], "parent")
    assert all(torch.equal(fresh.state_dict()[k], v) for k, v in state.items() if k.startswith("model.encoder."))


@pytest.mark.parametrize("task", TASKS)
def test_full_pretrain_configs_resolve_and_chain(task: str) -> None:
    """Each task's pre-training config names the paper's settings and saves a checkpoint; both fine-tuning configs
    start uda-bert-finetune from it (seed 0's run) and the other BERT models from released weights."""
    path = CONFIGS / f"full-{task}-bert-pretrain.yaml"
    config = load_config(path, "full")
    resolved = resolve_config(config, "full", None, None, None)
    check_arguments(path, resolved)
    system, data = resolved["system"]["init_args"], resolved["data"]["init_args"]
    assert resolved["model"] == "uda-bert-finetune" and config["save_checkpoint"] is True
    assert (system["lr"], system["mask_rate"], system["max_predictions"], system["next_sentence"]) == (
        5e-5,
        0.15,
        77,
        True,
    )
    assert data["batch_size"] * resolved["trainer"]["accumulate_grad_batches"] == 32
    assert resolved["trainer"]["max_steps"] == 100000 and data["max_tokens"] == 512 and data["task"] == task
    assert "uncased_L-24_H-1024_A-16" in system["init_checkpoint"] and "uncased_L-24_H-1024_A-16" in data["vocab"]
    for objective in ("uda", "supervised"):
        child_path = CONFIGS / f"full-{task}-bert-{objective}.yaml"
        child = resolve_config(load_config(child_path, "full"), "full", "uda-bert-finetune", 3, None)
        validate(child)  # the resolved config, init_from included, is a tier config
        check_arguments(child_path, child)
        assert child["init_from"] == {"config": path.name, "seed": 0, "prefixes": ["model.encoder."]}
        assert (CONFIGS / child["init_from"]["config"]).is_file()
        assert child["system"]["init_args"]["init_checkpoint"] is None
        assert "init_from" not in resolve_config(load_config(child_path, "full"), "full", "uda-bert-large", 0, None)


def test_the_run_is_identified_by_the_heads_file_content_not_its_path(tmp_path: Path) -> None:
    """``init_heads`` is a weights file like ``init_checkpoint``: the run id follows its content (harness.runner)."""
    from harness.training import identity

    config = load_config(CONFIGS / "full-yelp-2-bert-pretrain.yaml", "full")
    (tmp_path / "a").write_bytes(b"heads")
    (tmp_path / "b").write_bytes(b"heads")
    (tmp_path / "c").write_bytes(b"other heads")
    (tmp_path / "encoder").write_bytes(b"encoder")
    keys = []
    for name in "abc":
        resolved = resolve_config(config, "full", None, None, None)
        resolved["system"]["init_args"] |= {
            "init_heads": str(tmp_path / name),
            "init_checkpoint": str(tmp_path / "encoder"),
        }
        keys.append(identity(resolved))
    assert keys[0] == keys[1] != keys[2] and "init_heads" not in keys[0]["system"]["init_args"]
