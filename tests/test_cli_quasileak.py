"""`qlb quasileak run --detector chat` against a stub OpenAI-compatible endpoint on loopback: what a
run whose documents fail prints, stores and exits with; what is retried; the leaderboard after a
run and in `qlb audit`; bad usage up front. `--detector python --target` on simulated documents: the
same, for a local function."""
from __future__ import annotations

import inspect
import json
import re
import shutil
import sys
from pathlib import Path

import duckdb
import pytest

from qlb.cli import main
from tests.collect.stubs import StubServer, chat
from tests.conftest import write_lines
from warehouse.db import writer
from warehouse.ingest import IngestRequest, ingest_file

TEXT = "The juice box by the bed, and the fridge stays cold."
CUES = ["juice box", "fridge"]
FOUND = json.dumps({"groups": [{"attribute": "health", "cues": CUES}]})
DATASET = "tab-court"


def _corpus_warehouse(tmp_path: Path, n: int) -> Path:
    """``n`` test documents d1..dn (each text its own: "... Doc i."), one health group to find in each."""
    spans = [[TEXT.index(c), TEXT.index(c) + len(c)] for c in CUES]
    docs = [{"doc_id": f"d{i}", "split": "test", "context_id": "c", "text": f"{TEXT} Doc {i}.",
             "profile": {"health": "diabetes"}, "policy": {"religion": "keep", "health": "hide"},
             "groups": [{"attribute": "health", "cues": spans}]} for i in range(1, n + 1)]
    path = tmp_path / "ql.duckdb"
    with writer(path) as con:
        ingest_file(con, IngestRequest("corpus", write_lines(tmp_path / "c.jsonl", docs), DATASET))
    return path


def _doc(body: dict) -> int:
    """Which document a request is about (its text ends "Doc i.")."""
    return int(re.search(r"Doc (\d+)\.$", json.loads(body["messages"][1]["content"])["message"]).group(1))


def _run(stub: StubServer, warehouse: Path, *extra: str) -> int:
    return main(["quasileak", "run", "--detector", "chat", "--base-url", stub.url + "/v1", "--endpoint-model", "m",
                 "--dataset", DATASET, "--warehouse", str(warehouse), *extra])


def _stored(warehouse: Path) -> tuple[int, int, list]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
        rows = con.execute("SELECT doc_id, failure FROM ql_predictions ORDER BY doc_id").fetchall()
    return runs, len(rows), rows


def test_some_documents_failing_are_stored_counted_and_scored_as_reporting_nothing(tmp_path, capsys):
    """A 400 is the document's own: not retried, its reason (the server's words) listed and stored,
    the rest scored; the leaderboard follows, the detector just run marked."""
    warehouse = _corpus_warehouse(tmp_path, 4)
    refuse = (400, {}, json.dumps({"error": {"message": "context too long", "type": "invalid_request_error"}}))
    with StubServer(lambda p, b, h, n: refuse if _doc(b) == 1 else chat(FOUND)) as stub:
        code = _run(stub, warehouse)
        sent = len(stub.requests)
    out, err = capsys.readouterr()
    assert code == 0 and sent == 4                                  # the 400 was asked once
    assert "chat:m: 4 documents, 1 failed; predictions stored; scores in run run-" in out
    assert "why 1 document failed (each counts as reporting nothing in the scores" in out
    assert "     1  request failed: HTTP 400 Bad Request: context too long (e.g. document d1)" in out
    assert "warning: 1 of 4 documents (25%) failed; the scores count each as reporting nothing" in err
    runs, n, rows = _stored(warehouse)
    assert runs == 1 and n == 4
    assert rows[0] == ("d1", "request failed: HTTP 400 Bad Request: context too long")
    assert [f for _, f in rows[1:]] == [None, None, None]
    board = out[out.index("QuasiLeak detectors on the test split"):].splitlines()
    assert "* chat:m, the detector this command ran" in board[0]
    assert board[1].split() == ["detector", "answered", "documents", "complete-group", "F1", "complete", "recall",
                                "strict", "precision", "over-flag"]
    row = board[2]
    assert row.startswith("* chat:m ") and "3 of 4 (1 failed)" in row
    assert "75.0% [" in row and "100.0% [100.0, 100.0]" in row                 # recall 3/4, precision 3/3
    assert board[3] == ("Answered only part of the test documents: chat:m 3 of 4; the others count as reporting "
                        "nothing, which lowers recall.")


