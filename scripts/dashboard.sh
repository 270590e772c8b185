#!/usr/bin/env bash
# Quick start 1: set up, build the simulated demo warehouse the first time, open the dashboard.
# Usage: bash scripts/dashboard.sh [--server.port 8501 ...]   (extra arguments go to streamlit)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export QLB_WAREHOUSE="${QLB_WAREHOUSE:-warehouse/qlb.duckdb}"
if [ ! -f "$QLB_WAREHOUSE" ]; then
  echo "==> building the SIMULATED demo warehouse at $QLB_WAREHOUSE (first run only)"
  .venv/bin/qlb demo --warehouse "$QLB_WAREHOUSE"
else
  # a warehouse built by an older qlb gets the forward migrations (pages open it read-only)
  .venv/bin/python -c 'import os; from warehouse.db import open_writer; open_writer(os.environ["QLB_WAREHOUSE"]).close()'
fi
echo "==> starting the dashboard (Ctrl+C to stop)"
exec .venv/bin/streamlit run app.py "$@"
