"""SpecAugment on Switchboard: label smoothing for the whole training, the full Switchboard configs, and the system
trained on the Switchboard-1 fixture and tested on Hub5'00 through the runner (records scored by the Hub5 metric)."""

from __future__ import annotations

import inspect
import math
import shutil
from pathlib import Path

import pytest
import yaml

from harness import registry, runner
from harness.records import read_record
from harness.registry import load_object
from reproductions.specaugment.schedules import SCHEDULES, Schedule, label_smoothing
from reproductions.specaugment.system import SpecAugmentLAS, wer_metric
from tasks.librispeech.data import SpeechBatch
from tasks.librispeech.metric import LibriSpeechWER
from tasks.switchboard import PROTOCOL
from tasks.switchboard.metric import Hub5WER
from tasks.switchboard.score import score

CONFIGS = registry.reproduction("specaugment").root / "configs"
FULL = {"full-switchboard-sm.yaml": "SM", "full-switchboard-ss.yaml": "SS"}


def test_label_smoothing_stops_at_the_decay_unless_kept_for_the_whole_training(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    schedule = SCHEDULES["L"]
    assert label_smoothing(schedule.s_i - 1, schedule, 0.1) == 0.1
    assert label_smoothing(schedule.s_i, schedule, 0.1) == label_smoothing(10**6, schedule, 0.1) == 0.0  # default
    assert label_smoothing(schedule.s_i, schedule, 0.1, off_at_decay=False) == 0.1
    assert label_smoothing(10**6, schedule, 0.1, off_at_decay=False) == 0.1
    used = []
    for keep in (False, True):
        system = SpecAugmentLAS(wordpieces=0, policy="none", label_smoothing_off_at_decay=not keep)
        system.schedule = Schedule(s_r=0, s_noise=10**9, s_i=0, s_f=1)  # step 0 is already in the decay
        monkeypatch.setattr(system, "loss", lambda batch, augment, smoothing, weights: used.append(smoothing))
        monkeypatch.setattr(system, "log", lambda *args, **kwargs: None)
        system.training_step(SpeechBatch(None, None, [], []), 0)
    assert used == [0.0, 0.1]


def test_the_test_metric_follows_the_data_module() -> None:
    class Switchboard:
        task, glm = "switchboard", None

    assert isinstance(wer_metric(Switchboard()), Hub5WER)
    assert isinstance(wer_metric(object()), LibriSpeechWER)


@pytest.mark.parametrize("name", sorted(FULL))
def test_full_switchboard_configs_are_the_paper_s_recipe(name: str) -> None:
    config = runner.load_config(CONFIGS / name, "full")
    system, data = config["system"]["init_args"], config["data"]["init_args"]
    inspect.signature(load_object(config["system"]["class_path"])).bind(model=config["model"], **system)
    inspect.signature(load_object(config["data"]["class_path"])).bind(**data)
    assert (config["model"], config["protocol"]) == ("las-6-1280", PROTOCOL)
    assert system["policy"] == FULL[name] and system["schedule"] == "L" and system["schedule_scale"] == 1.0
    assert (system["wordpieces"], system["beam_size"], system["lm_weight"]) == (1024, 8, 0.0)
    assert system["label_smoothing"] == 0.1 and system["label_smoothing_off_at_decay"] is False
    assert "weight_noise" not in system  # the system's default, the paper's 0.075
    assert data["batch_size"] * config["trainer"]["devices"] * config["trainer"]["num_nodes"] == 512
    assert config["evaluate"] == [{"dataset": "switchboard", "split": s} for s in data["test_subsets"]]
    assert data["test_subsets"] == ["swb", "ch"] and data["data_root"] == "data/full/switchboard"


def test_the_system_trains_on_switchboard_1_and_records_hub5_wer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """configs/smoke-switchboard.yaml for 2 steps: one record per Hub5'00 subset, its WER from the Hub5 metric and
    equal to what the Hub5 scorer gives its kept predictions."""
    if shutil.which("espeak-ng") is None:
        pytest.skip("espeak-ng is not installed")
    monkeypatch.chdir(tmp_path)
    path = CONFIGS / "smoke-switchboard.yaml"
    resolved = runner.resolve_config(runner.load_config(path, "smoke"), "smoke", None, None, None)
    assert yaml.safe_load(path.read_text())["trainer"]["max_steps"] == 2
    paths = runner.run_training(registry.reproduction("specaugment"), resolved, runs_dir=tmp_path / "runs")
    records = {r.split: r for r in map(read_record, paths)}
    assert set(records) == {"swb", "ch"}
    for split, record in records.items():
        assert (record.dataset, record.protocol, record.artifacts["task"]) == ("switchboard", PROTOCOL, "switchboard")
        other = "ch" if split == "swb" else "swb"
        assert record.metrics["wer"] == record.metrics[f"wer_{split}"] and math.isnan(record.metrics[f"wer_{other}"])
        assert record.metrics["segments"] == 2 and record.metrics["words"] > 0
        kept = {name: tmp_path / record.artifacts[name] for name in ("references", "predictions")}
        scored = score(kept["references"], kept["predictions"])
        assert scored["wer"] == pytest.approx(record.metrics["wer"])
        assert record.artifacts["tokenizer"].endswith(".model")  # the 24 word pieces learnt from train_nodup
