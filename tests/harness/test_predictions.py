"""harness.predictions: content-addressed, all-or-nothing artifact folders, and the record's ``artifacts``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from harness.errors import HarnessError
from harness.predictions import PredictionsKeeper, Scoring, keep, publish, tree_digest, unwritable
from harness.rescore import rescore_args
from tasks.imagenet.metric import accuracy_metrics

RUN = "toy-paper.toy-mlp.smoke.digits.test.s0.abc"


class Labels:
    """A data module's scoring hook over fixed labels (written as the references CSV, as the classifiers do)."""

    def __init__(self, labels: list[int]) -> None:
        self.labels = labels

    def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
        path = Path(folder) / "references.csv"
        path.write_text("id,label\n" + "".join(f"{i},{y}\n" for i, y in enumerate(self.labels)), encoding="utf-8")
        return Scoring("cifar-10", path, [str(i) for i in range(len(self.labels))])


def _fed(guesses: list[int]) -> object:
    metric = accuracy_metrics(10)
    metric.update(torch.nn.functional.one_hot(torch.tensor(guesses), 10).float(), torch.tensor(guesses))
    return metric


def test_keep_writes_one_folder_named_by_its_content_and_the_records_artifacts(tmp_path: Path) -> None:
    results = tmp_path / "results"
    artifacts = keep(_fed([3, 1, 4]), Labels([3, 1, 5]), 0, RUN, results)
    (folder,) = (results / "artifacts" / RUN).iterdir()
    assert folder.name == tree_digest(folder)[:16]
    assert artifacts == {
        "task": "cifar-10",
        "predictions": f"artifacts/{RUN}/{folder.name}/predictions.csv",
        "references": f"artifacts/{RUN}/{folder.name}/references.csv",
        "references_sha256": artifacts["references_sha256"],
    }
    header, row, *_ = (folder / "predictions.csv").read_text().splitlines()
    assert header == "id,prediction,p2,p3,p4,p5" and row.startswith("0,3,") and len(set(row.split(",")[1:])) == 5
    assert [p.name for p in (results / "artifacts").iterdir()] == [RUN]  # no staging folder left behind
    args = rescore_args(artifacts, results)
    assert args[0] == "cifar-10" and args[1::2] == ["--references", "--predictions"]
    from tasks.classification.score import score_cifar_10

    assert score_cifar_10(Path(args[2]), Path(args[4]))["top1"] == pytest.approx(200 / 3)


def test_the_same_predictions_again_reuse_the_folder_and_others_get_their_own(tmp_path: Path) -> None:
    results = tmp_path / "results"
    first = keep(_fed([3, 1, 4]), Labels([3, 1, 5]), 0, RUN, results)
    assert keep(_fed([3, 1, 4]), Labels([3, 1, 5]), 0, RUN, results) == first
    other = keep(_fed([3, 1, 5]), Labels([3, 1, 5]), 0, RUN, results)
    assert other["predictions"] != first["predictions"]
    assert (results / first["predictions"]).read_text() != (results / other["predictions"]).read_text()
    assert len(list((results / "artifacts" / RUN).iterdir())) == 2


def test_publish_moves_the_staging_folder_whole(tmp_path: Path) -> None:
    staging = tmp_path / "staging"
    (staging / "sub").mkdir(parents=True)
    (staging / "sub" / "a.png").write_bytes(b"png")
    final = publish(staging, tmp_path / "run")
    assert not staging.exists() and (final / "sub" / "a.png").read_bytes() == b"png"


def test_references_in_the_project_are_named_relative_to_the_results_folder_others_absolute(tmp_path: Path) -> None:
    class Outside(Labels):
        def scoring(self, dataloader_idx: int, folder: Path) -> Scoring:
            inner = super().scoring(dataloader_idx, tmp_path / "data")
            return Scoring(inner.task, inner.references, inner.ids)

    (tmp_path / "data").mkdir()
    artifacts = keep(_fed([3]), Outside([3]), 0, RUN, tmp_path / "results")
    assert artifacts["references"] == "../data/references.csv"
    elsewhere = keep(_fed([3]), Outside([3]), 0, RUN, tmp_path / "x" / "results")
    assert elsewhere["references"] == (tmp_path / "data" / "references.csv").as_posix()


def test_a_metric_fed_another_split_is_refused_and_nothing_is_kept(tmp_path: Path) -> None:
    results = tmp_path / "results"
    with pytest.raises(HarnessError, match="holds 3 predictions but the cifar-10 test split"):
        keep(_fed([3, 1, 4]), Labels([3, 1]), 0, RUN, results)
    assert list((results / "artifacts").iterdir()) == []


def test_unwritable_names_the_missing_hook() -> None:
    assert unwritable(None, Labels([])) == "the system has no test_metrics entry for this loader"
    assert "has no write_predictions" in unwritable(torch.nn.Identity(), Labels([]))
    assert "has no scoring(dataloader_idx, folder)" in unwritable(_fed([1]), object())
    assert unwritable(_fed([1]), Labels([1])) is None


def test_the_keeper_notes_what_it_could_not_keep_and_keeps_the_rest(tmp_path: Path, capsys) -> None:
    class Trainer:
        world_size = 1
        datamodule = Labels([3, 1])

    class System:
        test_metrics = [_fed([3, 1]), _fed([3, 1, 4])]  # the second loader's metric saw another split

    keeper = PredictionsKeeper([RUN, RUN + "x"], tmp_path / "results")
    keeper.on_test_epoch_end(Trainer(), System())
    assert keeper.artifacts(0)["task"] == "cifar-10" and keeper.artifacts(1) == {}
    assert f"predictions of {RUN}x not kept: the metric holds 3 predictions" in capsys.readouterr().err


def test_rescore_args_need_predictions() -> None:
    with pytest.raises(HarnessError, match="name no predictions"):
        rescore_args({}, Path("results"))


def test_rescore_args_take_the_tasks_options_and_leave_a_checkpoint_out() -> None:
    artifacts = {
        "task": "squad-v2.0", "predictions": "artifacts/r/d/predictions.json", "na_probs": "artifacts/r/d/na.json",
        "references": "../data/dev-v2.0.json", "references_sha256": "ab", "checkpoint": "c.safetensors",
        "checkpoint_sha256": "cd",
    }  # fmt: skip
    assert rescore_args(artifacts, Path("results")) == [
        "squad-v2.0", "--references", "results/../data/dev-v2.0.json",
        "--predictions", "results/artifacts/r/d/predictions.json", "--na-probs", "results/artifacts/r/d/na.json",
    ]  # fmt: skip
