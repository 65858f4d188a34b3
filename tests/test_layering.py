"""The layering contract: a reproduction imports its own package, the harness, the tasks and the shared library
(``nets``), never another reproduction; ``nets``, ``tasks``, ``harness`` and ``leaderboard`` import no reproduction;
``nets`` imports no task (training steps live in ``nets``, the tasks' scoring in ``tasks``).

Checked over the import graph as written: every ``import`` / ``from ... import`` at any depth (inside functions too) of
every ``.py`` file, every string in a reproduction's or the library's code that is exactly a module path
(``"reproductions.x.model:build"``, as registry entries name builders), every module path in
``reproductions/*/configs/*.yaml`` and their bases ``configs/_base/*.yaml`` (``class_path``, ``function``,
``data_class`` ...), and the module paths the registered objects carry (``ModelSpec.build``, ``Reproduction.runner`` /
``figures``).
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import registry

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("reproductions", "nets", "tasks", "harness", "leaderboard")
FIRST_PARTY = {*CHECKED, "tests", "scripts", "benchmarks"}
LIBRARIES = {"nets", "harness", "tasks"}  # what a reproduction may import besides its own package
STRING_CHECKED = ("reproductions", "nets", "tasks")  # leaderboard's registry look-up is not an import
MODULE_PATH = re.compile(r"(?:reproductions|nets|tasks|harness|leaderboard)(?:\.\w+)+(?::[\w.]+)?")


@dataclass(frozen=True)
class Violation:
    file: str
    line: int
    target: str
    rule: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file  # registry entries have no line
        return f"{where}: {self.target} ({self.rule})"


def package_of(path: Path, root: Path) -> list[str]:
    """Dotted package path of a module file, e.g. ``reproductions/x/model.py`` -> ``["reproductions", "x"]``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1]  # a package's __init__ and a module both sit in the package of their folder


