"""Build the Debian budget corpora: ``python -m tasks.debian_corpora {text,speech} OUT [options]``.

``text OUT`` writes ``OUT/debian-lm``, ``OUT/wordnet-lexname`` and ``OUT/fortune-category`` (about a minute);
``speech OUT`` writes ``OUT/espeak-speech`` (the default size, about 5.8 hours of speech; see docs/corpora.md for
how long it takes). Each prints ``<corpus> <data hash>`` lines. ``--source-root`` is where the Debian packages
are installed (``/``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.errors import HarnessError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tasks.debian_corpora", description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=("text", "speech"))
    parser.add_argument("out", type=Path, help="folder the corpus folders are written to")
    parser.add_argument("--source-root", type=Path, default=Path("/"), help="where the Debian packages are (/)")
    parser.add_argument("--train", type=int, default=6000, help="speech: training utterances (6000)")
    parser.add_argument("--dev", type=int, default=300, help="speech: dev utterances (300)")
    parser.add_argument("--test", type=int, default=300, help="speech: test utterances (300)")
    parser.add_argument("--workers", type=int, default=2, help="speech: synthesis processes (2)")
    args = parser.parse_args(argv)
    try:
        if args.what == "text":
            from tasks.debian_corpora.corpus import build_text

            hashes = build_text(args.out, args.source_root)
        else:
            from tasks.debian_corpora.speech import build_speech

            folder = args.out / "espeak-speech"
            hashes = {"espeak-speech": build_speech(folder, args.source_root, args.train, args.dev, args.test,
                                                    args.workers)}  # fmt: skip
    except HarnessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for corpus, digest in hashes.items():
        print(f"{corpus} {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
