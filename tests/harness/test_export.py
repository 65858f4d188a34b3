"""``harness export``: metrics as real columns in CSV and Parquet, and the Papers-with-Code model-index layout."""

from __future__ import annotations

import csv
from pathlib import Path

import duckdb
import pytest
import yaml

from harness import registry
from harness.errors import HarnessError
from harness.export import export
from harness.runner import run
from harness.store import ingest


def test_exports_from_the_store(toy: Path) -> None:
    """One arch run of the toy paper, ingested, exported in each format."""
    run(registry.reproduction("toy-paper"), "arch")
    assert not ingest().errors
    check_csv(toy)
    check_parquet(toy)
    check_model_index(toy)


def check_csv(arch_store: Path) -> None:
    assert export(arch_store / "runs.csv", "csv") == 3
    with (arch_store / "runs.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {"run_id", "paper", "model", "tier", "params", "params_m", "macs", "macs_m"} <= set(rows[0])
    by_model = {row["model"]: row for row in rows}
    assert float(by_model["toy-mlp"]["params"]) == 1210 and float(by_model["toy-mlp"]["macs"]) == 1184


def check_parquet(arch_store: Path) -> None:
    export(arch_store / "runs.parquet", "parquet", paper="toy-paper")
    con = duckdb.connect()
    described = con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(arch_store / "runs.parquet")]).fetchall()
    kinds = {row[0]: row[1] for row in described}
    assert kinds["params_m"] == "DOUBLE" and kinds["seed"] == "BIGINT"
    value = con.execute(
        "SELECT params FROM read_parquet(?) WHERE model = 'toy-mlp-wide'", [str(arch_store / "runs.parquet")]
    )
    assert value.fetchone()[0] == 4810


def check_model_index(arch_store: Path) -> None:
    assert export(arch_store / "model-index.yaml", "model-index") == 3
    document = yaml.safe_load((arch_store / "model-index.yaml").read_text())
    assert document["Collections"] == [
        {
            "Name": "toy-paper",
            "Paper": {"Title": "A Toy Paper About Digits", "URL": "https://arxiv.org/abs/2001.00001v2"},
        }
    ]
    mlp = next(model for model in document["Models"] if model["Name"] == "toy-mlp")
    assert mlp["In Collection"] == "toy-paper"
    [result] = mlp["Results"]
    assert result["Dataset"] == "digits" and result["Metrics"]["params"] == 1210
    assert result["Metadata"] == {"Split": "none", "Tier": "arch", "Protocol": "flopcounter-macs", "Seeds": 1}


def test_export_without_database_says_to_ingest(toy: Path) -> None:
    with pytest.raises(HarnessError, match="no database yet; create it with `harness ingest`"):
        export(toy / "runs.csv", "csv")
