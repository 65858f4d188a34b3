"""Claims files: validation errors name the file, line, entry and field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.claims import claim_row, load_claims, registered_claims
from harness.errors import HarnessError

GOOD = """\
defaults:
  paper: demo
  arxiv: 1905.11946v5
  dataset: imagenet-1k
  split: val
claims:
  - id: b0-top1
    source: Table 2
    kind: scalar
    model: efficientnet-b0
    metric: top1
    value: 77.1
    unit: "%"
    higher_is_better: true
    tolerance: 0.3
{extra}
"""


def write(tmp_path: Path, extra: str = "", text: str | None = None) -> Path:
    path = tmp_path / "claims.yaml"
    path.write_text(text if text is not None else GOOD.format(extra=textwrap.indent(textwrap.dedent(extra), "  ")))
    return path


def error_of(path: Path, paper: str | None = None) -> str:
    with pytest.raises(HarnessError) as err:
        load_claims(path, paper=paper)
    return str(err.value)


def test_good_file_merges_defaults(tmp_path: Path) -> None:
    (claim,) = load_claims(write(tmp_path), paper="demo")
    assert (claim.id, claim.paper, claim.dataset, claim.split, claim.value) == (
        "b0-top1",
        "demo",
        "imagenet-1k",
        "val",
        77.1,
    )


def test_bad_field_names_file_line_entry_and_field(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
    - id: b1-top1
      source: Table 2
      kind: scalar
      model: efficientnet-b1
      metric: top1
      value: seventy-nine
      unit: "%"
      higher_is_better: true
      tolerance: 0.3
    """,
    )
    message = error_of(path)
    assert message.startswith(f"{path}:21: claim 'b1-top1' (entry 1): field 'value'")  # the field's own line


def test_missing_field_is_named(tmp_path: Path) -> None:
    path = write(
        tmp_path, "- {id: x, source: T, kind: arch, model: m, metric: params_m, value: 1, unit: M, tolerance: 0.1}\n"
    )
    assert "claim 'x' (entry 1): field 'higher_is_better': Field required" in error_of(path)


def test_entry_without_id_is_named_by_index(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "- {source: T, kind: arch, model: m, metric: params_m, value: 1, unit: M, higher_is_better: false, tolerance: 0.1}\n",
    )
    assert "claim entry 1: field 'id': Field required" in error_of(path)


def test_duplicate_id_is_an_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "- {id: b0-top1, source: T, kind: scalar, model: m, metric: top1, value: 1, unit: '%', higher_is_better: true, tolerance: 1}\n",
    )
    assert "duplicate claim id 'b0-top1' (first at entry 0)" in error_of(path)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "{id: t, source: F1, kind: trend, model: m, metric: top1, unit: '%', higher_is_better: true}",
            "needs 'statement' and 'rule'",
        ),
        (
            "{id: d, source: T, kind: delta, model: m, metric: top1, value: 1, unit: '%', higher_is_better: true, tolerance: 1}",
            "needs 'baseline'",
        ),
        (
            "{id: s, source: T, kind: scalar, model: m, metric: top1, unit: '%', higher_is_better: true, tolerance: 1}",
            "needs 'value' and 'tolerance'",
        ),
        (
            "{id: s, source: T, kind: guess, model: m, metric: top1, value: 1, unit: '%', higher_is_better: true, tolerance: 1}",
            "field 'kind'",
        ),
        (
            "{id: s, source: T, kind: scalar, model: m, metric: top1, value: 1, unit: '%', higher_is_better: true, tolerance: -1}",
            "field 'tolerance'",
        ),
        (
            "{id: s, source: T, kind: scalar, model: m, metric: top1, value: 1, unit: '%', higher_is_better: true, tolerance: 1, colour: red}",
            "field 'colour': Extra inputs",
        ),
        (
            "{id: Bad Id, source: T, kind: scalar, model: m, metric: top1, value: 1, unit: '%', higher_is_better: true, tolerance: 1}",
            "field 'id'",
        ),
        (
            "{id: t, source: F, kind: trend, model: m, metric: a, unit: '%', higher_is_better: true, statement: s, rule: {type: rank-correlation, x: metrics.a, y: metrics.b}}",
            "needs 'sign'",
        ),
        (
            "{id: t, source: F, kind: trend, model: m, metric: a, unit: '%', higher_is_better: true, statement: s, rule: {type: loglog-slope, x: width, y: metrics.b, min: 0, max: 1}}",
            "field 'rule.x'",
        ),
    ],
)
def test_kind_specific_rules(tmp_path: Path, entry: str, message: str) -> None:
    assert message in error_of(write(tmp_path, f"- {entry}\n"))


