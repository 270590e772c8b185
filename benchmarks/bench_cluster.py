"""Budget (issue 18): the demo's decoding audit on a Dask LocalCluster with 2 single-threaded
worker processes (`qlb audit --scheduler local:2`) takes no more than 1.15 x the same decoding
with 2 local joblib processes (`qlb audit --jobs 2`), with the same numbers.

Builds the demo without decoding, then times `run_audits` (decoding only: utility and defenses
off, a new run each time) with `jobs=2`, then on `local:2`, the cluster's start and stop
included, and compares the two runs' numbers. `--models M ...` restricts the decoding to some
models (default: all nine; the full decoding is minutes of work per run, so on a busy machine
three models give the ratio sooner); `--rounds 2` times each mode twice (jobs, cluster, cluster,
jobs) and compares the sums, for a machine whose other load drifts.

    .venv/bin/python benchmarks/bench_cluster.py [--models sim-alder sim-birch sim-cedar] [--rounds 2]
        [--warehouse PATH]
"""
from __future__ import annotations

import argparse
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

from qlb.demo import DEMO_DATASET, build_demo
from qlb.runs.audit import AuditOptions, run_audits
from qlb.stats.parallel import dask_workers
from warehouse.compare import compare_runs
from warehouse.db import writer

BUDGET = 1.15


def timed_decoding(path: Path, options: AuditOptions, jobs) -> tuple[float, str]:
    """Seconds of one decoding audit into ``path`` and its run id."""
    t0 = time.perf_counter()
    with writer(path) as con:
        run = run_audits(con, DEMO_DATASET, options, jobs=jobs,
                         progress=lambda label, done, total: print(f"  {label} {done}/{total} "
                                                                   f"({time.perf_counter() - t0:.0f} s)", flush=True))
    return time.perf_counter() - t0, run.run_id


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", metavar="MODEL", help="decode only these models (default: all)")
    ap.add_argument("--warehouse", type=Path, help="an existing demo warehouse to copy (default: build one)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="2: time each mode twice, in the order jobs, cluster, cluster, jobs, so that a load that "
                         "drifts during the benchmark weighs on both alike (default 1: jobs, cluster)")
    args = ap.parse_args()
    logging.getLogger("distributed").setLevel(logging.WARNING)
    options = AuditOptions(models=args.models, force=True, utility=False, defenses=False)
    order = ["jobs", "cluster", "cluster", "jobs"] if args.rounds == 2 else ["jobs", "cluster"]
    seconds: dict[str, list[float]] = {"jobs": [], "cluster": []}
    starts: list[float] = []
    runs: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "qlb.duckdb"
        if args.warehouse:
            shutil.copy(args.warehouse, path)
        else:
            build_demo(path, decode=False)
        for mode in order:
            if mode == "jobs":
                print("--jobs 2:")
                took, runs[mode] = timed_decoding(path, options, 2)
            else:
                print("--scheduler local:2:")
                t0 = time.perf_counter()
                with dask_workers("local:2") as workers:
                    starts.append(time.perf_counter() - t0)
                    _, runs[mode] = timed_decoding(path, options, workers)
                took = time.perf_counter() - t0
            seconds[mode].append(took)
        with writer(path) as con:
            tables = compare_runs(con, runs["jobs"], con, runs["cluster"])
    differ = {name: diff for name, (_, diff) in tables.items() if diff}
    local_s, cluster_s = sum(seconds["jobs"]), sum(seconds["cluster"])
    ratio = cluster_s / local_s
    which = ", ".join(args.models) if args.models else "all nine models"
    each = lambda xs: " + ".join(f"{x:.1f}" for x in xs)  # noqa: E731
    print(f"decoding audit of the demo ({which} x 3 domains x 5 views, all five decoder families), "
          f"order {', '.join(order)}:")
    print(f"  --jobs 2 (joblib, 2 processes):            {each(seconds['jobs'])} s")
    print(f"  --scheduler local:2 (Dask, 2 workers):     {each(seconds['cluster'])} s "
          f"(starting the cluster: {each(starts)} s)")
    print(f"  ratio {ratio:.3f} (budget {BUDGET}: {'PASS' if ratio <= BUDGET else 'FAIL'}); same numbers to 1e-12: "
          f"{'yes' if not differ else 'NO: ' + '; '.join(f'{k}: {v}' for k, v in differ.items())}")
    return 0 if ratio <= BUDGET and not differ else 1


if __name__ == "__main__":
    sys.exit(main())
