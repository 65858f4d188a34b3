"""Sweep files: a tier config and the keys to vary, expanded to one run per cell (docs/sweeps.md).

A sweep lives in ``reproductions/<paper>/configs/sweeps/<name>.yaml`` and names the tier config it starts from
(``config``: a file of the paper's ``configs/``, or ``tier``: ``configs/<tier>.yaml``), optionally ``models`` and
``seeds``, and what varies: a ``grid`` (dotted key -> list of values; every combination) and/or ``cells`` (a list
of {dotted key: value} mappings, each optionally ``name``d); with both, every cell runs at every grid point; ``set``
gives keys every cell shares. Each value is set as ``harness run --set`` sets it (:func:`harness.runner.apply_set`),
so a cell's run id is the run id of that ``--set`` run. :func:`expand` is the one list of cells that ``harness
sweep`` runs locally, a DVC ``foreach`` stage iterates (:func:`dvc_stage`) and a cluster array indexes (``--cell
$SLURM_ARRAY_TASK_ID``). Every cell is resolved and its classes' arguments checked before anything runs; two cells
that resolve to one config are an error (one run under two names).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness import configfile
from harness.config import check_seed, load_config
from harness.configfile import ConfigFile
from harness.errors import HarnessError
from harness.registry import Reproduction
from harness.runner import check_arguments, resolve_config, run
from harness.training import WEIGHT_ARGS, plan, without_location

SWEEPS_DIR = "sweeps"  # under a paper's configs/
NAME_KEY = "name"  # the one key of a cell that is not a config key
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")  # a cell name: a shell word, a DVC stage suffix


class SweepFile(BaseModel):
    """What a sweep file may say; every key is optional but one of ``config`` and ``tier``."""

    model_config = ConfigDict(extra="forbid")

    config: str | None = None  # a tier config of the paper, relative to its configs/ folder
    tier: str | None = None  # the tier it runs at (default: the config's own 'tier', else its name's first part)
    models: list[str] | None = Field(default=None, min_length=1)  # default: the config's model
    seeds: list[int] | None = Field(default=None, min_length=1)  # default: the config's seed
    set: dict[str, Any] = {}  # dotted key -> value for every cell (no part of the cells' names)
    grid: dict[str, list[Any]] = {}
    cells: list[dict[str, Any]] = []


@dataclass
class Sweep:
    """A sweep file read and checked against its paper."""

    repro: Reproduction
    name: str  # the file's stem
    ref: str  # how ``harness sweep`` names it: the name, or the path of a file outside configs/sweeps/
    file: ConfigFile
    spec: SweepFile
    config: Path  # the tier config every cell starts from
    tier: str


@dataclass
class Cell:
    """One run of a sweep: ``harness run PAPER --tier TIER --config CONFIG --model MODEL --seed SEED --set ...``."""

    index: int
    name: str
    config: Path
    tier: str
    model: str
    seed: int
    sets: dict[str, Any]
    resolved: dict[str, Any]  # the config as the run resolves it (before an init_from parent is resolved)
    origin: str  # the sweep file's key that made this cell, for errors


def sweep_path(repro: Reproduction, name: str) -> Path:
    """``configs/sweeps/<name>.yaml`` of the paper, or ``name`` itself when it is a YAML file's path."""
    given = Path(name)
    if given.suffix in (".yaml", ".yml") and given.is_file():
        return given
    path = repro.root / "configs" / SWEEPS_DIR / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sweep_names(repro)) or "none"
        raise HarnessError(f"{path}: {repro.id!r} has no sweep {name!r}; its sweeps: {known}")
    return path


def sweep_names(repro: Reproduction) -> list[str]:
    return sorted(path.stem for path in (repro.root / "configs" / SWEEPS_DIR).glob("*.yaml"))


def load(repro: Reproduction, name: str) -> Sweep:
    """Read a sweep file; errors name the file, the line and the key."""
    path = sweep_path(repro, name)
    file = configfile.read(path, "a sweep file")
    try:
        spec = SweepFile.model_validate(file.tree)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = _loc_key(error["loc"])
        raise file.error(key, error["msg"].removeprefix("Value error, ")) from None
    if spec.config is None and spec.tier is None:
        raise HarnessError(f"{path}: name the tier config it starts from: 'config' (a file of configs/) or 'tier'")
    config = repro.root / "configs" / (spec.config or f"{spec.tier}.yaml")
    if not config.is_file():
        raise file.error("config" if spec.config else "tier", f"{config} does not exist")
    tier = spec.tier or configfile.read(config).tree.get("tier") or config.stem.split("-", 1)[0]
    ref = name if path.parent == repro.root / "configs" / SWEEPS_DIR else display_path(path)
    return Sweep(repro, path.stem, ref, file, spec, config, tier)


