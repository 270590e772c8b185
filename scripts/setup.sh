#!/usr/bin/env bash
# Create .venv (Python 3.11+) and install qlb with its pinned dependencies.
# Usage: bash scripts/setup.sh [dev]     (dev adds the test tools)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  echo "qlb needs Python 3.11 or newer (found: $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PYTHON" -m venv .venv
fi
req=requirements.txt
[ "${1:-}" = "dev" ] && req=requirements-dev.txt
stamp=".venv/.installed-$(cat requirements.txt requirements-dev.txt pyproject.toml | sha256sum | cut -c1-16)-${1:-run}"
if [ ! -f "$stamp" ]; then
  echo "==> installing dependencies ($req)"
  .venv/bin/python -m pip install --disable-pip-version-check -q -r "$req"
  .venv/bin/python -m pip install --disable-pip-version-check -q --no-deps -e .
  touch "$stamp"
fi