def test_wrong_paper_and_bad_arxiv_version(tmp_path: Path) -> None:
    assert "field 'paper': 'demo' is not this reproduction's id 'other'" in error_of(write(tmp_path), paper="other")
    bad = write(tmp_path, text=GOOD.format(extra="").replace("1905.11946v5", "1905.11946"))
    assert "field 'arxiv'" in error_of(bad)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("claims: [\n  - a\n", ":2: invalid YAML"),
        ("- just a list\n", "a mapping with a 'claims' list"),
        ("claims: []\nextra: 1\n", "unknown top-level key(s) ['extra']"),
        ("claims:\n  - 42\n", ":2: claim entry 0 is not a mapping"),
    ],
)
def test_file_level_errors(tmp_path: Path, text: str, message: str) -> None:
    assert message in error_of(write(tmp_path, text=text))


def test_missing_file(tmp_path: Path) -> None:
    assert "cannot read claims file" in error_of(tmp_path / "nope.yaml")


def test_registered_claims_of_the_toy_plugin(toy: Path) -> None:
    claims = registered_claims("toy-paper")
    assert [c.id for c in claims] == [
        "mlp-params",
        "mlp-macs",
        "mlp-accuracy",
        "wide-beats-narrow",
        "accuracy-grows-with-width",
    ]
    assert claims[3].baseline == "toy-mlp" and claims[4].rule.type == "rank-correlation"


# A paper without an arXiv id: OpenAI's GPT report (Radford et al. 2018), published as a PDF. The digest below shows
# the form only; it is not the PDF's real sha256.
GPT_PDF = "https://cdn.openai.com/research-covers/language-unsupervised/language_understanding_paper.pdf"
GPT = """\
defaults:
  paper: gpt
  url: {url}
  {identity}
  dataset: glue-rte
  split: validation
claims:
  - id: rte-accuracy
    source: Table 2
    kind: scalar
    model: gpt
    metric: accuracy
    value: 56.0
    unit: "%"
    higher_is_better: true
    tolerance: 1.0
"""


@pytest.mark.parametrize(
    ("identity", "named"),
    [("accessed: 2026-11-25", {"accessed": "2026-11-25", "sha256": None}),
     (f"sha256: {'0' * 63}a", {"accessed": None, "sha256": "0" * 63 + "a"})],
)  # fmt: skip
def test_a_paper_without_arxiv_id_is_named_by_url_and_date_or_pdf_hash(tmp_path: Path, identity, named) -> None:
    path = write(tmp_path, text=GPT.format(url=GPT_PDF, identity=identity))
    (claim,) = load_claims(path, paper="gpt")
    row = claim_row(claim)
    assert {key: row[key] for key in ("arxiv", "url", "accessed", "sha256")} == {"arxiv": None, "url": GPT_PDF, **named}


