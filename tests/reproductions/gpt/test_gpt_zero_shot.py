"""Figure 2 (right)'s zero-shot heuristics (reproductions/gpt/zero_shot.py), checked by hand: candidate scores of a
bigram LM whose probabilities are written out, CoLA's threshold, each task's candidate rows and their scored
suffixes, the normalisation, the full config's update counts; and (slow) the system end to end on tiny data."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from harness.runner import load_config, resolve_config
from reproductions.gpt import zero_shot
from reproductions.gpt.variants import ZERO_SHOT_UPDATES
from reproductions.gpt.zero_shot import ZeroShotInputs, best_threshold, relative_performance, sequence_scores

CONFIGS = Path(__file__).resolve().parents[3] / "reproductions" / "gpt" / "configs"
# a bigram LM over 4 symbols: P(next | previous) is row `previous`
P = torch.tensor([[0.5, 0.25, 0.125, 0.125], [0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25], [0.7, 0.1, 0.1, 0.1]])


def one_hot(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.one_hot(ids, 4).float()  # (N, T, 4): the "state" is the symbol itself


def bigram(h: torch.Tensor) -> torch.Tensor:
    return h @ P.log()  # logits whose softmax is P's row of the symbol


def test_sequence_scores_sum_or_average_the_scored_suffix():
    ids = torch.tensor([[[0, 1, 3, 0], [0, 2, 2, 0]]])  # two candidates of one example
    mask = torch.tensor([[[1, 1, 1, 0], [1, 1, 1, 1]]])
    scored = torch.tensor([[[0, 1, 1, 0], [0, 0, 1, 1]]])
    total = sequence_scores(one_hot, bigram, ids, mask, scored, mean=False)
    expected = [math.log(0.25) + math.log(0.4), math.log(0.25) + math.log(0.25)]  # P(1|0) P(3|1); P(2|2) P(0|2)
    torch.testing.assert_close(total, torch.tensor([expected]))
    torch.testing.assert_close(sequence_scores(one_hot, bigram, ids, mask, scored), torch.tensor([expected]) / 2)


def test_scoring_only_the_scored_positions_equals_the_lms_full_output():
    from reproductions.gpt.model import GPT, GPTConfig

    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab=13, n_ctx=8, dim=8, layers=2, heads=2, hidden=16)).eval()
    ids = torch.randint(13, (2, 3, 6))
    mask, scored = torch.ones_like(ids), (torch.arange(6) >= torch.tensor([[[2], [4], [5]]])).long().expand(2, 3, 6)
    log_probs = model(ids.view(6, 6)).log_softmax(-1)[:, :-1].gather(-1, ids.view(6, 6)[:, 1:, None])[..., 0]
    expected = (log_probs * scored.reshape(6, 6)[:, 1:]).sum(-1).view(2, 3)
    embedding = model.embedding_matrix()
    got = sequence_scores(model.hidden_states, lambda h: h @ embedding.T, ids, mask, scored, mean=False)
    torch.testing.assert_close(got, expected)


def test_threshold_maximises_the_training_sets_matthews_correlation():
    assert best_threshold(torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([0, 0, 1, 1])) == 2.5  # MCC 1
    # midpoints -0.9 (MCC 0), 0.225 (0.577), 0.375 (0), 0.6 (0.577): the first best
    assert best_threshold(torch.tensor([0.1, 0.4, 0.35, 0.8]), torch.tensor([0, 0, 1, 1])) == pytest.approx(0.225)


def test_relative_performance_is_zero_at_chance_and_one_at_the_ceiling():
    assert relative_performance("glue-sst2", 50.0) == 0 and relative_performance("glue-sst2", 93.2) == 1
    assert relative_performance("glue-cola", 22.7) == pytest.approx(0.5)
    assert relative_performance("race", 25.0) == 0 and relative_performance("dprd", 73.05) == 1


WORDS = "<eos> a fine film very negative positive the cat sat w1 w2 w3 w4 q1 q2 x y z he was tired tom because".split()


def inputs(n_ctx: int = 32) -> ZeroShotInputs:
    """Word-level ids (the real encoder is the BPE of the corpus's tokens; the layout is the same)."""
    return ZeroShotInputs(lambda text: [WORDS.index(w) for w in text.lower().split()], [0], n_ctx)


def ids(text: str) -> list[int]:
    return [WORDS.index(w) for w in text.split()]


def test_each_task_is_candidate_rows_with_a_scored_suffix():
    x = inputs()
    assert x.sst2("a fine film") == [
        (ids("<eos> a fine film very negative"), 5),
        (ids("<eos> a fine film very positive"), 5),
    ]
    assert x.cola("the cat sat") == [(ids("<eos> the cat sat"), 1)]
    rows = x.dprd("tom was tired because he was tired", "he", ["x", "y z"])
    assert rows == [
        (ids("<eos> tom was tired because x was tired"), 6),
        (ids("<eos> tom was tired because y z was tired"), 7),
    ]


def test_race_cuts_the_articles_end_to_fit_question_and_longest_answer():
    rows = inputs(n_ctx=8).race("w1 w2 w3 w4", "q1 q2", ["x", "y z"])  # room: 8 - 1 - 2 - 2 = 3 article symbols
    assert rows == [(ids("<eos> w1 w2 w3 q1 q2 x"), 6), (ids("<eos> w1 w2 w3 q1 q2 y z"), 6)]


def test_a_batch_pads_every_candidate_and_marks_its_suffix():
    (batch_ids, mask, scored), labels = inputs()("race", [(("w1", "q1", ["x", "y z"]), 1)])
    assert batch_ids.shape == mask.shape == scored.shape == (1, 2, 5) and labels.tolist() == [1]
    assert mask[0].tolist() == [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]  # <eos> w1 q1 x | <eos> w1 q1 y z
    assert scored[0].tolist() == [[0, 0, 0, 1, 0], [0, 0, 0, 1, 1]]
    without_context = ZeroShotInputs(inputs().encode, [], 32)
    assert without_context.cola("the cat") == [(ids("the cat"), 1)]  # the first symbol has nothing to be scored by


def test_full_config_runs_each_update_count_and_evaluates_its_tasks_in_order():
    config = load_config(CONFIGS / "full-zero-shot.yaml", "full")
    steps = {
        n: resolve_config(config, "full", f"gpt-updates-{n}", 0, None)["trainer"]["max_steps"]
        for n in ZERO_SHOT_UPDATES
    }
    assert steps == {n: n for n in ZERO_SHOT_UPDATES}
    assert config["protocol"] == "zero-shot" and config["trainer"]["max_epochs"] == 100
    assert [e["dataset"] for e in config["evaluate"]] == config["data"]["init_args"]["tasks"] == list(zero_shot.TASKS)


@pytest.mark.slow
def test_system_pre_trains_n_updates_on_the_whole_runs_schedule_then_tests_zero_shot(tmp_path):
    import pytorch_lightning as pl

    from nets.schedules import warmup_cosine
    from reproductions.gpt.data import prepare_smoke
    from reproductions.gpt.zero_shot import GPTZeroShotSystem, ZeroShotDataModule
    from tasks.dprd.fixtures import write_tiny_dprd
    from tasks.glue.fixtures import write_tiny_glue_data
    from tasks.multiple_choice.fixtures import write_tiny_race

    prepare_smoke(tmp_path)
    for task in ("glue-sst2", "glue-cola"):
        write_tiny_glue_data(tmp_path / "glue", task)
    write_tiny_race(tmp_path / "race")
    write_tiny_dprd(tmp_path / "dprd")
    pl.seed_everything(0)
    data = ZeroShotDataModule(tmp_path, corpus="debian-lm", vocab=300, n_ctx=64, batch_size=4, train_lines=200)
    system = GPTZeroShotSystem(model="gpt-budget-lm", lr=1e-3, warmup_steps=2)
    trainer = pl.Trainer(max_epochs=3, max_steps=2, accelerator="cpu", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, limit_val_batches=0)  # fmt: skip
    trainer.fit(system, datamodule=data)
    total = 3 * trainer.num_training_batches
    (schedule,) = trainer.lr_scheduler_configs[0].scheduler.lr_lambdas
    assert trainer.global_step == 2 and total > 2
    assert [schedule(s) for s in range(4)] == [warmup_cosine(total, 2 / total)(s) for s in range(4)]
    results = trainer.test(system, datamodule=data, verbose=False)
    keys = ("accuracy", "mcc", "accuracy", "accuracy")
    for index, (task, key) in enumerate(zip(zero_shot.TASKS, keys, strict=True)):
        metrics = {name.split("/")[1]: value for name, value in results[index].items() if f"idx_{index}" in name}
        assert metrics["relative_performance"] == pytest.approx(relative_performance(task, metrics[key]), abs=1e-5)
    with pytest.raises(Exception, match="past the pre-training's end"):
        pl.Trainer(max_epochs=1, max_steps=10_000, accelerator="cpu", logger=False, enable_progress_bar=False,
                   enable_model_summary=False, limit_val_batches=0).fit(system, datamodule=data)  # fmt: skip
