"""Budget (issue 2): generating and ingesting both simulated datasets <= 30 s (`qlb demo` into a
fresh warehouse, without the decoding audit, whose own budget is in bench_decoding.py; the
refusal audit, the five detectors and the QuasiLeak scores are included)."""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from qlb.demo import build_demo


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        stages: list[tuple[str, float]] = []
        t0 = time.perf_counter()
        build_demo(Path(tmp) / "qlb.duckdb", decode=False,
                   step=lambda label, *_: stages.append((label, time.perf_counter())))
        total = time.perf_counter() - t0
    prev = t0
    for label, t in stages:
        print(f"  {t - prev:6.2f} s  before '{label}'")
        prev = t
    print(f"qlb demo without decoding (generate + ingest both datasets, detectors, refusal and QuasiLeak "
          f"audits): {total:.2f} s  budget <= 30 s: "
          f"{'PASS' if total <= 30 else 'FAIL'}")
    return 0 if total <= 30 else 1


if __name__ == "__main__":
    sys.exit(main())
