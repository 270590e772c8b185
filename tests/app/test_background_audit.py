"""Issue #17 goal 1: while the audits run in the background (`qlb demo --background`), every page
shows how far they are, a page whose audit is not stored yet says it is coming (not "run qlb
audit"), and when the background audit fails the pages say so."""
from __future__ import annotations

import os
import shutil

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT
from warehouse import build_status

APP = str(ROOT / "app.py")


@pytest.fixture
def warehouse(demo_warehouse, tmp_path, monkeypatch):
    """A copy of the demo warehouse (no decoding run) whose status file says a build is running here."""
    path = tmp_path / "qlb.duckdb"
    shutil.copy(demo_warehouse, path)
    monkeypatch.setenv("QLB_WAREHOUSE", str(path))
    monkeypatch.chdir(ROOT)
    yield path
    from dashboard.data_access import release_readers
    release_readers()


def _status(path, **over):
    status = build_status.BuildStatus(dataset_id="simulated-reference", run_id="run-x", stage="decoding",
                                      stage_done=9, stage_total=27, fraction=0.31, eta_seconds=200.0,
                                      stored=["refusal"], pid=os.getpid())
    for k, v in over.items():
        setattr(status, k, v)
    build_status.write_status(path, status)


def test_a_running_background_audit_shows_on_every_page(warehouse):
    _status(warehouse)
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    bar = at.get("progress")
    assert bar and "running in the background" in bar[0].proto.text and "about 3 min left" in bar[0].proto.text
    # the stage in the audit's own words (the recovery audit's, not the code's "decoding")
    assert "in the background: secret recovery" in bar[0].proto.text and "decod" not in bar[0].proto.text
    at.switch_page("pages/recovery.py").run()
    assert not at.exception
    assert any("has not been stored yet" in i.value for i in at.info)
    assert not any("qlb audit" in i.value for i in at.info)


def test_no_bar_without_a_running_build(warehouse):
    _status(warehouse, state="done", fraction=1.0, stored=["refusal", "decoding", "utility", "defenses"])
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception and not at.get("progress")


def test_a_failed_background_audit_is_reported(warehouse):
    _status(warehouse, state="failed", error="disk full",
            command="qlb audit --in-stages --dataset simulated-reference --defense-models sim-alder")
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert any("background audit stopped" in w.value and "disk full" in w.value
               and "it keeps what is stored (refusal and QuasiLeak) and computes the rest" in w.value
               and "Start it again with ` qlb audit --in-stages --dataset simulated-reference --defense-models "
                   "sim-alder `" in w.value
               for w in at.warning)
