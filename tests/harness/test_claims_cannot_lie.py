"""Claims that cannot lie (issue 20): non-finite or absurd numbers, duplicate YAML keys, names that match nothing
registered, and undecodable files are rejected with file, line and field; one broken plugin's claims file is
reported and left out while every other paper's claims still list, ingest and run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.claims import Vocabulary, load_claims, registered_claims
from harness.config import CONFIG_KEYS
from harness.errors import HarnessError
from tests.conftest import TOY_ENTRY_POINTS, harness_cli, write_dist_info

CLAIMS = """\
defaults:
  paper: demo
  arxiv: 1905.11946v5
  dataset: imagenet-1k
  split: val
claims:
  - id: b0-top1
    source: Table 2
    kind: {kind}
    model: efficientnet-b0
    metric: top1
    value: {value}
    unit: "{unit}"
    higher_is_better: true
    tolerance: {tolerance}
"""
VOCABULARY = Vocabulary(
    models={"efficientnet-b0", "efficientnet-b1"},
    datasets={"imagenet-1k"},
    metrics={"top1", "params_m"},
    config_keys=CONFIG_KEYS,
)


def write(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "claims.yaml"
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    return path


def claims(tmp_path: Path, kind: str = "scalar", value: str = "77.1", unit: str = "%", tolerance: str = "0.3") -> Path:
    return write(tmp_path, CLAIMS.format(kind=kind, value=value, unit=unit, tolerance=tolerance))


def error_of(path: Path, vocabulary: Vocabulary | None = None) -> str:
    with pytest.raises(HarnessError) as err:
        load_claims(path, paper="demo", vocabulary=vocabulary)
    return str(err.value)


@pytest.mark.parametrize(
    ("field", "given", "message"),
    [
        (
            "tolerance",
            ".inf",
            r"claims.yaml:15: claim 'b0-top1' \(entry 0\): field 'tolerance': a finite number, not inf",
        ),
        ("value", ".nan", r"claims.yaml:12: claim 'b0-top1' \(entry 0\): field 'value': a finite number, not nan"),
        ("value", "-.inf", r"claims.yaml:12: .* field 'value': a finite number, not -inf"),
        ("value", "true", r"claims.yaml:12: .* field 'value': a number, not true or false"),
        ("tolerance", "yes", r"claims.yaml:15: .* field 'tolerance': a number, not true or false"),
        ("value", '"77.1"', r"claims.yaml:12: .* field 'value': a number, not text \('77.1'\)"),
        (
            "value",
            "950",
            r"claims.yaml:12: .* field 'value': 950.0 % is not a percentage of a scalar claim \(0 to 100\)",
        ),
        ("tolerance", "150", r"claims.yaml:15: .* field 'tolerance': a tolerance of 150.0 % is more than the whole"),
    ],
)
def test_non_finite_or_absurd_numbers_are_rejected(tmp_path: Path, field: str, given: str, message: str) -> None:
    path = claims(tmp_path, **{field: given})
    with pytest.raises(HarnessError, match=message):
        load_claims(path, paper="demo")


def test_a_delta_may_be_negative_but_not_beyond_the_whole(tmp_path: Path) -> None:
    text = CLAIMS.format(kind="delta", value="-2.5", unit="%", tolerance="0.3") + "    baseline: efficientnet-b1\n"
    assert load_claims(write(tmp_path, text), paper="demo")[0].value == -2.5
    text = text.replace("value: -2.5", "value: -250")
    assert "field 'value': -250.0 % is not a percentage change (-100 to 100)" in error_of(write(tmp_path, text))


def test_a_trend_rule_bound_must_be_finite(tmp_path: Path) -> None:
    text = """\
claims:
  - id: t
    paper: demo
    arxiv: 1905.11946v5
    source: Figure 1
    kind: trend
    model: efficientnet-b0
    dataset: imagenet-1k
    split: val
    metric: top1
    unit: "%"
    higher_is_better: true
    statement: it grows
    rule: {type: loglog-slope, x: config.seed, y: metrics.top1, min: -.inf, max: 1}
