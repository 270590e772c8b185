"""The ontology each dataset uses (OWN_TASK.md): stored once per version, attached per dataset.

A dataset with no stored ontology uses the packaged TUPLE ontology (the demo is unchanged). An
ontology file is validated whole before anything is written (``OntologyError`` lists every
problem); a dataset's ontology can be replaced only while the dataset has no worlds, because its
worlds were validated against the ontology in force when they were ingested.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache

import duckdb

from qlb.records.ontology import Ontology, OntologyError, load_ontology, parse_ontology, tuple_ontology_sha256
from qlb.records.schemas import dataset_name_problem
from warehouse import queries
from warehouse.db import transaction


@dataclass(frozen=True)
class StoredOntology:
    """A dataset's own ontology as stored: its version, the file it came from, when it was attached."""

    dataset_id: str
    sha256: str
    source: str | None
    ingested_at: datetime
    body: str


@lru_cache(maxsize=32)
def parse_stored(body: str, source: str | None) -> Ontology:
    """The Ontology of a stored body (cached: one parse per version and process)."""
    return parse_ontology(body, source or "stored ontology")


def stored_ontology(con: duckdb.DuckDBPyConnection, dataset_id: str) -> StoredOntology | None:
    """The dataset's own ontology row, or None when it uses the TUPLE default."""
    try:
        rows = con.execute(queries.sql("dataset_ontology"), [dataset_id]).fetchall()
    except duckdb.CatalogException:   # a warehouse from before migration 009: every dataset is TUPLE
        return None
    if not rows:
        return None
    sha, body, source, ingested_at = rows[0]
    return StoredOntology(dataset_id, sha, source, ingested_at, body)


def dataset_ontology(con: duckdb.DuckDBPyConnection, dataset_id: str) -> Ontology:
    """The ontology ``dataset_id`` uses: its stored one, else the TUPLE ontology. Read-only."""
    row = stored_ontology(con, dataset_id)
    return load_ontology() if row is None else parse_stored(row.body, row.source)


def dataset_ontology_sha256(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str:
    """The version of the ontology ``dataset_id`` uses (the TUPLE sha256 when it has none)."""
    row = stored_ontology(con, dataset_id)
    return tuple_ontology_sha256() if row is None else row.sha256


class OntologyInUse(OntologyError):
    """A valid ontology the dataset cannot take, because its worlds were validated against another
    one: not a fault of the file (the command line exits 2, as for a --dataset that cannot be used)."""


def unused_dataset_name(con: duckdb.DuckDBPyConnection, dataset_id: str) -> str:
    """A dataset name like ``dataset_id`` that no dataset has yet (``NAME-2``, ``NAME-3``, ...)."""
    n = 2
    while not queries.fetch_df(con, "dataset_by_id", [f"{dataset_id}-{n}"]).empty:
        n += 1
    return f"{dataset_id}-{n}"


def replace_problem(con: duckdb.DuckDBPyConnection, dataset_id: str, sha256: str, source: str) -> str | None:
    """Why ``dataset_id`` cannot take the ontology version ``sha256`` (one problem line, with what
    to do: load it into a new dataset, named with --dataset), or None when it can: a dataset with
    worlds keeps the ontology in force. Read-only."""
    current = stored_ontology(con, dataset_id)
    in_force = current.sha256 if current is not None else tuple_ontology_sha256()
    if in_force == sha256:
        return None
    try:
        worlds = int(queries.fetch_df(con, "dataset_world_count", [dataset_id])["n"].iloc[0])
    except duckdb.CatalogException:
        worlds = 0
    if worlds:
        return (f"{source}: dataset {dataset_id!r} already has {worlds:,} world{'' if worlds == 1 else 's'}, "
                "validated against the ontology it uses, so that ontology stays; to use this one, load it into a "
                f"new dataset with --dataset NAME (say --dataset {unused_dataset_name(con, dataset_id)}), then "
                "ingest the worlds there")
    return None


def create_dataset(con: duckdb.DuckDBPyConnection, dataset_id: str, simulated: bool = False,
                   description: str | None = None, seed: int | None = None) -> None:
    """Add the dataset ``dataset_id`` (it must not exist yet): the one way every command and page
    creates one, so each applies the name rule (``dataset_name_problem``: ValueError, nothing
    written, for an empty, padded or over-long name)."""
    problem = dataset_name_problem(dataset_id)
    if problem:
        raise ValueError(f"dataset {dataset_id!r}: {problem}")
    queries.execute(con, "insert_dataset", [dataset_id, simulated, description, seed])


def store_ontology(con: duckdb.DuckDBPyConnection, dataset_id: str, text: str, source: str) -> tuple[str, bool]:
    """Validate ``text`` and make it the ontology of ``dataset_id`` (created if new), in one
    transaction. Returns (sha256, changed): ``changed`` is False when the dataset already used
    this version. OntologyError (nothing stored) for a file that breaks a rule; OntologyInUse
    when the dataset has worlds and uses another ontology."""
    onto = parse_ontology(text, source)
    sha = onto.sha256
    with transaction(con):
        current = stored_ontology(con, dataset_id)
        if current is not None and current.sha256 == sha:
            return sha, False
        refused = replace_problem(con, dataset_id, sha, source)
        if refused:
            raise OntologyInUse([refused])
        if queries.fetch_df(con, "dataset_by_id", [dataset_id]).empty:
            create_dataset(con, dataset_id)
        queries.execute(con, "insert_ontology_if_absent", [sha, onto.to_json(), source, sha])
        queries.execute(con, "set_dataset_ontology",
                        [dataset_id, sha, datetime.now(timezone.utc).replace(tzinfo=None)])
    in_force = current.sha256 if current is not None else tuple_ontology_sha256()
    return sha, in_force != sha
