"""The registry: entry points from any distribution, duplicates named with both sources, lazy loading."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness import registry
from harness.errors import HarnessError
from tests.conftest import cli_json, harness_cli, write_dist_info


def test_plugin_distribution_is_listed_by_the_cli(toy_site: Path, tmp_path: Path) -> None:
    listing = cli_json("list", cwd=tmp_path, site=toy_site)
    toy = next(row for row in listing if row["id"] == "toy-paper")
    assert toy == {
        "id": "toy-paper",
        "title": "A Toy Paper About Digits",
        "arxiv": "2001.00001v2",
        "url": "https://arxiv.org/abs/2001.00001v2",
        "tasks": ["toy-digits"],
        "models": ["toy-mlp", "toy-mlp-wide", "toy-bow"],
        "tiers": ["arch", "smoke", "budget"],
        "claims": 5,
    }
    assert "toy-mlp" in cli_json("models", cwd=tmp_path, site=toy_site)


def test_without_the_plugin_it_is_not_listed(tmp_path: Path) -> None:
    assert all(row["id"] != "toy-paper" for row in cli_json("list", cwd=tmp_path))


def test_duplicate_id_names_both_sources(toy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "other-site"
    write_dist_info(other, "copycat-plugin", {"harness.reproductions": {"toy-paper": "toy_paper:REPRODUCTION2"}})
    monkeypatch.syspath_prepend(str(other))
    registry.reproductions.cache_clear()
    with pytest.raises(HarnessError) as err:
        registry.reproductions()
    assert "duplicate harness.reproductions id 'toy-paper'" in str(err.value)
    assert "toy-plugin (toy_paper:REPRODUCTION)" in str(err.value)
    assert "copycat-plugin (toy_paper:REPRODUCTION2)" in str(err.value)


def test_entry_point_name_must_equal_the_object_id(toy: Path, tmp_path: Path, monkeypatch) -> None:
    other = tmp_path / "misnamed-site"
    write_dist_info(other, "misnamed", {"harness.tasks": {"not-toy": "toy_paper:TOY_TASK"}})
    monkeypatch.syspath_prepend(str(other))
    registry.tasks.cache_clear()
    with pytest.raises(HarnessError, match="'not-toy' from misnamed .* names an object with id 'toy-digits'"):
        registry.tasks()


def test_broken_plugin_is_named(toy: Path, tmp_path: Path, monkeypatch) -> None:
    other = tmp_path / "broken-site"
    write_dist_info(other, "broken-plugin", {"harness.tasks": {"gone": "no_such_module_xyz:TASK"}})
    monkeypatch.syspath_prepend(str(other))
    registry.tasks.cache_clear()
    with pytest.raises(HarnessError, match="cannot load harness.tasks entry point 'gone' from broken-plugin"):
        registry.tasks()


def test_loading_the_registry_imports_no_torch(toy_site: Path, tmp_path: Path) -> None:
    code = "import sys; from harness import registry; registry.reproductions(); registry.tasks(); print('torch' in sys.modules)"
    import subprocess

    env = {"PYTHONPATH": f"{toy_site}:{Path(__file__).parents[1] / 'toy_plugin'}:{Path(__file__).parents[2]}"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_unknown_ids_list_what_is_registered(toy: Path) -> None:
    with pytest.raises(HarnessError, match="unknown paper 'nope'; registered: .*toy-paper"):
        registry.reproduction("nope")
    with pytest.raises(
        HarnessError, match="has no model 'toy-cnn'; it has: \\['toy-mlp', 'toy-mlp-wide', 'toy-bow'\\]"
    ):
        registry.reproduction("toy-paper").model("toy-cnn")


def test_load_object_errors_name_the_target() -> None:
    with pytest.raises(HarnessError, match="has no attribute 'nope'"):
        registry.load_object("harness.registry:nope")
    with pytest.raises(HarnessError, match="not an import path"):
        registry.load_object("justaname")
    assert registry.load_object("harness.registry:Task") is registry.Task


def test_cli_error_for_duplicate_is_one_line(toy_site: Path, tmp_path: Path) -> None:
    write_dist_info(toy_site, "copycat", {"harness.reproductions": {"toy-paper": "toy_paper:REPRODUCTION"}})
    done = harness_cli("list", cwd=tmp_path, site=toy_site)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "duplicate" in done.stderr and "Traceback" not in done.stderr


def test_model_variant_strips_the_prefix_and_names_known_ids() -> None:
    assert registry.model_variant("efficientnet-b3", ("b0", "b3"), "EfficientNet", "efficientnet-") == "b3"
    assert registry.model_variant("nasfpn-x", ("nasfpn-x",), "NAS-FPN") == "nasfpn-x"
    for bad in ("efficientnet-b9", "b3"):  # unknown variant; known variant without the prefix
        with pytest.raises(
            HarnessError,
            match=rf"unknown EfficientNet model id '{bad}'( \(did you mean .*\))?; known: efficientnet-b0, efficientnet-b3",
        ):
            registry.model_variant(bad, ("b0", "b3"), "EfficientNet", "efficientnet-")
    with pytest.raises(
        HarnessError, match=r"'efficientnet-b9' \(did you mean 'efficientnet-b3' or 'efficientnet-b0'\?\)"
    ):
        registry.model_variant("efficientnet-b9", ("b0", "b3"), "EfficientNet", "efficientnet-")
