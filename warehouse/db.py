"""Connections, transactions and schema versioning.

DuckDB lets one process write a file or many processes read it, never both at once. So a
warehouse is shared by taking turns: pages hold a read-only handle only while a page run reads
(see ``dashboard/data_access.py``), and a writer that finds the file in use waits for it, bounded
(``QLB_WRITE_WAIT`` seconds, default 120), saying once what it waits for. A reader that meets a
write gets ``WarehouseBusy`` after a short wait, which pages turn into "being updated, retrying".

Every handle is opened with extension auto-install and auto-load off (a file is never a reason to
download code). A writer checks the file before anything is written: a file shorter than the
blocks its header declares (truncated, half-copied) is refused with one line. A fresh file gets
``schema.sql``; an older one gets the forward migrations in ``warehouse/migrations``
(``NNN_description.sql``), each applied in one transaction (``transaction``).
"""
from __future__ import annotations

import errno
import logging
import os
import re
import time
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Iterator

import duckdb

DEFAULT_PATH = "warehouse/qlb.duckdb"
ENV_VAR = "QLB_WAREHOUSE"
WAIT_ENV_VAR = "QLB_WRITE_WAIT"
DEFAULT_WRITE_WAIT = 120.0          # seconds a writer waits for readers (or another writer)
READ_WAIT = 2.0                     # seconds a reader waits for a write to finish before WarehouseBusy
HEADER_BYTES = 3 * 4096             # DuckDB's file header: one main header and two database headers
CONFIG = {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}

log = logging.getLogger(__name__)


class WarehouseError(RuntimeError):
    """A warehouse problem a user can act on (missing file, locked file, newer schema)."""


class WarehouseBusy(WarehouseError):
    """Another process (or this one) is writing the warehouse; try again shortly."""


def write_wait() -> float:
    """Seconds a writer waits for the file: ``$QLB_WRITE_WAIT`` or 120."""
    try:
        return max(0.0, float(os.environ.get(WAIT_ENV_VAR, DEFAULT_WRITE_WAIT)))
    except ValueError:
        return DEFAULT_WRITE_WAIT


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
        with transaction(con):
            con.execute(_sql_text("schema.sql"))
            con.execute("INSERT INTO schema_version (version) VALUES (?)", [schema_version_of_file()])
        version = schema_version_of_file()
    if version > target:
        raise WarehouseError(f"warehouse schema version {version} is newer than this code ({target}); "
                             "upgrade qlb")
    for v, name, sql in migrations(directory):
        if v <= version:
            continue
        try:
            with transaction(con):
                con.execute(sql)
                con.execute("INSERT INTO schema_version (version) VALUES (?)", [v])
        except WarehouseError:
            raise
        except duckdb.Error as exc:
            raise WarehouseError(f"migration {name} failed: {exc}") from exc
        version = v
    return version


def is_disk_full(exc: BaseException) -> bool:
    """Whether an error is the disk (or quota) running out of space."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return "no space left on device" in text or "disk quota exceeded" in text


@contextmanager
def threads_limited(con: duckdb.DuckDBPyConnection, threads: int) -> Iterator[duckdb.DuckDBPyConnection]:
    """DuckDB's worker threads set to ``threads`` for a ``with`` block, for work that runs queries
    from several Python threads at once (the bulk ingest's checkers: a query's own parallelism then
    only competes with the others for the same cores). Set back when the block ends normally, so
    that a commit after it writes in parallel again; after an error the transaction may be
    aborted, where a SET would fail and hide the cause: ``threads_restored``, entered outside the
    transaction, sets it back then."""
    before = con.execute("SELECT current_setting('threads')").fetchone()[0]
    con.execute("SET threads = ?", [threads])
    yield con
    con.execute("SET threads = ?", [before])


@contextmanager
def threads_restored(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """DuckDB's worker threads as they are now, set back when the block ends, an error included
    (enter it outside the transaction, see ``threads_limited``)."""
    before = con.execute("SELECT current_setting('threads')").fetchone()[0]
    try:
        yield con
    finally:
        con.execute("SET threads = ?", [before])


@contextmanager
def memory_limited(con: duckdb.DuckDBPyConnection, limit: str) -> Iterator[duckdb.DuckDBPyConnection]:
    """DuckDB's buffer memory capped at ``limit`` (a DuckDB size such as ``'128MB'``) for a
    ``with`` block, then reset to DuckDB's default (80% of the machine's memory; qlb sets it
    nowhere else). A large transaction fills that default with pages it could write out; under
    the cap it writes them to the file (an insert's row groups) or to ``<warehouse>.tmp`` (joins,
    sorts) instead."""
    con.execute("SET memory_limit = ?", [limit])
    try:
        yield con
    finally:
        con.execute("RESET memory_limit")


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """One all-or-nothing transaction. On any error it is rolled back (a rollback that cannot run,
    because the failed commit already ended the transaction, is not allowed to hide the cause) and
    the cause is raised; running out of disk space is raised as a WarehouseError that says so."""
    con.begin()
    try:
        yield con
        con.commit()
    except BaseException as exc:
        try:
            con.rollback()
        except duckdb.Error:
            pass                                    # no transaction left to roll back: the cause matters
        if is_disk_full(exc):
            raise WarehouseError(f"the disk is full ({exc}); nothing of this write was stored, free some space "
                                 "and run the command again") from exc
        raise


def _lock_holder(message: str) -> str:
    """DuckDB's 'Conflicting lock is held in <program> (PID n)' as a short phrase, if present."""
    m = re.search(r"Conflicting lock is held in (\S+) \(PID (\d+)\)", message)
    return f" (held by {Path(m.group(1)).name}, PID {m.group(2)})" if m else ""


