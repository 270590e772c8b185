"""Are two stored audit runs the same numbers? For refactors that must not change behaviour and
for runs computed elsewhere (a Dask cluster) that must equal a local one.

Every table with a ``run_id`` column is compared: rows matched by their text, integer and
boolean columns, floating-point columns to an absolute tolerance, lists element-wise; the run's
own identity and timestamps are left out.
"""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from warehouse import queries

SKIP_COLUMNS = frozenset({"run_id", "started_at", "finished_at", "created_at"})


def newest_audit_run(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str | None:
    """The newest finished audit run of the dataset, or None. A run an audit in stages is still
    storing, or left when it was stopped midway, holds only some of its tables: it is no run to
    compare (``unfinished_audit_runs`` names those newer than this one)."""
    runs = queries.fetch_df(con, "newest_audit_run", [dataset_id])
    finished = runs.loc[runs["finished"], "run_id"]
    return None if finished.empty else str(finished.iloc[0])


def unfinished_audit_runs(con: duckdb.DuckDBPyConnection, dataset_id: str) -> list[str]:
    """The dataset's audit runs started after its newest finished one that have not finished,
    newest first (an audit in stages still running, or stopped midway)."""
    runs = queries.fetch_df(con, "newest_audit_run", [dataset_id])
    newer = []
    for run_id, finished in zip(runs["run_id"], runs["finished"]):
        if finished:
            break
        newer.append(str(run_id))
    return newer


def result_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The tables that hold a run's results, by name."""
    return queries.fetch_df(con, "run_result_tables")["table_name"].tolist()


def run_table(con: duckdb.DuckDBPyConnection, table: str, run_id: str) -> pd.DataFrame:
    """One result table's rows of the run, without identity and timestamp columns, in a
    canonical row order (sorted by the columns that hold plain keys)."""
    if table not in result_tables(con):
        raise ValueError(f"{table!r} is not a result table")
    # the name is one of the schema's own tables (checked above); the run id is bound
    frame = con.execute(f'SELECT * FROM "{table}" WHERE run_id = ?', [run_id]).df()
    frame = frame[[c for c in frame.columns if c not in SKIP_COLUMNS]]
    keys = [c for c in frame.columns if frame[c].dtype == object or pd.api.types.is_string_dtype(frame[c])
            or pd.api.types.is_integer_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c])]
    sortable = [c for c in keys if frame[c].map(lambda v: isinstance(v, (str, int, bool, np.integer, np.bool_))
                                                 or v is None or v is pd.NA).all()]
    return frame.sort_values(sortable, kind="stable").reset_index(drop=True) if sortable else frame


def table_differences(a: pd.DataFrame, b: pd.DataFrame, tol: float = 1e-12) -> list[str]:
    """What differs between two canonical tables (``run_table``): columns, row counts, the
    largest absolute gap of a float column above ``tol``, or other values; empty when equal."""
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
        elif not all(_plain(p) == _plain(q) for p, q in zip(x, y)):
            out.append(f"{c}: values differ")
    return out


def _plain(v):
    if isinstance(v, (list, np.ndarray)):
        return tuple(np.round(np.asarray(v, dtype=float), 12).tolist())
    return None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v


def compare_runs(con_a: duckdb.DuckDBPyConnection, run_a: str, con_b: duckdb.DuckDBPyConnection, run_b: str,
                 tol: float = 1e-12) -> dict[str, tuple[int, list[str]]]:
    """Per result table of ``con_a``: (run A's row count, what differs in run B); an empty list
    where the two runs hold the same numbers to ``tol``."""
    out = {}
    for name in result_tables(con_a):
        ta, tb = run_table(con_a, name, run_a), run_table(con_b, name, run_b)
        out[name] = (len(ta), table_differences(ta, tb, tol))
    return out