def test_a_detector_whose_every_document_failed_is_not_stored(tmp_path, capsys):
    """Mixed reasons (so no early stop): each counted, most frequent first; nothing stored, exit 1."""
    warehouse = _corpus_warehouse(tmp_path, 7)
    misquote = json.dumps({"groups": [{"attribute": "health", "cues": ["no such words", "fridge"]}]})
    with StubServer(lambda p, b, h, n: chat(misquote if _doc(b) % 2 else "I think it is health")) as stub:
        code = _run(stub, warehouse)
    out, err = capsys.readouterr()
    assert code == 1
    assert ("error: detector chat:m: every one of its 7 documents failed, most often (4 of 7): model output: cue "
            "'no such words' of the 'health' group: it is not in the message (a cue is an exact quote) (e.g. "
            "document 'd1'); nothing stored; the model does not answer in the JSON form the prompt asks for") in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    lines = out.splitlines()
    assert lines[0] == "  why the 7 documents failed, most frequent first:"
    assert lines[1].startswith("       4  model output: cue 'no such words'")
    assert lines[2].startswith("       3  model output: the answer is not valid JSON")
    assert lines[2].endswith("(e.g. document d2)")
    assert _stored(warehouse)[:2] == (0, 0)


@pytest.mark.parametrize("respond, said", [
    (lambda p, b, h, n: (200, {}, "<html>proxy error</html>"),
     'unreadable reply: the answer is not valid JSON (Expecting value); it starts: "<html>proxy error</html>"'),
    (lambda p, b, h, n: (400, {}, json.dumps({"error": "context too long"})),
     "request failed: HTTP 400 Bad Request: context too long; nothing stored; the endpoint refuses the requests"),
    (lambda p, b, h, n: chat(json.dumps({"groups": [{"attribute": "health", "cues": [f"quote {n}", "fridge"]}]})),
     "model output: cue 'quote 1' of the 'health' group: it is not in the message"),
])
def test_the_first_five_documents_failing_alike_stop_the_run_without_retries(tmp_path, capsys, respond, said):
    """What cannot succeed on a retry is asked once; five documents failing alike (quotes aside) stop the run, as
    `qlb collect` stops on its first five answers refused alike."""
    warehouse = _corpus_warehouse(tmp_path, 9)
    with StubServer(respond) as stub:
        code = _run(stub, warehouse)
        sent = len(stub.requests)
    err = capsys.readouterr().err
    assert code == 1 and sent == 5
    assert "detector chat:m stopped: its first 5 documents all failed alike: " + said in err
    assert _stored(warehouse)[:2] == (0, 0)


def test_an_endpoint_failing_midway_is_quoted_and_said_to_have_failed_midway(tmp_path, capsys):
    warehouse = _corpus_warehouse(tmp_path, 3)
    drained = (500, {}, json.dumps({"error": {"message": "GPU node drained"}}))
    with StubServer(lambda p, b, h, n: chat(FOUND) if n <= 2 else drained) as stub:
        code = _run(stub, warehouse)
        sent = len(stub.requests)
    err = capsys.readouterr().err
    assert code == 1 and sent == 5                                  # the 500 asked three times (two retries)
    assert ("stopped at document 'd3' (2 of 3): request failed: HTTP 500 Internal Server Error: GPU node drained "
            "(after 2 retries); nothing stored; the endpoint failed midway, after answering 2 documents") in err
    assert "mozilla" not in err and "--base-url right" not in err and "HTTPStatusError" not in err
    assert _stored(warehouse)[:2] == (0, 0)


def test_a_base_url_without_scheme_is_bad_usage(tmp_path, capsys):
    warehouse = _corpus_warehouse(tmp_path, 1)
    code = main(["quasileak", "run", "--detector", "chat", "--base-url", "127.0.0.1:8901", "--endpoint-model", "m",
                 "--dataset", DATASET, "--warehouse", str(warehouse)])
    assert code == 2
    assert ("--base-url 127.0.0.1:8901: no http:// or https:// in front; expected http://HOST:PORT/v1; did you mean "
            "http://127.0.0.1:8901?") in capsys.readouterr().err


