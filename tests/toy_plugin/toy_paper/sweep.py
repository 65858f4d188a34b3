"""A toy study runner (``Reproduction.runner``): one record per width, no training, for the core's hook test."""

from pathlib import Path

from harness.records import Provenance, make_run_id, new_record, now, write_record


def run(repro, config_path: Path, *, tier, model, seed, data_root, runs_dir) -> list[Path]:
    paths = []
    for width in (8, 16, 32):
        config = {"width": width, "config_file": config_path.name}
        run_id = make_run_id(repro.id, f"toy-mlp-{width}", tier, "digits", "test", config, seed or 0)
        record = new_record(
            run_id=run_id, paper=repro.id, model=f"toy-mlp-{width}", tier=tier, dataset="digits", split="test",
            seed=seed or 0, metrics={"accuracy": 80.0 + width / 4}, started_at=now(),
            provenance=Provenance(git_sha=None, git_dirty=None, config_hash="x"), config=config,
        )  # fmt: skip
        paths.append(write_record(record, runs_dir))
    return paths
