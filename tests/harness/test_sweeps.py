"""Sweep files (harness.sweeps): what a file expands to, the errors it gives, and ``harness sweep`` listing, printing
its DVC stage and running a cell as ``harness run --set`` would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness import registry, sweeps
from harness.errors import HarnessError
from harness.records import read_record
from tests.conftest import TOY_SRC

TOY_SMOKE = TOY_SRC / "toy_paper" / "configs" / "smoke.yaml"


def write(folder: Path, text: str, name: str = "sweep.yaml") -> Path:
    path = folder / name
    path.write_text(text.replace("CONFIG", str(TOY_SMOKE)))
    return path


def cells_of(toy: Path, text: str, check: bool = True) -> list[sweeps.Cell]:
    return sweeps.expand(sweeps.load(registry.reproduction("toy-paper"), str(write(toy, text))), check=check)


def test_a_grid_is_the_product_of_its_values_at_every_seed(toy: Path) -> None:
    cells = cells_of(toy, "config: CONFIG\nseeds: [0, 1]\ngrid:\n  system.init_args.lr: [0.1, 0.5]\n"
                          "  data.init_args.batch_size: [8, 16, 32]\n")  # fmt: skip
    assert len(cells) == 12 and [c.index for c in cells] == list(range(12))
    assert {(c.sets["system.init_args.lr"], c.sets["data.init_args.batch_size"], c.seed) for c in cells} == {
        (lr, size, seed) for lr in (0.1, 0.5) for size in (8, 16, 32) for seed in (0, 1)
    }
    assert cells[0].name == "lr-0.1.batch_size-8.seed0" and cells[1].name == "lr-0.1.batch_size-8.seed1"
    assert cells[0].resolved["system"]["init_args"]["lr"] == 0.1 and cells[0].resolved["tier"] == "smoke"
    again = cells_of(toy, "config: CONFIG\nseeds: [0, 1]\ngrid:\n  system.init_args.lr: [0.1, 0.5]\n"
                          "  data.init_args.batch_size: [8, 16, 32]\n")  # fmt: skip
    assert [c.name for c in again] == [c.name for c in cells]  # names are stable: a cluster array's index is too


def test_cells_are_named_or_named_by_their_values_and_cross_the_grid_and_models(toy: Path) -> None:
    text = """\
config: CONFIG
models: [toy-mlp, toy-mlp-wide]
set: {trainer.max_epochs: 1}
grid:
  system.init_args.lr: [0.1, 0.2]
cells:
  - {name: small, data.init_args.batch_size: 8}
  - {data.init_args.batch_size: 32}
