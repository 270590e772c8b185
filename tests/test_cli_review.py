"""The command line after review: exit codes of bad usage, files a command must not overwrite,
inputs the stateless commands must reject, stops and counts of `qlb collect` and
`qlb quasileak run`, help texts, and the audit's text order."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from qlb.cli import _in_audit_order, build_parser, main
from tests.collect.stubs import StubServer
from tests.collect.test_collect import small_worlds
from tests.conftest import ROOT, native, two_pairs, write_lines
from warehouse.db import writer
from warehouse.ingest import IngestRequest, ingest_file


def _error(capsys) -> str:
    return capsys.readouterr().err


# ------------------------------------------------------------------------------- qlb defend
def test_defend_refuses_to_overwrite_its_input(tmp_path, worlds_file, capsys):
    resp = write_lines(tmp_path / "r.jsonl", [native("m", "w1"), native("m", "w3")])
    before = resp.read_bytes()
    os.symlink(resp, tmp_path / "link.jsonl")
    for out in (resp, tmp_path / "link.jsonl", tmp_path / "nowhere" / ".." / "r.jsonl"):
        assert main(["defend", "--method", "quantize", "--in", str(resp), "--out", str(out)]) == 2
        assert "same file as --in" in _error(capsys)
    assert main(["defend", "--method", "quantize", "--in", str(resp), "--worlds", str(worlds_file),
                 "--out", str(worlds_file)]) == 2
    assert "same file as --worlds" in _error(capsys)
    assert resp.read_bytes() == before and not (tmp_path / "nowhere").exists()
    assert len(worlds_file.read_text().splitlines()) == 4


def test_defend_creates_the_folder_of_out(tmp_path, capsys):
    resp = write_lines(tmp_path / "r.jsonl", [native("m", "w1")])
    out = tmp_path / "new" / "deeper" / "o.jsonl"
    assert main(["defend", "--method", "quantize", "--in", str(resp), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["probabilities"]["DELAY"] == 1.0
    assert main(["defend", "--method", "quantize", "--in", str(resp), "--out", str(resp / "o.jsonl")]) == 2
    assert "is a file, not a folder" in _error(capsys)


def test_stateless_reasons_name_the_files_and_group_repeats(tmp_path, worlds_file, capsys):
    own = [{**w, "domain": "lending"} for w in two_pairs()] * 2            # 8 lines, one reason
    own_worlds = write_lines(tmp_path / "own.jsonl", own)
    resp = write_lines(tmp_path / "r.jsonl", [native("m", "w1"), native("m", "w9")])
    assert main(["defend", "--method", "top2", "--in", str(resp), "--worlds", str(worlds_file),
                 "--out", str(tmp_path / "o.jsonl")]) == 3
    err = _error(capsys)
    assert f"{resp}:2: world_id: unknown world_id 'w9' (not in --worlds {worlds_file})" in err
    assert "ingest" not in err
    assert main(["defend", "--method", "top2", "--in", str(resp), "--worlds", str(own_worlds),
                 "--out", str(tmp_path / "o.jsonl")]) == 3
    lines = [x for x in _error(capsys).splitlines() if x.startswith(str(own_worlds))]
    assert len(lines) == 1 and "the same on 7 more lines: 2-8" in lines[0]
    assert "not a domain of the TUPLE ontology" in lines[0] and "--ontology FILE" in lines[0]


# -------------------------------------------------------------------------------- qlb audit
@pytest.fixture
def responses_warehouse(tmp_path, worlds_file) -> Path:
    path = tmp_path / "wh.duckdb"
    resp = write_lines(tmp_path / "resp.jsonl", [native(m, w) for m in ("m1", "m2") for w in ("w1", "w2", "w3", "w4")])
    with writer(path) as con:
        ingest_file(con, IngestRequest("worlds", worlds_file, "d"))
        ingest_file(con, IngestRequest("responses", resp, "d"))
    return path


@pytest.mark.parametrize("extra, said", [
    (["--defense-models", "nope"], "--defense-models: no responses of model 'nope' in dataset 'd' "
                                   "(models with responses: m1, m2)"),
    (["--models", "m1", "--defense-models", "m2"], "--defense-models: model 'm2' is not among the audited --models"),
])
def test_audit_checks_defense_models(responses_warehouse, extra, said, capsys):
    assert main(["audit", "--warehouse", str(responses_warehouse), *extra]) == 2
    assert said in _error(capsys)
    with duckdb.connect(str(responses_warehouse), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_the_engine_refuses_unknown_defense_models_too(responses_warehouse):
    from qlb.runs.audit import run_audits
    with writer(responses_warehouse) as con, pytest.raises(ValueError, match="--defense-models: no responses"):
        run_audits(con, "d", defense_models=["nope"], decode=False)


@pytest.mark.parametrize("argv", [["audit", "--jobs", "0"], ["audit", "--jobs", "-2"], ["demo", "--jobs", "0"]])
def test_jobs_below_one_is_bad_usage(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and "is not at least 1" in _error(capsys)


def test_audit_text_order_is_the_audits_not_the_alphabets():
    views = ["full_native", "no_output", "choice_confidence", "choice", "full_probabilities"]
    frame = pd.DataFrame({"model": ["b"] * 5 + ["a"] * 5, "view": views * 2, "x": range(10)})
    ordered = _in_audit_order(frame)
    assert list(ordered["model"]) == ["a"] * 5 + ["b"] * 5
    assert list(ordered["view"][:5]) == ["no_output", "choice", "choice_confidence", "full_probabilities",
                                         "full_native"]
    defenses = pd.DataFrame({"model": "m", "defense": ["wcpq", "top2", "native", "noise", "wcpq learned 0 paired",
                                                       "quantize", "temperature", "wcpq grid"]})
    assert list(_in_audit_order(defenses)["defense"]) == ["native", "quantize", "top2", "temperature", "noise",
                                                          "wcpq grid", "wcpq", "wcpq learned 0 paired"]


# -------------------------------------------------------------------------- qlb quasileak
TEXT = "The juice box by the bed, and the fridge stays cold."
CUES = [[TEXT.index("juice box"), TEXT.index("juice box") + 9], [TEXT.index("fridge"), TEXT.index("fridge") + 6]]


def _corpus(tmp_path) -> Path:
    policy = {"religion": "keep", "health": "hide"}
    docs = [{"doc_id": f"d{i}", "split": "test", "context_id": "c", "text": TEXT, "profile": {"health": "diabetes"},
             "policy": policy, "groups": [{"attribute": "health", "cues": CUES}]} for i in (1, 2)]
    return write_lines(tmp_path / "c.jsonl", docs)


def test_quasileak_score_rejects_an_attribute_the_corpus_lacks(tmp_path, capsys):
    preds = write_lines(tmp_path / "p.jsonl", [
        {"doc_id": "d1", "detector": "det", "groups": [{"attribute": "health", "cues": CUES}]},
        {"doc_id": "d2", "detector": "det", "groups": [{"attribute": "zodiac", "cues": CUES}]},
        {"doc_id": "d9", "detector": "det", "groups": []}])
    assert main(["quasileak", "score", "--corpus", str(_corpus(tmp_path)), "--predictions", str(preds), "--json"]) == 3
    out, err = capsys.readouterr()
    assert (f"{preds}:2: groups[0].attribute: 'zodiac' is not one of the corpus's attributes (health, religion)"
            in err)
    assert "warning: detector 'det' has predictions for 1 of the 2 documents: the other 1 count" in err
    assert f"unknown doc_id 'd9' (not in --corpus {tmp_path / 'c.jsonl'})" in err and "ingest" not in err
    scores = json.loads(out)["detectors"]["det"]["all"]
    assert scores["targets"] == 2 and scores["complete_recall"] == 0.5 and scores["predicted_groups"] == 1


@pytest.fixture
def corpus_warehouse(tmp_path) -> Path:
    path = tmp_path / "ql.duckdb"
    with writer(path) as con:
        ingest_file(con, IngestRequest("corpus", _corpus(tmp_path), "q"))
    return path


@pytest.mark.parametrize("argv, said", [
    (["--detector", "nope"], "unknown detector 'nope'"),
    (["--detector", "chat"], "--detector chat needs --base-url and --endpoint-model"),
])
def test_quasileak_run_bad_usage(corpus_warehouse, argv, said, capsys):
    assert main(["quasileak", "run", *argv, "--warehouse", str(corpus_warehouse)]) == 2
    assert said in _error(capsys)


def test_quasileak_run_stops_on_an_endpoint_that_fails_and_stores_nothing(corpus_warehouse, capsys):
    with StubServer(lambda p, b, h, n: (500, {}, "kaboom")) as stub:
        code = main(["quasileak", "run", "--detector", "chat", "--base-url", stub.url, "--endpoint-model", "x",
                     "--warehouse", str(corpus_warehouse)])
        sent = len(stub.requests)
    err = _error(capsys)
    assert code == 1 and "stopped at document 'd1' (0 of 2)" in err and "500" in err and "nothing stored" in err
    assert sent == 3                                   # the detector's own two retries, on the first document only
    with duckdb.connect(str(corpus_warehouse), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM ql_predictions").fetchone() == (0,)


def test_quasileak_run_keeps_a_documents_own_failure():
    from qlb.runs.quasileak import stops_the_run
    assert stops_the_run("request failed: ConnectError: [Errno 111] Connection refused")
    assert stops_the_run("request failed: HTTPStatusError: Client error '401 Unauthorized' for url 'x'")
    assert not stops_the_run("request failed: HTTPStatusError: Client error '400 Bad Request' for url 'x'")
    assert not stops_the_run("model output is not JSON: Expecting value") and not stops_the_run(None)


@pytest.mark.parametrize("flag", ["--tau-weak", "--tau-reveal"])
def test_verify_tau_outside_0_1_is_bad_usage(tmp_path, flag, capsys):
    groups = write_lines(tmp_path / "g.jsonl", [{}])
    assert main(["quasileak", "verify", "--groups", str(groups), flag, "2"]) == 2
    assert f"{flag} 2.0 is outside [0, 1]" in _error(capsys)


# ------------------------------------------------------------------------- report, demo, wcpq
def test_report_of_an_unknown_run_is_bad_usage(responses_warehouse, tmp_path, capsys):
    assert main(["report", "--run", "bogus", "--out", str(tmp_path / "r.html"),
                 "--warehouse", str(responses_warehouse)]) == 2
    assert "no run 'bogus' in the warehouse" in _error(capsys)


def test_wcpq_with_an_unknown_run_is_bad_usage_naming_it(responses_warehouse, tmp_path, worlds_file, capsys):
    resp = write_lines(tmp_path / "r.jsonl", [native("m1", "w1")])
    assert main(["defend", "--method", "wcpq", "--in", str(resp), "--out", str(tmp_path / "o.jsonl"),
                 "--worlds", str(worlds_file), "--run", "bogus", "--warehouse", str(responses_warehouse)]) == 2
    err = _error(capsys)
    assert "--run: no run 'bogus' in dataset 'd' (newest audit runs: none)" in err and "utility results" not in err


def test_demo_into_a_real_dataset_is_bad_usage_and_writes_nothing(responses_warehouse, capsys):
    before = responses_warehouse.read_bytes()
    assert main(["demo", "--dataset", "d", "--warehouse", str(responses_warehouse), "--no-decoding"]) == 2
    assert "--dataset 'd' exists and holds real (not simulated) data" in _error(capsys)
    assert responses_warehouse.read_bytes() == before
    assert not (responses_warehouse.parent / "simulated_exports").exists()


def test_demo_progress_never_says_zero_after_the_start():
    from qlb.cli import _build_share
    assert (_build_share(0, 1000), _build_share(3, 1000), _build_share(250, 1000)) == ("0%", "<1%", "25%")


# ------------------------------------------------------------------------------ qlb collect
@pytest.fixture
def collect_warehouse(tmp_path) -> Path:
    path = tmp_path / "wh.duckdb"
    with writer(path) as con:
        ingest_file(con, IngestRequest("worlds", write_lines(tmp_path / "w.jsonl", small_worlds(4)), "ds"))
    return path


def _collect(wh: Path, *extra: str) -> int:
    return main(["collect", "native", "--dataset", "ds", "--model", "m1", "--warehouse", str(wh), *extra])


def test_collect_into_a_missing_warehouse_is_bad_usage(tmp_path, capsys):
    assert _collect(tmp_path / "nowh.duckdb", "--transport", "python", "--target", "a:b") == 2
    assert "no warehouse here yet" in _error(capsys) and not (tmp_path / "nowh.duckdb").exists()


@pytest.mark.parametrize("extra, said", [
    (["--transport", "typed", "--base-url", "http://127.0.0.1:9", "--answer", "letters"],
     "--answer applies to --transport openai only, not typed"),
    (["--transport", "python", "--target", "a:b", "--answer", "json"], "--answer applies to --transport openai only"),
    (["--transport", "typed", "--base-url", "http://127.0.0.1:9", "--no-schema"], "--no-schema applies to --transport"),
])
def test_openai_only_options_elsewhere_are_bad_usage(collect_warehouse, extra, said, capsys):
    assert _collect(collect_warehouse, *extra) == 2
    assert said in _error(capsys)


def test_a_syntax_error_in_the_target_names_its_file_and_line(collect_warehouse, tmp_path, monkeypatch, capsys):
    (tmp_path / "syn_target.py").write_text("import os\n\ndef decide(body)\n    return {}\n")
    monkeypatch.chdir(tmp_path)
    assert _collect(collect_warehouse, "--transport", "python", "--target", "./syn_target.py:decide") == 2
    err = _error(capsys)
    assert "SyntaxError: expected ':', at syn_target.py:3: def decide(body)" in err and "frozen" not in err


def test_collect_counts_add_up_after_a_stop(collect_warehouse, capsys):
    n = len(small_worlds(4))
    with StubServer(lambda p, b, h, k: (500, {}, "kaboom")) as stub:
        assert _collect(collect_warehouse, "--transport", "typed", "--base-url", stub.url, "--limit", "3",
                        "--json") == 4
    summary = json.loads(capsys.readouterr().out)
    assert (summary["stored"], summary["not_reached"], summary["left_for_later"]) == (0, 3, n - 3)
    with StubServer(lambda p, b, h, k: (500, {}, "kaboom")) as stub:
        assert _collect(collect_warehouse, "--transport", "typed", "--base-url", stub.url, "--limit", "3") == 4
    out = capsys.readouterr().out
    assert f"3 worlds not answered: the collection stopped first; {n - 3} worlds left for a later run" in out


def test_refused_key_stops_at_exactly_the_fifth_world(collect_warehouse, capsys):
    from qlb.collect.transports import REFUSED_FIRST
    with StubServer(lambda p, b, h, k: (401, {}, '{"error": {"message": "bad key"}}')) as stub:
        assert _collect(collect_warehouse, "--transport", "typed", "--base-url", stub.url, "--json") == 4
        sent = len(stub.requests)
    summary = json.loads(capsys.readouterr().out)
    assert sent == summary["stored"] == summary["unavailable"] == REFUSED_FIRST
    assert summary["not_reached"] == len(small_worlds(4)) - REFUSED_FIRST


# ------------------------------------------------------------------------- pipes and help
def test_a_reader_that_goes_away_keeps_the_commands_exit_code():
    code = ("import sys, qlb.cli as c\n"
            "class Gone:\n"
            "    def write(self, t): raise BrokenPipeError(32, 'Broken pipe')\n"
            "    def flush(self): raise BrokenPipeError(32, 'Broken pipe')\n"
            "def rejected(args):\n    print('{\"models\": {}}')\n    print('more')\n    return 3\n"
            "c._cmd_migrate = rejected\nsys.stdout = Gone()\nrc = c.main(['migrate'])\n"
            "sys.stdout = sys.__stdout__\nsys.exit(rc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (out.returncode, out.stderr) == (3, "")


HELPED = {("refusal",): ["--worlds", "--responses"], ("defend",): ["--method", "--in", "--out"],
          ("report",): ["--out"], ("ingest",): ["file"], ("collect",): ["--transport"],
          ("quasileak", "score"): ["--corpus", "--predictions"], ("quasileak", "run"): ["--dataset"]}


def _parser(path: tuple[str, ...]):
    import argparse
    parser = build_parser()
    for word in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


@pytest.mark.parametrize("path", list(HELPED))
def test_every_option_says_what_it_is(path):
    actions = {(a.option_strings[0] if a.option_strings and a.option_strings[0] != "-v" else
                a.option_strings[-1] if a.option_strings else a.dest): a for a in _parser(path)._actions}
    actions.update({a.dest: a for a in _parser(path)._actions if not a.option_strings})
    for name in HELPED[path]:
        assert actions[name].help, (path, name)


def test_help_tells_what_the_commands_do(capsys):
    def shown(*path: str) -> str:
        with pytest.raises(SystemExit):
            main([*path, "--help"])
        return " ".join(capsys.readouterr().out.split())
    assert "then run every audit" in shown("demo")
    assert "the defense audit, the longest stage, on by default" in shown("audit")
    ingest = shown("ingest")
    assert "created if new)" not in ingest and "need it to exist already (else exit 2)" in ingest
    defend = shown("defend")
    assert "--warehouse and --run" not in defend and "default the newest run with utility results" in defend
    for path in (("refusal",), ("quasileak", "score"), ("defend",)):
        assert "FILE:LINE: field: reason" in shown(*path), path


def test_a_file_name_with_no_known_format_is_bad_usage(tmp_path, capsys):
    odd = tmp_path / "worlds.txt"
    odd.write_text(json.dumps(two_pairs()[0]) + "\n")
    assert main(["ingest", "worlds", str(odd), "--dataset", "d", "--warehouse", str(tmp_path / "w.duckdb")]) == 2
    assert "cannot tell the format from the name; use .jsonl, .csv or .parquet" in _error(capsys)
    assert not (tmp_path / "w.duckdb").exists()


def test_only_failures_every_document_would_meet_stop_a_detector_run():
    """A reply that does not read (an empty "choices": IndexError; a body that is not JSON) is that document's
    failure; the endpoint unreachable or refusing the key or URL stops the run."""
    from qlb.runs.quasileak import stops_the_run
    assert stops_the_run("request failed: ConnectError: [Errno 111] Connection refused")
    assert stops_the_run("request failed: ReadTimeout: timed out")
    assert stops_the_run("request failed: HTTPStatusError: Client error '401 Unauthorized' for url 'http://x'")
    assert stops_the_run("request failed: HTTPStatusError: Server error '502 Bad Gateway' for url 'http://x'")
    assert not stops_the_run("request failed: HTTPStatusError: Client error '422 Unprocessable' for url 'http://x'")
    assert not stops_the_run("request failed: IndexError: list index out of range")
    assert not stops_the_run("request failed: JSONDecodeError: Expecting value: line 1 column 1 (char 0)")
    assert not stops_the_run(None) and not stops_the_run("not valid JSON")
