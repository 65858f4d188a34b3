"""The CoNLL-2003 data module on the tiny files in the distributed layout, the metric, and ``harness score``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import HarnessError
from tasks.conll2003.data import Conll2003DataModule, iob1_to_iob2, read_sentences
from tasks.conll2003.fixtures import example, write_tiny_conll2003
from tasks.conll2003.metric import ConllNerMetric
from tasks.conll2003.score import score
from tests.conftest import harness_cli


def test_sentences_keep_iob1_tags_and_drop_docstart_lines(tmp_path: Path) -> None:
    sentences = read_sentences(write_tiny_conll2003(tmp_path) / "eng.train")
    assert len(sentences) == 3 and sentences[0].id == 3  # line 1 -DOCSTART-, line 2 blank
    lakes = sentences[1]
    assert lakes.words[:4] == ("Lake", "Tana", "Lake", "Victoria")
    assert lakes.tags[:4] == ("I-LOC", "I-LOC", "B-LOC", "I-LOC") and lakes.chunks[2] == "B-NP"
    assert iob1_to_iob2(lakes.tags[:5]) == ["B-LOC", "I-LOC", "B-LOC", "I-LOC", "O"]
    assert iob1_to_iob2(["I-PER", "I-ORG", "O", "I-ORG"]) == ["B-PER", "B-ORG", "O", "B-ORG"]


def test_the_data_module_serves_testa_and_testb_and_names_its_scoring(tmp_path: Path) -> None:
    data = Conll2003DataModule(write_tiny_conll2003(tmp_path), batch_size=2)
    data.setup()
    assert [len(batch) for batch in data.test_dataloader()] == [2, 1]
    assert len(data.sentences("testa")) == 2 and data.data_hash and len(data.data_hash) == 64
    scoring = data.scoring(0, tmp_path)
    assert scoring.task == "conll2003-ner" and scoring.references == tmp_path / "eng.testb"
    assert scoring.ids == [s.id for s in data.sentences("testb")]


def test_a_tag_outside_the_nine_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "eng.train"
    path.write_text("-DOCSTART- -X- -X- O\n\nEU NNP I-NP B-PER\nsays VBZ I-VP S-ORG\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=r"eng.train:4: NER tag 'S-ORG' is not one of"):
        read_sentences(path)


def test_the_metric_counts_as_conlleval_and_writes_what_the_scorer_reads(tmp_path: Path) -> None:
    data = Conll2003DataModule(write_tiny_conll2003(tmp_path / "data"))
    data.setup()
    gold = [list(s.tags) for s in data.sentences("testb")]
    guesses = [iob1_to_iob2(tags) for tags in gold]
    guesses[0][0] = "B-ORG"  # Lake Tana -> an ORG and a LOC
    metric = ConllNerMetric()
    metric.update(guesses[:1], gold[:1])
    metric.update(guesses[1:], gold[1:])
    values = {k: float(v) for k, v in metric.compute().items()}
    written = metric.write_predictions(tmp_path, data.scoring(0, tmp_path))["predictions"]
    scored = score(data.scoring(0, tmp_path).references, written)
    assert values == {k: pytest.approx(scored[k]) for k in values}
    assert values["recall"] == pytest.approx(100 * 6 / 7) and values["precision"] == pytest.approx(100 * 6 / 8)


def test_harness_score_prints_the_keys_and_names_a_bad_line(tmp_path: Path) -> None:
    files = example(tmp_path, "conll2003-ner")
    done = harness_cli("score", "conll2003-ner", "--references", str(files["references"]),
                       "--predictions", str(files["predictions"]), "--json", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["f1"] == pytest.approx(61.538, abs=1e-3)
    lines = files["predictions"].read_text().splitlines()
    lines[2] = lines[2].rsplit(" ", 1)[0] + " B_LOC"
    files["predictions"].write_text("\n".join(lines) + "\n")
    done = harness_cli("score", "conll2003-ner", "--references", str(files["references"]),
                       "--predictions", str(files["predictions"]), cwd=tmp_path)  # fmt: skip
    assert done.returncode != 0
    assert done.stderr.strip().count("\n") == 0 and "predictions.txt:3: predicted tag 'B_LOC'" in done.stderr