"""
    cells = cells_of(toy, text)
    assert len(cells) == 2 * 2 * 2
    assert [c.name for c in cells[:4]] == [
        "toy-mlp.small.lr-0.1", "toy-mlp.small.lr-0.2", "toy-mlp.batch_size-32.lr-0.1", "toy-mlp.batch_size-32.lr-0.2"
    ]  # fmt: skip
    assert {c.model for c in cells[4:]} == {"toy-mlp-wide"}
    assert all(c.resolved["trainer"]["max_epochs"] == 1 for c in cells)  # 'set': every cell, not in the names


def test_two_cells_that_resolve_to_one_config_are_an_error(toy: Path) -> None:
    text = "config: CONFIG\ncells:\n  - {name: a, system.init_args.lr: 0.5}\n  - {name: b, system.init_args.lr: 0.1}\n"
    assert len(cells_of(toy, text)) == 2
    same = text.replace("lr: 0.1", "lr: 0.5")
    with pytest.raises(HarnessError, match=r"sweep.yaml:4: key 'cells\[1\]': cells 'a' and 'b' resolve to the same"):
        cells_of(toy, same)
    with pytest.raises(HarnessError, match="two cells are named 'a'"):
        cells_of(toy, text.replace("name: b", "name: a"))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("config: CONFIG\ngrid:\n  model: [a]\n", r"sweep.yaml:3: key 'grid.model': .*not a key a run may set"),
        ("config: CONFIG\ncells:\n  - {name: x, system.init_args.lrr: 1}\n",
         r"sweep.yaml:3: key 'cells\[0\].system.init_args.lrr': .*takes no argument 'lrr' \(did you mean 'lr'\?\)"),
        ("config: CONFIG\nseeds: [0, -1]\n", r"sweep.yaml:2: key 'seeds\[1\]': .*not a seed"),
        ("config: CONFIG\nmodels: [toy-mlp, nope]\n", r"sweep.yaml:2: key 'models\[1\]': 'toy-paper' has no model"),
        ("config: CONFIG\ngrids: {}\n", r"sweep.yaml:2: key 'grids': Extra inputs are not permitted"),
        ("config: CONFIG\ngrid:\n  trainer.max_epochs: 3\n", r"sweep.yaml:3: key 'grid.trainer.max_epochs': .*list"),
        ("config: CONFIG\ngrid:\n  seed: [1, 2]\n", r"sweep.yaml:3: key 'grid.seed': list the seeds under 'seeds'"),
        ("config: CONFIG\ngrid:\n  trainer.max_epochs: [1]\ncells:\n  - {trainer.max_epochs: 2}\n",
         r"sweep.yaml:5: key 'cells\[0\].trainer.max_epochs': the grid varies this key too"),
        ("config: nothere.yaml\n", r"sweep.yaml:1: key 'config': .*nothere.yaml does not exist"),
        ("seeds: [0]\n", r"sweep.yaml: name the tier config it starts from"),
    ],
)  # fmt: skip
def test_errors_name_the_file_line_and_key(toy: Path, text: str, match: str) -> None:
    with pytest.raises(HarnessError, match=match):
        cells_of(toy, text)


def test_select_by_name_or_index(toy: Path) -> None:
    cells = cells_of(toy, "config: CONFIG\ngrid:\n  system.init_args.lr: [0.1, 0.2, 0.3]\n")
    assert [c.index for c in sweeps.select(cells, ["2", "lr-0.1"])] == [2, 0]
    assert sweeps.select(cells, []) == cells
    with pytest.raises(HarnessError, match="--cell 3: no such cell"):
        sweeps.select(cells, ["3"])


def test_the_dvc_stage_iterates_the_cells_by_name(toy: Path) -> None:
    repro = registry.reproduction("toy-paper")
    sweep = sweeps.load(repro, str(write(toy, "config: CONFIG\ngrid:\n  system.init_args.lr: [0.1, 0.2]\n")))
    (name, stage), = sweeps.dvc_stage(sweep, sweeps.expand(sweep)).items()  # fmt: skip
    assert name == "toy-paper-sweep" and stage["foreach"] == ["lr-0.1", "lr-0.2"]
    assert stage["do"]["cmd"] == ".venv/bin/harness sweep toy-paper sweep.yaml --cell ${item}"  # the file, by path
    assert stage["do"]["deps"] == ["sweep.yaml", str(TOY_SMOKE)]  # relative to the repository root (the cwd) if inside
    committed = sweeps.load(registry.reproduction("uda"), "table8-tsa")
    (stage,) = sweeps.dvc_stage(committed, sweeps.expand(committed, check=False)).values()
    assert stage["foreach"] == ["tsa-none", "tsa-log", "tsa-linear"]
    assert stage["do"]["cmd"] == ".venv/bin/harness sweep uda table8-tsa --cell ${item}"


def test_harness_sweep_lists_and_runs_a_cell_as_harness_run_set_would(toy: Path, capsys) -> None:
    from harness.cli import main

    path = write(toy, "config: CONFIG\ngrid:\n  trainer.max_steps: [3, 4]\n")
    assert main(["sweep", "toy-paper", str(path), "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [row["name"] for row in listed] == ["max_steps-3", "max_steps-4"]
    assert main(["sweep", "toy-paper", str(path), "--list"]) == 0
    assert "max_steps-4" in capsys.readouterr().out
    assert main(["sweep", "toy-paper", str(path), "--dvc"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["toy-paper-sweep"]["foreach"] == ["max_steps-3", "max_steps-4"]
    assert main(["sweep", "toy-paper", str(path), "--cell", "0", "--json"]) == 0
    ran = json.loads(capsys.readouterr().out)
    (record_file,) = ran["cells"][0]["records"]
    record = read_record(Path(record_file))
    assert record.config["trainer"]["max_steps"] == 3 and record.run_id == listed[0]["run_ids"][0]
    assert main(["run", "toy-paper", "--tier", "smoke", "--set", "trainer.max_steps=3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["records"] == [record_file]  # the same run: recognised, not rerun
    assert main(["run", "toy-paper", "--tier", "smoke", "--json"]) == 0
    (plain,) = json.loads(capsys.readouterr().out)["records"]
    assert Path(plain).name != Path(record_file).name and "max_steps" not in read_record(Path(plain)).config["trainer"]


@pytest.mark.parametrize(
    ("paper", "name"),
    [(paper, name) for paper in registry.reproductions() for name in sweeps.sweep_names(registry.reproduction(paper))],
)
def test_committed_sweeps_expand_and_every_cell_is_checked(paper: str, name: str) -> None:
    """Each committed sweep resolves, its classes take every argument its cells set, and no two cells are one run."""
    cells = sweeps.expand(sweeps.load(registry.reproduction(paper), name))
    assert cells and all(cell.resolved["tier"] == cell.tier for cell in cells)


def test_a_cell_may_start_from_another_parent_or_from_nothing(toy: Path) -> None:
    """``init_from`` is a key a run may set (ULMFiT's Tables 4 and 6 are other parents): a cell's parent is checked as
    the config's own is, and ``init_from: null`` runs it from nothing; its run id waits for the parent's run."""
    finetune = TOY_SMOKE.with_name("smoke-finetune.yaml")
    text = (
        f"config: {finetune}\ncells:\n  - {{name: other, init_from.seed: 3}}\n  - {{name: scratch, init_from: null}}\n"
    )
    other, scratch = cells_of(toy, text)
    assert other.resolved["init_from"]["seed"] == 3 and "init_from" not in scratch.resolved
    repro = registry.reproduction("toy-paper")
    assert sweeps.run_ids(repro, other) is None and sweeps.run_ids(repro, scratch) is not None
    bad = f"config: {finetune}\ncells:\n  - {{name: bad, init_from.prefixes: []}}\n"
    with pytest.raises(HarnessError, match=r"sweep.yaml:3: key 'cells\[0\].*init_from.prefixes': a non-empty list"):
        cells_of(toy, bad)
    from harness.runner import run

    with pytest.raises(HarnessError, match=r"--set init_from.prefixes=...: key 'init_from.prefixes': a non-empty list"):
        run(registry.reproduction("toy-paper"), "smoke", config_path=finetune, sets={"init_from.prefixes": []})


def test_a_cell_of_the_configs_own_values_is_the_configs_own_run(toy: Path) -> None:
    """A grid point equal to the tier config (UDA's 4,000-label cell of Table 6) has the plain run's id: one run."""
    from harness.runner import load_config, plan, resolve_config

    repro = registry.reproduction("toy-paper")
    own, other = cells_of(toy, "config: CONFIG\ngrid:\n  system.init_args.lr: [0.5, 0.25]\n")
    plain = plan(repro, resolve_config(load_config(TOY_SMOKE, "smoke"), "smoke", None, None, None))[0].run_id
    assert sweeps.run_ids(repro, own) == [plain] and sweeps.run_ids(repro, other) != [plain]


def test_a_sweep_may_name_its_tier_instead_of_a_config_file(toy: Path) -> None:
    """``tier: smoke`` starts from the paper's configs/smoke.yaml; with only seeds, the cells are the seeds."""
    cells = cells_of(toy, "tier: smoke\nseeds: [3, 4]\n")
    assert [(c.name, c.seed, c.config) for c in cells] == [("seed3", 3, TOY_SMOKE), ("seed4", 4, TOY_SMOKE)]
    assert [c.name for c in cells_of(toy, "tier: smoke\n")] == ["default"]
