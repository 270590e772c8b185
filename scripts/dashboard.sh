#!/usr/bin/env bash
# Quick start 1: set up, store the simulated demo data, open the dashboard at once.
# The first time (and whenever the demo's audits are not all stored yet) the audits run in a
# background process that stores each one as it finishes; the pages show its progress and fill in.
# Usage: bash scripts/dashboard.sh [--server.port 8501 ...]   (extra arguments go to streamlit)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export QLB_WAREHOUSE="${QLB_WAREHOUSE:-warehouse/qlb.duckdb}"
# one BLAS/OpenMP thread per process (the engine's tasks already run so): the server's pages and the
# background audit's workers share the cores, and threads per core in each would spin against each other
export OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-1}"
if [ ! -f "$QLB_WAREHOUSE" ] || [ -d "$(dirname "$QLB_WAREHOUSE")/simulated_exports" ]; then
  echo "==> the SIMULATED demo data in $QLB_WAREHOUSE (5-20 s by the machine; the audits then run in the background)"
  .venv/bin/qlb demo --warehouse "$QLB_WAREHOUSE" --background
else
  # someone else's warehouse: only bring its tables up to this version (pages open it read-only)
  .venv/bin/qlb migrate --warehouse "$QLB_WAREHOUSE"
fi
echo "==> starting the dashboard (Ctrl+C to stop; a background audit goes on until it is done)"
exec .venv/bin/streamlit run app.py "$@"
