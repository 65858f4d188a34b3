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
