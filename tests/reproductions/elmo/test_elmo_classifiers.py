"""ELMo's SNLI and SST-5 task models (ESIM, BCN): shapes, padding that changes no output, where each variant puts
ELMo (Sec. 3.3, Table 3), a one-batch fit, and the smoke configs end to end through `harness run` with their kept
predictions re-scored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from harness.rescore import rescore
from reproductions.elmo.bcn import BCN, bcn
from reproductions.elmo.esim import ESIM, VARIANTS, esim
from reproductions.elmo.layers import tiny_bilm, word_ids
from reproductions.elmo.system import ClassifierSystem, ptb_words
from tasks.tokenizers.elmo import batch_char_ids

CONFIGS = Path(__file__).resolve().parents[3] / "reproductions" / "elmo" / "configs"
PREMISES = [["A", "man", "plays", "a", "guitar", "outdoors", "."], ["Two", "dogs", "run", "."]]
HYPOTHESES = [["A", "man", "sleeps", "."], ["Animals", "move", "quickly", "on", "grass", "."]]


def sentence(sentences: list[list[str]]) -> tuple[torch.Tensor, torch.Tensor]:
    return batch_char_ids(sentences), word_ids(sentences)


def small_esim(variant: str) -> ESIM:
    torch.manual_seed(0)
    elmo_input, elmo_output, top_only = VARIANTS[variant]
    bilm = tiny_bilm() if elmo_input or elmo_output else None
    return ESIM(bilm, elmo_input, elmo_output, top_only, word_dim=8, hidden=6).eval()


def test_esim_and_bcn_shapes_with_and_without_elmo() -> None:
    pair = (*sentence(PREMISES), *sentence(HYPOTHESES))
    for variant in ("esim", "esim-elmo"):
        assert small_esim(variant)(*pair).shape == (2, 3)
    torch.manual_seed(0)
    for model in (BCN(None, word_dim=8, hidden=6, maxout=(12, 6)), BCN(tiny_bilm(), word_dim=8, hidden=6)):
        assert model.eval()(*sentence(PREMISES)).shape == (2, 5)
    assert not any(p.requires_grad for p in model.input.elmo.bilm.parameters())


@pytest.mark.parametrize("variant", ["esim", "esim-elmo", "esim-elmo-output"])
def test_esim_padding_changes_no_output(variant: str) -> None:
    """A pair alone and the same pair batched beside longer sentences (so padded) give the same logits."""
    model = small_esim(variant)
    alone = model(*sentence(PREMISES[1:]), *sentence(HYPOTHESES[:1]))
    batched = model(*sentence(PREMISES[::-1]), *sentence([HYPOTHESES[0], HYPOTHESES[1] + ["again", "."]]))
    torch.testing.assert_close(batched[0], alone[0], atol=1e-5, rtol=1e-5)


def test_bcn_padding_changes_no_output() -> None:
    torch.manual_seed(0)
    model = BCN(tiny_bilm(), word_dim=8, hidden=6).eval()
    alone = model(*sentence(PREMISES[1:]))
    torch.testing.assert_close(model(*sentence(PREMISES[::-1]))[0], alone[0], atol=1e-5, rtol=1e-5)


def test_variants_put_elmo_where_table_3_says() -> None:
    """Input: ``[x; ELMo]`` into the input biLSTM; output: ``[h; ELMo]`` after it (a second mix, its own weights);
    ``-top``: the top biLM layer at both places. Tiny biLM: ELMo is 2 x 16 = 32 wide; words 8, biLSTM 2 x 6."""
    expected = {  # variant -> (input biLSTM's input width, what the alignment reads, mixes, top only)
        "esim": (8, 12, 0, None),
        "esim-elmo": (8 + 32, 12 + 32, 2, False),
        "esim-elmo-top": (8 + 32, 12 + 32, 2, True),
        "esim-elmo-input": (8 + 32, 12, 1, False),
        "esim-elmo-input-output": (8 + 32, 12 + 32, 2, False),
        "esim-elmo-output": (8, 12 + 32, 1, False),
    }
    for variant, (width_in, width_out, mixes, top_only) in expected.items():
        model = small_esim(variant)
        assert model.encoder.input_size == width_in and model.projection[0].in_features == 4 * width_out, variant
        elmo = model.input.elmo
        assert (len(elmo.mixes) if elmo else 0) == mixes, variant
        assert elmo is None or {m.top_only for m in elmo.mixes} == {top_only}, variant
    model = small_esim("esim-elmo")
    chars, words = sentence(PREMISES)
    x, output, _ = model.input(chars, words)
    with torch.no_grad():
        model.input.elmo.mixes[1].gamma.fill_(0.0)  # the output mix alone is silenced
    x_again, silenced, _ = model.input(chars, words)
    assert torch.equal(x, x_again) and output.abs().sum() > 0 and silenced.abs().sum() == 0
    with_elmo = bcn("bcn-elmo", "tiny").input  # BCN: ELMo in place of CoVe, at the input only
    assert with_elmo.elmo_input and not with_elmo.elmo_output and len(with_elmo.elmo.mixes) == 1
    assert with_elmo.dim == 300 + 32 and esim("esim-elmo-input", "tiny").input.dim == 300 + 32


def test_one_batch_fit_lowers_the_loss() -> None:
    torch.manual_seed(0)
    system = ClassifierSystem("esim-elmo", "snli", lr=3e-3, bilm="tiny", l2=0.001)
    fields = {"premise": ["A man plays a guitar.", "Two dogs don't run."], "hypothesis": ["A man sleeps.", "Dogs."]}
    labels = torch.tensor([2, 0])
    optimizer = system.configure_optimizers()
    losses = []
    for _ in range(8):
        optimizer.zero_grad()
        loss = system.training_step((fields, labels), 0)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < losses[0] / 2, losses
    assert ptb_words("Two dogs don't run.") == ["Two", "dogs", "do", "n't", "run", "."]


@pytest.mark.parametrize(
    ("config", "model", "splits"),
    [("smoke-snli.yaml", "esim-elmo-output", {"dev", "test"}), ("smoke-sst5.yaml", "bcn-elmo", {"test"})],
)
def test_smoke_config_runs_and_its_predictions_rescore(
    config: str, model: str, splits: set[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from harness.cli import main

    monkeypatch.chdir(tmp_path)
    argv = ["run", "elmo", "--tier", "smoke", "--config", str(CONFIGS / config), "--model", model]
    assert main(argv) == 0
    paths = sorted((tmp_path / "results" / "runs").glob("*.json"))
    records = [json.loads(path.read_text()) for path in paths]
    assert {r["split"] for r in records} == splits and {r["model"] for r in records} == {model}
    for path, record in zip(paths, records, strict=True):
        assert 0 <= record["metrics"]["accuracy"] <= 100
        rows = rescore(path)
        assert [row["metric"] for row in rows] == ["accuracy"] and all(row["agrees"] for row in rows)


def test_full_configs_resolve_for_every_variant() -> None:
    """Each registered ESIM / BCN id resolves in its full config; only the baselines drop the biLM's files."""
    from harness import registry
    from harness.runner import load_config, resolve_config

    ids = set(registry.reproduction("elmo").model_ids())
    for config_name, variants in (("full-snli.yaml", VARIANTS), ("full-sst5.yaml", ("bcn", "bcn-elmo"))):
        config = load_config(CONFIGS / config_name, "full")
        assert set(variants) <= ids and set(config["overrides"]) <= set(variants)
        for model in variants:
            args = resolve_config(config, "full", model, 0, None)["system"]["init_args"]
            assert (args["bilm_weights"] is None) == (model in ("esim", "bcn")), model
