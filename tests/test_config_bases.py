"""Config bases (``_base_``, harness.configfile) across the papers: every tier config reads with its bases and
passes the runner's checks, every ``configs/_base/`` file is the base of some tier config, and no ``_base_`` chain
comes back to itself (a loop is an error when the file is read)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import configfile, registry, runner


def _config_folders() -> list[tuple[registry.Reproduction, Path]]:
    return [(repro, repro.root / "configs") for repro in registry.reproductions().values()]


def _tier_configs() -> list[object]:
    return [
        pytest.param(repro, path, id=f"{repro.id}-{path.stem}")
        for repro, folder in _config_folders()
        for path in sorted(folder.glob("*.yaml"))
    ]


def _base_files() -> list[Path]:
    return [path for _, folder in _config_folders() for path in sorted((folder / configfile.BASES_DIR).glob("*.yaml"))]


@pytest.mark.parametrize(("repro", "path"), _tier_configs())
def test_every_tier_config_reads_with_its_bases_and_passes_the_runners_checks(
    repro: registry.Reproduction, path: Path
) -> None:
    tier = path.stem.split("-", 1)[0]
    if repro.runner is not None:  # a paper that runs its tiers itself reads its own keys (docs/plugins.md)
        assert configfile.read(path).tree
    else:
        config = runner.load_config(path, tier)
        assert config["tier"] == tier and configfile.BASE_KEY not in config


def test_every_base_file_is_the_base_of_some_tier_config() -> None:
    used = {
        f.resolve() for _, folder in _config_folders() for p in folder.glob("*.yaml") for f in configfile.read(p).files
    }
    unused = [str(path) for path in _base_files() if path.resolve() not in used]
    assert _base_files() and not unused, f"configs/_base/ files no tier config names: {unused}"


@pytest.mark.parametrize("path", _base_files(), ids=lambda p: f"{p.parents[2].name}-{p.stem}")
def test_a_base_file_reads_alone_its_chain_has_no_loop(path: Path) -> None:
    base = configfile.read(path)
    assert base.tree and len(set(base.files)) == len(base.files)


def _parents(config: dict) -> list[dict]:
    """The ``init_from`` entries a config (or one of its models' overrides) names by config file."""
    entries = [config.get("init_from")] + [
        row.get("init_from") for row in (config.get("overrides") or {}).values() if isinstance(row, dict)
    ]
    flat = [e for entry in entries for e in (entry if isinstance(entry, list) else [entry])]
    return [e for e in flat if isinstance(e, dict) and "config" in e]


@pytest.mark.parametrize(("repro", "path"), _tier_configs())
def test_an_init_from_config_is_found_beside_the_config_that_runs_whatever_file_names_it(
    repro: registry.Reproduction, path: Path
) -> None:
    """A base may state ``init_from`` (GPT's ``_base/finetune.yaml``): its ``config:`` is relative to the folder of the
    config being run, as harness.chains resolves it, and names a stage that keeps its weights."""
    for entry in _parents(configfile.read(path).tree):
        parent = path.parent / entry["config"]
        tier = entry.get("tier", path.stem.split("-", 1)[0])
        assert parent.is_file(), f"{path}: init_from.config {entry['config']!r}: {parent} does not exist"
        assert runner.load_config(parent, tier).get("save_checkpoint") is True, f"{parent} saves no checkpoint"