@pytest.mark.parametrize(
    ("identity", "field"),
    [
        ("", "field 'accessed'"),  # a URL alone can change under it
        ("accessed: 2026-11-25\n  sha256: " + "0" * 64, "field 'sha256'"),  # exactly one identifier
        ("arxiv: 1905.11946v5", "field 'url'"),
        ("sha256: ABC", "field 'sha256': String should match pattern"),
        ("accessed: soon", "field 'accessed'"),
    ],
)
def test_malformed_paper_source_names_file_line_claim_and_field(tmp_path: Path, identity: str, field: str) -> None:
    text = GPT.format(url=GPT_PDF, identity=identity)
    lines = text.splitlines()
    name = field.split("'")[1]  # the field's own line, or the entry's where the field is missing
    line = next(
        (i + 1 for i, x in enumerate(lines) if x.strip().startswith(f"{name}:")),
        lines.index("  - id: rte-accuracy") + 1,
    )
    message = error_of(write(tmp_path, text=text))
    assert message.startswith(f"{tmp_path / 'claims.yaml'}:{line}: claim 'rte-accuracy' (entry 0): {field}"), message


def test_no_paper_source_lists_the_accepted_forms(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, text=GOOD.format(extra="").replace("  arxiv: 1905.11946v5\n", "")))
    assert "field 'arxiv': the paper's source is one of 'arxiv'" in message and "'url' with 'accessed'" in message
    bad_url = error_of(write(tmp_path, text=GPT.format(url="cdn.openai.com/x.pdf", identity="accessed: 2026-11-25")))
    assert "field 'url'" in bad_url


DELTA = """\
  - id: beats-base
    source: Table 3
    kind: delta
    model: efficientnet-b1
    metric: top1
    value: 1.0
    unit: "%"
    higher_is_better: true
    tolerance: 0.5
    baseline: {baseline}
"""


def test_a_baseline_of_another_paper(tmp_path: Path) -> None:
    path = write(tmp_path, DELTA.format(baseline="{paper: other, model: base-net, conditions: {data.labels: 20}}"))
    claims = load_claims(path, registered={"demo": ["efficientnet-b1"], "other": ["base-net"]})
    delta = claims[1]
    assert (delta.baseline_paper, delta.baseline_model, delta.baseline_conditions) == (
        "other",
        "base-net",
        {"data.labels": 20},
    )
    row = claim_row(delta)
    assert (row["baseline"], row["baseline_paper"]) == ("base-net", "other")
    same = load_claims(write(tmp_path, DELTA.format(baseline="efficientnet-b0")))[1]
    assert (same.baseline_paper, same.baseline_model, same.baseline_conditions) == ("demo", "efficientnet-b0", {})


@pytest.mark.parametrize(
    ("baseline", "message"),
    [
        ("{paper: bert, model: bert-base}", "field 'baseline.paper': unknown paper 'bert'; registered: demo, other"),
        ("{paper: other, model: bert-base}", "field 'baseline.model': paper 'other' registers no model 'bert-base'"),
        ("{model: base-net}", "field 'baseline.paper': Field required"),
        ("{paper: other, model: base-net, seed: 1}", "field 'baseline.seed': Extra inputs are not permitted"),
        ("[other, base-net]", "field 'baseline': a model id, or {paper: P, model: M}"),
    ],
)
def test_bad_baselines_name_the_field(tmp_path: Path, baseline: str, message: str) -> None:
    path = write(tmp_path, DELTA.format(baseline=baseline))
    with pytest.raises(HarnessError) as err:
        load_claims(path, registered={"demo": ["efficientnet-b1"], "other": ["base-net"]})
    assert f"{path}:25: claim 'beats-base' (entry 1): {message}" in str(err.value)  # the line of 'baseline:'


def test_a_registered_paper_is_named_by_arxiv_or_url() -> None:
    from harness.registry import Reproduction

    gpt = Reproduction(id="gpt", title="Improving Language Understanding by Generative Pre-Training", package="gpt",
                       url=GPT_PDF)  # fmt: skip
    assert (gpt.arxiv, gpt.link) == (None, GPT_PDF)
    assert (
        Reproduction(id="e", title="E", package="e", arxiv="1905.11946v5").link == "https://arxiv.org/abs/1905.11946v5"
    )
    for both_or_none in ({}, {"arxiv": "1905.11946v5", "url": GPT_PDF}):
        with pytest.raises(HarnessError, match="reproduction 'x': give exactly one of 'arxiv' .* or 'url'"):
            Reproduction(id="x", title="X", package="x", **both_or_none)