"""
    assert "claims.yaml:14: claim 't' (entry 0): field 'rule.min': a finite number, not -inf" in error_of(
        write(tmp_path, text)
    )


def test_duplicate_yaml_keys_name_both_lines(tmp_path: Path) -> None:
    text = CLAIMS.format(kind="scalar", value="77.1", unit="%", tolerance="0.3") + "    value: 12.0\n"
    assert error_of(write(tmp_path, text)) == (
        f"{tmp_path / 'claims.yaml'}:16: invalid YAML: duplicate key 'value' (first on line 12)"
    )
    twice = "defaults: {paper: demo}\ndefaults: {paper: other}\nclaims: []\n"
    assert "claims.yaml:2: invalid YAML: duplicate key 'defaults' (first on line 1)" in error_of(write(tmp_path, twice))


def test_a_file_that_is_not_utf8_is_one_error_with_its_line(tmp_path: Path) -> None:
    data = CLAIMS.format(kind="scalar", value="77.1", unit="%", tolerance="0.3").encode()
    data = data.replace(b"Table 2", b"Tabl\xe9 2")
    assert (
        error_of(write(tmp_path, data)) == f"{tmp_path / 'claims.yaml'}:8: not UTF-8 text (invalid continuation byte)"
    )


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "metric: top1",
            "metric: top-1",
            r"claims.yaml:11: .* field 'metric': unknown metric 'top-1' \(did you mean 'top1'\?\)",
        ),
        (
            "model: efficientnet-b0",
            "model: efficientnet-b9",
            r"claims.yaml:10: .* field 'model': unknown model 'efficientnet-b9'",
        ),
        (
            "model: efficientnet-b0",
            "model: resnet-*",
            r"claims.yaml:10: .* field 'model': the pattern 'resnet-\*' matches no model",
        ),
        (
            "dataset: imagenet-1k",
            "dataset: imagenet",
            r"claims.yaml:4: .* field 'dataset': unknown dataset 'imagenet' \(did you mean 'imagenet-1k'\?\)",
        ),
    ],
)
def test_names_that_match_nothing_registered(tmp_path: Path, old: str, new: str, message: str) -> None:
    path = write(tmp_path, CLAIMS.format(kind="scalar", value="77.1", unit="%", tolerance="0.3").replace(old, new))
    with pytest.raises(HarnessError, match=message):
        load_claims(path, paper="demo", vocabulary=VOCABULARY)
    assert load_claims(claims(tmp_path), paper="demo", vocabulary=VOCABULARY)  # the same file, unchanged, loads


def test_a_baseline_and_a_rule_path_must_name_something(tmp_path: Path) -> None:
    delta = CLAIMS.format(kind="delta", value="1.0", unit="%", tolerance="0.3") + "    baseline: efficientnet-b7\n"
    message = error_of(write(tmp_path, delta), VOCABULARY)
    assert "claims.yaml:16: claim 'b0-top1' (entry 0): field 'baseline': unknown model 'efficientnet-b7'" in message
    trend = """\
claims:
  - {id: t, paper: demo, arxiv: 1905.11946v5, source: Fig 1, kind: trend, model: efficientnet-b0, dataset: imagenet-1k,
     split: val, metric: top1, unit: "%", higher_is_better: true, statement: it grows,
     rule: {type: rank-correlation, x: config.sytem.init_args.width, y: metrics.top1, sign: 1}}
"""
    message = error_of(write(tmp_path, trend), VOCABULARY)
    assert (
        "field 'rule.x': 'config.sytem.init_args.width' names no key of a run's config (did you mean 'system'?)"
        in message
    )
    message = error_of(write(tmp_path, trend.replace("config.sytem.init_args.width", "metrics.top5")), VOCABULARY)
    assert "field 'rule.x': unknown metric 'top5'" in message


def test_every_registered_claim_still_loads(capsys: pytest.CaptureFixture[str]) -> None:
    """The new rules against every real claims file (their numbers are not touched to make them pass)."""
    import yaml

    from harness import registry

    files = [r.claims_path for r in registry.reproductions().values() if r.claims_path.exists()]
    entries = sum(len(yaml.safe_load(path.read_text())["claims"]) for path in files)
    assert len(registered_claims()) == entries
    assert capsys.readouterr().err == ""


# --- one broken plugin ----------------------------------------------------------------------------------------------

BROKEN_INIT = """from harness.registry import Reproduction

REPRODUCTION = Reproduction(id="broken-paper", title="A paper whose claims file is broken", arxiv="2001.00002v1",
                            package="broken_paper")
"""


@pytest.fixture
def two_plugins(tmp_path: Path) -> tuple[Path, Path]:
    """The toy plugin and a second one whose claims.yaml has a duplicate key; returns (site, work folder)."""
    site = tmp_path / "site"
    write_dist_info(site, "toy-plugin", TOY_ENTRY_POINTS)
    write_dist_info(site, "broken-plugin", {"harness.reproductions": {"broken-paper": "broken_paper:REPRODUCTION"}})
    (site / "broken_paper").mkdir(parents=True)  # the site folder is on the path: the package is importable
    (site / "broken_paper" / "__init__.py").write_text(BROKEN_INIT)
    (site / "broken_paper" / "claims.yaml").write_text("claims: []\nclaims: []\n")
    (tmp_path / "work").mkdir()
    return site, tmp_path / "work"


def test_one_broken_claims_file_does_not_stop_list_ingest_or_run(two_plugins: tuple[Path, Path]) -> None:
    site, work = two_plugins
    broken = "broken_paper/claims.yaml:2: invalid YAML: duplicate key 'claims' (first on line 1)"
    done = harness_cli("list", "--json", cwd=work, site=site)
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row["claims"] for row in json.loads(done.stdout)}
    assert rows["toy-paper"] == 5 and rows["broken-paper"] is None
    assert broken in done.stderr and "its claims are left out" in done.stderr
    done = harness_cli("ingest", cwd=work, site=site)
    assert done.returncode == 0, done.stderr
    assert broken in done.stderr and "ingested: the database holds 0 run(s)" in done.stderr
    done = harness_cli("claims", "--paper", "broken-paper", cwd=work, site=site)  # asked for by name: its error
    assert done.returncode == 2 and broken in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_one_broken_claims_file_does_not_stop_a_run_of_another_paper(two_plugins: tuple[Path, Path]) -> None:
    site, work = two_plugins
    done = harness_cli("run", "toy-paper", "--tier", "arch", "--model", "toy-mlp", cwd=work, site=site)  # then ingests
    assert done.returncode == 0, done.stderr
    assert "broken_paper/claims.yaml:2" in done.stderr and "ingested: the database holds 1 run(s)" in done.stderr
