#!/usr/bin/env bash
# Quick start 2: set up (Python packages and Debian's chromium for the browser tests) and run
# the whole test suite. Extra arguments go to pytest (e.g. -k ingest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
if [ "${QLB_SKIP_BROWSER:-0}" != "1" ] && [ ! -x /usr/bin/chromium ]; then
  echo "==> installing Debian's chromium for the browser tests"
  SUDO=""
  [ "$(id -u)" = "0" ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q chromium
fi
# two worker processes (pytest-xdist; QLB_TEST_WORKERS=0 runs in this one), a test file per worker at a time
exec .venv/bin/python -m pytest -n "${QLB_TEST_WORKERS:-2}" --dist loadfile "$@"
