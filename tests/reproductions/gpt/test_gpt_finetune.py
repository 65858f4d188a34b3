"""GPT's fine-tuning data for Tables 2-5 (reproductions/gpt/finetune.py): each of Figure 1's input transformations
laid out exactly (ids around the start, delimiter and extract tokens) on the tasks' own fixtures; the full configs
carry the paper's fine-tuning settings and test on what their records say."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from harness.runner import load_config, resolve_config
from reproductions.gpt.finetune import TASKS, GPTTaskDataModule, prepare_smoke_task
from reproductions.gpt.system import GPTFineTuneSystem

CONFIGS = Path(__file__).resolve().parents[3] / "reproductions" / "gpt" / "configs"
VOCAB = 300  # a small BPE of the tiny Debian corpora: special ids 300, 301, 302
START, DELIMITER, EXTRACT = VOCAB, VOCAB + 1, VOCAB + 2


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gpt-tasks")
    for task in ("glue-cola", "snli", "glue-stsb", "race"):
        prepare_smoke_task(root, task)
    return root


def loaded(root: Path, task: str, **kwargs) -> tuple[GPTTaskDataModule, tuple, list]:
    """The data module, its first test batch and that batch's examples (raw fields)."""
    data = GPTTaskDataModule(root, task, vocab=VOCAB, batch_size=3, **kwargs)
    data.setup()
    loaders = data.test_dataloader()
    loader = loaders[0] if isinstance(loaders, list) else loaders
    return data, next(iter(loader)), data.stages["test"][0][:3]


def row_of(ids: torch.Tensor, mask: torch.Tensor) -> list[int]:
    """A padded row's real ids; the padding after them is all zeros."""
    length = int(mask.sum())
    assert mask[:length].all() and not mask[length:].any() and not ids[length:].any()
    return ids[:length].tolist()


def test_classification_is_start_text_extract_cut_to_max_part(root):
    data, ((ids, mask), labels), examples = loaded(root, "glue-cola", max_part=5)
    assert ids.shape[0] == 3 and labels.dtype == torch.long
    for index, example in enumerate(examples):
        text = data.inputs.encode(example.fields[0])
        assert len(text) > 5  # the cut is exercised
        assert row_of(ids[index], mask[index]) == [START, *text[:5], EXTRACT]


def test_entailment_is_premise_delimiter_hypothesis(root):
    data, ((ids, mask), labels), examples = loaded(root, "snli")
    assert ids.dim() == 2 and labels.tolist() == [e.label for e in examples]
    for index, example in enumerate(examples):
        premise, hypothesis = (data.inputs.encode(text) for text in example.fields)
        assert premise and hypothesis
        assert row_of(ids[index], mask[index]) == [START, *premise, DELIMITER, *hypothesis, EXTRACT]


def test_similarity_holds_both_orders_and_stsb_scores_are_floats(root):
    data, ((ids, mask), labels), examples = loaded(root, "glue-stsb")
    assert ids.shape[:2] == (3, 2) and labels.dtype == torch.float32
    assert labels.tolist() == pytest.approx([e.label for e in examples])
    for index, example in enumerate(examples):
        a, b = (data.inputs.encode(text) for text in example.fields)
        assert row_of(ids[index, 0], mask[index, 0]) == [START, *a, DELIMITER, *b, EXTRACT]
        assert row_of(ids[index, 1], mask[index, 1]) == [START, *b, DELIMITER, *a, EXTRACT]


def test_multiple_choice_is_one_sequence_per_answer_keeping_the_question(root):
    cut = 60
    data, ((ids, mask), labels), examples = loaded(root, "race", max_part=cut, test_tasks=["race-m", "race-h", "race"])
    assert ids.shape[:2] == (3, 4) and labels.tolist() == [e.label for e in examples]
    assert data.test_tasks == ("race-m", "race-h", "race") and len(data.test_dataloader()) == 3
    for index, example in enumerate(examples):
        article, question, options = example.fields
        asked = data.inputs.encode(question)
        assert len(asked) < cut < len(data.inputs.encode(article)) + len(asked)  # the cut is exercised
        context = data.inputs.encode(article)[: cut - len(asked)] + asked  # the article's end cut, the question whole
        for k, option in enumerate(options):
            answer = data.inputs.encode(option)[:cut]
            assert row_of(ids[index, k], mask[index, k]) == [START, *context, DELIMITER, *answer, EXTRACT]


