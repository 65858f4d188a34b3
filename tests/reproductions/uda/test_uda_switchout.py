"""SwitchOut in UDA's text data module (Table 2): the unlabelled copies (and, with ``augment_labelled``, the labelled
texts) get words replaced, never the ``[CLS]``/``[SEP]``/padding ids, the same copies for the same seed; a tiny fit
runs with it; the two Table 2 Switchout configs resolve and carry their claims' conditions."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch

from harness import dotted
from harness.claims import registered_claims
from harness.errors import HarnessError
from harness.runner import check_arguments, load_config, resolve_config
from reproductions.uda.data.text import PAD, TextUDADataModule
from reproductions.uda.system import UDASystem
from tasks.text_classification.fixtures import write_tiny_text_classification

CONFIGS = Path("reproductions/uda/configs")
PIECES = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "movie", "film", "good", "bad", "great", "##s", "!"]


@pytest.fixture(scope="module")
def tiny_imdb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_text_classification(tmp_path_factory.mktemp("imdb"), "imdb", per_class=8, test_per_class=3)


def switchout_module(root: Path, seed: int = 0, **kwargs: object) -> TextUDADataModule:
    settings = dict(per_class=2, batch_size=2, unlabelled_ratio=7, steps_per_epoch=2, max_tokens=400, seed=seed)
    data = TextUDADataModule("imdb", str(root), augment="switchout", **{**settings, **kwargs})
    data.setup()
    return data


def test_switchout_copies_replace_words_but_never_the_special_ids(tiny_imdb: Path) -> None:
    data = switchout_module(tiny_imdb, switchout_tau=20.0)  # a high temperature: many words replaced
    batches = list(data.train_dataloader())
    for batch in batches:
        original, augmented = batch["original"], batch["augmented"]
        real = original != PAD
        assert torch.equal(real, augmented != PAD)  # one hashed id per word: the same lengths
        assert (original[:, 0] == 1).all() and (augmented[:, 0] == 1).all()  # [CLS] first, never replaced
        assert (augmented[:, 1:][real[:, 1:]] >= 3).all()  # no pad, [CLS] or [SEP] id drawn into the text
    changed = sum(int((b["original"] != b["augmented"]).sum()) for b in batches)
    assert changed > 20


def test_switchout_copies_are_the_same_for_the_same_seed(tiny_imdb: Path) -> None:
    first, again, other = (list(switchout_module(tiny_imdb, seed=s).train_dataloader()) for s in (3, 3, 4))
    assert all(torch.equal(a["augmented"], b["augmented"]) for a, b in zip(first, again, strict=True))
    assert any(not torch.equal(a["augmented"], b["augmented"]) for a, b in zip(first, other, strict=True))


def test_switchout_on_labelled_texts_only_with_augment_labelled(tiny_imdb: Path) -> None:
    plain = switchout_module(tiny_imdb, unlabelled_ratio=0, switchout_tau=20.0)
    augmented = switchout_module(tiny_imdb, unlabelled_ratio=0, switchout_tau=20.0, augment_labelled=True)
    clean = [data.labelled_batch(list(range(4)), random.Random(0))[0] for data in (plain, plain)]
    noisy = augmented.labelled_batch(list(range(4)), random.Random(0))[0]
    assert torch.equal(clean[0], clean[1]) and torch.equal(clean[0] != PAD, noisy != PAD)
    assert not torch.equal(clean[0], noisy) and (noisy[:, 0] == 1).all()


def test_switchout_with_wordpieces_keeps_cls_and_sep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the tokenizer artifact goes to results/tokenizers
    root = write_tiny_text_classification(tmp_path / "imdb", dataset="imdb", per_class=6, test_per_class=4)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(f"{p}\n" for p in PIECES), encoding="utf-8")
    data = switchout_module(root, vocab=str(vocab), vocab_size=32, max_tokens=64, switchout_tau=20.0)
    cls, sep, mask = PIECES.index("[CLS]"), PIECES.index("[SEP]"), PIECES.index("[MASK]")
    for batch in data.train_dataloader():
        for row in batch["augmented"].tolist():
            text = row[: row.index(sep) + 1]
            assert text[0] == cls and text[-1] == sep and all(i == PAD for i in row[len(text) :])
            assert not {PAD, cls, sep, mask} & set(text[1:-1])  # specials only where the layout puts them


def test_a_non_positive_switchout_temperature_is_refused() -> None:
    with pytest.raises(HarnessError, match="switchout_tau"):
        TextUDADataModule(augment="switchout", switchout_tau=0.0)


def test_a_tiny_fit_with_switchout(tiny_imdb: Path) -> None:
    data = TextUDADataModule("imdb", str(tiny_imdb), per_class=2, batch_size=2, unlabelled_ratio=3, steps_per_epoch=2,
                             augment="switchout", vocab_size=512, max_tokens=32, seed=0)  # fmt: skip
    torch.manual_seed(0)
    system = UDASystem("uda-budget-text", num_classes=2, vocab_size=512, tsa="exp", confidence=0.5, optimizer="adamw",
                       lr=1e-3, schedule="linear", warmup=0.1)  # fmt: skip
    trainer = pl.Trainer(max_steps=2, accelerator="cpu", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, limit_val_batches=0)  # fmt: skip
    trainer.fit(system, datamodule=data)
    (result,) = trainer.test(system, datamodule=data, verbose=False)
    assert trainer.global_step == 2 and 0.0 <= result["test/error"] <= 100.0


@pytest.mark.parametrize(
    ("claim_id", "name"),
    [
        ("t2-yelp5-uda-2.5k-switchout", "full-yelp-5-switchout.yaml"),
        ("t2-yelp5-sup-650k-switchout", "full-yelp-5-supervised-switchout.yaml"),
    ],
)
def test_table_2_switchout_configs_carry_their_claims_conditions(claim_id: str, name: str) -> None:
    (claim,) = [c for c in registered_claims("uda") if c.id == claim_id]
    path = CONFIGS / name
    resolved = resolve_config(load_config(path, "full"), "full", None, None, None)
    check_arguments(path, resolved)  # every key an argument of the system, data module and Trainer
    assert resolved["model"] == claim.model and {"dataset": claim.dataset, "split": claim.split} in resolved["evaluate"]
    assert all(dotted.get(resolved, key) == value for key, value in claim.conditions.items())
    data = resolved["data"]["init_args"]
    assert data["augment_labelled"] == (resolved["system"]["init_args"]["objective"] == "supervised")
    assert data["unlabelled_ratio"] == (0 if data["augment_labelled"] else 7) and data["switchout_tau"] == 1.25
    # the back-translation row's config and this one differ in the augmentation alone
    if claim.conditions["system.init_args.objective"] == "uda":
        backtranslation = resolve_config(load_config(CONFIGS / "full-yelp-5.yaml", "full"), "full", None, None, None)
        for key in ("augment", "paraphrases", "tfidf_p", "switchout_tau"):
            backtranslation["data"]["init_args"].pop(key, None), data.pop(key, None)
        assert backtranslation["data"] == resolved["data"] and backtranslation["system"] == resolved["system"]
        assert backtranslation["trainer"] == resolved["trainer"]