def check_magic(path: Path) -> None:
    """Refuse an existing file that is not a DuckDB database (DuckDB writes ``DUCK`` at byte 8):
    handed, say, a SQLite file, DuckDB would try to load an extension to read it."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except FileNotFoundError:
        return
    if head and head[8:12] != b"DUCK":
        kind = "a SQLite database" if head.startswith(b"SQLite format 3") else "not a DuckDB file"
        raise WarehouseError(f"{path}: not a qlb warehouse ({kind}); point QLB_WAREHOUSE at a qlb warehouse "
                             "or at a new file name")


def _connect(path: str | Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    check_magic(Path(path))
    try:
        return duckdb.connect(str(path), read_only=read_only, config=CONFIG)
    except duckdb.IOException as exc:
        msg = str(exc)
        if "lock" in msg.lower():
            raise WarehouseBusy(f"{path}: the warehouse is in use by another process{_lock_holder(msg)}") from exc
        if any(k in msg.lower() for k in ("could not read enough bytes", "corrupt", "checksum")):
            raise WarehouseError(f"{path}: the warehouse file is damaged ({msg.splitlines()[0]}); nothing was "
                                 "written. Restore it from a copy, or move it away and rebuild") from exc
        raise WarehouseError(f"{path}: cannot open the warehouse: {msg}") from exc
    except duckdb.ConnectionException as exc:
        if "different configuration" in str(exc):       # this process holds the file in the other mode
            raise WarehouseBusy(f"{path}: the warehouse is being written by this process") from exc
        raise WarehouseError(f"{path}: cannot open the warehouse: {exc}") from exc
    except duckdb.Error as exc:
        raise WarehouseError(f"{path}: not a readable qlb warehouse: {exc}") from exc


def _connect_waiting(path: Path, read_only: bool, wait: float) -> duckdb.DuckDBPyConnection:
    """``_connect``, retried while the file is busy for up to ``wait`` seconds."""
    deadline = time.monotonic() + wait
    delay, told = 0.02, False
    while True:
        try:
            return _connect(path, read_only)
        except WarehouseBusy as exc:
            if time.monotonic() + delay > deadline:
                if read_only:
                    raise
                raise WarehouseBusy(f"{exc}; waited {wait:.0f} s for it (set {WAIT_ENV_VAR} to wait longer, "
                                    "or close the other qlb command)") from exc
            if not told and not read_only:
                log.warning("%s; waiting up to %.0f s for it to be released", exc, wait)
                told = True
            time.sleep(delay)
            delay = min(0.5, delay * 2)


def check_file(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Refuse a file cut short (truncated or half-copied): DuckDB would otherwise accept writes into
    it and fail later with 'Corrupt database file'. A sound file holds whole blocks after its
    headers, at least as many as are in use. Its header's total may count more: DuckDB cuts free
    blocks off the end of the file at a checkpoint and still counts them as free."""
    row = con.execute("SELECT block_size, used_blocks FROM pragma_database_size()").fetchone()
    if row is None or int(row[0]) <= 0:
        return
    block, used = int(row[0]), int(row[1])
    actual = path.stat().st_size
    needed = HEADER_BYTES + block * used
    if actual < needed or (actual - HEADER_BYTES) % block:
        raise WarehouseError(f"{path}: the warehouse file is damaged (truncated: {actual:,} bytes, not whole "
                             f"blocks of {block:,} bytes after its headers, or fewer than the {used:,} blocks "
                             "in use); nothing was written. Restore it from a copy, or move it away and rebuild")


def open_writer(path: str | Path | None = None, wait: float | None = None) -> duckdb.DuckDBPyConnection:
    """The read-write handle: creates the file and its folder if needed, checks the file, migrates
    the schema. Waits up to ``wait`` seconds (default ``write_wait()``) while others use the file."""
    path = Path(path or default_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    existed = path.exists() and path.stat().st_size > 0
    con = _connect_waiting(path, read_only=False, wait=write_wait() if wait is None else wait)
    try:
        if existed:
            check_file(con, path)
        migrate(con)
    except BaseException:
        con.close()
        raise
    return con


def open_reader(path: str | Path | None = None, wait: float = READ_WAIT) -> duckdb.DuckDBPyConnection:
    """A read-only handle for pages and reports. The file must exist and be at the latest schema.
    WarehouseBusy when a write holds the file for longer than ``wait`` seconds."""
    path = Path(path or default_path())
    if not path.exists():
        raise WarehouseError(f"{path}: no warehouse here yet (run `qlb demo` or ingest a file)")
    con = _connect_waiting(path, read_only=True, wait=wait)
    version = current_version(con)
    if version != latest_version():
        con.close()
        raise WarehouseError(f"{path}: schema version {version}, this version of qlb expects "
                             f"{latest_version()}; run `qlb migrate` once to bring it up to date")
    return con


def file_schema_version(path: str | Path) -> int | None:
    """The schema version a warehouse file holds (None: no schema yet), read without migrating."""
    con = _connect_waiting(Path(path), read_only=True, wait=READ_WAIT)
    try:
        return current_version(con)
    finally:
        con.close()


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
