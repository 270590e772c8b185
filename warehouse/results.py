"""Storing audit runs and their results (writer side)."""
from __future__ import annotations

import hashlib
import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from warehouse import queries
from warehouse.compare import result_tables
from warehouse.db import transaction
from warehouse.ingest import insert_rows



def now() -> datetime:
    """The current UTC time as a naive datetime (how runs are timestamped)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def dataset_fingerprint(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str:
    """sha256 over the (kind, file sha256) of every ingest of the dataset: changes when the data
    changes, not when the same files are ingested again."""
    parts = queries.fetch_df(con, "dataset_fingerprint_parts", [dataset_id])
    h = hashlib.sha256()
    for kind, sha in parts.itertuples(index=False):
        h.update(f"{kind}:{sha}\n".encode())
    # detector runs store predictions without an ingest: include them too
    h.update(str(queries.fetch_df(con, "predictions_fingerprint", [dataset_id]).iloc[0, 0]).encode())
    return h.hexdigest()


def code_version() -> str:
    """qlb's version and, when run from a git checkout, the commit."""
    from qlb import __version__
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parent, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return f"{__version__}+{commit}" if commit else __version__


def store_run(con: duckdb.DuckDBPyConnection, *, run_id: str, dataset_id: str, kind: str,
              parameters: dict[str, Any], fingerprint: str, started: datetime,
              tables: dict[str, pd.DataFrame], finished: bool = True) -> None:
    """One run and its result tables in one transaction. ``finished=False`` stores the run as
    still in progress (no ``finished_at``): its later stages follow with ``store_stage``."""
    with transaction(con):
        queries.execute(con, "insert_run", [run_id, dataset_id, kind, json.dumps(parameters, sort_keys=True),
                                            fingerprint, code_version(), False, started, now() if finished else None])
        _insert_tables(con, run_id, dataset_id, tables)


def store_stage(con: duckdb.DuckDBPyConnection, *, run_id: str, dataset_id: str, tables: dict[str, pd.DataFrame],
                finished: bool = False) -> None:
    """More result tables of a run in progress, in one transaction; ``finished`` marks the run done."""
    with transaction(con):
        _insert_tables(con, run_id, dataset_id, tables)
        if finished:
            queries.execute(con, "finish_run", [now(), run_id])


def drop_unfinished_runs(con: duckdb.DuckDBPyConnection, dataset_id: str) -> list[str]:
    """Delete the dataset's runs that never finished (a build stopped midway) with their rows;
    their ids."""
    ids = queries.fetch_df(con, "unfinished_runs", [dataset_id])["run_id"].tolist()
    if ids:
        with transaction(con):
            for table in result_tables(con) + ["runs"]:
                con.execute(f'DELETE FROM "{table}" WHERE list_contains(?, run_id)', [ids])  # the schema's own tables
    return ids


def _insert_tables(con: duckdb.DuckDBPyConnection, run_id: str, dataset_id: str,
                   tables: dict[str, pd.DataFrame]) -> None:
    for table, frame in tables.items():
        frame = frame.copy()
        frame.insert(0, "dataset_id", dataset_id)
        frame.insert(0, "run_id", run_id)
        insert_rows(con, table, frame)