def _loc_key(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a dotted key of the file (``cells[2].name``)."""
    key = ""
    for part in loc:
        key += f"[{part}]" if isinstance(part, int) else f"{'.' if key else ''}{part}"
    return key


def expand(sweep: Sweep, check: bool = True) -> list[Cell]:
    """Every cell of the sweep, in a stable order (models, then cells, then grid points, then seeds), each resolved
    (and, with ``check``, its classes' arguments checked); duplicate names or configs are errors."""
    base = load_config(sweep.config, sweep.tier)
    models = sweep.spec.models or [base["model"]]
    for index, model in enumerate(models):
        if model not in sweep.repro.model_ids():
            raise sweep.file.error(f"models[{index}]", f"{sweep.repro.id!r} has no model {model!r}")
    seeds = sweep.spec.seeds or [int(base.get("seed", 0))]
    for index, seed in enumerate(seeds):
        try:
            check_seed(seed, "a seed")
        except HarnessError as exc:
            raise sweep.file.error(f"seeds[{index}]", str(exc)) from None
    cells = []
    for model, (origin, label, sets), seed in itertools.product(models, _points(sweep), seeds):
        parts = [model] * (len(models) > 1) + [label] * bool(label) + [f"seed{seed}"] * (len(seeds) > 1)
        name = ".".join(parts) or "default"
        resolved = _resolve(sweep, base, origin, model, seed, sets, check)
        cells.append(Cell(len(cells), name, sweep.config, sweep.tier, model, seed, sets, resolved, origin))
    _check_unique(sweep, cells)
    return cells


def _points(sweep: Sweep) -> list[tuple[str, str, dict[str, Any]]]:
    """(origin key, name, sets) of each cell x grid point, before models and seeds."""
    grid = sweep.spec.grid
    for key, values in grid.items():
        if not values:
            raise sweep.file.error(f"grid.{key}", "a non-empty list of values")
        if key in sweep.spec.set:
            raise sweep.file.error(f"grid.{key}", "'set' gives this key to every cell already")
    combos = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]
    cells = sweep.spec.cells or [{}]
    points = []
    for index, cell in enumerate(cells):
        origin = f"cells[{index}]" if sweep.spec.cells else "grid"
        own = {key: value for key, value in cell.items() if key != NAME_KEY}
        cell_label = str(cell[NAME_KEY]) if NAME_KEY in cell else _label(own)
        shared = sorted(set(own) & set(sweep.spec.set))
        if shared:
            raise sweep.file.error(f"{origin}.{shared[0]}", "'set' gives this key to every cell already")
        for combo in combos:
            clash = sorted(set(own) & set(combo))
            if clash:
                raise sweep.file.error(f"{origin}.{clash[0]}", "the grid varies this key too")
            label = ".".join(part for part in (cell_label, _label(combo)) if part)
            points.append((origin, label, {**sweep.spec.set, **own, **combo}))
    return points


def _label(sets: dict[str, Any]) -> str:
    """A name from the values: ``per_class-25.unlabelled_size-5000`` (each key's last part, then its value)."""
    return ".".join(f"{key.rpartition('.')[2]}-{_word(value)}" for key, value in sets.items())


def _word(value: Any) -> str:
    text = value if isinstance(value, str) else yaml.safe_dump(value, default_flow_style=True).strip()
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", text.removesuffix("\n...")).strip("-") or "x"


def _resolve(
    sweep: Sweep, base: dict[str, Any], origin: str, model: str, seed: int, sets: dict[str, Any], check: bool
) -> dict[str, Any]:
    """The cell's config as ``harness run`` resolves it; an error names the sweep file's key that caused it."""
    for key, value in sets.items():
        where = _where(sweep, origin, key)
        if key == "seed" or key.startswith("seed."):
            raise sweep.file.error(where, "list the seeds under 'seeds'")
        try:
            resolve_config(base, sweep.tier, model, seed, None, sets={key: value})
        except HarnessError as exc:
            raise sweep.file.error(where, str(exc)) from None
    try:
        resolved = resolve_config(base, sweep.tier, model, seed, None, sets=sets)  # init_from checked too
        if check:
            check_arguments(sweep.config, resolved)
    except HarnessError as exc:
        raise sweep.file.error(_blame(sweep, origin, sets, str(exc)), f"model {model}, seed {seed}: {exc}") from None
    return resolved


def _blame(sweep: Sweep, origin: str, sets: dict[str, Any], message: str) -> str:
    """The key of the file an error about a resolved cell is most likely about: the set key whose last part the
    message quotes, else the cell's own key."""
    for key in sets:
        if f"'{key.rpartition('.')[2]}'" in message:
            return _where(sweep, origin, key)
    return origin


def _where(sweep: Sweep, origin: str, key: str) -> str:
    """The file's key a cell's value came from: its grid, its cell's own entry or the shared ``set``."""
    if key in sweep.spec.grid:
        return f"grid.{key}"
    own = sweep.spec.cells[int(origin.removeprefix("cells[").removesuffix("]"))] if origin != "grid" else {}
    return f"{origin}.{key}" if key in own else f"set.{key}"


def _check_unique(sweep: Sweep, cells: list[Cell]) -> None:
    names: dict[str, Cell] = {}
    configs: dict[str, Cell] = {}
    for cell in cells:
        if not NAME_PATTERN.fullmatch(cell.name):
            raise sweep.file.error(cell.origin, f"cell name {cell.name!r}: letters, digits, '.', '_', '+' and '-'")
        if cell.name in names:
            raise sweep.file.error(cell.origin, f"two cells are named {cell.name!r}: give them a 'name'")
        names[cell.name] = cell
        key = yaml.safe_dump(without_location(cell.resolved), sort_keys=True)  # weight files not read
        if key in configs:
            raise sweep.file.error(
                cell.origin,
                f"cells {configs[key].name!r} and {cell.name!r} resolve to the same config: one run under two names",
            )
        configs[key] = cell


def display_path(path: Path) -> str:
    """``path`` relative to the current folder when it lies inside it."""
    resolved = path.resolve()
    return str(resolved.relative_to(Path.cwd())) if resolved.is_relative_to(Path.cwd()) else str(resolved)


def select(cells: list[Cell], wanted: list[str]) -> list[Cell]:
    """The cells named (or indexed: ``--cell 3``, a cluster array's task id) by ``wanted``; all when it is empty."""
    if not wanted:
        return cells
    by_name = {cell.name: cell for cell in cells}
    chosen = []
    for item in wanted:
        if item in by_name:
            chosen.append(by_name[item])
        elif item.isdigit() and int(item) < len(cells):
            chosen.append(cells[int(item)])
        else:
            raise HarnessError(
                f"--cell {item}: no such cell (a name of `--list`, or an index from 0 to {len(cells) - 1})"
            )
    return chosen


def run_ids(repro: Reproduction, cell: Cell) -> list[str] | None:
    """The cell's run ids (one per ``evaluate`` entry), or ``None`` when they wait on something not here yet: an
    ``init_from`` parent that has not run, or a weights file the run is identified by."""
    weights = [cell.resolved["system"]["init_args"].get(name) for name in WEIGHT_ARGS]
    if "init_from" in cell.resolved or any(path and not Path(path).is_file() for path in weights):
        return None
    return [evaluation.run_id for evaluation in plan(repro, cell.resolved)]


def listing(repro: Reproduction, cells: list[Cell]) -> list[dict[str, Any]]:
    """What ``harness sweep --list`` shows of each cell (``run_ids`` null: see :func:`run_ids`)."""
    return [
        {"index": cell.index, "name": cell.name, "tier": cell.tier, "config": display_path(cell.config),
         "model": cell.model, "seed": cell.seed, "sets": cell.sets, "run_ids": run_ids(repro, cell)}
        for cell in cells
    ]  # fmt: skip


def run_cell(sweep: Sweep, cell: Cell, data_root: str | None = None) -> list[Path]:
    """Run one cell through :func:`harness.runner.run`, as ``harness run ... --set`` would; its record paths."""
    return run(sweep.repro, cell.tier, cell.model, cell.seed, data_root, cell.config, sets=cell.sets)


def dvc_stage(sweep: Sweep, cells: list[Cell], harness: str = ".venv/bin/harness") -> dict[str, Any]:
    """A ``dvc.yaml`` stage that runs the sweep's cells, one ``foreach`` item each (paste it under ``stages:``); its
    deps are the sweep file and the tier config with their ``_base_`` files. Run records are no DVC outputs
    (docs/pipelines.md): a cell whose records exist is skipped by the run itself."""
    files = [*sweep.file.files, *configfile.read(sweep.config).files]
    deps = list(dict.fromkeys(display_path(path) for path in files))
    command = f"{harness} sweep {sweep.repro.id} {sweep.ref} --cell ${{item}}"
    return {f"{sweep.repro.id}-{sweep.name}": {"foreach": [cell.name for cell in cells],
                                                "do": {"cmd": command, "deps": deps}}}  # fmt: skip
