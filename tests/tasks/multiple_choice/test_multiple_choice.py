"""RACE (all, middle, high) and Story Cloze from their distributed files: answer letters and numbers, context,
question and every option in a batch, scoring of written predictions, malformed files (tasks.multiple_choice)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from tasks.multiple_choice import RACE_LABELS
from tasks.multiple_choice.data import CLOZE_FILES, read_cloze, read_race, read_race_file
from tasks.multiple_choice.fixtures import RACE_FILES, write_tiny_cloze, write_tiny_race
from tasks.multiple_choice.score import score_race, score_race_h, score_race_m, score_story_cloze
from tasks.text_data import AnswerAccuracy, TextTaskDataModule


@pytest.fixture(scope="module")
def race(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_race(tmp_path_factory.mktemp("race") / "root")


@pytest.fixture(scope="module")
def cloze(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny_cloze(tmp_path_factory.mktemp("cloze") / "root")


def test_race_file_gives_one_record_per_question_with_its_answer_letter(race: Path) -> None:
    path = race / "RACE" / "test" / "high" / "10.txt"
    row = json.loads(path.read_text())
    records = read_race_file(path)
    assert [r.id for r in records] == [f"high10.txt#{n}" for n in range(len(row["questions"]))]
    assert [RACE_LABELS[r.label] for r in records] == row["answers"]
    assert records[1].fields == (row["article"], row["questions"][1], tuple(row["options"][1]))


def test_race_levels_and_natural_file_order(race: Path) -> None:
    middle, high = read_race(race / "RACE" / "test", ("middle",)), read_race(race / "RACE" / "test", ("high",))
    both = read_race(race / "RACE" / "test", ("middle", "high"))
    assert both == middle + high and [r.id.split("#")[0] for r in middle][::3][:2] == ["middle2.txt", "middle10.txt"]
    assert len(middle) == len(high) == 6 and RACE_FILES["test"] == (2, 10)


@pytest.mark.parametrize(
    ("task", "scorer", "count"), [("race", score_race, 12), ("race-m", score_race_m, 6), ("race-h", score_race_h, 6)]
)
def test_race_module_serves_all_options_and_rescores(race: Path, tmp_path: Path, task: str, scorer, count: int) -> None:
    module = TextTaskDataModule(task, race, batch_size=count)
    module.setup()
    fields, labels = next(iter(module.test_dataloader()))
    assert set(fields) == {"context", "question", "options"} and all(len(o) == 4 for o in fields["options"])
    assert len(labels) == count
    metric = AnswerAccuracy()
    scores = torch.nn.functional.one_hot(labels, 4).float()
    scores[0] = scores[0].roll(1)  # the first question answered wrong
    metric.update(scores, labels)
    written = metric.write_predictions(tmp_path, module.scoring(0, tmp_path))
    assert written["predictions"].read_text().splitlines()[0] == "id,prediction"
    expected = 100.0 * (count - 1) / count
    assert scorer(race / "RACE" / "test", written["predictions"]) == pytest.approx({"accuracy": expected})
    assert scorer(race, written["predictions"]) == pytest.approx({"accuracy": expected})  # the archive: its test


def test_race_m_predictions_scored_as_race_h_are_unknown_ids(race: Path, tmp_path: Path) -> None:
    rows = [f"{r.id},A" for r in read_race(race / "RACE" / "test", ("middle",))]
    (tmp_path / "p.csv").write_text("id,prediction\n" + "\n".join(rows) + "\n")
    with pytest.raises(HarnessError, match=r"p\.csv:2: id 'middle2\.txt#0' is not an example"):
        score_race_h(race, tmp_path / "p.csv")
    (tmp_path / "p.csv").write_text("id,prediction\n" + rows[0].replace(",A", ",E") + "\n")
    with pytest.raises(HarnessError, match=r"p\.csv:2: field 'prediction': 'E' is not one of A, B, C, D"):
        score_race_m(race, tmp_path / "p.csv")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda row: row.pop("answers"), r"field 'answers': missing or not a list"),
        (lambda row: row["answers"].append("A"), r"fields 'questions', 'options', 'answers': 2, 2 and 3 entries"),
        (lambda row: row["answers"].__setitem__(0, "E"), r"field 'answers', question 0: 'E' is not one of A, B, C, D"),
        (lambda row: row["options"][1].pop(), r"field 'options', question 1: expected a list of four strings"),
    ],
)
def test_malformed_race_files_are_named(tmp_path: Path, change, message: str) -> None:
    row = {
        "answers": ["A", "B"],
        "options": [["a", "b", "c", "d"]] * 2,
        "questions": ["q1", "q2"],
        "article": "t",
        "id": "high1.txt",
    }
    row = json.loads(json.dumps(row))
    change(row)
    (tmp_path / "1.txt").write_text(json.dumps(row))
    with pytest.raises(HarnessError, match=rf"1\.txt: {message}"):
        read_race_file(tmp_path / "1.txt")
    (tmp_path / "1.txt").write_text("{broken")
    with pytest.raises(HarnessError, match=r"1\.txt: not a JSON object"):
        read_race_file(tmp_path / "1.txt")


def test_missing_race_level_names_the_layout(tmp_path: Path) -> None:
    (tmp_path / "RACE" / "test" / "middle").mkdir(parents=True)
    with pytest.raises(HarnessError, match=r"test/middle: no \.txt files"):
        read_race(tmp_path / "RACE" / "test", ("middle",))
    with pytest.raises(HarnessError, match=r"test/high: missing \(the RACE layout"):
        read_race(tmp_path / "RACE" / "test", ("high",))


def test_cloze_story_fields_and_answer_numbers(cloze: Path) -> None:
    path = cloze / CLOZE_FILES["test"][0]
    records = read_cloze(path)
    assert len(records) == 6 and records[0].fields[0].endswith(
        '"At last," said ' + records[0].fields[0].split()[0] + ', "here it is!"'
    )
    assert records[0].fields[1] == "" and len(records[0].fields[2]) == 2 and all(r.label in (0, 1) for r in records)


def test_cloze_trains_on_val_and_rescores_with_its_own_columns(cloze: Path, tmp_path: Path) -> None:
    module = TextTaskDataModule("story-cloze", cloze, batch_size=6)
    module.setup()
    assert module.records("val") == read_cloze(cloze / CLOZE_FILES["val"][0])
    assert len(list(module.train_dataloader())[0][1]) == 6
    _, labels = next(iter(module.test_dataloader()))
    metric = AnswerAccuracy()
    metric.update(torch.zeros_like(labels), labels)  # always ending 1
    written = metric.write_predictions(tmp_path, module.scoring(0, tmp_path))
    assert written["predictions"].read_text().splitlines()[0] == "InputStoryid,AnswerRightEnding"
    expected = 100.0 * int((labels == 0).sum()) / 6
    assert score_story_cloze(cloze, written["predictions"]) == pytest.approx({"accuracy": expected})


def test_cloze_prediction_errors_name_file_line_and_field(cloze: Path, tmp_path: Path) -> None:
    ids = [r.id for r in read_cloze(cloze / CLOZE_FILES["test"][0])]
    (tmp_path / "p.csv").write_text("id,prediction\n" + "".join(f"{i},1\n" for i in ids))
    with pytest.raises(HarnessError, match=r"p\.csv:1: expected the header 'InputStoryid,AnswerRightEnding'"):
        score_story_cloze(cloze, tmp_path / "p.csv")
    (tmp_path / "p.csv").write_text("InputStoryid,AnswerRightEnding\n" + "".join(f"{i},3\n" for i in ids))
    with pytest.raises(HarnessError, match=r"p\.csv:2: field 'AnswerRightEnding': '3' is not one of 1, 2"):
        score_story_cloze(cloze, tmp_path / "p.csv")
    (tmp_path / "p.csv").write_text("InputStoryid,AnswerRightEnding\n" + "".join(f"{i},1\n" for i in ids[:-1]))
    with pytest.raises(HarnessError, match=r"p\.csv: no prediction for 1 of the 6 examples"):
        score_story_cloze(cloze, tmp_path / "p.csv")


def test_malformed_cloze_csv_is_named(tmp_path: Path) -> None:
    (tmp_path / "c.csv").write_text("InputStoryid,InputSentence1\nx,y\n")
    with pytest.raises(HarnessError, match=r"c\.csv:1: header has no column InputSentence2"):
        read_cloze(tmp_path / "c.csv")
    header = "InputStoryid,InputSentence1,InputSentence2,InputSentence3,InputSentence4,RandomFifthSentenceQuiz1,RandomFifthSentenceQuiz2,AnswerRightEnding\n"
    (tmp_path / "c.csv").write_text(header + "s1,a,b,c,d,e,f,1\ns2,a,b,c,d,e,f,0\n")
    with pytest.raises(HarnessError, match=r"c\.csv:3: field 'AnswerRightEnding': '0' is not 1 or 2"):
        read_cloze(tmp_path / "c.csv")
    (tmp_path / "c.csv").write_text(header + "s1,a,b,c,d,e,f\n")
    with pytest.raises(HarnessError, match=r"c\.csv:2: field 'AnswerRightEnding': missing"):
        read_cloze(tmp_path / "c.csv")


def test_a_shared_tokenizer_encodes_one_pair_per_option(race: Path) -> None:
    from tasks.tokenizers.words import WhitespaceTokenizer

    tokenizer = WhitespaceTokenizer()
    module = TextTaskDataModule("race-m", race, batch_size=3, tokenizer=tokenizer)
    module.setup()
    encoded, labels = next(iter(module.test_dataloader()))
    assert encoded["input_ids"].shape[:2] == (3, 4) and encoded["offsets"].shape[:2] == (3, 4) and len(labels) == 3
    article, question, options = module.records("test")[1].fields
    ids = encoded["input_ids"][1, 2][encoded["attention_mask"][1, 2].bool()].tolist()
    first = [tokenizer.word_id(w) for w in f"{article} {question}".split()]
    assert ids == [1, *first, 2, *[tokenizer.word_id(w) for w in options[2].split()], 2]


def test_race_dev_split_is_scored_against_its_folder(race: Path, tmp_path: Path) -> None:
    """A split of many files (RACE's dev) is scored against its split folder (Figure 2 of GPT reads RACE dev)."""
    module = TextTaskDataModule("race", race, batch_size=100, test_splits=["dev"])
    module.setup()
    _, labels = next(iter(module.test_dataloader()))
    scoring = module.scoring(0, tmp_path)
    assert scoring.references == race / "RACE" / "dev" and len(scoring.ids) == len(labels)
    metric = AnswerAccuracy()
    metric.update(torch.nn.functional.one_hot(labels, 4).float(), labels)
    written = metric.write_predictions(tmp_path, scoring)
    assert score_race(scoring.references, written["predictions"]) == {"accuracy": 100.0}
