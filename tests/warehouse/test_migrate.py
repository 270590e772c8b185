"""A warehouse written by an older qlb: `qlb migrate` brings it up to date and keeps its data
(here: migration 010, native responses without a primary-key index, still one row per key), and
the dashboard, which only reads, says what to run instead of showing a traceback."""
from __future__ import annotations

import shutil

import duckdb
from streamlit.testing.v1 import AppTest

from qlb.cli import main
from tests.conftest import ROOT, native, two_pairs, write_lines
from warehouse import db
from warehouse.ingest import IngestRequest, ingest_file


def _version_9(tmp_path):
    """A warehouse at schema version 9 (the migrations before 010) holding two responses."""
    older = tmp_path / "migrations"
    older.mkdir()
    for f in (ROOT / "warehouse" / "migrations").glob("*.sql"):
        if int(f.name[:3]) < 10:
            shutil.copy(f, older / f.name)
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    assert db.migrate(con, older) == 9
    worlds = write_lines(tmp_path / "w.jsonl", two_pairs())
    ingest_file(con, IngestRequest("worlds", worlds, "d"))
    ingest_file(con, IngestRequest("responses", write_lines(tmp_path / "r.jsonl", [native("m", "w1"), native("m", "w2")]),
                                   "d"))
    con.close()
    return path


def test_qlb_migrate_brings_an_old_warehouse_up_to_date_and_keeps_its_rows(tmp_path, capsys):
    path = _version_9(tmp_path)
    assert main(["migrate", "--warehouse", str(path)]) == 0
    assert capsys.readouterr().out.strip() == f"{path}: schema version {db.latest_version()} (was 9)"
    assert main(["migrate", "--warehouse", str(path)]) == 0
    assert "(already current)" in capsys.readouterr().out
    with db.writer(path) as con:
        assert con.execute("SELECT model, world_id FROM responses ORDER BY world_id").fetchall() == \
               [("m", "w1"), ("m", "w2")]
        again = write_lines(tmp_path / "again.jsonl", [native("m", "w1"), native("m", "w3"), native("m", "w3")])
        result = ingest_file(con, IngestRequest("responses", again, "d"))
        assert [r.reason for r in result.report.rejects] == [          # w1 as stored: skipped, not rejected
            "duplicate response for model 'm' and world 'w3' (the first is kept)"]
        assert result.report.already_stored == 1
        assert con.execute("SELECT count(*), count(DISTINCT world_id) FROM responses").fetchone() == (3, 3)


def test_qlb_migrate_without_a_warehouse_says_so(tmp_path, capsys):
    assert main(["migrate", "--warehouse", str(tmp_path / "none.duckdb")]) == 1
    assert "no warehouse here yet" in capsys.readouterr().err


def test_the_dashboard_on_an_old_warehouse_says_to_run_qlb_migrate(tmp_path, monkeypatch):
    monkeypatch.setenv("QLB_WAREHOUSE", str(_version_9(tmp_path)))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception
    assert any("qlb migrate" in e.value for e in at.error)
    from dashboard.data_access import release_readers
    release_readers()
