"""Are two warehouses' audit runs the same numbers? For refactors that must not change behaviour.

    python scripts/same_run.py BEFORE.duckdb AFTER.duckdb [--dataset NAME] [--tol 1e-12]

Compares the newest audit run of the dataset in each warehouse: every table with a ``run_id``
column, rows matched by their text and integer columns, floating-point columns to ``--tol``
(absolute), lists element-wise. Prints one line per table and exits 1 on any difference.
"""
from __future__ import annotations

import argparse
import sys

import duckdb
import numpy as np
import pandas as pd

SKIP_COLUMNS = {"run_id", "started_at", "finished_at", "created_at"}


def newest_run(con: duckdb.DuckDBPyConnection, dataset: str) -> str:
    row = con.execute("SELECT run_id FROM runs WHERE dataset_id = ? AND kind = 'audit' "
                      "ORDER BY started_at DESC LIMIT 1", [dataset]).fetchone()
    if row is None:
        sys.exit(f"no audit run of dataset {dataset!r}")
    return row[0]


def run_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute("SELECT table_name FROM information_schema.columns WHERE column_name = 'run_id' "
                       "AND table_name <> 'runs' ORDER BY table_name").fetchall()
    return [r[0] for r in rows]


def table(con: duckdb.DuckDBPyConnection, name: str, run_id: str) -> pd.DataFrame:
    # the table name comes from information_schema, not from user input
    frame = con.execute(f'SELECT * FROM "{name}" WHERE run_id = ?', [run_id]).fetchdf()
    frame = frame[[c for c in frame.columns if c not in SKIP_COLUMNS]]
    keys = [c for c in frame.columns if frame[c].dtype == object or pd.api.types.is_string_dtype(frame[c])
            or pd.api.types.is_integer_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c])]
    sortable = [c for c in keys if frame[c].map(lambda v: isinstance(v, (str, int, bool, np.integer, np.bool_))
                                                 or v is None or v is pd.NA).all()]
    return frame.sort_values(sortable, kind="stable").reset_index(drop=True) if sortable else frame


def differences(a: pd.DataFrame, b: pd.DataFrame, tol: float) -> list[str]:
    if list(a.columns) != list(b.columns):
        return [f"columns differ: {list(a.columns)} vs {list(b.columns)}"]
    if len(a) != len(b):
        return [f"{len(a)} rows vs {len(b)}"]
    out = []
    for c in a.columns:
        x, y = a[c], b[c]
        if pd.api.types.is_float_dtype(x):
            xv, yv = x.to_numpy(float), y.to_numpy(float)
            same_nan = np.isnan(xv) == np.isnan(yv)
            gap = np.nanmax(np.abs(xv - yv)) if len(xv) and not np.isnan(xv).all() else 0.0
            if not same_nan.all() or gap > tol:
                out.append(f"{c}: max |diff| {gap:.3g}")
        else:
            def norm(v):
                if isinstance(v, (list, np.ndarray)):
                    return tuple(np.round(np.asarray(v, dtype=float), 12).tolist())
                return None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v
            if not all(norm(p) == norm(q) for p, q in zip(x, y)):
                out.append(f"{c}: values differ")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--dataset", default="simulated-reference")
    ap.add_argument("--tol", type=float, default=1e-12)
    args = ap.parse_args()
    a = duckdb.connect(args.before, read_only=True)
    b = duckdb.connect(args.after, read_only=True)
    ra, rb = newest_run(a, args.dataset), newest_run(b, args.dataset)
    bad = 0
    for name in run_tables(a):
        ta, tb = table(a, name, ra), table(b, name, rb)
        diff = differences(ta, tb, args.tol)
        bad += bool(diff)
        print(f"{name:28s} {len(ta):>9,d} rows  " + ("same" if not diff else "DIFFERENT: " + "; ".join(diff)))
    print(f"{ra} vs {rb}: " + ("equal to %g" % args.tol if not bad else f"{bad} table(s) differ"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
