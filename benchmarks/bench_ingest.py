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
from warehouse.ingest import IngestRequest, ingest_file


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_exports(Path(tmp) / "exports", DEFAULT_SEED)
        rates = {}
        for kind in ("responses", "refusal"):
            runs = []
            for attempt in range(5):       # a fresh warehouse each time; best and median reported
                with writer(Path(tmp) / f"{kind}{attempt}.duckdb") as con:
                    ingest_file(con, IngestRequest("worlds", paths["worlds"], "bench"))
                    t0 = time.perf_counter()
                    result = ingest_file(con, IngestRequest(kind, paths[kind], "bench"))
                    runs.append(result.report.n_lines / (time.perf_counter() - t0))
            runs.sort()
            rates[kind] = runs[-1]
            print(f"{kind:<10} {result.report.n_lines} lines: best {runs[-1]:,.0f} lines/s, "
                  f"median {runs[len(runs) // 2]:,.0f} lines/s (validation + one transaction)")
    ok = rates["responses"] >= 50_000
    print(f"budget >= 50,000 native response lines/s (best of five): {'PASS' if ok else 'FAIL'}; "
          f"refusal lines (17 scores each) shown for information")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