def test_a_misspelt_dataset_suggests_the_close_name(tmp_path, capsys):
    warehouse = _corpus_warehouse(tmp_path, 1)
    assert main(["quasileak", "run", "--detector", "pattern-pii", "--dataset", "tab-courts",
                 "--warehouse", str(warehouse)]) == 2
    assert "no dataset 'tab-courts' in the warehouse (have: tab-court); did you mean 'tab-court'?" in \
        capsys.readouterr().err


def test_audit_prints_the_quasileak_leaderboard(tmp_path, capsys):
    warehouse = _corpus_warehouse(tmp_path, 2)
    with StubServer(lambda p, b, h, n: chat(FOUND)) as stub:
        assert _run(stub, warehouse) == 0
    assert main(["quasileak", "run", "--detector", "sim-det-strong", "--dataset", DATASET,
                 "--warehouse", str(warehouse)]) == 0
    capsys.readouterr()
    assert main(["audit", "--dataset", DATASET, "--warehouse", str(warehouse)]) == 0
    out = capsys.readouterr().out
    board = out[out.index("QuasiLeak detectors on the test split, best complete-group F1 first (with 95% intervals):"):]
    rows = board.splitlines()[2:4]
    assert rows[0].startswith("  chat:m ") and rows[0].count("100.0% [100.0, 100.0]") == 3
    assert rows[1].startswith("  sim-det-strong (SIMULATED)")
    assert "the detector this command ran" not in board


# ------------------------------------------------------------------ --detector python --target MODULE:FUNCTION
SIM = "sim-docs"
TARGETS = "tests.quasileak.targets"


@pytest.fixture(scope="module")
def sim_corpus_warehouse(tmp_path_factory) -> Path:
    """12 test documents of the simulated corpus (seed 7) in a warehouse of their own; each test copies it."""
    from qlb.simulate.quasileak_sim import simulate_corpus
    folder = tmp_path_factory.mktemp("ql-python")
    docs = [{k: v for k, v in d.items() if k not in ("simulated", "profile_id")}
            for d in simulate_corpus(7) if d["split"] == "test"][:12]
    path = folder / "qlb.duckdb"
    with writer(path) as con:
        ingest_file(con, IngestRequest("corpus", write_lines(folder / "corpus.jsonl", docs), SIM))
    return path


@pytest.fixture
def sim_warehouse(sim_corpus_warehouse, tmp_path) -> Path:
    return Path(shutil.copy(sim_corpus_warehouse, tmp_path / "qlb.duckdb"))


def _run_python(warehouse: Path, target: str, *extra: str) -> int:
    return main(["quasileak", "run", "--detector", "python", "--target", target, "--dataset", SIM,
                 "--warehouse", str(warehouse), *extra])


def _predictions(warehouse: Path, detector: str) -> dict:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute("SELECT doc_id, groups, failure FROM ql_predictions WHERE detector = ? ORDER BY doc_id",
                           [detector]).fetchall()
    return {d: (json.loads(g), f) for d, g, f in rows}


def _board_row(out: str, detector: str) -> list[str]:
    """The figures of ``detector``'s row of the last leaderboard printed."""
    board = out[out.rindex("QuasiLeak detectors on the test split"):].splitlines()
    row = next(r for r in board if r[2:].startswith(detector + " "))
    return row[2 + len(detector):].split()


