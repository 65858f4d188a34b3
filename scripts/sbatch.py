"""Write the SLURM batch script of a paper's tier run: nodes and tasks per node from its config's ``trainer``.

    python scripts/sbatch.py PAPER [--tier full] [--model M] [--config F] [--data-root D] [--time 72:00:00]
        [--cpus-per-task 8] [--sbatch "--partition=gpu" ...] [--out FILE]

The config's ``trainer.num_nodes`` and ``trainer.devices`` (per node) become ``--nodes`` and
``--ntasks-per-node`` (one task per device, as Lightning expects under SLURM); ``srun`` then runs ``harness run``
once per task. Print the script, or write it to ``--out``; submit it with ``sbatch``. See docs/scale-out.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness import registry
from harness.config import load_config
from harness.distributed import render_sbatch
from harness.errors import HarnessError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paper")
    parser.add_argument("--tier", default="full")
    parser.add_argument("--model")
    parser.add_argument("--config", type=Path)
    parser.add_argument("--data-root")
    parser.add_argument("--time", default="72:00:00")
    parser.add_argument("--cpus-per-task", type=int, default=8)
    parser.add_argument("--sbatch", action="append", default=[], help="an extra #SBATCH option, e.g. --partition=gpu")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    try:
        path = args.config or registry.reproduction(args.paper).config_path(args.tier)
        config = load_config(path, args.tier)
        config["model"] = args.model or config["model"]
        script = render_sbatch(args.paper, args.tier, config, path.resolve(), workdir=Path.cwd(),
                               data_root=args.data_root, time=args.time, cpus_per_task=args.cpus_per_task,
                               extra=tuple(args.sbatch))  # fmt: skip
    except HarnessError as exc:
        print(f"sbatch.py: error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        args.out.write_text(script, encoding="utf-8")
    else:
        print(script, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
