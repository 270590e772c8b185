"""Connections and schema versioning.

One read-write handle per writing process (``open_writer``), read-only handles for pages
(``open_reader``). A fresh file gets ``schema.sql``; an older one gets the forward migrations in
``warehouse/migrations`` (``NNN_description.sql``), each applied in one transaction.
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Iterator

import duckdb

DEFAULT_PATH = "warehouse/qlb.duckdb"
ENV_VAR = "QLB_WAREHOUSE"


class WarehouseError(RuntimeError):
    """A warehouse problem a user can act on (missing file, locked file, newer schema)."""


def default_path() -> str:
    """The warehouse file: ``$QLB_WAREHOUSE``, else ``warehouse/qlb.duckdb``."""
    return os.environ.get(ENV_VAR) or DEFAULT_PATH


def _sql_text(name: str) -> str:
    return resources.files("warehouse").joinpath(name).read_text("utf-8")


def schema_version_of_file() -> int:
    """The schema_version that ``schema.sql`` declares."""
    m = re.search(r"schema_version:\s*(\d+)", _sql_text("schema.sql"))
    assert m, "schema.sql must declare its schema_version"
    return int(m.group(1))


def migrations(directory: Path | None = None) -> list[tuple[int, str, str]]:
    """(version, name, sql) for every forward migration, in version order."""
    if directory is None:
        base = resources.files("warehouse").joinpath("migrations")
        entries = [(p.name, p.read_text("utf-8")) for p in base.iterdir() if p.name.endswith(".sql")]
    else:
        entries = [(p.name, p.read_text("utf-8")) for p in Path(directory).glob("*.sql")]
    out = []
    for name, sql in entries:
        m = re.match(r"(\d+)_", name)
        if m:
            out.append((int(m.group(1)), name, sql))
    return sorted(out)


def latest_version(directory: Path | None = None) -> int:
    """The newest schema version: the highest of schema.sql's and the migrations'."""
    return max([schema_version_of_file()] + [v for v, _, _ in migrations(directory)])


def current_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The warehouse's schema version, or None when it has no schema_version table yet."""
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
    ).fetchone()[0]
    if not exists:
        return None
    row = con.execute("SELECT max(version) FROM schema_version").fetchone()
    return row[0]


def migrate(con: duckdb.DuckDBPyConnection, directory: Path | None = None) -> int:
    """Bring the schema to the latest version; return the version reached."""
    version = current_version(con)
    target = latest_version(directory)
    if version is None:
        con.begin()
        try:
            con.execute(_sql_text("schema.sql"))
            con.execute("INSERT INTO schema_version (version) VALUES (?)", [schema_version_of_file()])
            con.commit()
        except Exception:
            con.rollback()
            raise
        version = schema_version_of_file()
    if version > target:
        raise WarehouseError(f"warehouse schema version {version} is newer than this code ({target}); "
                             "upgrade qlb")
    for v, name, sql in migrations(directory):
        if v <= version:
            continue
        con.begin()
        try:
            con.execute(sql)
            con.execute("INSERT INTO schema_version (version) VALUES (?)", [v])
            con.commit()
        except Exception as exc:
            con.rollback()
            raise WarehouseError(f"migration {name} failed: {exc}") from exc
        version = v
    return version


def _connect(path: str | Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        msg = str(exc)
        if "lock" in msg.lower():
            raise WarehouseError(f"{path}: the warehouse is in use by another process "
                                 "(close the dashboard or the other qlb command and retry)") from exc
        raise WarehouseError(f"{path}: cannot open the warehouse: {msg}") from exc
    except duckdb.ConnectionException as exc:
        raise WarehouseError(f"{path}: already open in this process in another mode: {exc}") from exc


def open_writer(path: str | Path | None = None) -> duckdb.DuckDBPyConnection:
    """The read-write handle: creates the file and its folder if needed, migrates the schema."""
    path = Path(path or default_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    con = _connect(path, read_only=False)
    migrate(con)
    return con


def open_reader(path: str | Path | None = None) -> duckdb.DuckDBPyConnection:
    """A read-only handle for pages and reports. The file must exist and be at the latest schema."""
    path = Path(path or default_path())
    if not path.exists():
        raise WarehouseError(f"{path}: no warehouse here yet (run `qlb demo` or ingest a file)")
    con = _connect(path, read_only=True)
    version = current_version(con)
    if version != latest_version():
        con.close()
        raise WarehouseError(f"{path}: schema version {version}, this code expects {latest_version()}; "
                             "open it once with a qlb command to migrate")
    return con


@contextmanager
def writer(path: str | Path | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """The read-write handle (``open_writer``) for a ``with`` block, closed on exit."""
    con = open_writer(path)
    try:
        yield con
    finally:
        con.close()


@contextmanager
def reader(path: str | Path | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only handle (``open_reader``) for a ``with`` block, closed on exit."""
    con = open_reader(path)
    try:
        yield con
    finally:
        con.close()
