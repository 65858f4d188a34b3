"""The typed tier config (harness.config): every kind of mistake is one error naming the file, the line that set the
key and the key, before anything runs; a config written to the old shape reads as it did; protocols are registered."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from harness import config, registry, runner
from harness.claims import Vocabulary, load_claims
from harness.errors import HarnessError
from harness.protocols import BUILTIN, Protocol
from harness.registry import Task

BASE = """\
model: m
seed: 0
protocol: single-crop
system: {class_path: pkg.system:System, init_args: {lr: 0.1}}
data:
  class_path: pkg.data:Data
  init_args: {data_root: data/x, batch_size: 8}
trainer: {max_steps: 10}
evaluate:
  - {dataset: digits, split: val}
"""


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _error(path: Path, tier: str = "smoke") -> str:
    with pytest.raises(HarnessError) as err:
        config.load_config(path, tier)
    assert "\n" not in str(err.value)
    return str(err.value)


def _sections(text: str) -> dict[str, str]:
    """The top-level keys of a config text, each with its lines."""
    found: dict[str, str] = {}
    for line in text.splitlines(keepends=True):
        if not line.startswith(" "):
            key = line.split(":")[0]
        found[key] = found.get(key, "") + line
    return found


@pytest.mark.parametrize(
    ("change", "line", "message"),
    [
        ("sede: 3\n", 11, "key 'sede': unknown key (did you mean 'seed'?); the keys of a tier config are tier, model,"),
        ("fit: maybe\n", 11, "key 'fit': true or false, not 'maybe'"),
        ("trainer: [1]\n", 8, "key 'trainer': a mapping of pytorch_lightning.Trainer arguments, not [1]"),
        ("save_checkpoint: 1\n", 11, "key 'save_checkpoint': true or false, not 1"),
        ("seed: -2\n", 2, "key 'seed': -2 is not a seed (an integer from 0 to 4294967295)"),
        ("seed: true\n", 2, "key 'seed': True is not a seed"),
        ("evaluate:\n  - {dataset: digits}\n", 10, "key 'evaluate[0].split': missing"),
        ("evaluate:\n  - {dataset: digits, split: val}\n  - [val]\n", 11, "key 'evaluate[1]': a mapping, not ['val']"),
        ("evaluate:\n  - {dataset: dígits, split: val}\n", 10, "key 'evaluate[0].dataset': 'dígits' cannot be part"),
        ("evaluate:\n  - {dataset: digits, spilt: val}\n", 10, "key 'evaluate[0].spilt': unknown key (did you mean"),
        ("evaluate: []\n", 9, "key 'evaluate': a non-empty list of {dataset, split} mappings, not []"),
        ("data: {class_path: pkg:Data, init_args: {data_root: [x]}}\n", 5, "key 'data.init_args.data_root': a path"),
        ("system: {class_path: pkg:System, init_arg: {}}\n", 4, "key 'system.init_arg': unknown key (did you mean"),
        ("prepare: {function: pkg:make, arg: {}}\n", 11, "key 'prepare.arg': unknown key (did you mean 'args'?)"),
        ("overrides: {m: {data..image_size: 3}}\n", 11, "key 'overrides.m': 'data..image_size' is not a dotted key"),
        ("init_from: {config: a.yaml, run: r.1}\n", 11, "key 'init_from': name the parent by exactly one of 'run'"),
        ("init_from: {run: x, model: m}\n", 11, "key 'init_from.model': 'tier', 'model' and 'seed' describe a parent"),
        ("init_from:\n  - {config: a.yaml}\n  - {config: b.yaml, tier: medium}\n", 13,
         "key 'init_from[1].tier': 'medium' is not one of smoke, budget, full"),
        ("init_from: {config: a.yaml, prefixes: [a., b.], into: c.}\n", 11,
         "key 'init_from.into': a prefix that replaces the one entry of 'prefixes'"),
        ("protocol: singel-crop\n", 3, "key 'protocol': unknown protocol 'singel-crop' (did you mean 'single-crop'"),
    ],
)  # fmt: skip
def test_each_mistake_names_file_line_and_key(tmp_path: Path, change: str, line: int, message: str) -> None:
    sections = {**_sections(BASE), **_sections(change)}  # a key of BASE changed in place, a new one last
    path = _write(tmp_path, "smoke.yaml", "".join(sections.values()))
    assert _error(path).startswith(f"{path}:{line}: {message}")


def test_a_missing_key_names_the_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "smoke.yaml", BASE.replace("model: m\n", ""))
    assert _error(path) == f"{path}: key 'model': missing"
    path = _write(tmp_path, "smoke.yaml", "model: m\nmodle: n\n")  # the misspelt key comes first, then how many more
    assert _error(path) == (
        f"{path}:2: key 'modle': unknown key (did you mean 'model'?); the keys of a tier config are "
        f"{', '.join(config.TierConfig.model_fields)} (and 3 more problems in this config)"
    )


def test_a_mistake_in_a_base_file_names_the_base_files_line(tmp_path: Path) -> None:
    (tmp_path / "_base").mkdir()
    base = _write(tmp_path / "_base", "image.yaml", BASE.replace("trainer: {max_steps: 10}", "trainer:\n  - 10"))
    child = _write(tmp_path, "smoke.yaml", "_base_: _base/image.yaml\nseed: 1\n")
    assert _error(child).startswith(f"{base}:8: key 'trainer': a mapping of pytorch_lightning.Trainer arguments")
    fixed = _write(tmp_path, "budget.yaml", "_base_: _base/image.yaml\ntrainer: {max_steps: 5}\nseed: 1\n")
    assert config.load_config(fixed, "budget")["trainer"] == {"max_steps": 5}  # the variant replaces the base's list
    wrong = _write(tmp_path, "full.yaml", "_base_: _base/image.yaml\ntier: smoke\ntrainer: {}\n")
    assert _error(wrong, "full") == f"{wrong}:2: key 'tier': 'smoke', but the run asked for tier 'full'"


def test_a_config_of_the_old_shape_reads_as_the_file_gives_it(tmp_path: Path) -> None:
    """The schema only checks: the mapping handed on (and so every run id) is the file's, key for key."""
    path = _write(tmp_path, "smoke.yaml", BASE + "init_from: {config: a.yaml, seed: 0, prefixes: [model.]}\n")
    assert config.load_config(path, "smoke") == yaml.safe_load(path.read_text())
    assert config.CONFIG_KEYS == set(config.TierConfig.model_fields)


