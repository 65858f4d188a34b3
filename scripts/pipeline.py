"""This repository's DVC pipeline (the code is harness/pipeline.py, which a plugin's repository uses through
``harness pipeline``):

    .venv/bin/python scripts/pipeline.py generate [--check]   # after a paper is registered (or removed)
    .venv/bin/python scripts/pipeline.py stage PAPER          # the command of the paper's DVC stage
"""

import sys
from pathlib import Path

from harness.pipeline import main

if __name__ == "__main__":
    sys.exit(main(root=Path(__file__).resolve().parents[1]))
