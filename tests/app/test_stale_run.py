"""A run whose dataset changed after it (a privacy board's walk-through: the only word of it had been a
bracketed clause): the Overview warns before its findings, and every audit page warns under its run
picker while that run is shown."""
from __future__ import annotations

import shutil

from tests.app.test_pages import opened
from tests.conftest import two_pairs, write_lines
from warehouse.db import writer
from warehouse.ingest import IngestRequest, ingest_file

DATASET = "simulated-reference"


def test_a_run_older_than_its_data_is_warned_about_on_the_overview_and_the_pages(demo_warehouse, tmp_path,
                                                                                monkeypatch):
    path = tmp_path / "qlb.duckdb"
    shutil.copy(demo_warehouse, path)
    with opened(path, "pages/refusal.py", monkeypatch) as at:            # the data as the run saw it: no warning
        assert not any("changed after run" in w.value for w in at.error)
    more = [w | {"world_id": f"late-{w['world_id']}", "pair_id": f"late-{w['pair_id']}"} for w in two_pairs()]
    with writer(path) as con:                                            # new worlds: the dataset changed
        ingest_file(con, IngestRequest("worlds", write_lines(tmp_path / "late.jsonl", more), DATASET))
    for page in ("pages/overview.py", "pages/refusal.py"):       # every audit page's picker is run_select's
        with opened(path, page, monkeypatch) as at:
            assert not at.exception, [e.value for e in at.exception]
            warned = [w.value for w in at.error if "changed after run" in w.value]
            assert len(warned) == 1 and "Run qlb audit again before relying on them" in warned[0], page
            assert "since it started: worlds loaded from late.jsonl (" in warned[0].replace("\\", ""), warned[0]


def test_real_answers_to_generated_cases_are_labelled_as_such_in_the_sidebar(demo_warehouse, tmp_path, monkeypatch):
    """A dataset of the auditor's own whose worlds qlb generated (`qlb demo --ontology`) and whose answers are
    real: the sidebar said "user data" beside a banner saying the worlds were generated."""
    from qlb.simulate.tuple_sim import SIMULATED_NOTE
    path = tmp_path / "qlb.duckdb"
    shutil.copy(demo_warehouse, path)
    generated = [w | {"diagnostic_note": SIMULATED_NOTE + w["diagnostic_note"]} for w in two_pairs()]
    with writer(path) as con:
        ingest_file(con, IngestRequest("worlds", write_lines(tmp_path / "mine.jsonl", generated), "mine"))
    with opened(path, "pages/overview.py", monkeypatch, query={"dataset": "mine"}) as at:
        assert not at.exception, [e.value for e in at.exception]
        shown = " ".join(m.value for m in at.sidebar.markdown)
    assert "real answers · simulated cases" in shown and "user data" not in shown
