"""The dashboard and the command line share one warehouse file (issue 20, holes 1 and 6): pages
hold no handle between page runs, a writer waits for readers (bounded, saying so), a page that
meets a write says "being updated" and retries; a damaged or foreign file is refused before
anything is written; a full disk is named as such."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT, two_pairs, write_lines
from warehouse.db import HEADER_BYTES, WarehouseBusy, WarehouseError, open_reader, open_writer, transaction, writer

HOLD = """
import sys, time
from warehouse.db import open_reader, open_writer
con = (open_writer if sys.argv[2] == "write" else open_reader)(sys.argv[1])
print("held", flush=True)
time.sleep(float(sys.argv[3]))
con.close()
"""


def hold(path: Path, mode: str, seconds: float) -> subprocess.Popen:
    """Another process holding the warehouse (``read`` or ``write``) for ``seconds``."""
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(path), mode, str(seconds)], cwd=ROOT,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "held"
    return p


@pytest.fixture
def small(tmp_path) -> Path:
    path = tmp_path / "wh.duckdb"
    with writer(path):
        pass
    return path


def test_a_writer_waits_for_a_reader_then_writes(small, caplog):
    reader = hold(small, "read", 1.5)
    t0 = time.monotonic()
    with caplog.at_level("WARNING"):
        con = open_writer(small, wait=30)
    waited = time.monotonic() - t0
    con.close()
    reader.wait()
    assert waited > 0.5
    assert "waiting up to 30 s" in caplog.text and f"PID {reader.pid}" in caplog.text


def test_a_writer_gives_up_after_its_wait_naming_the_other_process(small):
    reader = hold(small, "read", 5)
    try:
        with pytest.raises(WarehouseBusy, match=rf"in use by another process \(held by .*PID {reader.pid}\).*"
                                                r"waited 0 s.*QLB_WRITE_WAIT"):
            open_writer(small, wait=0.3)
    finally:
        reader.kill()


def test_a_reader_meeting_a_long_write_is_told_busy(small):
    w = hold(small, "write", 5)
    try:
        with pytest.raises(WarehouseBusy, match="in use by another process"):
            open_reader(small, wait=0.2)
    finally:
        w.kill()


def test_the_dashboard_releases_the_file_between_page_runs(demo_warehouse, tmp_path, monkeypatch):
    """Hole 1: after a page view a CLI writer gets the file at once (it used to fail with 'in use'
    until the dashboard stopped)."""
    path = tmp_path / "shared.duckdb"
    shutil.copy(demo_warehouse, path)
    monkeypatch.setenv("QLB_WAREHOUSE", str(path))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    out = subprocess.run([sys.executable, "-c", HOLD, str(path), "write", "0"], cwd=ROOT, capture_output=True,
                         text=True, env={**os.environ, "QLB_WRITE_WAIT": "0"}, timeout=60)
    assert out.returncode == 0, out.stderr


def test_a_page_that_meets_a_write_waits_and_then_renders(demo_warehouse, tmp_path, monkeypatch):
    """Hole 1: while another process writes, the page says the warehouse is being updated and
    retries (no traceback); once the write ends it renders normally."""
    import dashboard.routing as routing
    path = tmp_path / "shared.duckdb"
    shutil.copy(demo_warehouse, path)
    monkeypatch.setenv("QLB_WAREHOUSE", str(path))
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(routing, "BUSY_RETRY_SECONDS", 0.5)
    shown: list[str] = []
    real = routing._wait_for_writer
    monkeypatch.setattr(routing, "_wait_for_writer", lambda exc: (shown.append(str(exc)), real(exc)))
    w = hold(path, "write", 4)
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    finally:
        w.kill()
    assert not at.exception, [e.value for e in at.exception]
    assert shown and "in use by another process" in shown[0]
    assert at.title[0].value == "Overview"


def test_cli_ingest_while_the_dashboard_reads(demo_warehouse, tmp_path, monkeypatch):
    """Two processes: pages render again and again while `qlb ingest` writes; both succeed."""
    import dashboard.routing as routing
    from qlb.simulate.tuple_sim import simulate_worlds, write_jsonl
    path = tmp_path / "shared.duckdb"
    shutil.copy(demo_warehouse, path)
    worlds = tmp_path / "worlds.jsonl"
    write_jsonl(worlds, simulate_worlds(11))
    monkeypatch.setenv("QLB_WAREHOUSE", str(path))
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(routing, "BUSY_RETRY_SECONDS", 0.3)
    ingest = subprocess.Popen([sys.executable, "-m", "qlb.cli", "ingest", "worlds", str(worlds), "--dataset",
                               "second", "--warehouse", str(path)], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    renders = 0
    while ingest.poll() is None or renders < 2:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
        assert not at.exception, [e.value for e in at.exception]
        renders += 1
    assert ingest.wait(timeout=120) == 0, ingest.stderr.read()
    with open_reader(path) as con:
        assert con.execute("SELECT count(*) FROM worlds WHERE dataset_id = 'second'").fetchone()[0] == 1440


def test_a_truncated_warehouse_is_refused_before_anything_is_written(small, tmp_path):
    """Hole 6: a half-truncated file used to accept writes (exit 0) and fail later as corrupt."""
    size = small.stat().st_size
    os.truncate(small, size // 2)
    before = small.read_bytes()
    with pytest.raises(WarehouseError, match="the warehouse file is damaged"):
        open_writer(small)
    assert small.read_bytes() == before
    worlds = write_lines(tmp_path / "w.jsonl", two_pairs())       # lines to store (an empty file opens nothing)
    out = subprocess.run([sys.executable, "-m", "qlb.cli", "ingest", "worlds", str(worlds), "--dataset", "d",
                          "--warehouse", str(small)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "damaged" in out.stderr and "Traceback" not in out.stderr
    assert small.read_bytes() == before


def test_a_sqlite_file_is_not_opened_and_nothing_is_downloaded(tmp_path):
    """Hole 6: a SQLite header made DuckDB try to install its sqlite extension."""
    import sqlite3
    path = tmp_path / "not_a_warehouse.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE a (x)")
    con.commit()
    con.close()
    with pytest.raises(WarehouseError, match="not a qlb warehouse \\(a SQLite database\\)"):
        open_writer(path)
    with pytest.raises(WarehouseError, match="not a qlb warehouse"):
        open_reader(path)


def test_extension_autoload_is_off(small):
    with open_reader(small) as con:
        settings = dict(con.execute("SELECT name, value FROM duckdb_settings() WHERE name IN "
                                    "('autoinstall_known_extensions', 'autoload_known_extensions')").fetchall())
    assert settings == {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}


class _FullDisk:
    """A connection whose commit fails for lack of space; DuckDB has then already ended the
    transaction, so the rollback fails too (what used to hide the cause)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def begin(self):
        self.calls.append("begin")

    def commit(self):
        raise duckdb.IOException('IO Error: Could not write file "wh.duckdb.wal": No space left on device')

    def rollback(self):
        raise duckdb.TransactionException("TransactionContext Error: cannot rollback - no transaction is active")


