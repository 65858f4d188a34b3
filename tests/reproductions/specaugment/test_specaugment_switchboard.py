"""SpecAugment on Switchboard: label smoothing for the whole training, the test metric per data module, and the
system trained on the Switchboard-1 fixture and tested on Hub5'00 through the runner (records scored by the Hub5
metric). The full Switchboard configs are checked with the others (test_specaugment_full_configs.py)."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from harness import configfile, registry, runner
from harness.records import read_record
from reproductions.specaugment.schedules import SCHEDULES, Schedule, label_smoothing
from reproductions.specaugment.system import SpecAugmentLAS, wer_metric
from tasks.librispeech.data import SpeechBatch
from tasks.librispeech.metric import LibriSpeechWER
from tasks.switchboard import PROTOCOL
from tasks.switchboard.metric import Hub5WER
from tasks.switchboard.score import score

CONFIGS = registry.reproduction("specaugment").root / "configs"


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
    assert configfile.read(path).tree["trainer"]["max_steps"] == 2
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