def test_a_python_detector_runs_end_to_end_and_scores_as_the_builtin_it_wraps(sim_warehouse, capsys):
    """The target returns the lexicon detector's groups, as offsets or as quotes: both store exactly the
    built-in detector's spans and score exactly as it does."""
    offsets, quotes = f"python:{TARGETS}.lexicon_offsets", f"python:{TARGETS}.lexicon_quotes"
    assert _run_python(sim_warehouse, f"{TARGETS}:lexicon_offsets") == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{offsets}: 12 documents, none failed; predictions stored; scores in run run-")
    assert f"* {offsets}, the detector this command ran" in out and f"\n* {offsets} " in out
    assert _run_python(sim_warehouse, f"{TARGETS}:lexicon_quotes") == 0
    assert main(["quasileak", "run", "--detector", "lexicon-cues", "--dataset", SIM,
                 "--warehouse", str(sim_warehouse)]) == 0
    out = capsys.readouterr().out
    builtin = _predictions(sim_warehouse, "lexicon-cues")
    assert len(builtin) == 12 and sum(len(g) for g, _ in builtin.values()) >= 8          # groups to compare
    assert _predictions(sim_warehouse, offsets) == _predictions(sim_warehouse, quotes) == builtin
    row = _board_row(out, "lexicon-cues")
    assert _board_row(out, offsets) == _board_row(out, quotes) == row and row[0] != "0.0%"
    with duckdb.connect(str(sim_warehouse), read_only=True) as con:
        said = con.execute("SELECT simulated, description FROM ql_detectors WHERE detector = ?", [quotes]).fetchone()
    assert said == (False, "A local Python function called once per document (``--target module:function`` or "
                           "``FILE.py:function``).")


def test_a_python_detector_raising_on_some_documents_records_where_and_scores_the_rest(sim_warehouse, capsys):
    """It raises (in a helper of its own) on the 5 documents whose policy hides health: each failure is stored with
    the file, line and function of the detector's code, listed, warned about; the other 7 are scored."""
    from tests.quasileak import targets
    detector = f"python:{TARGETS}.raises_when_health_is_hidden"
    line = inspect.getsourcelines(targets._load_weights)[1] + 1
    why = (f"the target raised FileNotFoundError: no weights at /nowhere/health.bin, at tests/quasileak/targets.py:"
           f"{line}, in _load_weights")
    assert _run_python(sim_warehouse, f"{TARGETS}:raises_when_health_is_hidden") == 0
    out, err = capsys.readouterr()
    assert f"{detector}: 12 documents, 5 failed; predictions stored" in out
    assert f"     5  {why} (e.g. document d_00162)" in out
    assert (f"warning: 5 of 12 documents (42%) failed; the scores count each as reporting nothing, so {detector}'s "
            "recall above is lower") in err
    stored = _predictions(sim_warehouse, detector)
    failed = sorted(d for d, (_, f) in stored.items() if f is not None)
    assert failed == ["d_00162", "d_00163", "d_00169", "d_00291", "d_00292"]
    assert {f for d, (g, f) in stored.items() if d in failed} == {why}
    assert all(g == [] for d, (g, _) in stored.items() if d in failed)
    assert _board_row(out, detector)[:3] == ["7", "of", "12"]


def test_a_python_detector_failing_alike_on_the_first_five_documents_stops_the_run(sim_warehouse, capsys):
    from tests.quasileak import targets
    line = inspect.getsourcelines(targets.always_raises)[1] + 2
    assert _run_python(sim_warehouse, f"{TARGETS}:always_raises") == 1
    err = capsys.readouterr().err
    assert (f"error: detector python:{TARGETS}.always_raises stopped: its first 5 documents all failed alike: the "
            f"target raised RuntimeError: model weights not loaded, at tests/quasileak/targets.py:{line}, in "
            "always_raises; nothing stored; fix the detector function where it raised (-v logs the whole "
            "traceback)") in err
    assert _stored(sim_warehouse)[:2] == (0, 0)


def test_a_file_detector_whose_every_document_failed_stores_nothing(sim_warehouse, tmp_path, monkeypatch, capsys):
    """Raising on a document with an odd-length message, returning no groups list on the others (mixed, so no early
    stop): every reason counted; nothing stored, exit 1. The file form of --target names it by its module."""
    monkeypatch.setattr(sys, "path", list(sys.path))          # the loader adds the file's folder
    path = tmp_path / "qlb_test_flaky_detector.py"
    path.write_text("def detect(doc):\n"
                    "    if len(doc['message']) % 2:\n"
                    "        raise ValueError('odd length')\n"
                    "    return doc['policy']\n")
    try:
        code = _run_python(sim_warehouse, f"{path}:detect")
    finally:
        sys.modules.pop(path.stem, None)
    out, err = capsys.readouterr()
    assert code == 1
    assert ("error: detector python:qlb_test_flaky_detector.detect: every one of its 12 documents failed, most often "
            "(11 of 12): the target raised ValueError: odd length") in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    lines = out.splitlines()
    assert lines[0] == "  why the 12 documents failed, most frequent first:"
    counts = dict(reversed(line.strip().split("  ", 1)) for line in lines[1:])
    assert counts == {f"the target raised ValueError: odd length, at {path}:3, in detect (e.g. document d_00161)": "11",
                      'target output: no "groups" list; it starts: "{\\"age\\": \\"hide\\", \\"gender\\": '
                      '\\"keep\\", \\"nationality\\": \\"hide\\", \\"education\\": \\"neutral\\",..." '
                      '(e.g. document d_00163)': "1"}
    assert _stored(sim_warehouse)[:2] == (0, 0)


