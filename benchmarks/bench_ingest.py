"""Budget (issue 2): ingest throughput >= 50,000 response lines per second from JSON Lines.

Builds the simulated exports, ingests the worlds into a fresh warehouse, then times the ingest
of the 12,960-line native response file (validation + one transaction) and the refusal file.
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from qlb.demo import DEFAULT_SEED, write_exports
from warehouse.db import writer
from warehouse.ingest import ingest_file


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_exports(Path(tmp) / "exports", DEFAULT_SEED)
        rates = {}
        for kind in ("responses", "refusal"):
            with writer(Path(tmp) / f"{kind}.duckdb") as con:
                ingest_file(con, "worlds", paths["worlds"], "bench")
                t0 = time.perf_counter()
                result = ingest_file(con, kind, paths[kind], "bench")
                elapsed = time.perf_counter() - t0
            rates[kind] = result.report.n_lines / elapsed
            print(f"{kind:<10} {result.report.n_lines} lines in {elapsed:.3f} s = {rates[kind]:,.0f} lines/s")
    ok = min(rates.values()) >= 50_000
    print(f"budget >= 50,000 lines/s: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
