"""Config files with bases (harness.configfile) and dotted paths (harness.dotted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import dotted
from harness.configfile import merge, read
from harness.errors import HarnessError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_file_without_bases_reads_as_yaml(tmp_path):
    config = read(write(tmp_path / "a.yaml", "model: m\nsystem:\n  class_path: x:Y\n"))
    assert config.tree == {"model": "m", "system": {"class_path": "x:Y"}}
    assert config.where("system.class_path") == f"{tmp_path / 'a.yaml'}:3"


def test_bases_merge_mappings_and_replace_the_rest(tmp_path):
    write(tmp_path / "_base" / "one.yaml", "a: {b: 1, c: [1, 2], d: {e: 1}}\nkeep: 1\n")
    write(tmp_path / "_base" / "two.yaml", "a: {b: 2}\nother: x\n")
    child = write(tmp_path / "child.yaml", "_base_: [_base/one.yaml, _base/two.yaml]\na:\n  c: [3]\n  d: {f: 2}\n")
    config = read(child)
    assert config.tree == {"a": {"b": 2, "c": [3], "d": {"e": 1, "f": 2}}, "keep": 1, "other": "x"}
    assert config.where("a.b") == f"{tmp_path / '_base' / 'two.yaml'}:1"
    assert config.where("a.c") == f"{child}:3"
    assert config.where("keep") == f"{tmp_path / '_base' / 'one.yaml'}:2"
    assert [p.name for p in config.files] == ["one.yaml", "two.yaml", "child.yaml"]


def test_delete_replaces_the_inherited_mapping(tmp_path):
    write(tmp_path / "base.yaml", "data: {class_path: x:A, init_args: {n: 1, m: 2}}\n")
    child = write(tmp_path / "c.yaml", "_base_: base.yaml\ndata:\n  init_args: {_delete_: true, k: 3}\n")
    assert read(child).tree == {"data": {"class_path": "x:A", "init_args": {"k": 3}}}


def test_a_base_chain_is_followed_and_a_loop_is_an_error(tmp_path):
    write(tmp_path / "a.yaml", "x: 1\n")
    write(tmp_path / "b.yaml", "_base_: a.yaml\ny: 2\n")
    assert read(write(tmp_path / "c.yaml", "_base_: b.yaml\nz: 3\n")).tree == {"x": 1, "y": 2, "z": 3}
    write(tmp_path / "p.yaml", "_base_: q.yaml\n")
    write(tmp_path / "q.yaml", "_base_: p.yaml\n")
    with pytest.raises(HarnessError, match="comes back to itself"):
        read(tmp_path / "p.yaml")


def test_bad_bases_name_the_file(tmp_path):
    with pytest.raises(HarnessError, match=r"c\.yaml: key '_base_': .*missing\.yaml does not exist"):
        read(write(tmp_path / "c.yaml", "_base_: missing.yaml\n"))
    with pytest.raises(HarnessError, match="a file name or a non-empty list"):
        read(write(tmp_path / "d.yaml", "_base_: {a: 1}\n"))
    with pytest.raises(HarnessError, match=r"e\.yaml:2: invalid YAML"):
        read(write(tmp_path / "e.yaml", "a: 1\nb: c: d\n"))
    with pytest.raises(HarnessError, match="is a mapping"):
        read(write(tmp_path / "f.yaml", "- 1\n"))


def test_merge_leaves_its_inputs_alone():
    base, top = {"a": {"b": [1]}}, {"a": {"c": 2}}
    assert merge(base, top) == {"a": {"b": [1], "c": 2}}
    assert base == {"a": {"b": [1]}} and top == {"a": {"c": 2}}


def test_dotted_paths():
    tree = {"a": {"b": {"c": 1}}, "x": 2}
    assert dotted.get(tree, "a.b.c") == 1
    assert dotted.get(tree, "a.q", None) is None and dotted.get(tree, "x.y") is dotted.ABSENT
    dotted.assign(tree, "a.b.d", 3)
    assert tree["a"]["b"] == {"c": 1, "d": 3}
    with pytest.raises(KeyError, match="no mapping 'a.z'"):
        dotted.assign(tree, "a.z.w", 1)
    dotted.assign(tree, "a.z.w", 1, create=True)
    assert dotted.leaves(tree) == {"a.b.c": 1, "a.b.d": 3, "a.z.w": 1, "x": 2}
    assert dotted.remove(tree, "a.z") == {"w": 1} and dotted.remove(tree, "nope") is dotted.ABSENT
    with pytest.raises(ValueError, match="empty part"):
        dotted.get(tree, "a..b")
