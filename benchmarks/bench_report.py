"""Budget (issue 8): the report for the demo <= 20 s to build and <= 15 MB.

Builds the report of the newest, most complete run of a warehouse (``--warehouse PATH``, e.g.
the one `qlb demo` built; default: a fresh demo without the decoding audit), best and worst of 3."""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from qlb.demo import build_demo
from qlb.report import build_report
from warehouse.db import reader


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warehouse", type=Path, help="an existing demo warehouse (default: build one)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        wh = args.warehouse
        if wh is None:
            wh = Path(tmp) / "qlb.duckdb"
            build_demo(wh, decode=False)
        times, size = [], 0
        for _ in range(3):
            t0 = time.perf_counter()
            with reader(wh) as con:
                text = build_report(con)
            times.append(time.perf_counter() - t0)
            size = len(text.encode("utf-8"))
    print(f"report: best {min(times):.2f} s, worst {max(times):.2f} s, {size / 1e6:.1f} MB "
          f"(budgets 20 s, 15 MB: {'PASS' if max(times) <= 20 and size <= 15e6 else 'FAIL'})")
    return 0 if max(times) <= 20 and size <= 15e6 else 1


if __name__ == "__main__":
    sys.exit(main())
