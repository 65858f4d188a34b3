"""ULMFiT's three stages as a chain of runs on the tiny fixture corpora: `harness run` on the classifier stage runs
LM pre-training and LM fine-tuning first, each child's record names its parent, and every stage's kept predictions
re-score to its metrics. Slow: three fits (about 20 s on two idle cores)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import registry, runner
from harness.records import RunRecord, read_record
from harness.rescore import rescore
from tasks.tokenizers.artifacts import SHA_ARTIFACT

CONFIGS = Path(__file__).parents[3] / "reproductions" / "ulmfit" / "configs"


@pytest.mark.slow
def test_three_stage_smoke_chain(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "results" / "runs"
    [classifier_path] = runner.run(
        registry.reproduction("ulmfit"), "smoke", config_path=CONFIGS / "smoke-classifier.yaml", runs_dir=runs
    )
    records = [read_record(path) for path in runs.glob("*.json")]
    classifier = read_record(classifier_path)
    [lm_finetune] = [r for r in records if r.run_id in classifier.parents]
    [pretrain] = [r for r in records if r.run_id in (lm_finetune.parents or [])]
    assert (pretrain.dataset, lm_finetune.dataset, classifier.dataset) == (
        "debian-lm",
        "wordnet-lexname",
        "wordnet-lexname",
    )
    assert {"perplexity"} <= set(pretrain.metrics) and {"error", "accuracy"} <= set(classifier.metrics)
    assert classifier.artifacts[SHA_ARTIFACT] == lm_finetune.artifacts[SHA_ARTIFACT]  # one tokenizer, cited by both
    for record in (pretrain, lm_finetune, classifier):  # every stage's kept predictions give its metrics back
        rows = rescore(runs / f"{record.run_id}.json")
        assert {row["metric"] for row in rows} == set(record.metrics) and all(row["agrees"] for row in rows)


@pytest.mark.slow
def test_forward_and_backward_chains_and_their_ensemble(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`harness run` on the ensemble runs both three-stage chains (forward, backward); the ensemble's record names
    both classifiers as parents, and its probabilities are the mean of the two classifiers' own (the backward one
    reading the texts as its chain's data module serves them, reversed)."""
    import torch

    from harness.checkpoints import load_state
    from reproductions.ulmfit.data import TokenizedTextDataModule
    from reproductions.ulmfit.system import ClassifierSystem, EnsembleSystem

    monkeypatch.chdir(tmp_path)
    runs = tmp_path / "results" / "runs"
    [path] = runner.run(
        registry.reproduction("ulmfit"), "smoke", config_path=CONFIGS / "smoke-ensemble.yaml", runs_dir=runs
    )
    ensemble = read_record(path)
    fwd, bwd = (read_record(runs / f"{run_id}.json") for run_id in ensemble.parents)
    assert [r.config["data"]["init_args"].get("backwards", False) for r in (fwd, bwd)] == [False, True]
    assert ensemble.config["protocol"] == "fwd+bwd ensemble" and len(list(runs.glob("*.json"))) == 7
    assert all(row["agrees"] for row in rescore(path)) and {"accuracy", "error"} == set(ensemble.metrics)

    def system(cls: type, record: RunRecord) -> torch.nn.Module:
        return cls(**record.config["system"]["init_args"], model=record.model).eval()

    members = [system(ClassifierSystem, r) for r in (fwd, bwd)]
    for member, record in zip(members, (fwd, bwd), strict=True):
        member.load_state_dict(load_state(record.artifacts["checkpoint_sha256"], runs, record.run_id))
    both = system(EnsembleSystem, ensemble)
    both.fwd.load_state_dict(members[0].model.state_dict())
    both.bwd.load_state_dict(members[1].model.state_dict())
    loaders = []
    for backwards in (False, True):
        data = TokenizedTextDataModule(**{**ensemble.config["data"]["init_args"], "backwards": backwards})
        data.setup()
        loaders.append(data.test_dataloader())
    right = 0
    with torch.no_grad():
        for ((ids, lengths), labels), ((bwd_ids, bwd_lengths), _) in zip(*loaders, strict=True):
            mean = (members[0](ids, lengths).softmax(-1) + members[1](bwd_ids, bwd_lengths).softmax(-1)) / 2
            assert torch.allclose(both(ids, lengths), mean, atol=1e-6)
            right += int((mean.argmax(-1) == labels).sum())
    assert ensemble.metrics["accuracy"] == pytest.approx(100 * right / len(data.test_ids()), abs=1e-4)
