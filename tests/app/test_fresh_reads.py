"""A page never shows an older run or count than the warehouse holds: a write by another process
(`qlb collect`, `qlb ingest`, `qlb audit`) is seen on the next page run, not when the cache's TTL
(up to ten minutes) runs out."""
from __future__ import annotations

import shutil

from streamlit.testing.v1 import AppTest

from dashboard import data_access
from tests.conftest import ROOT
from warehouse.db import writer
from warehouse.ingest import IngestRequest, ingest_file

APP = str(ROOT / "app.py")


def _worlds_of_a_new_dataset(demo_warehouse, tmp_path):
    """A few of the demo's worlds as a file (to load into a new dataset)."""
    source = next(demo_warehouse.parent.glob("simulated_exports/seed_*/worlds.jsonl"))
    lines = source.read_text(encoding="utf-8").splitlines()[:4]
    target = tmp_path / "worlds.jsonl"
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def test_forget_if_written_sees_a_write_and_only_a_write(demo_warehouse, tmp_path):
    path = tmp_path / "qlb.duckdb"
    shutil.copy(demo_warehouse, path)
    before = data_access.datasets(str(path))
    assert data_access.forget_if_written(str(path)) is False            # first look: nothing to forget
    assert data_access.datasets(str(path)).equals(before)
    assert data_access.forget_if_written(str(path)) is False            # reading changes nothing
    with writer(path) as con:
        ingest_file(con, IngestRequest("worlds", _worlds_of_a_new_dataset(demo_warehouse, tmp_path), "fresh"))
    assert "fresh" not in set(data_access.datasets(str(path))["dataset_id"])       # the cache, until a page run
    assert data_access.forget_if_written(str(path)) is True
    assert "fresh" in set(data_access.datasets(str(path))["dataset_id"])
    data_access.release_readers()


def test_a_dataset_loaded_by_another_process_is_in_the_next_page_run(demo_warehouse, tmp_path, monkeypatch):
    path = tmp_path / "qlb.duckdb"
    shutil.copy(demo_warehouse, path)
    monkeypatch.setenv("QLB_WAREHOUSE", str(path))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    picker = at.sidebar.selectbox[0]
    assert "fresh" not in picker.options
    with writer(path) as con:                 # the page run is over: its read handle is closed
        ingest_file(con, IngestRequest("worlds", _worlds_of_a_new_dataset(demo_warehouse, tmp_path), "fresh"))
    at.run()
    assert not at.exception
    assert any("fresh" in option for option in at.sidebar.selectbox[0].options)
    data_access.release_readers()
