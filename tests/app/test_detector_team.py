"""A detector team's dataset: a QuasiLeak corpus and no decision task, with a simulated detector, a real one,
an endpoint detector whose every request failed and a predictions file that covers three test documents.

A reviewer evaluating their own detector on the real court-case corpus found the failed detector sitting on
the leaderboard, the Overview and the report as one that ran and found nothing; the simulated detector in
the report as a real one; a decision task (the TUPLE domains) in the report of a dataset that has none;
and the Overview's scope "This run audited no decision model. Not run: refusal, recovery, ..."."""
from __future__ import annotations

import json
from html import unescape

import pytest

from qlb.present.coverage import coverage_on, coverage_sentence
from qlb.simulate.quasileak_sim import simulate_corpus
from tests.app.test_pages import frames, opened, stats, texts
from tests.conftest import write_lines
from warehouse.db import reader, writer
from warehouse.ingest import IngestRequest, ingest_file

DATASET = "court"
BROKEN = "chat:broken"
PARTIAL = "acme-partial"


@pytest.fixture(scope="module")
def corpus_only(tmp_path_factory):
    from qlb.quasileak.detectors import SIMULATED_DETECTORS, builtin_detectors
    from qlb.runs.audit import run_audits
    from qlb.runs.quasileak import run_detector
    folder = tmp_path_factory.mktemp("detector-team")
    docs = [{k: v for k, v in d.items() if k not in ("simulated", "profile_id")} for d in simulate_corpus(7)]
    test = [d for d in docs if d["split"] == "test"][:24]
    write_lines(folder / "corpus.jsonl", test + [d for d in docs if d["split"] != "test"][:6])
    write_lines(folder / "preds.jsonl", [{"doc_id": d["doc_id"], "detector": PARTIAL, "groups": []} for d in test[:3]])
    wh = folder / "qlb.duckdb"
    with writer(wh) as con:
        ingest_file(con, IngestRequest("corpus", folder / "corpus.jsonl", DATASET))
        ingest_file(con, IngestRequest("predictions", folder / "preds.jsonl", DATASET))
        for detector in (SIMULATED_DETECTORS[0], builtin_detectors()["pattern-pii"]):
            run_detector(con, DATASET, detector, split="test")
        # an endpoint detector that failed on every test document, as stored by runs before they stopped it
        con.execute("INSERT INTO ql_predictions (dataset_id, detector, doc_id, groups, n_groups, ingest_id, line_no, "
                    "failure) SELECT dataset_id, ?, doc_id, '[]', 0, 0, 0, 'request failed: HTTP 500 GPU node drained' "
                    "FROM ql_documents WHERE dataset_id = ? AND split = 'test'", [BROKEN, DATASET])
        con.execute("INSERT INTO ql_detectors (dataset_id, detector, simulated, description) VALUES (?, ?, false, '')",
                    [DATASET, BROKEN])
        run_audits(con, DATASET)
    return wh


def _coverage(wh, run_id=None):
    from qlb.runs.report import load_run
    with reader(wh) as con:
        return coverage_on(load_run(con, run_id, DATASET).ql)


def test_coverage_per_detector_counts_failed_and_missing_documents(corpus_only):
    on = _coverage(corpus_only)
    assert on.loc[BROKEN].to_dict() == {"documents": 24, "failed": 24, "answered": 0, "missing": 0}
    assert on.loc[PARTIAL].to_dict() == {"documents": 24, "failed": 0, "answered": 3, "missing": 21}
    assert on.loc["pattern-pii", "answered"] == 24
    assert coverage_sentence(on, "test") == (
        "chat:broken answered none of the 24 test documents (every request failed): its row measures nothing and "
        "is left out of the findings. Answered only part of the test documents: acme-partial 3 of 24; the others "
        "count as reporting nothing, which lowers recall.")


def test_the_report_marks_the_simulated_detector_counts_answers_and_has_no_decision_task(corpus_only):
    from qlb.runs.report import build_report
    with reader(corpus_only) as con:
        html = unescape(build_report(con, None, DATASET))
    assert "What was audited: the decision task" not in html and "Delivery" not in html
    assert "sim-det-strong (simulated)" in html and ">answered documents<" in html
    assert "0 of 24 (24 failed)" in html and "3 of 24 (21 not in the predictions)" in html
    findings = html.split("<h2>Headline findings</h2>")[1].split("</ul>")[0]
    assert "Among 3 privacy detectors" in findings                   # the failed one is not ranked
    assert "chat:broken answered none of the 24 test documents" in findings
    assert "This run scored 4 privacy detectors on the QuasiLeak corpus's test split" in html
    assert "<td>Models</td>" not in html and "Test split used" not in html   # no decision model, no choice made
    assert "<h1>Privacy detector audit report</h1>" in html


