"""Dotted key paths into nested mappings (``data.init_args.image_size``), written once for the configs, overrides,
claims' conditions, records and stores that name values by path."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

ABSENT: Any = object()  # what :func:`get` returns for a path the tree does not have, unless given a default


def parts(dotted: str) -> list[str]:
    """The keys of ``dotted``, outermost first; an empty part (``a..b``, ``.a``) is an error."""
    keys = dotted.split(".")
    if not all(keys):
        raise ValueError(f"{dotted!r} is not a dotted key path (an empty part)")
    return keys


def get(tree: Any, dotted: str, default: Any = ABSENT) -> Any:
    """The value at ``dotted`` in nested mappings, or ``default`` where a key is missing or a parent is no mapping."""
    node = tree
    for key in parts(dotted):
        if not isinstance(node, Mapping) or key not in node:
            return default
        node = node[key]
    return node


def assign(tree: dict[str, Any], dotted: str, value: Any, create: bool = False) -> None:
    """Set ``dotted`` to ``value`` in place. Every parent must be a mapping already, unless ``create`` (then missing
    parents become empty mappings); a parent that is something else is a KeyError naming it."""
    *parents, last = parts(dotted)
    node = tree
    for depth, key in enumerate(parents):
        if key not in node and create:
            node[key] = {}
        if not isinstance(node.get(key), dict):
            raise KeyError(f"the config has no mapping {'.'.join(parents[: depth + 1])!r} on the path {dotted!r}")
        node = node[key]
    node[last] = value


def remove(tree: dict[str, Any], dotted: str) -> Any:
    """Remove ``dotted`` from the tree and return its value (:data:`ABSENT` when it was not there)."""
    *parents, last = parts(dotted)
    node = get(tree, ".".join(parents)) if parents else tree
    return node.pop(last, ABSENT) if isinstance(node, dict) else ABSENT


def leaves(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every non-mapping value of the tree by its dotted path (an empty mapping is a leaf)."""
    found: dict[str, Any] = {}
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            found.update(leaves(value, f"{path}."))
        else:
            found[path] = value
    return found
