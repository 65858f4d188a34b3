"""SpecAugment's full-tier configs: each resolves to arguments its classes take, trains with the paper's global
batch (512) over its schedule up to ``s_f``, and the record it would write matches the claims it names, value for
value (the verdicts' own matching), so no full claim is left without a config by a misspelt or mismatched value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import registry
from harness.claims import registered_claims
from harness.records import RunRecord
from harness.registry import load_object
from harness.runner import check_arguments, load_config, resolve_config
from harness.verdicts import matches
from reproductions.specaugment.schedules import SCHEDULES

CONFIGS = Path(registry.reproduction("specaugment").root) / "configs"
FULL = sorted(CONFIGS.glob("full*.yaml"))
# the claims each full config must be able to judge (the fusion claims have no full LM: README)
JUDGES = {
    "full.yaml": {"abstract-librispeech-test-other-no-lm", "t3-librispeech-test-clean-no-lm"},
    "full-las-4-1024-b.yaml": {"t2-las-4-1024-b-ld-test-other", "t2-las-4-1024-b-ld-minus-none-test-other"},
    "full-las-4-1024-b-none.yaml": {"t2-las-4-1024-b-none-test-other"},
    "full-switchboard-sm.yaml": {"abstract-swb-no-lm", "abstract-ch-no-lm"},
    "full-switchboard-ss.yaml": {"t4-ss-swb-no-lm", "t4-ss-ch-no-lm"},
}


def resolved(path: Path) -> dict[str, Any]:
    config = load_config(path, "full")
    out = resolve_config(config, "full", None, 0, None)
    check_arguments(path, out)
    return out


def judged_by(config: dict[str, Any], baseline: bool = False) -> set[str]:
    """The claims (or, with ``baseline``, the delta claims whose baseline) a record of this config would match, by
    :func:`harness.verdicts.matches` on the record each evaluation writes."""
    records = [
        RunRecord.model_construct(
            paper="specaugment",
            model=config["model"],
            protocol=config.get("protocol"),
            config=config,
            metrics={"wer": 0.0},
            **evaluation,
        )
        for evaluation in config["evaluate"]
    ]
    claims = [c for c in registered_claims("specaugment") if c.baseline is not None or not baseline]
    return {c.id for c in claims if any(matches(c, record, baseline=baseline) for record in records)}


@pytest.mark.parametrize("path", FULL, ids=lambda path: path.stem)
def test_full_config_resolves_with_the_papers_batch_and_schedule(path: Path, tmp_path: Path) -> None:
    config = resolved(path)
    system, data, trainer = config["system"]["init_args"], config["data"]["init_args"], config["trainer"]
    devices = trainer.get("devices", 1) * trainer.get("num_nodes", 1) * trainer.get("accumulate_grad_batches", 1)
    assert data["batch_size"] * devices == 512  # Section 4.1 ([S1])
    assert system["schedule_scale"] == 1.0 and trainer["max_steps"] == SCHEDULES[system["schedule"]].s_f
    assert system["peak_lr"] == 1e-3 and system["beam_size"] == 8 and system["weight_noise"] == 0.075
    load_object(config["data"]["class_path"])(**{**data, "data_root": tmp_path})  # reads nothing yet


@pytest.mark.parametrize("name", sorted(JUDGES))
def test_full_configs_judge_their_claims(name: str) -> None:
    config = resolved(CONFIGS / name)
    system = config["system"]["init_args"]
    assert system["label_smoothing"] == 0.1
    if config["protocol"] == "corpus-wer-upper-case-whitespace":  # LibriSpeech: 16k word pieces, all 960 h
        assert system["wordpieces"] == 16384
        assert config["data"]["init_args"]["train_splits"] == ["train-clean-100", "train-clean-360", "train-other-500"]
    else:  # Switchboard: 1k word pieces, label smoothing for the whole training ([S1])
        assert system["wordpieces"] == 1024 and system["label_smoothing_off_at_decay"] is False
        subsets = config["data"]["init_args"]["test_subsets"]
        assert config["evaluate"] == [{"dataset": "switchboard", "split": subset} for subset in subsets]
    assert judged_by(config) == JUDGES[name]


def test_every_claim_without_an_lm_has_a_full_config() -> None:
    assert {path.name for path in FULL} == set(JUDGES)
    paper = {c.id for c in registered_claims("specaugment") if not c.id.startswith("budget-")}
    fusion = {c.id for c in registered_claims("specaugment") if c.conditions.get("system.init_args.lm_weight")}
    assert len(fusion) == 6 and set().union(*JUDGES.values()) == paper - fusion


def test_the_table_2_delta_has_its_baseline_config() -> None:
    assert judged_by(resolved(CONFIGS / "full-las-4-1024-b-none.yaml"), baseline=True) == {
        "t2-las-4-1024-b-ld-minus-none-test-other"
    }
