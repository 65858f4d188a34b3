"""The DVC pipeline: ``dvc.yaml`` generated from the registered papers, and what each paper's stage runs.

    .venv/bin/python scripts/pipeline.py generate [--check]   # this repository's pipeline, every registered paper
    .venv/bin/python scripts/pipeline.py stage PAPER          # the command of the paper's DVC stage
    harness pipeline generate [--out DIR] [--paper P ...]     # a plugin's own repository: its papers' pipeline
    harness pipeline stage PAPER                              # the command of that pipeline's stages

Every paper gets one stage named by its id (``dvc repro efficientnet``) that runs the tiers listed in its section of
``params.yaml`` with ``harness run``; a last stage, ``report``, ingests every record and prints the verdicts. Run
records live in ``results/runs/`` and are never DVC outputs: DVC deletes a stage's outputs before re-running it, so
the stage's output is only a summary, ``results/stages/<paper>.json``. A plugin's repository gets the same pipeline
for its own papers (harness.pipeline_files.plugin_layout), without any file of this repository. See docs/pipelines.md.

This module is the two command lines; harness.pipeline_files writes dvc.yaml and params.yaml, harness.pipeline_stage
runs a paper's stage.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import registry
from harness.pipeline_files import (
    DVC_HEADER,
    PipelineError,
    checkout_layout,
    generate,
    harness_checkout,
    layout_for,
    plugin_papers,
)
from harness.pipeline_stage import stage


def command(
    action: str, root: Path, paper: str | None = None, papers: list[str] | None = None, check: bool = False
) -> int:
    """``harness pipeline generate`` (dvc.yaml and params.yaml in ``root``) or ``harness pipeline stage PAPER``."""
    if not root.is_dir():
        raise PipelineError(f"{root}: not a folder (the repository to write dvc.yaml and params.yaml into)")
    layout = layout_for(root, papers)
    if action == "stage":
        return stage(str(paper), layout)
    own = layout.header == DVC_HEADER
    return generate(layout, registry.reproductions() if own else plugin_papers(layout.root, papers), check)


def main(argv: list[str] | None = None, root: Path | None = None) -> int:
    """``scripts/pipeline.py``'s command line: this repository's pipeline (``root``: the checkout)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("generate", help="write dvc.yaml and params.yaml for the registered papers").add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when either file is stale"
    )
    run = sub.add_parser("stage", help="run one paper's tiers as params.yaml lists them")
    run.add_argument("paper")
    run.add_argument("--jobs", type=int, help="runs at a time, one torch thread each (default: one per CPU)")
    args = parser.parse_args(argv)
    layout = checkout_layout(root or harness_checkout() or Path.cwd())
    try:
        if args.command == "generate":
            return generate(layout, registry.reproductions(), args.check)
        return stage(args.paper, layout, args.jobs)
    except PipelineError as exc:
        print(f"pipeline: error: {exc}", file=sys.stderr)
        return 2