def imported_modules(tree: ast.AST, package: list[str]) -> list[tuple[int, str]]:
    """``(line, module)`` of every import in ``tree``, relative imports resolved against ``package``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            found.append((node.lineno, module))
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names if not node.module]
    return found


def module_strings(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, module)`` of every string constant that is exactly a first-party module path (``pkg.mod[:attr]``)."""
    return [
        (node.lineno, node.value.split(":")[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_PATH.fullmatch(node.value)
    ]


def forbidden(importer: list[str], module: str) -> str | None:
    """Why ``module`` may not be imported from the package ``importer``, or None when it may."""
    parts = module.split(".")
    if parts[0] not in FIRST_PARTY or importer[0] not in CHECKED:
        return None
    if importer[0] == "reproductions":
        own = importer[:2]
        if parts[0] == "reproductions" and parts[:2] != own:
            return f"{'.'.join(own)} imports another reproduction"
        if parts[0] not in LIBRARIES | {"reproductions"}:
            return f"a reproduction imports only its own package, {', '.join(sorted(LIBRARIES))}"
        return None
    if parts[0] == "reproductions":
        return f"{importer[0]} imports a reproduction"
    if importer[0] in LIBRARIES and parts[0] in FIRST_PARTY - LIBRARIES:
        return f"{importer[0]} imports {parts[0]}"
    if importer[0] == "nets" and parts[0] == "tasks":
        return "nets imports tasks"  # the tasks build on the shared library, not the other way
    return None


def python_violations(root: Path) -> list[Violation]:
    violations = []
    for top in CHECKED:
        for path in sorted((root / top).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            package = package_of(path, root)
            found = imported_modules(tree, package)
            if top in STRING_CHECKED:
                found += module_strings(tree)
            for line, module in found:
                rule = forbidden(package, module)
                if rule:
                    violations.append(Violation(str(path.relative_to(root)), line, module, rule))
    return violations


def yaml_strings(node: yaml.Node) -> list[tuple[int, str]]:
    """``(line, value)`` of every scalar string of a composed YAML document."""
    if isinstance(node, yaml.ScalarNode):
        return [(node.start_mark.line + 1, node.value)] if isinstance(node.value, str) else []
    children = node.value if isinstance(node, yaml.SequenceNode) else [v for kv in node.value for v in kv]
    return [found for child in children for found in yaml_strings(child)]


def config_violations(root: Path) -> list[Violation]:
    violations = []
    files = [*root.glob("reproductions/*/configs/*.yaml"), *root.glob("reproductions/*/configs/_base/*.yaml")]
    for path in sorted(files):  # each file as written (bases too), so a violation names the file and line that has it
        document = yaml.compose(path.read_text(encoding="utf-8"))
        package = ["reproductions", path.relative_to(root).parts[1]]
        for line, value in yaml_strings(document) if document is not None else []:
            if not MODULE_PATH.fullmatch(value):
                continue
            rule = forbidden(package, value.split(":")[0])
            if rule:
                violations.append(Violation(str(path.relative_to(root)), line, value, rule))
    return violations


def registry_violations(reproductions: Iterable[Any]) -> list[Violation]:
    """Module paths registered reproductions carry: builders, runner and figures."""
    violations = []
    for repro in reproductions:
        package = repro.package.split(".")
        paths = [(f"model {spec.id} build", spec.build) for spec in repro.models]
        paths += [(name, getattr(repro, name, None)) for name in ("runner", "figures")]
        for what, value in paths:
            rule = forbidden(package, value.split(":")[0]) if isinstance(value, str) else None
            if rule:
                violations.append(Violation(f"registry {repro.id} {what}", 0, value, rule))
    return violations


def test_no_reproduction_imports_another_and_the_libraries_import_none():
    violations = python_violations(ROOT) + config_violations(ROOT)
    assert not violations, "layering broken:\n" + "\n".join(map(str, violations))


def test_registered_objects_name_only_their_own_package():
    violations = registry_violations(registry.reproductions().values())
    assert not violations, "layering broken:\n" + "\n".join(map(str, violations))


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def bad_tree(tmp_path: Path) -> Path:
    """A tiny tree with each kind of violation, and allowed imports that must not be reported."""
    write(tmp_path / "reproductions/a/model.py", "from nets.resnet import ResNet\nfrom reproductions.a import x\n")
    write(tmp_path / "reproductions/a/system.py", "import os\n\ndef f():\n    from reproductions.b.model import Net\n")
    write(tmp_path / "reproductions/a/helper.py", "from ..b import model\nfrom . import system\nimport leaderboard\n")
    write(
        tmp_path / "reproductions/a/__init__.py", 'BUILD = "reproductions.b.model:build"\nOWN = "reproductions.a.m:f"\n'
    )
    write(tmp_path / "reproductions/a/configs/smoke.yaml", "model:\n  class_path: reproductions.b.system:BSystem\n")
    write(tmp_path / "reproductions/a/configs/_base/data.yaml", "data:\n  class_path: reproductions.b.data:BData\n")
    write(tmp_path / "nets/layers.py", "import torch\nimport reproductions.b.model\n")
    write(tmp_path / "nets/systems/steps.py", "from harness.errors import HarnessError\nfrom tasks.t import metric\n")
    write(tmp_path / "tasks/t/data.py", "from harness.errors import HarnessError\n")
    write(tmp_path / "harness/cli.py", "def main():\n    import reproductions\n")
    write(tmp_path / "leaderboard/app.py", "from reproductions.b import figures\n")
    return tmp_path


def test_the_checker_catches_each_kind_of_violation(bad_tree: Path):
    found = {str(v) for v in python_violations(bad_tree) + config_violations(bad_tree)}
    helper = Path("reproductions/a/helper.py")
    assert found == {
        f"{Path('reproductions/a/system.py')}:4: reproductions.b.model (reproductions.a imports another reproduction)",
        f"{helper}:1: reproductions.b (reproductions.a imports another reproduction)",
        f"{helper}:3: leaderboard (a reproduction imports only its own package, harness, nets, tasks)",
        f"{Path('reproductions/a/__init__.py')}:1: reproductions.b.model (reproductions.a imports another reproduction)",
        f"{Path('reproductions/a/configs/smoke.yaml')}:2: reproductions.b.system:BSystem "
        "(reproductions.a imports another reproduction)",
        f"{Path('reproductions/a/configs/_base/data.yaml')}:2: reproductions.b.data:BData "
        "(reproductions.a imports another reproduction)",
        f"{Path('nets/layers.py')}:2: reproductions.b.model (nets imports a reproduction)",
        f"{Path('nets/systems/steps.py')}:2: tasks.t (nets imports tasks)",
        f"{Path('harness/cli.py')}:2: reproductions (harness imports a reproduction)",
        f"{Path('leaderboard/app.py')}:1: reproductions.b (leaderboard imports a reproduction)",
    }


def test_the_registry_check_catches_another_papers_builder_and_runner():
    repro = registry.reproduction("selfie")
    model = dataclasses.replace(repro.models[0], build="reproductions.efficientnet.model:efficientnet")
    bad = dataclasses.replace(repro, models=(model,), runner="reproductions.sgd_width.sweep:run_sweep")
    assert [str(v) for v in registry_violations([bad])] == [
        f"registry selfie model {model.id} build: reproductions.efficientnet.model:efficientnet "
        "(reproductions.selfie imports another reproduction)",
        "registry selfie runner: reproductions.sgd_width.sweep:run_sweep (reproductions.selfie imports another "
        "reproduction)",
    ]
