"""XLNet's full-tier configs: the paper's fine-tuning tasks from the released XLNet-Large (converted weights named by
``checkpoint``, the released ``spiece.model``), each resolving for every model it runs, its arguments those of its
classes, its evaluations claims of ``xlnet-large``, and Table 8's settings where the paper states them."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from harness import registry
from harness.claims import registered_claims
from harness.registry import load_object
from harness.runner import check_arguments, load_config, resolve_config
from harness.training import identity
from reproductions.xlnet.system import size_of
from tasks.glue import LAYOUTS as GLUE
from tasks.glue.data import dev_tasks
from tasks.text_classification import LAYOUTS as TEXT

CONFIGS = Path(registry.reproduction("xlnet").root) / "configs"
FULL = sorted(CONFIGS.glob("full-*.yaml"))
# Table 8: (learning rate, batch, steps, max length, layer-wise decay) of RACE, SQuAD, MNLI and Yelp-5
TABLE_8 = {
    "full-race": (2e-5, 32, 12000, 512, 1.0),
    "full-squad-v1.1": (3e-5, 48, 8000, 512, 0.75),
    "full-squad-v2.0": (3e-5, 48, 8000, 512, 0.75),
    "full-glue-mnli": (2e-5, 128, 10000, 128, 1.0),
    "full-yelp-5": (1e-5, 128, 10000, 512, 1.0),
}


@functools.cache
def large_claims() -> frozenset[tuple[str, str]]:
    """``(dataset, split)`` of every ``xlnet-large`` claim (the claims file is read once)."""
    return frozenset((c.dataset, c.split) for c in registered_claims("xlnet") if c.model == "xlnet-large")


def test_every_table_task_with_a_module_has_a_full_config() -> None:
    evaluated = {e["dataset"] for path in FULL for e in load_config(path, "full")["evaluate"]}
    claimed = {dataset for dataset, split in large_claims() if split in ("dev", "test")}
    assert claimed - evaluated == {"clueweb09-b"}  # Table 2's document ranking: no data module


@pytest.mark.parametrize("path", FULL, ids=lambda path: path.stem)
def test_full_config_resolves_for_every_model(path: Path, tmp_path: Path) -> None:
    config = load_config(path, "full")
    claims = large_claims()
    for model in [config["model"], *(config.get("overrides") or {})]:
        resolved = resolve_config(config, "full", model, 0, None)
        check_arguments(path, resolved)
        assert size_of(resolved["model"]) == "xlnet-large" and resolved["fit"]
        system, data = resolved["system"]["init_args"], resolved["data"]["init_args"]
        assert system["checkpoint"] == "xlnet-large.safetensors" and data["spiece"].endswith("/spiece.model")
        assert data["vocab"] == 32000 and data["max_length"] <= 512
        assert all((e["dataset"], e["split"]) in claims for e in resolved["evaluate"])
        load_object(resolved["data"]["class_path"])(**{**data, "data_root": tmp_path})  # reads nothing yet
    task = system.get("task") or f"squad-v{system['version']}"
    assert task == data.get("task", data.get("dataset", task))
    if task.startswith("glue-"):
        assert [e["dataset"] for e in resolved["evaluate"]] == list(dev_tasks(task))
        labels = GLUE[dev_tasks(task)[0]].labels
        assert (system["kind"], system["classes"]) == (
            ("regression", 1) if labels is None else ("classification", len(labels))
        )
    elif task in TEXT:
        assert (system["kind"], system["classes"]) == ("classification", len(TEXT[task].classes))
    if path.stem in TABLE_8:
        batch, steps = data["batch_size"], resolved["trainer"]["max_steps"]
        got = (system["lr"], batch, steps, data["max_length"], system.get("layer_decay", 1.0))
        assert got == TABLE_8[path.stem]


def test_checkpoint_on_the_command_line_names_the_weights_and_their_hash_the_run(tmp_path: Path) -> None:
    config = load_config(CONFIGS / "full-glue-rte.yaml", "full")
    weights = tmp_path / "mine.safetensors"
    weights.write_bytes(b"weights")
    resolved = resolve_config(config, "full", None, 0, None, checkpoint=str(weights))
    assert resolved["system"]["init_args"]["checkpoint"] == str(weights)
    key = identity(resolved)
    assert "checkpoint" not in key["system"]["init_args"] and len(key["checkpoint_sha256"]) == 64


TABLE_6_WEIGHTS = "xlnet-base-wikibooks-k6.safetensors"


def test_table_6_xlnet_base_claims_judge_only_runs_from_its_pre_training() -> None:
    """Table 6's XLNet-Base was pre-trained on BooksCorpus + Wikipedia with K = 6 (no released checkpoint): a full
    config run with ``--model xlnet-base`` from other weights (the released, full-data XLNet-Base, say) writes a
    record of the same model, dataset and split, which must not be judged against Table 6; only a run from weights
    named ``xlnet-base-wikibooks-k6.safetensors`` (README.md, "Full tier") is."""
    from harness.verdicts import matches
    from tests.conftest import make_record

    claims = [c for c in registered_claims("xlnet") if c.id.startswith("t6-xlnet-base-") and c.model == "xlnet-base"]
    assert len(claims) == 6
    configs = {"race": "full-race", "squad-v2.0": "full-squad-v2.0", "glue-sst2": "full-glue-sst2"}
    configs |= {"glue-mnli-m": "full-glue-mnli", "glue-mnli-mm": "full-glue-mnli"}
    for claim in claims:
        config = load_config(CONFIGS / f"{configs[claim.dataset]}.yaml", "full")
        for weights, judged in (("xlnet-base.safetensors", False), (TABLE_6_WEIGHTS, True)):
            resolved = resolve_config(config, "full", "xlnet-base", 0, "/data", checkpoint=weights)
            assert {"dataset": claim.dataset, "split": claim.split} in resolved["evaluate"]
            record = make_record(paper="xlnet", model="xlnet-base", dataset=claim.dataset, split=claim.split,
                                 protocol=None, metrics={claim.metric: 80.0}, config=resolved)  # fmt: skip
            assert matches(claim, record) is judged, (claim.id, weights)