def test_a_full_disk_is_named_as_such():
    with pytest.raises(WarehouseError, match="the disk is full .*No space left on device.*nothing of this write"):
        with transaction(_FullDisk()):
            pass


def test_a_failed_transaction_raises_its_own_cause(small):
    with writer(small) as con:
        with pytest.raises(duckdb.CatalogException):
            with transaction(con):
                con.execute("CREATE TABLE t (x INT)")
                con.execute("SELECT * FROM no_such_table")
        assert con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 't'").fetchone()[0] == 0


def test_a_file_shorter_than_its_header_declares_is_refused(small):
    """A truncation DuckDB itself still opens (the cut falls in free space) is caught by the size check."""
    with writer(small) as con:
        total, block = con.execute("SELECT total_blocks, block_size FROM pragma_database_size()").fetchone()
    os.truncate(small, small.stat().st_size - block // 2)
    with pytest.raises(WarehouseError, match="the warehouse file is damaged"):
        open_writer(small)


def test_a_file_duckdb_shortened_itself_is_accepted(tmp_path):
    """DuckDB cuts free blocks off the end at a checkpoint but its header still counts them: such a
    file (left by an ordinary `qlb collect` run) was refused as damaged by every later write."""
    path = tmp_path / "wh.duckdb"
    with writer(path) as con:
        con.execute("CHECKPOINT")                   # the schema's blocks first, the big table's after them
        con.execute("CREATE TABLE big AS SELECT range AS i, random() AS r FROM range(2000000)")
        con.execute("CHECKPOINT")
        con.execute("DROP TABLE big")
        con.execute("CHECKPOINT")
    con = duckdb.connect(str(path), read_only=True)
    total, free, block = con.execute("SELECT total_blocks, free_blocks, block_size FROM pragma_database_size()").fetchone()
    con.close()
    assert path.stat().st_size < HEADER_BYTES + total * block and free > 0      # the state that was refused
    with writer(path) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS x")
    with open_reader(path) as con:
        assert con.execute("SELECT x FROM t").fetchone() == (1,)
