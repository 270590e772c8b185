"""Budget (issue 8): the report for the demo <= 20 s to build and <= 15 MB.

Builds the report of the newest, most complete run of a warehouse (``--warehouse PATH``, e.g.
the one `qlb demo` built; default: a fresh demo without the decoding audit), best and worst of 3."""
from __future__ import annotations

import sys
import tempfile
import time

from demo_warehouse import warehouse_or_demo
from qlb.runs.report import build_report
from warehouse.db import reader


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        wh = warehouse_or_demo(__doc__.splitlines()[0], tmp)
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
