"""Data preparation: a tier's ``prepare`` function writes its data, then the data module is built and checks it.

A config's ``prepare`` (``{function: "module:function", args: {...}}``) is called with the ``root`` to prepare into
(``data.init_args.data_root``); preparation writes into a ``.<root>.partial-<pid>-*`` folder beside it and renames it
into place, so a killed preparation leaves only a partial folder, removed by the next run. A data module's
``verify()`` names missing files before anything trains (docs/plugins.md).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from harness.contract import Verifiable, capability
from harness.errors import HarnessError
from harness.registry import load_object


def instantiate(spec: dict[str, Any], **extra: Any) -> Any:
    """The object a config's ``{class_path, init_args}`` names, built with ``extra`` arguments besides."""
    return load_object(spec["class_path"])(**{**(spec.get("init_args") or {}), **extra})


def make_datamodule(resolved: dict[str, Any]) -> Any:
    """Make the tier's data (``prepare``) and the data module; ``verify()`` names missing files before training."""
    data_root = resolved["data"]["init_args"].get("data_root")
    if "prepare" in resolved:
        if data_root is None:
            raise HarnessError("config has 'prepare' but no data.init_args.data_root to prepare into")
        remove_stale_partials(Path(data_root))
        load_object(resolved["prepare"]["function"])(root=Path(data_root), **(resolved["prepare"].get("args") or {}))
    datamodule = instantiate(resolved["data"])
    verifiable = capability(datamodule, Verifiable)
    if verifiable is not None:
        _verify_data(verifiable, "prepare" in resolved)
    return datamodule


def remove_stale_partials(root: Path) -> None:
    """Remove the ``.<root name>.partial-<pid>-*`` folders that data preparation killed mid-way left beside ``root``:
    those whose process is gone (or, named without a pid, were made by an older harness). A live writer's stays."""
    for folder in root.parent.glob(f".{root.name}.partial-*") if root.parent.is_dir() else []:
        pid = folder.name.removeprefix(f".{root.name}.partial-").split("-")[0]
        if not (pid.isdigit() and _alive(int(pid))):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _verify_data(datamodule: Verifiable, prepared: bool) -> None:
    """A tier that reads the user's copy of a dataset (nothing ``prepare``s it) says how to point the run at it."""
    try:
        datamodule.verify()
    except HarnessError as exc:
        if prepared:
            raise
        raise HarnessError(f"{exc}; pass --data-root DIR, the folder that holds this dataset") from exc