def test_the_overview_and_the_quasileak_page_speak_to_a_detector_team(corpus_only, monkeypatch):
    with opened(corpus_only, "pages/overview.py", monkeypatch, query={"dataset": DATASET}) as at:
        said = texts(at)
        assert "This run scored 4 privacy detectors" in said and "audited no decision model" not in said
        assert list(stats(at)) == ["QuasiLeak documents", "Prediction lines"]
        assert at.segmented_control(key="overview_section").value == "QuasiLeak corpus"
    with opened(corpus_only, "pages/quasileak.py", monkeypatch, query={"dataset": DATASET}) as at:
        assert not at.exception
        said = texts(at)
        assert "Unanswered documents." in said and "chat:broken answered none of the 24 test documents" in said
        board = next(f for f in frames(at) if "answered documents" in f.columns).set_index("detector")
        assert board.loc[BROKEN, "answered documents"] == "0 of 24 (24 failed)"
        assert board.loc[PARTIAL, "answered documents"] == "3 of 24 (21 not in the predictions)"
        assert "pattern-pii" not in board.index                         # it answered all: only the others listed
        leaderboard = next(f for f in frames(at) if "complete-group F1" in f.columns)
        assert len(leaderboard.columns) == 4            # a column more had cut the table off at 1,024 px
    with opened(corpus_only, "pages/data.py", monkeypatch, query={"dataset": DATASET}) as at:
        assert not at.exception and "holds no decision worlds" in texts(at)
        assert json.dumps(at.selectbox[0].value) == '"predictions"'     # the Kind picker: its next file


def test_a_run_keeps_the_coverage_it_scored_after_the_predictions_change(corpus_only, tmp_path):
    """Predictions change in place: read from today's, an older run's "3 of 24" beside scores of 3 documents had
    become "24 of 24" once the rest were loaded (the ingest's warning asks for just that)."""
    import shutil
    from qlb.runs.report import load_run
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(corpus_only, wh)
    with reader(wh) as con:
        before = str(load_run(con, None, DATASET).run["run_id"])
        test = [r[0] for r in con.execute("SELECT doc_id FROM ql_documents WHERE split = 'test' ORDER BY doc_id")
                .fetchall()]
    rest = write_lines(tmp_path / "rest.jsonl", [{"doc_id": d, "detector": PARTIAL, "groups": []} for d in test])
    with writer(wh) as con:
        ingest_file(con, IngestRequest("predictions", rest, DATASET))
        from qlb.runs.audit import run_audits
        after = run_audits(con, DATASET).run_id
    assert _coverage(wh, before).loc[PARTIAL, "answered"] == 3          # what that run scored
    assert _coverage(wh, after).loc[PARTIAL, "answered"] == 24


def test_a_corpus_without_a_test_split_is_scored_whole_and_said_so(tmp_path):
    """Without a test split every document is scored (split 'all'): the coverage had matched no split, so the
    failed detector stayed in the findings, and the scope said "test split"."""
    from qlb.present.scope import scope_sentence
    from qlb.quasileak.detectors import builtin_detectors
    from qlb.runs.audit import run_audits
    from qlb.runs.quasileak import run_detector
    from qlb.runs.report import load_run
    docs = [{k: v for k, v in d.items() if k not in ("simulated", "profile_id")} | {"split": "validation"}
            for d in simulate_corpus(7)[:12]]
    wh = tmp_path / "qlb.duckdb"
    with writer(wh) as con:
        ingest_file(con, IngestRequest("corpus", write_lines(tmp_path / "c.jsonl", docs), DATASET))
        run_detector(con, DATASET, builtin_detectors()["pattern-pii"], split=None)
        con.execute("INSERT INTO ql_predictions (dataset_id, detector, doc_id, groups, n_groups, ingest_id, line_no, "
                    "failure) SELECT dataset_id, ?, doc_id, '[]', 0, 0, 0, 'request failed: HTTP 500' "
                    "FROM ql_documents WHERE dataset_id = ?", [BROKEN, DATASET])
        run_audits(con, DATASET)
    with reader(wh) as con:
        d = load_run(con, None, DATASET)
    on = coverage_on(d.ql)
    assert on.loc[BROKEN].to_dict() == {"documents": 12, "answered": 0, "failed": 12, "missing": 0}
    assert coverage_sentence(on, "all").startswith("chat:broken answered none of the 12 documents (every request "
                                                   "failed)")
    assert "on every document of the QuasiLeak corpus (it has no test split)" in scope_sentence(d)
