"""Budget (issue 2): generating and ingesting both simulated datasets <= 30 s (`qlb demo` into a
fresh warehouse, without the decoding audit, whose own budget is in bench_decoding.py; the
refusal audit, the five detectors and the QuasiLeak scores are included)."""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_full_demo import stage_seconds  # noqa: E402  (the build's time per stage)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        stages = stage_seconds(Path(tmp) / "qlb.duckdb", decode=False)
        total = time.perf_counter() - t0
    for stage, seconds in stages:
        print(f"  {stage:<12} {seconds:6.2f} s")
    print(f"qlb demo without decoding (generate + ingest both datasets, detectors, refusal and QuasiLeak "
          f"audits): {total:.2f} s  budget <= 30 s: "
          f"{'PASS' if total <= 30 else 'FAIL'}")
    return 0 if total <= 30 else 1


if __name__ == "__main__":
    sys.exit(main())
