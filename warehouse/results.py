"""Storing audit runs and their results (writer side)."""
from __future__ import annotations

import hashlib
import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import pandas as pd

from warehouse import queries
from warehouse.compare import result_tables
from warehouse.db import transaction
from warehouse.ingest import insert_rows



def now() -> datetime:
    """The current UTC time as a naive datetime (how runs are timestamped)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def fingerprint_of(parts: list[tuple[str, str]], predictions: str) -> str:
    """The dataset fingerprint of the (kind, file sha256) of its ingests and its detector predictions' digest."""
    h = hashlib.sha256()
    for kind, sha in sorted(parts):
        h.update(f"{kind}:{sha}\n".encode())
    h.update(predictions.encode())          # detector runs store predictions without an ingest: they count too
    return h.hexdigest()


def dataset_fingerprint(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str:
    """sha256 over the (kind, file sha256) of every ingest of the dataset: changes when the data
    changes, not when the same files are ingested again."""
    parts = queries.fetch_df(con, "dataset_fingerprint_parts", [dataset_id])
    predictions = str(queries.fetch_df(con, "predictions_fingerprint", [dataset_id]).iloc[0, 0])
    return fingerprint_of(list(parts.itertuples(index=False, name=None)), predictions)


class RunIngests(NamedTuple):
    """The ingests a run read and those after it; ``exact`` when a prefix's fingerprint is the run's (else the
    split is by time, and a collection that was storing when the run started may sit on either side)."""
    read: pd.DataFrame
    after: pd.DataFrame
    exact: bool


def run_ingests(con: duckdb.DuckDBPyConnection, dataset_id: str, fingerprint: str, started: object,
                ingests: pd.DataFrame | None = None) -> RunIngests:
    """The dataset's ingests (``ingest_times``) split into those a run read and those that came after it: the
    oldest-first prefix whose fingerprint is the run's, when there is one (ingests are only ever added), else
    those finished by the run's start (a collection that stored more batches since has another digest now).
    ``ingests``: the dataset's ``ingest_times`` when the caller has them."""
    if ingests is None:
        ingests = queries.fetch_df(con, "ingest_times", [dataset_id])
    predictions = str(queries.fetch_df(con, "predictions_fingerprint", [dataset_id]).iloc[0, 0])
    parts = list(zip(ingests["kind"].astype(str), ingests["sha256"].astype(str)))
    for k in range(len(parts), -1, -1):
        if fingerprint_of(parts[:k], predictions) == fingerprint:
            return RunIngests(ingests.iloc[:k], ingests.iloc[k:], True)
    read = ingests["finished_at"] <= pd.Timestamp(started)
    return RunIngests(ingests[read], ingests[~read], False)


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


def drop_unfinished_runs(con: duckdb.DuckDBPyConnection, dataset_id: str, keep: str | None = None) -> list[str]:
    """Delete the dataset's runs that never finished (a build stopped midway) with their rows,
    except ``keep`` (the one being resumed); their ids."""
    ids = [i for i in queries.fetch_df(con, "unfinished_runs", [dataset_id])["run_id"].tolist() if i != keep]
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
