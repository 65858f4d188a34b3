"""Config files as the harness reads them: YAML mappings that may name bases (detectron2 / mmengine ``_base_``).

A file's ``_base_`` is one file name or a list of them, relative to the file's folder. The bases are read first (each
with its own bases), merged left to right, and the file's own keys merged on top:

- mappings merge key by key, at every depth;
- anything else (a list, a number, a string, null) replaces what the bases gave;
- a mapping with ``_delete_: true`` replaces the inherited mapping instead of merging into it.

So a variant states only what differs from its base. Files that are only bases (never run themselves) live in
``configs/_base/``, which no tier listing looks into. Every value keeps where it was written (file and line), so an
error about a key names the line that set it, whichever file of the chain that was.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError

BASE_KEY = "_base_"
DELETE_KEY = "_delete_"
BASES_DIR = "_base"  # configs/_base/: files that are only bases
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml where installed: the same documents, 10x faster


@dataclass
class ConfigFile:
    """A config file merged with its bases: the mapping, and where each dotted key was set (file, line)."""

    path: Path
    tree: dict[str, Any]
    origins: dict[str, tuple[Path, int]] = field(default_factory=dict)
    files: tuple[Path, ...] = ()  # this file and every base it read, bases first

    def where(self, dotted: str) -> str:
        """``file:line`` of the key (or of its nearest parent that has an origin), else the file's own path."""
        key = dotted
        while key:
            if key in self.origins:
                path, line = self.origins[key]
                return f"{path}:{line}"
            key = key.rpartition(".")[0]
        return str(self.path)

    def error(self, dotted: str, message: str) -> HarnessError:
        """An error naming the file and line that set ``dotted``, and the key."""
        return HarnessError(f"{self.where(dotted)}: key {dotted!r}: {message}")


def read(path: Path, what: str = "a config") -> ConfigFile:
    """Read ``path`` with its bases merged; errors name the file (and line) that is wrong."""
    return _read(Path(path), what, ())


def _read(path: Path, what: str, chain: tuple[Path, ...]) -> ConfigFile:
    resolved = path.resolve()
    if resolved in chain:
        loop = " -> ".join(str(p) for p in (*chain, resolved))
        raise HarnessError(f"{path}: its {BASE_KEY} chain comes back to itself: {loop}")
    tree, origins = _load(path, what)
    bases = tree.pop(BASE_KEY, None)
    origins.pop(BASE_KEY, None)
    if bases is None:
        return ConfigFile(path, tree, origins, (path,))
    names = [bases] if isinstance(bases, str) else bases
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise HarnessError(f"{path}: key {BASE_KEY!r} is a file name or a non-empty list of file names, not {bases!r}")
    merged: dict[str, Any] = {}
    merged_origins: dict[str, tuple[Path, int]] = {}
    files: list[Path] = []
    for name in names:
        base_path = path.parent / name
        if not base_path.is_file():
            raise HarnessError(f"{path}: key {BASE_KEY!r}: {base_path} does not exist")
        base = _read(base_path, what, (*chain, resolved))
        merged = merge(merged, base.tree, merged_origins, base.origins)
        files += [f for f in base.files if f not in files]
    merged = merge(merged, tree, merged_origins, origins)
    return ConfigFile(path, merged, merged_origins, (*files, path))


def merge(
    base: dict[str, Any],
    top: dict[str, Any],
    origins: dict[str, tuple[Path, int]] | None = None,
    top_origins: dict[str, tuple[Path, int]] | None = None,
    prefix: str = "",
) -> dict[str, Any]:
    """``top`` merged onto ``base`` (new mapping; neither is changed); ``origins`` is updated in place with
    ``top_origins`` for what ``top`` set."""
    origins = origins if origins is not None else {}
    top_origins = top_origins or {}
    result = copy.deepcopy(base)
    for key, value in top.items():
        path = f"{prefix}{key}"
        replace = isinstance(value, dict) and value.get(DELETE_KEY) is True
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if k != DELETE_KEY}
        if isinstance(value, dict) and isinstance(result.get(key), dict) and not replace:
            result[key] = merge(result[key], value, origins, top_origins, f"{path}.")
        else:
            for stale in [k for k in origins if k == path or k.startswith(f"{path}.")]:
                del origins[stale]
            result[key] = _strip_delete(copy.deepcopy(value))
        origins.update({k: v for k, v in top_origins.items() if k == path or k.startswith(f"{path}.")})
    return result


def _strip_delete(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_delete(v) for k, v in value.items() if k != DELETE_KEY}
    return value


def _load(path: Path, what: str) -> tuple[dict[str, Any], dict[str, tuple[Path, int]]]:
    """The file's mapping and the line of each key in it."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise HarnessError(f"{path}: cannot read {what}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise HarnessError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    try:
        node, tree = _parse(text, _LOADER)
    except yaml.YAMLError:
        try:  # again with the pure-Python parser, whose messages (with the line) the errors quote
            node, tree = _parse(text, yaml.SafeLoader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
            problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
            raise HarnessError(f"{where}: invalid YAML: {problem}") from None
    if not isinstance(tree, dict):
        raise HarnessError(f"{path}: {what} is a mapping")
    origins: dict[str, tuple[Path, int]] = {}
    _lines(node, path, "", origins)
    return tree, origins


def _parse(text: str, loader_class: type) -> tuple[yaml.Node | None, Any]:
    """The document's node (for the keys' lines) and its value."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        return node, loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()


def _lines(node: yaml.Node, path: Path, prefix: str, origins: dict[str, tuple[Path, int]]) -> None:
    """Record the line of every mapping key under ``node`` (list items as ``key[i]``)."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = f"{prefix}{key_node.value}"
            origins[key] = (path, key_node.start_mark.line + 1)
            _lines(value_node, path, f"{key}.", origins)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            key = f"{prefix.removesuffix('.')}[{index}]"
            origins[key] = (path, item.start_mark.line + 1)
            _lines(item, path, f"{key}.", origins)
