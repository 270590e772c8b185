"""Are two warehouses' audit runs the same numbers? For refactors that must not change behaviour.

    python scripts/same_run.py BEFORE.duckdb AFTER.duckdb [--dataset NAME] [--tol 1e-12]

Compares the newest finished audit run of the dataset in each warehouse (``warehouse.compare``):
every table with a ``run_id`` column, rows matched by their text and integer columns,
floating-point columns to ``--tol`` (absolute), lists element-wise. Prints one line per table and
exits 1 on any difference. A newer run that has not finished (an audit in stages still running,
or stopped midway) is passed over, and said so on stderr.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb  # noqa: E402

from warehouse.compare import compare_runs, newest_audit_run, unfinished_audit_runs  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--dataset", default="simulated-reference")
    ap.add_argument("--tol", type=float, default=1e-12)
    args = ap.parse_args()
    # plain read-only handles: a BEFORE warehouse may be at an older schema version
    a, b = duckdb.connect(args.before, read_only=True), duckdb.connect(args.after, read_only=True)
    try:
        ra, rb = newest_audit_run(a, args.dataset), newest_audit_run(b, args.dataset)
        for path, con, run in ((args.before, a, ra), (args.after, b, rb)):
            unfinished = unfinished_audit_runs(con, args.dataset)
            if unfinished and run is not None:
                print(f"{path}: the newest audit run of {args.dataset!r}, {unfinished[0]}, has not finished (an audit "
                      f"in stages still running, or stopped midway); comparing the newest finished one, {run}",
                      file=sys.stderr)
            if run is None:
                sys.exit(f"no finished audit run of dataset {args.dataset!r} in {path}"
                         + (f" (unfinished: {', '.join(unfinished)})" if unfinished else ""))
        tables = compare_runs(a, ra, b, rb, args.tol)
    finally:
        a.close()
        b.close()
    for name, (rows, diff) in tables.items():
        print(f"{name:28s} {rows:>9,d} rows  " + ("same" if not diff else "DIFFERENT: " + "; ".join(diff)))
    bad = sum(bool(diff) for _, diff in tables.values())
    print(f"{ra} vs {rb}: " + ("equal to %g" % args.tol if not bad else f"{bad} table(s) differ"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
