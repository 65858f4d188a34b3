"""GPT's claims agree with each other as the report's tables do, and the arch claim is the model's count."""

from __future__ import annotations

import pytest

from harness.claims import registered_claims

CLAIMS = {claim.id: claim for claim in registered_claims("gpt")}
TABLE_5_COLUMNS = ("cola-mcc", "sst2-accuracy", "mrpc-f1", "stsb-pearson", "qqp-f1", "mnli-accuracy", "qnli-accuracy",
                   "rte-accuracy")  # fmt: skip
FULL_ROW = {"cola-mcc": "t4-cola-mcc", "sst2-accuracy": "t4-sst2-accuracy", "mrpc-f1": "t4-mrpc-f1",
            "stsb-pearson": "t4-stsb-pearson", "qqp-f1": "t4-qqp-f1", "mnli-accuracy": "t5-gpt-mnli-accuracy",
            "qnli-accuracy": "t2-qnli-accuracy", "rte-accuracy": "t2-rte-accuracy"}  # fmt: skip


def row(model: str) -> list[float]:
    return [CLAIMS[FULL_ROW[c] if model == "gpt" else f"t5-{model}-{c}"].value for c in TABLE_5_COLUMNS]


@pytest.mark.parametrize("model", ["gpt", "gpt-no-pretrain", "gpt-no-aux", "gpt-lstm"])
def test_table_5_average_is_the_mean_of_its_row(model):
    """'Avg. score is a unweighted average of all the results' (the LSTM row is printed 0.1 below its mean)."""
    assert sum(row(model)) / 8 == pytest.approx(CLAIMS[f"t5-{model}-avg-score"].value, abs=0.11)


def test_deltas_are_differences_of_the_averages():
    average = {m: CLAIMS[f"t5-{m}-avg-score"].value for m in ("gpt", "gpt-no-pretrain", "gpt-no-aux", "gpt-lstm")}
    for claim, baseline in (
        ("t5-pretraining-gain-avg-score", "gpt-no-pretrain"),
        ("t5-transformer-vs-lstm-avg-score", "gpt-lstm"),
        ("t5-aux-lm-avg-score", "gpt-no-aux"),
    ):
        assert CLAIMS[claim].value == pytest.approx(average["gpt"] - average[baseline])  # fmt: skip


def test_table_5_mnli_is_the_mean_of_table_2s_matched_and_mismatched():
    mean = (CLAIMS["t2-mnli-m-accuracy"].value + CLAIMS["t2-mnli-mm-accuracy"].value) / 2
    assert round(mean + 1e-9, 1) == CLAIMS["t5-gpt-mnli-accuracy"].value


def test_arch_claim_is_the_released_models_count():
    import torch

    from reproductions.gpt.model import GPT, GPT_1

    with torch.device("meta"):
        params = sum(p.numel() for p in GPT(GPT_1).parameters())
    claim = CLAIMS["s41-gpt-params"]
    assert abs(params / 1e6 - claim.value) <= claim.tolerance


def test_budget_aux_value_is_the_small_tasks_mean_difference():
    small = ("cola-mcc", "sst2-accuracy", "mrpc-f1", "stsb-pearson")
    diffs = [CLAIMS[FULL_ROW[c]].value - CLAIMS[f"t5-gpt-no-aux-{c}"].value for c in small]
    assert CLAIMS["budget-aux-lm-small-data"].value == pytest.approx(sum(diffs) / 4)
