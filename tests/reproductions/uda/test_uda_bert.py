"""UDA's BERT rows (Table 4): the full configs that fine-tune released BERT weights resolve for each BERT model; the
text data module cuts texts into WordPieces with a released ``vocab.txt``; the system loads converted encoder weights
(``init_checkpoint``) and uses BERT's optimiser and schedule."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from harness.runner import check_arguments, load_config, resolve_config
from reproductions.uda.data import TextUDADataModule
from reproductions.uda.system import UDASystem, schedule_factor
from tasks.text_classification.fixtures import write_tiny_text_classification

CONFIGS = sorted(p for p in Path("reproductions/uda/configs").glob("full-*-bert-*.yaml") if "pretrain" not in p.name)
PIECES = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "movie", "film", "good", "bad", "great", "##s", "!"]


def test_there_is_a_uda_and_a_supervised_config_per_dataset() -> None:
    assert [p.name for p in CONFIGS] == [
        f"full-{task}-bert-{objective}.yaml"
        for task in ("amazon-2", "amazon-5", "dbpedia", "imdb", "yelp-2", "yelp-5")
        for objective in ("supervised", "uda")
    ]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
@pytest.mark.parametrize("model", ["uda-bert-base", "uda-bert-large", "uda-bert-finetune"])
def test_bert_configs_resolve_to_their_weights(path: Path, model: str) -> None:
    config = load_config(path, "full")
    if model == "uda-bert-finetune" and model not in config["overrides"]:
        assert "dbpedia" in path.name  # Table 4 prints no BERT_FINETUNE row for DBpedia
        return
    resolved = resolve_config(config, "full", model, None, None)
    check_arguments(path, resolved)  # every key an argument of the system, data module and Trainer
    system, data = resolved["system"]["init_args"], resolved["data"]["init_args"]
    if model == "uda-bert-finetune" and "imdb" not in path.name:  # the chain's first stage makes its weights
        assert system["init_checkpoint"] is None and "uncased_L-24_H-1024_A-16" in data["vocab"]
        task = path.name.removeprefix("full-").split("-bert-")[0]
        assert resolved["init_from"]["config"] == f"full-{task}-bert-pretrain.yaml"
        return
    weights = {"uda-bert-base": "uncased_L-12_H-768_A-12", "uda-bert-large": "uncased_L-24_H-1024_A-16"}
    expected = weights.get(model, "bert_ft")
    assert expected in system["init_checkpoint"] and expected in data["vocab"]
    assert Path(system["init_checkpoint"]).parent == Path(data["vocab"]).parent.parent or "bert_ft" in expected
    assert (data["max_tokens"], data["batch_size"], system["optimizer"], system["schedule"]) == (
        512, 32, "bert-adamw", "bert-linear"
    )  # fmt: skip
    uda = system["objective"] == "uda"
    assert data["unlabelled_ratio"] == (7 if uda else 0)
    assert (system["lr"], resolved["trainer"]["max_steps"]) == ((2e-5, 10000) if uda else (3e-5, 3000))


@pytest.fixture
def imdb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.chdir(tmp_path)  # the tokenizer artifact goes to results/tokenizers
    root = write_tiny_text_classification(tmp_path / "imdb", dataset="imdb", per_class=6, test_per_class=4)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"{p}\n" for p in PIECES), encoding="utf-8")
    return root, vocab


def test_text_module_cuts_wordpieces_with_a_released_vocab(imdb: tuple[Path, Path]) -> None:
    root, vocab = imdb
    data = TextUDADataModule(task="imdb", data_root=str(root), per_class=2, batch_size=2, unlabelled_ratio=2,
                             steps_per_epoch=1, augment="tfidf", vocab=str(vocab), vocab_size=32, max_tokens=6)  # fmt: skip
    data.verify()
    data.setup()
    cls, sep = PIECES.index("[CLS]"), PIECES.index("[SEP]")
    rows = data.test_inputs.tolist()
    assert all(row[0] == cls and sep in row and len(row) <= 6 for row in rows)
    assert all(0 <= i < len(PIECES) for row in rows for i in row)
    assert data.wordpiece_ids("The film! Great films") == [cls, 13, 11, 8, 12, sep]  # the last 4 pieces kept
    batch = next(iter(data.train_dataloader()))
    assert batch["labelled"].shape[0] == 2 and batch["original"].shape[0] == batch["augmented"].shape[0] == 4
    assert data.record_artifacts["tokenizer"].startswith("results/tokenizers/")


def test_a_vocab_whose_pad_is_not_zero_is_refused(imdb: tuple[Path, Path]) -> None:
    root, vocab = imdb
    vocab.write_text("".join(f"{p}\n" for p in reversed(PIECES)), encoding="utf-8")
    data = TextUDADataModule(task="imdb", data_root=str(root), vocab=str(vocab), vocab_size=32)
    with pytest.raises(HarnessError, match=r"vocab.txt: \[PAD\] is id 13 \(must be 0\)"):
        data.setup()


def test_system_loads_converted_encoder_weights(tmp_path: Path) -> None:
    from safetensors.torch import save_file

    source = UDASystem(model="uda-budget-text", num_classes=3, vocab_size=50).model.encoder
    path = tmp_path / "encoder.safetensors"
    save_file({k: v.contiguous() for k, v in source.state_dict().items()}, str(path))
    system = UDASystem(model="uda-budget-text", num_classes=3, vocab_size=50, init_checkpoint=str(path))
    for key, value in source.state_dict().items():
        assert torch.equal(system.model.encoder.state_dict()[key], value)
    with pytest.raises(HarnessError, match=r"encoder.safetensors: weights do not fit the model's BERT encoder"):
        UDASystem(model="uda-budget-text", num_classes=3, vocab_size=60, init_checkpoint=str(path))
    with pytest.raises(HarnessError, match=r"encoder.safetensors: init_checkpoint holds BERT encoder weights"):
        UDASystem(model="uda-budget-bow", num_classes=3, vocab_size=50, init_checkpoint=str(path))


def test_bert_optimiser_and_schedule() -> None:
    system = UDASystem(model="uda-budget-text", num_classes=3, vocab_size=50, optimizer="bert-adamw",
                       weight_decay=0.01, schedule="bert-linear", warmup=0.1)  # fmt: skip
    system.trainer = type("T", (), {"estimated_stepping_batches": 100})()
    optimizer = system.configure_optimizers()["optimizer"]
    decayed, plain = optimizer.param_groups
    names = {id(p): n for n, p in system.model.named_parameters()}
    assert all(not names[id(p)].endswith("bias") and "norm" not in names[id(p)] for p in decayed["params"])
    assert all(names[id(p)].endswith("bias") or "norm" in names[id(p)] for p in plain["params"])
    assert (decayed["weight_decay"], plain["weight_decay"], optimizer.defaults["eps"]) == (0.01, 0.0, 1e-6)
    assert len(decayed["params"]) + len(plain["params"]) == len(list(system.model.parameters()))
    factors = [schedule_factor("bert-linear", p, 0.1) for p in (0.05, 0.1, 0.55, 1.0)]
    assert factors == pytest.approx([0.5, 0.9, 0.45, 0.0])  # BERT's: the decay runs over all of training