@pytest.mark.parametrize("args, said", [
    (["--detector", "python"], "--detector python needs --target module:function (or path/to/file.py:function)"),
    (["--detector", "pattern-pii", "--target", f"{TARGETS}:lexicon_quotes"],
     "--target names the function of --detector python; --detector pattern-pii takes none"),
    (["--detector", "chat", "--base-url", "http://127.0.0.1:9/v1", "--endpoint-model", "m",
      "--target", f"{TARGETS}:lexicon_quotes"], "--target names the function of --detector python; --detector chat"),
    (["--detector", "python", "--target", f"{TARGETS}:no_such_detector"],
     f"--target '{TARGETS}:no_such_detector': {TARGETS} has no function 'no_such_detector'"),
    (["--detector", "python", "--target", "qlb_no_such_detector_module:detect"],
     "--target 'qlb_no_such_detector_module:detect': cannot import 'qlb_no_such_detector_module'"),
    (["--detector", "python", "--target", "detectors/nowhere.py:detect"],
     "--target 'detectors/nowhere.py:detect': no file detectors/nowhere.py"),
])
def test_python_detector_bad_usage_runs_nothing(sim_warehouse, capsys, args, said):
    """Exit 2 before any document is asked; a target that cannot be loaded in qlb collect's words."""
    assert main(["quasileak", "run", *args, "--dataset", SIM, "--warehouse", str(sim_warehouse)]) == 2
    assert said in capsys.readouterr().err
    assert _stored(sim_warehouse)[:2] == (0, 0)


def test_forget_removes_a_detectors_predictions_and_the_runs_keep_its_scores(sim_warehouse, capsys):
    """A trial detector or one whose endpoint failed stayed on every later leaderboard: no command removed it."""
    for detector in ("lexicon-cues", "sim-det-strong"):
        assert main(["quasileak", "run", "--detector", detector, "--dataset", SIM, "--warehouse",
                     str(sim_warehouse)]) == 0
    newest = "SELECT r.run_id FROM runs r JOIN ql_scores s USING (run_id) ORDER BY r.started_at DESC LIMIT 1"
    with duckdb.connect(str(sim_warehouse), read_only=True) as con:
        before = con.execute(newest).fetchone()[0]
    capsys.readouterr()
    assert main(["quasileak", "forget", "--detector", "lexicon-cue", "--dataset", SIM,
                 "--warehouse", str(sim_warehouse)]) == 2
    assert "did you mean 'lexicon-cues'?" in capsys.readouterr().err
    assert main(["quasileak", "forget", "--detector", "lexicon-cues", "--dataset", SIM,
                 "--warehouse", str(sim_warehouse)]) == 0
    assert capsys.readouterr().out.startswith(f"forgot detector 'lexicon-cues' of dataset {SIM!r}: 12 prediction "
                                              "lines removed; runs already stored keep its scores")
    assert _predictions(sim_warehouse, "lexicon-cues") == {} and len(_predictions(sim_warehouse, "sim-det-strong")) == 12
    assert main(["audit", "--dataset", SIM, "--warehouse", str(sim_warehouse)]) == 0
    with duckdb.connect(str(sim_warehouse), read_only=True) as con:
        scored = dict(con.execute("SELECT run_id, list(DISTINCT detector ORDER BY detector) FROM ql_scores "
                                  "GROUP BY run_id").fetchall())
        after = con.execute(newest).fetchone()[0]
    assert scored[before] == ["lexicon-cues", "sim-det-strong"]                  # the record of what it scored
    assert after != before and scored[after] == ["sim-det-strong"]               # the next run: the others
