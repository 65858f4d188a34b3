"""``--set key=value``: typed values, where a run may set them, and that they are part of the run's id."""

from __future__ import annotations

import pytest

from harness import registry
from harness.errors import HarnessError
from harness.runner import load_config, parse_set, plan, resolve_config


def test_values_are_read_as_yaml():
    assert parse_set("trainer.max_steps=100") == ("trainer.max_steps", 100)
    assert parse_set("system.init_args.lr=1e-3") == ("system.init_args.lr", 1e-3)
    assert parse_set("fit=false") == ("fit", False)
    assert parse_set("data.init_args.sizes=[1, 2]") == ("data.init_args.sizes", [1, 2])
    assert parse_set('data.init_args.name="3"') == ("data.init_args.name", "3")
    for bad in ("novalue", "=3", "a=[1,"):
        with pytest.raises(HarnessError, match="--set"):
            parse_set(bad)


def smoke(paper: str = "efficientnet"):
    repro = registry.reproduction(paper)
    return repro, load_config(repro.config_path("smoke"), "smoke")


def test_a_set_changes_the_resolved_config_and_the_run_id():
    repro, config = smoke()
    plain = resolve_config(config, "smoke", None, None, None)
    changed = resolve_config(config, "smoke", None, None, None, sets={"trainer.max_steps": 3})
    assert changed["trainer"]["max_steps"] == 3 and plain.get("trainer", {}).get("max_steps") != 3
    assert plan(repro, plain)[0].run_id != plan(repro, changed)[0].run_id
    again = resolve_config(config, "smoke", None, None, None, sets={"trainer.max_steps": 3})
    assert plan(repro, again)[0].run_id == plan(repro, changed)[0].run_id  # the same cell is the same run
    new_arg = resolve_config(config, "smoke", None, None, None, sets={"system.init_args.new_key": 1})
    assert new_arg["system"]["init_args"]["new_key"] == 1  # made; check_arguments then says whether it exists


def test_a_set_outside_what_a_run_may_change_is_refused():
    _, config = smoke()
    for key in ("model", "system.class_path", "overrides.x", "nonsense"):
        with pytest.raises(HarnessError, match="not a key a run may set"):
            resolve_config(config, "smoke", None, None, None, sets={key: 1})
    with pytest.raises(HarnessError, match="no mapping 'trainer.max_steps'"):
        resolve_config(config, "smoke", None, None, None, sets={"trainer.max_steps": 3, "trainer.max_steps.x": 1})


def test_a_recipe_key_is_checked_before_anything_runs():
    """The TPU systems take their recipe (nets.systems.tpu_classifier.TPURecipe) as ``**recipe``: a misspelt
    recipe key set on the command line is one error naming the config, before the data is prepared."""
    from harness.runner import check_arguments

    repro, config = smoke()
    path = repro.config_path("smoke")
    check_arguments(path, resolve_config(config, "smoke", None, None, None, sets={"system.init_args.lr": 0.1}))
    with pytest.raises(HarnessError, match=r"takes no argument 'lrr' \(did you mean 'lr'\?\)"):
        check_arguments(path, resolve_config(config, "smoke", None, None, None, sets={"system.init_args.lrr": 0.1}))


def test_run_named_by_its_id_says_what_to_pass():
    """``runner.run`` takes the Reproduction (the command line looks the id up once): a caller of the old shape, a
    paper id, is told what to pass."""
    from harness.runner import run

    with pytest.raises(HarnessError, match=r"takes the paper's Reproduction.*harness.registry.reproduction\('toy'\)"):
        run("toy", "smoke")