def test_multiple_choice_context_fills_max_length(root):
    data, ((ids, mask), _), examples = loaded(root, "race", max_part=12, max_length=60, test_tasks=["race-m"])
    for index, example in enumerate(examples):
        article, question, options = example.fields
        answers = [data.inputs.encode(option) for option in options]
        room = 60 - 3 - max(map(len, answers))
        asked = data.inputs.encode(question)
        assert 12 < room - len(asked) < len(data.inputs.encode(article))  # longer than max_part, and still cut
        context = data.inputs.encode(article)[: room - len(asked)] + asked
        assert int(mask[index].sum(-1).max()) == 60
        for k, answer in enumerate(answers):
            assert row_of(ids[index, k], mask[index, k]) == [START, *context, DELIMITER, *answer, EXTRACT]


def test_test_tasks_must_share_the_tasks_folder_and_layout(tmp_path):
    with pytest.raises(HarnessError, match="GLUE task tests on its own dev set"):
        GPTTaskDataModule(tmp_path, "glue-rte", test_tasks=["glue-qnli"])
    with pytest.raises(HarnessError, match="'snli' is not read from race's folder"):
        GPTTaskDataModule(tmp_path, "race", test_tasks=["snli"])
    with pytest.raises(HarnessError, match="unknown GPT fine-tuning task 'glue-wnli'"):
        GPTTaskDataModule(tmp_path, "glue-wnli")


def test_a_task_fixes_the_head_and_stsb_trains_by_squared_error():
    with pytest.raises(HarnessError, match="task glue-stsb is a similarity task with 1 outputs; got kind"):
        GPTFineTuneSystem(model="gpt-budget", task="glue-stsb", kind="similarity", classes=2)
    system = GPTFineTuneSystem(model="gpt-budget", task="glue-stsb", kind="similarity", classes=1)
    scores, labels = torch.tensor([[1.0], [3.0]]), torch.tensor([2.0, 2.5])
    assert system._task_loss(scores, labels).item() == pytest.approx((1.0 + 0.25) / 2)


FULL = sorted(CONFIGS.glob("full-*.yaml"))
TASK_CONFIGS = [
    path for path in FULL if path.stem not in ("full-pretrain", "full-released") and "zero-shot" not in path.stem
]


def test_every_table_task_has_a_full_config():
    tasks = {load_config(path, "full")["data"]["init_args"]["task"] for path in TASK_CONFIGS}
    assert tasks == {task for task in TASKS if task not in ("glue-mnli-m", "glue-mnli-mm", "race-m", "race-h")}


@pytest.mark.parametrize("path", TASK_CONFIGS, ids=lambda path: path.stem)
def test_full_configs_have_the_papers_fine_tuning_settings(path, tmp_path):
    resolved = resolve_config(load_config(path, "full"), "full", "gpt", 0, None)
    system, data = resolved["system"]["init_args"], resolved["data"]["init_args"]
    assert (system["lr"], system["warmup"], system["lm_coef"], resolved["trainer"]["max_epochs"]) == (
        6.25e-5, 0.002, 0.5, 3,
    )  # fmt: skip
    assert data["batch_size"] == 32 and data["vocab"] == 40478 and 2 * data["max_part"] + 3 <= 512
    row = TASKS[system["task"]]
    assert system["task"] == data["task"] and (system["kind"], system["classes"]) == row[:2]
    assert resolved["init_from"]["config"] == "full-pretrain.yaml"
    module = GPTTaskDataModule(**{**data, "data_root": tmp_path})  # reads nothing yet
    assert [e["dataset"] for e in resolved["evaluate"]] == list(module.test_tasks)
    splits = {e["split"] for e in resolved["evaluate"]}
    dev = row.family == "glue" or data.get("test_split") == "dev"  # GLUE's test labels are private; Figure 2 on dev
    assert splits == ({"dev"} if dev else {"test"})
    model = GPTFineTuneSystem(**{**system, "model": "gpt-budget"}).model
    assert model.config.classifier_dropout == 0.1
