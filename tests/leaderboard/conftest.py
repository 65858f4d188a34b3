"""A real harness database for the leaderboard's tests: toy-plugin records ingested with ``harness.store.ingest``."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import registry, store
from harness.claims import Claim, claim_row
from harness.records import write_record
from harness.verdicts import judge_all
from tests.conftest import TOY_ENTRY_POINTS, TOY_SRC, make_record, write_dist_info

PROVENANCE = {
    "git_sha": "3f2c1ab9d0e4", "git_dirty": False, "config_hash": "9c1e0d2f", "data_hash": "toy-digits-v1",
    "versions": {"python": "3.11.7", "torch": "2.13.0"}, "hardware": {"machine": "x86_64", "cpus": 2},
}  # fmt: skip
# (model, hidden width, seed, accuracy) of full-tier runs: narrow ~95 %, wide ~96.8 %, so accuracy grows with width.
# Each run has its own width (a config override), so the trend claim's exact rank test has six distinct widths to
# go on (two widths x three seeds could never reach p < 0.05: p = 0.1 at best).
FULL_RUNS = [
    ("toy-mlp", 16, 0, 94.8), ("toy-mlp", 20, 1, 95.0), ("toy-mlp", 24, 2, 95.2),
    ("toy-mlp-wide", 64, 0, 96.5), ("toy-mlp-wide", 80, 1, 96.8), ("toy-mlp-wide", 96, 2, 97.0),
]  # fmt: skip


def toy_records(offset: int = 0) -> list:
    """Arch, smoke and full records of the toy paper (``offset`` shifts the seeds, for a second batch)."""
    arch = [
        make_record(
            tier="arch", split="none", seed=0, protocol="flopcounter-macs", provenance=PROVENANCE,
            metrics={"params_m": 0.00121, "macs_m": 0.001184, "params": 1210, "macs": 1184},
        )
    ]  # fmt: skip
    smoke = [make_record(tier="smoke", seed=offset, metrics={"accuracy": 60.0}, provenance=PROVENANCE)]
    full = [
        make_record(
            model=model, seed=seed + offset, metrics={"accuracy": acc, "error": 100 - acc}, provenance=PROVENANCE,
            config={"system": {"init_args": {"hidden": hidden}}},
        )
        for model, hidden, seed, acc in FULL_RUNS
    ]  # fmt: skip
    return arch + smoke + full


def build(work: Path, records: list) -> Path:
    runs, db = work / "results" / "runs", work / "results" / "harness.duckdb"
    for record in records:
        write_record(record, runs)
    result = store.ingest(runs_dir=runs, db_path=db)
    assert result.errors == []
    return db


@contextlib.contextmanager
def toy_registered(site: Path) -> Iterator[None]:
    """The toy plugin registered for the duration (the module-scoped twin of tests/conftest.py's ``toy``)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(TOY_SRC))
        patch.syspath_prepend(str(site))
        registry.reproductions.cache_clear()
        registry.tasks.cache_clear()
        try:
            yield
        finally:
            registry.reproductions.cache_clear()
            registry.tasks.cache_clear()


@pytest.fixture(scope="module")
def leaderboard_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database shared by a module's read-only tests: 8 toy runs, the toy paper's 5 claims judged."""
    work = tmp_path_factory.mktemp("leaderboard")
    site = work / "site"
    write_dist_info(site, "toy-plugin", TOY_ENTRY_POINTS)
    with toy_registered(site):
        return build(work, toy_records())


@pytest.fixture
def fresh_db(toy: Path) -> Path:
    """The same database in this test's own toy work folder (the toy plugin stays registered): for tests that
    ingest more records into it."""
    return build(toy, toy_records())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, server: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise AssertionError(f"the leaderboard exited with {server.returncode}: {server.stdout.read()}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
                if response.read() == b"ok":
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"{url} not healthy after {timeout}s")


GPT_PDF = "https://cdn.openai.com/research-covers/language-unsupervised/language_understanding_paper.pdf"


@pytest.fixture
def two_papers_db(tmp_path: Path) -> Path:
    """A GPT-like paper (a PDF, named by URL and sha256) and a UDA-like delta claim whose baseline XLNet's
    reproduction ran (budget runs of both papers), judged and written as ingest writes them."""
    common = {"dataset": "glue-rte", "split": "validation", "metric": "accuracy", "unit": "%", "higher_is_better": True}
    gpt = Claim.model_validate({
        "id": "rte", "paper": "gpt", "url": GPT_PDF, "sha256": "0" * 64, "source": "Table 2", "kind": "scalar",
        "model": "gpt", "value": 56.0, "tolerance": 1.0, **common,
    })  # fmt: skip
    uda = Claim.model_validate({
        "id": "beats-bert", "paper": "uda", "arxiv": "1904.12848v6", "source": "Table 3", "kind": "delta",
        "model": "uda-bert", "baseline": {"paper": "xlnet", "model": "bert-base"}, "value": 2.0, "tolerance": 1.0,
        **common,
    })  # fmt: skip
    fields = {"dataset": "glue-rte", "split": "validation", "tier": "budget"}
    records = [make_record(paper="uda", model="uda-bert", seed=s, metrics={"accuracy": a}, **fields)
               for s, a in enumerate([70.0, 71.0])]  # fmt: skip
    records += [make_record(paper="xlnet", model="bert-base", seed=s, metrics={"accuracy": a}, **fields)
                for s, a in enumerate([60.0, 61.0])]  # fmt: skip
    verdicts = judge_all([gpt, uda], records)
    db = tmp_path / "harness.duckdb"
    tables = store.Tables(
        claims=[claim_row(gpt), claim_row(uda)], verdicts=[{"position": i, **v.row()} for i, v in enumerate(verdicts)]
    )
    store.build_database(records, tables, db)
    return db


# The evidence database: verdicts with the fields of store version 6 (scale, interval, p and Holm p, premises, plan,
# machines, tags, per-example evidence) written as a judge of that version writes them, over budget and full runs
# whose records name Lightning CSV logs. Each verdict is one kind of thing the reader must be shown apart.
EVIDENCE = "toy-paper"
MACHINES = ["x86_64-avx2", "x86_64-avx512"]
PLAN = "tests/toy_plugin/toy_paper/plans/budget.yaml"
PASSED = {"id": "baseline-learns", "check": "baseline accuracy > 50", "passed": True, "detail": "61.3 > 50"}
FAILED = {"id": "bow-learns", "check": "toy-bow accuracy > 50", "passed": False, "detail": "11.0: chance level"}
MCNEMAR = {"method": "mcnemar", "estimate": 1.8, "low": 0.4, "high": 3.1, "p_value": 0.011, "n_examples": 297,
           "reason": None}  # fmt: skip
# What a verdict rests on (store version 7): a published set's records of one machine, which another machine's own
# records confirm; and local records of two commits, one dirty, which another machine's two seeds leave undecided.
PUBLISHED = "published toy-paper/budget (3f2a9c0d1e2b)"
CONFIRMED = {"machine": MACHINES[0], "commits": ["bcb08d89be91"], "dirty": False, "origins": [PUBLISHED],
             "others": [{"machine": MACHINES[1], "status": "reproduced", "n": 3, "mean": 1.4, "low": 0.6, "high": 2.2,
                         "p_value": 0.03, "run_ids": [], "origins": ["local"]}],
             "confirmed_on": [MACHINES[1]]}  # fmt: skip
UNDECIDED = {"machine": MACHINES[0], "commits": ["3f2c1ab9d0e4", "bcb08d89be91"], "dirty": True, "origins": ["local"],
             "others": [{"machine": MACHINES[1], "status": "inconclusive", "n": 2, "mean": 94.1, "low": None,
                         "high": None, "p_value": None, "run_ids": [], "origins": ["local"]}],
             "confirmed_on": []}  # fmt: skip
EVIDENCE_CLAIMS = [  # (claim fields, verdict fields)
    ({"id": "mlp-params", "kind": "arch", "model": "toy-mlp", "split": "none", "metric": "params_m", "value": 0.00121,
      "tolerance": 0.000005, "unit": "M", "derived": True},
     {"status": "reproduced", "tier": "arch", "mean": 0.00121, "n": 1, "delta": 0.0, "scale": "paper",
      "tags": ["derived"], "reason": "arch result 0.00121 against 0.00121 ± 5e-06 (derived from the configuration)"}),
    ({"id": "mlp-macs", "kind": "arch", "model": "toy-mlp", "split": "none", "metric": "macs_m", "value": 0.002,
      "tolerance": 0.0001, "unit": "M",
      "deviation": {"measured": 0.001184, "reason": "the paper counts the bias adds", "evidence": "same shapes"}},
     {"status": "deviation", "tier": "arch", "mean": 0.001184, "n": 1, "delta": -0.000816, "scale": "paper",
      "tags": ["deviation"], "reason": "a reviewed deviation: the paper counts the bias adds"}),
    ({"id": "mlp-accuracy", "kind": "scalar", "model": "toy-mlp", "split": "test", "metric": "accuracy", "value": 95.0,
      "tolerance": 2.0},
     {"status": "reproduced", "tier": "full", "mean": 95.0, "std": 0.2, "n": 3, "delta": 0.0, "scale": "paper",
      "low": 94.5, "high": 95.5, "analysis": "t-interval over 3 seeds", "machines": 2, "machine_ids": MACHINES,
      "evidence": UNDECIDED, "reason": "95% t-interval [94.5, 95.5] against 95.0 ± 2.0"}),
    ({"id": "wide-beats-narrow", "kind": "delta", "model": "toy-mlp-wide", "baseline": "toy-mlp", "split": "test",
      "metric": "accuracy", "value": 1.0, "tolerance": 1.0, "analysis": "paired"},
     {"status": "reproduced", "tier": "budget", "mean": 1.6, "std": 0.3, "n": 3, "scale": "budget", "low": 0.9,
      "high": 2.3, "p_value": 0.021, "p_holm": 0.084, "analysis": "paired t over 3 seeds", "machines": 2,
      "machine_ids": MACHINES, "tags": ["holm"], "premises": [PASSED], "plan": PLAN, "examples": MCNEMAR,
      "evidence": CONFIRMED, "reason": "paired difference interval [0.9, 2.3] above 0"}),
    ({"id": "bow-beats-mlp", "kind": "delta", "model": "toy-bow", "baseline": "toy-mlp", "split": "test",
      "metric": "accuracy", "value": 3.0, "tolerance": 1.0, "constructed": True},
     {"status": "premise-failed", "tier": "budget", "scale": "budget", "tags": ["premise-failed", "constructed"],
      "premises": [PASSED, FAILED], "plan": PLAN,
      "reason": "premise bow-learns failed: the budget regime cannot test the claim"}),
    ({"id": "wide-beats-bow", "kind": "delta", "model": "toy-mlp-wide", "baseline": "toy-bow", "split": "test",
      "metric": "accuracy", "value": 0.5, "tolerance": 0.5},
     {"status": "inconclusive", "tier": "budget", "mean": 0.2, "n": 3, "scale": "budget", "low": -0.7, "high": 1.1,
      "p_value": 0.41, "p_holm": 0.82, "analysis": "Welch t over 3 and 3 seeds", "machines": 1,
      "machine_ids": MACHINES[:1], "tags": ["fragile"], "excluded": "a loss of more than 0.7 points",
      "seeds_needed": 12, "plan": PLAN, "reason": "difference interval [-0.7, 1.1] contains 0"}),
    ({"id": "bow-off-plan", "kind": "delta", "model": "toy-bow", "baseline": "toy-mlp-wide", "split": "test",
      "metric": "error", "value": -1.0, "tolerance": 1.0},
     {"status": "off-plan", "tier": "budget", "scale": "budget", "tags": ["off-plan"], "off_plan": 4, "plan": PLAN,
      "reason": "4 matching records, none under the committed plan"}),
    ({"id": "bow-old-judge", "kind": "delta", "model": "toy-bow", "baseline": "toy-mlp", "split": "test",
      "metric": "error", "value": -2.0, "tolerance": 1.0},  # as a judge before store version 6 fields: nulls
     {"status": "inconclusive", "tier": "budget", "mean": -0.5, "n": 3, "delta": 1.5, "tags": None,
      "machine_ids": None, "premises": None, "evidence": None, "reason": "budget tier judges the sign only"}),
]  # fmt: skip
# (model, seed, accuracy, final train loss) of the budget runs whose logs the delta claims' curves are drawn from
BUDGET_RUNS = [
    ("toy-mlp", 0, 90.1, 0.42), ("toy-mlp", 1, 90.4, 0.40), ("toy-mlp", 2, 90.0, 0.44),
    ("toy-mlp-wide", 0, 91.8, 0.30), ("toy-mlp-wide", 1, 91.9, 0.29), ("toy-mlp-wide", 2, 91.6, 0.31),
    ("toy-bow", 0, 11.0, 2.30), ("toy-bow", 1, 11.2, 2.29), ("toy-bow", 2, 10.9, 2.31),
]  # fmt: skip


def training_log(work: Path, run_id: str, last_loss: float, accuracy: float) -> str:
    """A Lightning CSVLogger ``metrics.csv`` for one run under ``work`` (the path its record names, relative)."""
    path = f"results/lightning/toy-paper/budget/{run_id}/metrics.csv"
    rows = [f"0,9,{last_loss * 3:.3f},", f"0,9,,{accuracy - 20:.2f}", f"1,19,{last_loss:.3f},", f"1,19,,{accuracy}"]
    (work / path).parent.mkdir(parents=True, exist_ok=True)
    (work / path).write_text("epoch,step,train_loss,val_accuracy\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def evidence_records(work: Path) -> list:
    """The runs of the evidence database: the arch profile, three full runs, nine budget runs with training logs."""
    arch = make_record(tier="arch", split="none", seed=0, protocol="flopcounter-macs", provenance=PROVENANCE,
                       metrics={"params_m": 0.00121, "macs_m": 0.001184})  # fmt: skip
    full = [make_record(seed=s, metrics={"accuracy": a}, provenance=PROVENANCE) for s, a in enumerate([94.8, 95, 95.2])]
    budget = []
    for model, seed, accuracy, loss in BUDGET_RUNS:
        run_id = f"toy-paper.{model}.budget.digits.test.s{seed}"
        log = training_log(work, run_id, loss, accuracy)
        budget.append(make_record(
            model=model, tier="budget", seed=seed, metrics={"accuracy": accuracy, "error": 100 - accuracy},
            provenance=PROVENANCE, artifacts={"training_log": log},
        ))  # fmt: skip
    return [arch, *full, *budget]


def evidence_tables(records: list) -> store.Tables:
    """The claims and verdicts of ``EVIDENCE_CLAIMS``, each verdict resting on the runs of its claim's models."""
    from harness.verdicts import Verdict

    claims, verdicts = [], []
    for position, (fields, judged) in enumerate(EVIDENCE_CLAIMS):
        fields = {"paper": EVIDENCE, "arxiv": "2001.00001v2", "source": "Table 1", "dataset": "digits", "unit": "%",
                  "higher_is_better": True} | fields  # fmt: skip
        claim = Claim.model_validate(fields)
        models = {claim.model, claim.baseline_model} - {None}
        tier = judged.get("tier")
        run_ids = [r.run_id for r in records if r.model in models and r.tier == tier and claim.metric in r.metrics]
        verdict = Verdict(
            paper=EVIDENCE, claim_id=claim.id, kind=claim.kind, model=claim.model, dataset=claim.dataset,
            split=claim.split, metric=claim.metric, reported=claim.value, tolerance=claim.tolerance, run_ids=run_ids,
        )  # fmt: skip
        row = verdict.row() | judged
        claims.append(claim_row(claim))
        verdicts.append({"position": position, **row})
    papers = [{"paper": EVIDENCE, "title": "A Toy Paper About Digits", "link": "https://arxiv.org/abs/2001.00001v2"}]
    return store.Tables(claims=claims, verdicts=verdicts, papers=papers)


def build_evidence(work: Path) -> Path:
    """The evidence database at ``work/results/harness.duckdb``, the run logs beside it under ``work/results``."""
    records = evidence_records(work)
    db = work / "results" / "harness.duckdb"
    store.build_database(records, evidence_tables(records), db)
    return db


@pytest.fixture
def evidence_db(tmp_path: Path) -> Path:
    return build_evidence(tmp_path / "work")
