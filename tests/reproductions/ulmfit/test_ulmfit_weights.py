"""The converter of the released fastai WikiText-103 LMs, on files this test writes in their layouts (torch.save of a
state dict with fastai's key names; a pickled list of strings), never downloaded."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from reproductions.ulmfit.model import AWDConfig, LanguageModel
from reproductions.ulmfit.system import load_language_model
from reproductions.ulmfit.weights import convert, read_fastai_state, read_itos, sizes, write_converted

CONFIG = AWDConfig(emb=6, hidden=10, layers=3)
ITOS = ["xxunk", "xxpad", "xxbos", "xxeos", "xxmaj", "the", "of", "and", "a", "to"]


def _fastai_state(model: LanguageModel, layout: str) -> dict[str, torch.Tensor]:
    """``model``'s weights under the key names of fastai 0.7 (``fwd_wt103.h5``) or v1 (``lstm_wt103.pth``)."""
    embedding = model.encoder.embedding.weight.detach().clone()
    state = {"0.encoder.weight": embedding, "1.decoder.weight": embedding}
    state["0.encoder_with_dropout.embed.weight" if layout == "0.7" else "0.encoder_dp.emb.weight"] = embedding
    for layer, rnn in enumerate(model.encoder.rnns):
        for name, value in rnn.lstm.state_dict().items():
            raw = name.startswith("weight_hh")
            if layout == "0.7":
                key = f"0.rnns.{layer}.module.{name}_raw" if raw else f"0.rnns.{layer}.module.{name}"
            else:
                key = f"0.rnns.{layer}.{name}_raw" if raw else f"0.rnns.{layer}.module.{name}"
                if raw:  # v1 also saves the dropped copy, which must not be used
                    state[f"0.rnns.{layer}.module.{name}"] = torch.zeros_like(value)
            state[key] = value.clone()
    if layout == "v1":
        state["1.decoder.bias"] = model.decoder.bias.detach().clone()
    return state


@pytest.mark.parametrize("layout", ["0.7", "v1"])
def test_released_layout_converts_to_the_same_network(layout: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    source = LanguageModel(len(ITOS), CONFIG).eval()
    if layout == "0.7":  # 0.7's decoder had no bias
        torch.nn.init.zeros_(source.decoder.bias)
    weights = {"0.7": tmp_path / "fwd_wt103.h5", "v1": tmp_path / "lstm_wt103.pth"}[layout]
    state = _fastai_state(source, layout)
    torch.save({"model": state, "opt": {}} if layout == "v1" else state, weights)
    (tmp_path / "itos_wt103.pkl").write_bytes(pickle.dumps(ITOS))
    lm_file, vocab_file = write_converted(weights, tmp_path / "itos_wt103.pkl", tmp_path / "out")
    vocab = vocab_file.read_text().split("\n")[:-1]
    assert vocab == ["<pad>", "<eos>", "<unk>", "xxbos", "xxmaj", "the", "of", "and", "a", "to"]
    target = LanguageModel(len(vocab), CONFIG).eval()
    load_language_model(target, str(lm_file))
    old_ids = torch.tensor([[ITOS.index(t) for t in ("xxbos", "the", "of", "xxunk", "a")]])
    new_ids = torch.tensor([[vocab.index(t) for t in ("xxbos", "the", "of", "<unk>", "a")]])
    with torch.no_grad():
        expected, got = source(old_ids), target(new_ids)
    order = [ITOS.index(t) for t in ("xxpad", "xxeos", "xxunk")] + [ITOS.index(t) for t in vocab[3:]]
    torch.testing.assert_close(got, expected[..., order])


def test_sizes_are_read_from_the_tensors() -> None:
    converted, _ = convert(_fastai_state(LanguageModel(len(ITOS), CONFIG), "0.7"), ITOS)
    assert sizes(converted) == (6, 10, 3)


def test_vocabulary_pickle_with_a_global_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "itos.pkl"
    path.write_bytes(pickle.dumps([os.getcwd, "the"]))  # a list naming a function: loading it would import it
    with pytest.raises(HarnessError, match="refused global"):
        read_itos(path)
    path.write_bytes(pickle.dumps({"the": 0}))
    with pytest.raises(HarnessError, match="list of strings"):
        read_itos(path)


def test_weights_file_with_an_object_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "fwd_wt103.h5"
    torch.save({"0.encoder.weight": torch.zeros(2, 2), "extra": Path("x")}, path)  # not allowed by weights_only
    with pytest.raises(HarnessError, match="weights_only=True"):
        read_fastai_state(path)


def test_vocabulary_and_weights_that_disagree_are_named(tmp_path: Path) -> None:
    state = _fastai_state(LanguageModel(len(ITOS), CONFIG), "0.7")
    with pytest.raises(HarnessError, match="10 embedding rows but the vocabulary has 3 tokens"):
        convert(state, ITOS[:3], tmp_path / "fwd_wt103.h5")
