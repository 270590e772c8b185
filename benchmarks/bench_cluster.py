"""Budget (issue 18): the demo's decoding audit on a Dask LocalCluster with 2 single-threaded
worker processes (`qlb audit --scheduler local:2`) takes no more than 1.15 x the same decoding
with 2 local joblib processes (`qlb audit --jobs 2`), with the same numbers.

Builds the demo without decoding, then times `run_audits` (decoding only: utility and defenses
off, a new run each time) with `jobs=2` and on `local:2` (the cluster's start and stop included),
`--rounds` times each (default 3), the order alternating from round to round (jobs first, then
the cluster first, ...) so that neither mode always pays the first run's warm-up, or always
meets the machine's other load at the same point; it reports each mode's median and their ratio,
both measured in this run, and compares every run's numbers with the first. `--models M ...`
restricts the decoding to some models (default: all nine; the full decoding is minutes of work
per run), `--families F ...` the decoder families (default all five): a quicker check.

A LocalCluster's workers are processes on this machine: this measures what Dask's scheduling and
serialization add, not the network transfer of a real cluster (each task's worlds sent to its
worker and its fitted results sent back).

    .venv/bin/python benchmarks/bench_cluster.py [--models sim-alder sim-birch sim-cedar] [--rounds 3]
        [--families prior logistic] [--warehouse PATH]
"""
from __future__ import annotations

import argparse
import logging
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from qlb.demo import DEMO_DATASET, build_demo
from qlb.runs.audit import AuditOptions, run_audits
from qlb.stats.parallel import dask_workers
from qlb.tuple.release_views import DECODER_FAMILIES
from warehouse.compare import compare_runs
from warehouse.db import writer

BUDGET = 1.15
MODES = {"jobs": "--jobs 2 (joblib, 2 processes)", "cluster": "--scheduler local:2 (Dask, 2 workers)"}


def timed_decoding(path: Path, options: AuditOptions, jobs) -> tuple[float, str]:
    """Seconds of one decoding audit into ``path`` and its run id."""
    t0 = time.perf_counter()
    with writer(path) as con:
        run = run_audits(con, DEMO_DATASET, options, jobs=jobs,
                         progress=lambda label, done, total: print(f"  {label} {done}/{total} "
                                                                   f"({time.perf_counter() - t0:.0f} s)", flush=True))
    return time.perf_counter() - t0, run.run_id


def round_order(rounds: int) -> list[str]:
    """The modes in the order they run: jobs then cluster, then cluster then jobs, and so on."""
    return [mode for r in range(rounds) for mode in (("jobs", "cluster") if r % 2 == 0 else ("cluster", "jobs"))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", metavar="MODEL", help="decode only these models (default: all)")
    ap.add_argument("--families", nargs="+", metavar="FAMILY", choices=list(DECODER_FAMILIES),
                    help="decoder families (default: all five)")
    ap.add_argument("--warehouse", type=Path, help="an existing demo warehouse to copy (default: build one)")
    ap.add_argument("--rounds", type=int, default=3,
                    help="times each mode runs, the order alternating from round to round (default 3)")
    args = ap.parse_args()
    logging.getLogger("distributed").setLevel(logging.WARNING)
    options = AuditOptions(models=args.models, force=True, utility=False, defenses=False,
                           families=set(args.families) if args.families else None)
    order = round_order(max(args.rounds, 1))
    seconds: dict[str, list[float]] = {"jobs": [], "cluster": []}
    starts: list[float] = []
    runs: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "qlb.duckdb"
        if args.warehouse:
            shutil.copy(args.warehouse, path)
        else:
            build_demo(path, decode=False)
        for mode in order:
            print(f"{MODES[mode]}:")
            if mode == "jobs":
                took, run_id = timed_decoding(path, options, 2)
            else:
                t0 = time.perf_counter()
                with dask_workers("local:2") as workers:
                    starts.append(time.perf_counter() - t0)
                    _, run_id = timed_decoding(path, options, workers)
                took = time.perf_counter() - t0
            seconds[mode].append(took)
            runs.append(run_id)
        with writer(path) as con:
            differ = {f"{run_id} {name}": diff for run_id in runs[1:]
                      for name, (_, diff) in compare_runs(con, runs[0], con, run_id).items() if diff}
    median = {mode: statistics.median(xs) for mode, xs in seconds.items()}
    ratio = median["cluster"] / median["jobs"]
    which = ", ".join(args.models) if args.models else "all nine models"
    families = ", ".join(sorted(args.families)) if args.families else "all five decoder families"
    each = lambda xs: ", ".join(f"{x:.1f}" for x in xs)  # noqa: E731
    print(f"decoding audit of the demo ({which} x 3 domains x 5 views, {families}), {len(order) // 2} round(s), "
          f"order {', '.join(order)}:")
    for mode, label in MODES.items():
        print(f"  {label + ':':42s} median {median[mode]:.1f} s  (runs: {each(seconds[mode])} s)")
    print(f"  starting and stopping the LocalCluster, within its runs: median {statistics.median(starts):.1f} s "
          f"({each(starts)} s)")
    print(f"  ratio of the medians {ratio:.3f} (budget {BUDGET}: {'PASS' if ratio <= BUDGET else 'FAIL'}); "
          f"same numbers to 1e-12 in all {len(runs)} runs: "
          f"{'yes' if not differ else 'NO: ' + '; '.join(f'{k}: {v}' for k, v in differ.items())}")
    print("  (a LocalCluster's workers are processes on this machine: this measures Dask's scheduling and "
          "serialization, not the network transfer of a real cluster)")
    return 0 if ratio <= BUDGET and not differ else 1


if __name__ == "__main__":
    sys.exit(main())
