"""Issue 15: the full SIMULATED demo tells the TUPLE paper's story.

Builds the full demo (`qlb demo`: every audit, the full decoder library) in a temporary folder,
or reads an existing one (``--warehouse``), then prints each of the paper's findings
(``qlb.present.paper``) with the paper's figure, the band a run must fall in, the run's figure
and PASS/FAIL, and runs ``tests/test_reference_regime.py`` against it.

    .venv/bin/python benchmarks/bench_regime.py                      # builds the demo (about 10 min)
    .venv/bin/python benchmarks/bench_regime.py --warehouse warehouse/qlb.duckdb
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from qlb.demo import build_demo
from qlb.present.paper import paper_checks
from qlb.runs.report import load_run
from warehouse.db import reader

ROOT = Path(__file__).resolve().parent.parent


def report(path: Path) -> int:
    with reader(path) as con:
        checks = paper_checks(load_run(con, dataset="simulated-reference"))
    for c in checks:
        verdict = "n/a " if c.holds is None else ("PASS" if c.holds else "FAIL")
        print(f"{verdict}  {c.finding}\n      paper: {c.paper} | band: {c.band} | demo: {c.run}")
    held = sum(c.holds is True for c in checks)
    print(f"\n{held} of {len(checks)} of the paper's findings hold on the demo: "
          f"{'PASS' if held == len(checks) else 'FAIL'}")
    test = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                           str(ROOT / "tests" / "test_reference_regime.py"), "-k", "full_demo"],
                          env={**os.environ, "QLB_DEMO_WAREHOUSE": str(path)}, cwd=ROOT)
    return 0 if held == len(checks) and test.returncode == 0 else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", type=Path, help="a warehouse built by `qlb demo` (default: build one)")
    args = parser.parse_args()
    if args.warehouse:
        return report(args.warehouse)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "qlb.duckdb"
        t0 = time.perf_counter()
        build_demo(path, jobs=2)
        print(f"full demo built in {time.perf_counter() - t0:.0f} s\n")
        return report(path)


if __name__ == "__main__":
    sys.exit(main())
