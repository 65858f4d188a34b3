#!/usr/bin/env bash
# One-command setup: Debian packages (when the project needs any), a virtual environment at .venv/ in this
# clone, torch (the CPU build on a machine without CUDA) and the project with its dev tools.
set -euo pipefail
cd "$(dirname "$0")"

# espeak-ng: speech for the LibriSpeech-format fixtures; chromium: the leaderboard's real-browser test;
# git: DVC pipelines; dataset-fashion-mnist: the SGD-width study's budget tier; wordnet-base, dict-gcide, dict-devil,
# dict-jargon, dict-foldoc, fortunes, fortunes-min: the text of the Debian budget corpora (docs/corpora.md);
# sctk: NIST's sclite, which the Hub5'00 scorer's tests compare against (tests/tasks/switchboard)
DEBIAN_PACKAGES=(espeak-ng chromium git dataset-fashion-mnist wordnet-base dict-gcide dict-devil dict-jargon dict-foldoc
  fortunes fortunes-min sctk)
if ((${#DEBIAN_PACKAGES[@]})); then
  missing=()
  for pkg in "${DEBIAN_PACKAGES[@]}"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  if ((${#missing[@]})); then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
pip() { .venv/bin/python -m pip --disable-pip-version-check -q "$@"; }

# torch first, so the project's torch range is already satisfied and pip pulls nothing more. On this
# workplace's machines `torch==2.13.0` resolves to the local CPU wheel; elsewhere, point TORCH_INSTALL at a CPU
# index (pip options) on machines without CUDA.
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  # shellcheck disable=SC2086
  pip install ${TORCH_INSTALL:-torch==2.13.0}
fi
pip install -e '.[dev]'

if ! command -v nvidia-smi >/dev/null 2>&1 && pip list 2>/dev/null | grep -qi '^nvidia-'; then
  echo "setup.sh: CUDA packages were installed on a machine without a GPU; set TORCH_INSTALL to a CPU build" >&2
  exit 1
fi
echo "setup.sh: ready (.venv/bin/harness)" >&2