def test_overrides_and_sets_are_checked_once_applied(tmp_path: Path) -> None:
    path = _write(tmp_path, "smoke.yaml", BASE + "overrides:\n  m2:\n    fit: sometimes\n")
    loaded = config.load_config(path, "smoke")
    with pytest.raises(HarnessError) as err:
        runner.resolve_config(loaded, "smoke", "m2", None, None, path=path)
    assert str(err.value) == f"{path}:13: key 'overrides.m2.fit': true or false, not 'sometimes'"
    with pytest.raises(HarnessError, match=r"^--set fit=\.\.\.: key 'fit': true or false, not 'maybe'$"):
        runner.resolve_config(loaded, "smoke", None, None, None, sets={"fit": "maybe"})
    with pytest.raises(HarnessError, match=r"^--set evaluate=\.\.\.: key 'evaluate\[0\].split': missing$"):
        runner.resolve_config(loaded, "smoke", None, None, None, sets={"evaluate": [{"dataset": "digits"}]})
    with pytest.raises(HarnessError, match=r"^--set protocol=\.\.\.: key 'protocol': unknown protocol 'x-crop'"):
        runner.resolve_config(loaded, "smoke", None, None, None, sets={"protocol": "x-crop"})
    resolved = runner.resolve_config(loaded, "smoke", None, None, None, sets={"protocol": "center-crop-1.0"})
    assert resolved["protocol"] == "center-crop-1.0"


def test_a_plugins_own_config_keeps_its_keys_and_gets_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, "smoke.yaml", "tier: smoke\nprotocol: single-crop\nstudies: []\nstudy: 1\n")
    allowed = {"tier", "protocol", "studies"}
    with pytest.raises(HarnessError, match=r":4: key 'study': unknown key \(did you mean 'studies'\?\); a sweep"):
        config.read_config(path, "smoke", allowed, what="a sweep config")
    path.write_text("tier: smoke\nprotocol: single-crap\n")
    with pytest.raises(HarnessError, match=r":2: key 'protocol': unknown protocol 'single-crap' \(did you mean"):
        config.read_config(path, "smoke", allowed)
    path.write_text("tier: smoke\nprotocol: single-crop\n")
    assert config.read_config(path, "smoke", allowed) == {"tier": "smoke", "protocol": "single-crop"}


# --- the protocol vocabulary ---------------------------------------------------------------------------------------


def test_every_config_and_claim_protocol_is_registered_with_a_description() -> None:
    known = registry.protocols()
    assert set(BUILTIN) <= set(known.values()) and all(p.description for p in known.values())
    for repro in registry.reproductions().values():
        for path in sorted((repro.root / "configs").glob("*.yaml")):
            protocol = (yaml.safe_load(path.read_text()) or {}).get("protocol")
            assert protocol is None or protocol in known, path


def test_tasks_and_plugins_register_protocols(toy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert registry.protocols()["toy-holdout"].description.startswith("accuracy on the held-out part")
    assert registry.protocols()["hub5-wer-optional-deletable-glm-words"] == registry.task("switchboard").protocol
    toy_paper = registry.reproduction("toy-paper")
    twice = dataclasses.replace(toy_paper, protocols=(Protocol("single-crop", "something else"),))
    monkeypatch.setitem(registry.reproductions(), "toy-paper", twice)
    with pytest.raises(HarnessError, match=r"'single-crop' is registered twice, differently: by harness.protocols"):
        registry.protocols()
    with pytest.raises(HarnessError, match=r"'protocol' is a harness.protocols.Protocol\(id, description\)"):
        Task(id="t", title="T", score="m:f", keys=("k",), protocol="free text")
    with pytest.raises(HarnessError, match=r"protocol ' padded': the id is a non-empty string"):
        Protocol(" padded", "a description")


def test_a_claim_naming_an_unregistered_protocol_is_an_error(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "claims.yaml",
        "claims:\n  - {id: c, paper: p, arxiv: 2001.00001v1, source: Table 1, kind: scalar, model: m, dataset: d,\n"
        "     split: s, metric: top1, value: 1.0, unit: '%', higher_is_better: true, tolerance: 1.0,\n"
        "     protocol: single crop}\n",
    )
    vocabulary = Vocabulary({"m"}, {"d"}, {"top1"}, protocols=registry.protocols())
    with pytest.raises(HarnessError, match=r"claims.yaml:4: claim 'c' \(entry 0\): field 'protocol': unknown proto"):
        load_claims(path, vocabulary=vocabulary)
    path.write_text(path.read_text().replace("single crop", "single-crop"))
    assert load_claims(path, vocabulary=vocabulary)[0].protocol == "single-crop"
