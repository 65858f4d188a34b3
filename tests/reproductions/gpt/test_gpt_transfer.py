"""Figure 2 (left) at full size: the MultiNLI and RACE configs run gpt-transfer-K with K blocks transferred (what the
f2-transfer-layers-* claims read), RACE tested on its dev set (GPTTaskDataModule's ``test_split``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.runner import load_config, resolve_config
from reproductions.gpt.finetune import GPTTaskDataModule, prepare_smoke_task

CONFIGS = Path(__file__).resolve().parents[3] / "reproductions" / "gpt" / "configs"


@pytest.mark.parametrize(("name", "evaluated"), [("full-mnli.yaml", ("glue-mnli-m", "dev")), ("full-transfer-race.yaml", ("race", "dev"))])  # fmt: skip
def test_sweep_sets_the_layers_transferred_per_model(name, evaluated):
    config = load_config(CONFIGS / name, "full")
    assert {"dataset": evaluated[0], "split": evaluated[1]} in config["evaluate"]
    for k in range(13):
        resolved = resolve_config(config, "full", f"gpt-transfer-{k}", 0, None)
        assert resolved["system"]["init_args"]["transfer_layers"] == k
        assert (
            resolved["init_from"]["config"] == "full-pretrain.yaml"
            and resolved["system"]["init_args"]["lm_coef"] == 0.5
        )
        assert resolved["init_from"].get("model", "gpt") == "gpt"  # one pre-training for the whole sweep


def test_race_is_tested_on_its_dev_set(tmp_path):
    prepare_smoke_task(tmp_path, "race")
    data = GPTTaskDataModule(tmp_path, "race", test_tasks=["race"], test_split="dev", vocab=300, batch_size=2)
    data.setup()
    dev = data.source.tests[0].records("dev")
    assert [e.id for e in data.stages["test"][0]] == [r.id for r in dev]
    assert data.scoring(0, tmp_path).references == tmp_path / "race" / "RACE" / "dev"
    with pytest.raises(HarnessError, match="test_split"):
        GPTTaskDataModule(tmp_path, "glue-cola", test_split="dev")
