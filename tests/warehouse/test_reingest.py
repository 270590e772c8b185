"""Ingesting a corrected file again (another sha256, the same records but one), locating invalid
responses, and the files that hold nothing to ingest: what `qlb ingest` stores, quarantines and
says."""
from __future__ import annotations

import json

import duckdb
import pandas as pd
import pytest

from qlb.cli import main
from tests.conftest import make_world, native, two_pairs, write_lines
from warehouse import ingest as ingest_mod
from warehouse.ingest import IngestRequest, ingest_file, validate_file

TEXT = "The juice box by the bed, and the fridge stays cold."
CUES = [[4, 13], [34, 40]]
POLICY = {a: "keep" for a in ("age", "gender", "nationality", "education", "occupation", "income",
                              "relationship")} | {"health": "hide"}


def rows_of(wh: str, sql: str, params: list | None = None) -> list[tuple]:
    with duckdb.connect(wh, read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def ingest(*args: str) -> int:
    return main(["ingest", *args])


def test_a_corrected_worlds_file_stores_the_fixed_line_skips_the_rest_and_clears_its_quarantine(tmp_path, capsys):
    """The reviewer's case: line 3 had an unknown class; after the fix the same worlds are already
    stored, the fixed line is stored, its old quarantine row goes, and nothing new is rejected."""
    wh = str(tmp_path / "w.duckdb")
    worlds = two_pairs()
    bad = write_lines(tmp_path / "worlds_bad.jsonl", worlds[:2] + [{**worlds[2], "coarse": "FOO"}] + worlds[3:])
    assert ingest("worlds", str(bad), "--dataset", "t", "--warehouse", wh) == 3
    assert rows_of(wh, "SELECT line_no, field FROM rejects") == [(3, "coarse")]
    capsys.readouterr()

    fixed = write_lines(tmp_path / "worlds_fixed.jsonl", worlds)
    assert ingest("worlds", str(fixed), "--dataset", "t", "--warehouse", wh, "--dry-run") == 0
    assert "would store 1; 3 already stored (the same values; skipped); 0 rejected; dry run" in capsys.readouterr().out
    assert ingest("worlds", str(fixed), "--dataset", "t", "--warehouse", wh) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert (f"{fixed}: 4 lines; stored 1; 3 already stored (the same values; skipped); 0 rejected; "
            "1 quarantined line of earlier ingests cleared (this file stored their keys) -> dataset 't', ingest #2") in out
    assert rows_of(wh, "SELECT count(*) FROM rejects") == [(0,)]
    assert rows_of(wh, "SELECT world_id, coarse, ingest_id FROM worlds WHERE world_id = 'w3'") == [("w3", "DELAY", 2)]
    assert rows_of(wh, "SELECT count(*) FROM worlds") == [(4,)]
    assert rows_of(wh, "SELECT ingest_id, n_lines, n_accepted, n_rejected FROM ingests ORDER BY ingest_id") == [
        (1, 4, 3, 1), (2, 4, 1, 0)]           # each ingest keeps what it found


def table_file(path, rows: list[dict]):
    """``rows`` as a CSV file (maps and lists as JSON text in their cells) or a Parquet file, by the
    name's suffix."""
    frame = pd.DataFrame(rows)
    if path.suffix == ".csv":
        for column in frame.columns:
            if frame[column].map(lambda v: isinstance(v, (dict, list))).any():
                frame[column] = frame[column].map(json.dumps)
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path)
    return path


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_corrected_csv_or_parquet_file_clears_its_quarantine_as_json_lines_does(wh, worlds_file, tmp_path, fmt):
    """The reviewer's case in a table: worlds and (with --model, no model column) responses. The
    quarantined row's key is read from its text (a CSV row's text starts with its header line)."""
    worlds = two_pairs()
    bad = table_file(tmp_path / f"worlds_bad.{fmt}", worlds[:2] + [{**worlds[2], "coarse": "FOO"}] + worlds[3:])
    first = ingest_file(wh, IngestRequest("worlds", bad, "t"))
    assert [(r.line_no, r.field) for r in first.report.rejects] == [(4 if fmt == "csv" else 3, "coarse")]
    raw = wh.execute("SELECT raw_text FROM rejects").fetchone()[0]
    assert raw.startswith("world_id,pair_id,domain," if fmt == "csv" else '{"world_id": "w3"')
    fixed = ingest_file(wh, IngestRequest("worlds", table_file(tmp_path / f"worlds_fixed.{fmt}", worlds), "t"))
    assert (len(fixed.report.accepted), fixed.report.already_stored, fixed.report.cleared_rejects) == (1, 3, 1)
    assert wh.execute("SELECT count(*) FROM rejects").fetchone() == (0,)

    responses = [{k: v for k, v in native("m", w).items() if k != "model"} for w in ("w1", "w2", "w3", "w4")]
    broken = [responses[0], {**responses[1], "status": "done"}, *responses[2:]]
    first = ingest_file(wh, IngestRequest("responses", table_file(tmp_path / f"r_bad.{fmt}", broken), "t", model="m"))
    assert [r.field for r in first.report.rejects] == ["status"]
    fixed = ingest_file(wh, IngestRequest("responses", table_file(tmp_path / f"r_fixed.{fmt}", responses), "t",
                                          model="m"))
    assert (len(fixed.report.accepted), fixed.report.already_stored, fixed.report.cleared_rejects) == (1, 3, 1)
    assert wh.execute("SELECT count(*) FROM rejects").fetchone() == (0,)


def test_refusal_corpus_and_predictions_in_csv_clear_their_quarantine_too(wh, worlds_file, tmp_path):
    """Each kind reads its own key cells from a quarantined CSV row (model and world, document,
    detector and document)."""
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    refusal = [{"model": "m", "world_id": w, "status": "ok", "choice": "WITHHOLD",
                "scores": {"missed_transfer": 0.4, "WITHHOLD": 0.9}} for w in ("w1", "w2")]
    docs = [{"doc_id": f"d{i}", "split": "test", "context_id": "c", "text": TEXT, "profile": {"health": "diabetes"},
             "policy": POLICY, "groups": [{"attribute": "health", "cues": CUES}]} for i in (1, 2)]
    preds = [{"doc_id": f"d{i}", "detector": "lex", "groups": [{"attribute": "health", "cues": CUES}]} for i in (1, 2)]
    for kind, rows, broken in (("refusal", refusal, {"status": "oops"}), ("corpus", docs, {"split": "nope"}),
                               ("predictions", preds, {"groups": 3})):
        first = ingest_file(wh, IngestRequest(kind, table_file(tmp_path / f"{kind}_1.csv", [rows[0], {**rows[1], **broken}]),
                                              "ds"))
        assert [r.line_no for r in first.report.rejects] == [3], kind
        fixed = ingest_file(wh, IngestRequest(kind, table_file(tmp_path / f"{kind}_2.csv", rows), "ds"))
        assert (len(fixed.report.accepted), fixed.report.cleared_rejects) == (1, 1), kind
    assert wh.execute("SELECT count(*) FROM rejects").fetchone() == (0,)


def test_a_csv_row_quarantined_without_its_header_stays(wh, tmp_path):
    """A row an older qlb quarantined has no header line above it: no key is read from it, so it
    stays (nothing is cleared by guesswork)."""
    worlds = two_pairs()
    ingest_file(wh, IngestRequest("worlds", table_file(tmp_path / "bad.csv", [*worlds[:2], {**worlds[2], "coarse": "FOO"}]),
                                  "t"))
    wh.execute("UPDATE rejects SET raw_text = split_part(raw_text, chr(10), 2)")    # as an older qlb kept it
    fixed = ingest_file(wh, IngestRequest("worlds", table_file(tmp_path / "fixed.csv", worlds), "t"))
    assert (len(fixed.report.accepted), fixed.report.cleared_rejects) == (2, 0)
    assert wh.execute("SELECT count(*) FROM rejects").fetchone() == (1,)


@pytest.mark.parametrize("bulk", [True, False], ids=["bulk", "per-line"])
def test_a_corrected_responses_file_in_either_path(wh, worlds_file, tmp_path, bulk):
    """Responses stored by the per-line path (pydantic writes 1.0) and restated in the bulk path
    (DuckDB writes 1 back) are the same values: already stored, whatever the stored text."""
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    certain = {"ADDRESS": 0, "DAMAGE": 0, "DELAY": 1, "DELIVERY_RECORD": 0}
    good = [native("m", "w1", probabilities=certain), native("m", "w2"), native("m", "w3"), native("m", "w4")]
    broken = {k: v for k, v in good[1].items() if k != "status"}
    first = ingest_file(wh, IngestRequest("responses", write_lines(tmp_path / "r1.jsonl", [good[0], broken, *good[2:]]),
                                          "ds"), bulk_validation=False)
    assert [(r.line_no, r.field) for r in first.report.rejects] == [(2, "status")]
    second = ingest_file(wh, IngestRequest("responses", write_lines(tmp_path / "r2.jsonl", good), "ds"),
                         bulk_validation=bulk)
    assert (len(second.report.accepted), second.report.already_stored, second.report.rejects) == (1, 3, [])
    assert second.report.cleared_rejects == 1
    assert wh.execute("SELECT count(*) FROM rejects").fetchone() == (0,)
    assert wh.execute("SELECT world_id, ingest_id FROM responses ORDER BY world_id").fetchall() == [
        ("w1", first.ingest_id), ("w2", second.ingest_id), ("w3", first.ingest_id), ("w4", first.ingest_id)]


@pytest.mark.parametrize("bulk", [True, False], ids=["bulk", "per-line"])
def test_the_same_key_with_other_values_is_still_rejected_and_the_stored_one_kept(wh, worlds_file, tmp_path, bulk):
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    first = ingest_file(wh, IngestRequest("responses", write_lines(tmp_path / "r1.jsonl",
                                                                   [native("m", w) for w in ("w1", "w2")]), "ds"))
    rows = [native("m", "w1"), native("m", "w2", confidence=0.5), native("m", "w3"), native("m", "w3")]
    r = ingest_file(wh, IngestRequest("responses", write_lines(tmp_path / "r2.jsonl", rows), "ds"), bulk_validation=bulk)
    assert (len(r.report.accepted), r.report.already_stored) == (1, 1)
    assert [(x.line_no, x.reason) for x in r.report.rejects] == [
        (2, f"duplicate response for model 'm' and world 'w2' with other values than the one ingest "
            f"#{first.ingest_id} stored (the stored one is kept)"),
        (4, "duplicate response for model 'm' and world 'w3' (the first is kept)")]     # a repeat within the file
    assert wh.execute("SELECT confidence FROM responses WHERE world_id = 'w2'").fetchone() == (0.93,)
    assert wh.execute("SELECT line_no FROM rejects WHERE ingest_id = ? ORDER BY line_no",
                      [r.ingest_id]).fetchall() == [(2,), (4,)]


def test_many_keys_with_other_values_are_one_message_and_exit_3(tmp_path, worlds_file, capsys):
    wh = str(tmp_path / "w.duckdb")
    assert ingest("worlds", str(worlds_file), "--dataset", "d", "--warehouse", wh) == 0
    models = [f"m{i}" for i in range(3)]
    first = write_lines(tmp_path / "r1.jsonl", [native(m, w) for m in models for w in ("w1", "w2", "w3", "w4")])
    assert ingest("responses", str(first), "--dataset", "d", "--warehouse", wh) == 0
    rerun = write_lines(tmp_path / "r2.jsonl", [native(m, w, confidence=0.5) for m in models
                                                for w in ("w1", "w2", "w3", "w4")])
    capsys.readouterr()
    assert ingest("responses", str(rerun), "--dataset", "d", "--warehouse", wh) == 3
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "r2.jsonl:1: duplicate response for model 'm0' and world 'w1' with other values than the one ingest #2 "
        "stored (the stored one is kept) (the same, each for its own key, on 11 more lines: 2-12)"]
    assert "stored 0 (all valid); 12 rejected" in out
    assert rows_of(wh, "SELECT count(*) FROM rejects") == [(12,)]


def test_refusal_corpus_and_predictions_restated_alike(wh, worlds_file, tmp_path):
    """Every kind compares a restated line with its stored row (its own query each)."""
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    scores = {"missed_transfer": 0.4, "WITHHOLD": 0.9}
    refusal = [{"model": "m", "world_id": w, "status": "ok", "choice": "WITHHOLD", "scores": scores}
               for w in ("w1", "w2")]
    ingest_file(wh, IngestRequest("refusal", write_lines(tmp_path / "f1.jsonl", refusal), "ds"))
    again = ingest_file(wh, IngestRequest("refusal", write_lines(
        tmp_path / "f2.jsonl", [refusal[0], {**refusal[1], "scores": {"WITHHOLD": 0.9, "missed_transfer": 0.4}},
                                {**refusal[0], "world_id": "w3"}, {**refusal[0], "world_id": "w4", "status": "oops"}]),
        "ds"))
    assert (len(again.report.accepted), again.report.already_stored) == (1, 2)      # the scores' order does not matter
    fixed = ingest_file(wh, IngestRequest("refusal", write_lines(
        tmp_path / "f3.jsonl", [{**refusal[0], "world_id": "w4"}, {**refusal[0], "choice": "missed_transfer"}]), "ds"))
    assert (len(fixed.report.accepted), fixed.report.already_stored, fixed.report.cleared_rejects) == (1, 0, 1)
    assert [x.line_no for x in fixed.report.rejects] == [2]
    assert "with other values than the one ingest" in fixed.report.rejects[0].reason

    docs = [{"doc_id": "d1", "split": "test", "context_id": "c", "text": TEXT, "profile": {"health": "diabetes"},
             "policy": POLICY, "groups": [{"attribute": "health", "cues": CUES}]}]
    first = ingest_file(wh, IngestRequest("corpus", write_lines(tmp_path / "c1.jsonl", docs), "ds"))
    moved = {**docs[0], "doc_id": "d1", "groups": [{"attribute": "health", "cues": [[4, 13], [30, 33]]}]}
    r = ingest_file(wh, IngestRequest("corpus", write_lines(tmp_path / "c2.jsonl", [docs[0], moved]), "ds"))
    assert (len(r.report.accepted), r.report.already_stored) == (0, 1)        # other groups: another document
    assert [x.reason for x in r.report.rejects] == [
        f"duplicate doc_id 'd1' with other values than the one ingest #{first.ingest_id} stored (the stored one is kept)"]

    d2 = {**docs[0], "doc_id": "d2"}
    ingest_file(wh, IngestRequest("corpus", write_lines(tmp_path / "c3.jsonl", [{**d2, "split": "nope"}]), "ds"))
    r = ingest_file(wh, IngestRequest("corpus", write_lines(tmp_path / "c4.jsonl", [docs[0], d2]), "ds"))
    assert (len(r.report.accepted), r.report.already_stored, r.report.cleared_rejects) == (1, 1, 1)

    preds = [{"doc_id": "d1", "detector": "lex", "groups": [{"attribute": "health", "cues": CUES}]}]
    ingest_file(wh, IngestRequest("predictions", write_lines(tmp_path / "p1.jsonl", preds), "ds"))
    r = ingest_file(wh, IngestRequest("predictions", write_lines(
        tmp_path / "p2.jsonl", [preds[0], {**preds[0], "groups": []}, {**preds[0], "doc_id": "d2", "groups": 3}]),
        "ds"))
    assert (len(r.report.accepted), r.report.already_stored, [x.line_no for x in r.report.rejects]) == (0, 1, [2, 3])
    r = ingest_file(wh, IngestRequest("predictions", write_lines(
        tmp_path / "p3.jsonl", [preds[0], {**preds[0], "doc_id": "d2"}]), "ds"))
    assert (len(r.report.accepted), r.report.already_stored, r.report.cleared_rejects) == (1, 1, 1)
    # what is left in the quarantine: the lines that differ from a stored record, nothing fixed since
    assert wh.execute("SELECT kind, reason LIKE 'duplicate %' FROM rejects ORDER BY kind").fetchall() == [
        ("corpus", True), ("predictions", True), ("refusal", True)]


def test_a_retry_of_the_same_file_is_unchanged_and_a_repeat_changes_nothing(wh, worlds_file, tmp_path):
    """Same sha256: what the first ingest stored is skipped as before (its retry keeps its id and
    its quarantine is replaced); ingested once more it changes nothing."""
    resp = write_lines(tmp_path / "r.jsonl", [native("m1", "w1"), native("m1", "w5")])
    first = ingest_file(wh, IngestRequest("responses", resp, "ds"))
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    second = ingest_file(wh, IngestRequest("responses", resp, "ds"))
    assert second.ingest_id == first.ingest_id and len(second.report.accepted) == 1
    ingest_file(wh, IngestRequest("responses", write_lines(tmp_path / "ok.jsonl", [native("m1", "w1")]), "ds"))
    before = wh.execute("SELECT count(*) FROM ingests").fetchone()
    third = ingest_file(wh, IngestRequest("responses", write_lines(tmp_path / "ok.jsonl", [native("m1", "w1")]), "ds"))
    assert third.ingest_id is None and third.report.already_stored == 1          # nothing new: nothing recorded
    assert wh.execute("SELECT count(*) FROM ingests").fetchone() == before


def test_invalid_responses_are_located_on_stderr_and_in_json(tmp_path, worlds_file, capsys):
    wh = str(tmp_path / "w.duckdb")
    assert ingest("worlds", str(worlds_file), "--dataset", "d", "--warehouse", wh) == 0
    rows = [native("m", "w1"), native("m", "w2", choice="FOO"), native("m", "w3"),
            native("m", "w4", confidence=float("nan"))]
    rows += [native(f"x{i}", "w1", choice="FOO") for i in range(7)]           # one reason on seven lines
    path = write_lines(tmp_path / "r.jsonl", rows)
    capsys.readouterr()
    assert ingest("responses", str(path), "--dataset", "d", "--warehouse", wh, "--json") == 0
    out, err = capsys.readouterr()
    foo = "choice: invalid: choice 'FOO' is not a candidate (ADDRESS, DAMAGE, DELAY, DELIVERY_RECORD)"
    assert err.splitlines() == [f"r.jsonl:2: {foo} (the same on 7 more lines: 5-11)",
                                "r.jsonl:4: confidence: invalid: confidence nan is outside [0, 1]"]
    report = json.loads(out)
    assert report["invalid"] == 9 and report["rejected"] == 0 and report["already_stored"] == 0
    assert [(x["line"], x["field"]) for x in report["invalid_lines"]] == [
        (2, "choice"), (4, "confidence"), *[(n, "choice") for n in range(5, 12)]]
    assert report["invalid_lines"][1]["reason"] == "confidence nan is outside [0, 1]"


def test_rejected_lines_are_located_in_json_the_first_ones_with_a_count_of_the_rest(tmp_path, worlds_file, capsys,
                                                                                     monkeypatch):
    wh = str(tmp_path / "w.duckdb")
    assert ingest("worlds", str(worlds_file), "--dataset", "d", "--warehouse", wh) == 0
    rows = [native("m", "w1"), native("m", "w404"), {"model": "m", "world_id": "w2"}, native("m", "w3"),
            native("m", "w1"), *[native(f"x{i}", "w9") for i in range(4)]]
    path = write_lines(tmp_path / "r.jsonl", rows)
    capsys.readouterr()
    monkeypatch.setattr(ingest_mod, "REJECTS_LOCATED", 100)           # the default lists these all, in line order
    assert ingest("responses", str(path), "--dataset", "d", "--warehouse", wh, "--json", "--dry-run") == 3
    report = json.loads(capsys.readouterr().out)
    assert [x["line"] for x in report["rejected_lines"]] == [2, 3, 5, 6, 7, 8, 9]
    assert report["rejected_lines_not_listed"] == 0
    monkeypatch.setattr(ingest_mod, "REJECTS_LOCATED", 3)
    assert ingest("responses", str(path), "--dataset", "d", "--warehouse", wh, "--json") == 3
    report = json.loads(capsys.readouterr().out)
    assert report["rejected"] == 7 and report["rejected_lines_not_listed"] == 4
    assert report["rejected_lines"] == [
        {"file": "r.jsonl", "line": 2, "field": "world_id", "reason": "unknown world_id 'w404' (ingest its worlds first)"},
        {"file": "r.jsonl", "line": 3, "field": "status", "reason": "required field is missing"},
        {"file": "r.jsonl", "line": 5, "field": None,
         "reason": "duplicate response for model 'm' and world 'w1' (the first is kept)"}]


def test_only_the_first_invalid_lines_are_said(tmp_path, worlds_file, capsys, monkeypatch):
    monkeypatch.setattr(ingest_mod, "INVALID_GROUPS_KEPT", 3)
    wh = str(tmp_path / "w.duckdb")
    assert ingest("worlds", str(worlds_file), "--dataset", "d", "--warehouse", wh) == 0
    path = write_lines(tmp_path / "r.jsonl", [native(f"m{i}", "w1", confidence=1 + i) for i in range(1, 16)])
    capsys.readouterr()
    assert ingest("responses", str(path), "--dataset", "d", "--warehouse", wh) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["r.jsonl:1: confidence: invalid: confidence 2.0 is outside [0, 1]",
                   "r.jsonl:2: confidence: invalid: confidence 3.0 is outside [0, 1]",
                   "r.jsonl:3: confidence: invalid: confidence 4.0 is outside [0, 1]",
                   "r.jsonl: 12 more invalid lines not listed here (stored with valid = false and their reason)"]


@pytest.mark.parametrize("name, content", [("empty.jsonl", b""), ("blank.jsonl", b"\n  \r\n\n"),
                                           ("header.csv", b"world_id,pair_id,domain\r\n")])
def test_a_file_without_lines_is_a_warning_and_records_nothing(tmp_path, worlds_file, capsys, name, content):
    wh = tmp_path / "w.duckdb"
    path = tmp_path / name
    path.write_bytes(content)
    assert ingest("worlds", str(worlds_file), "--dataset", "d", "--warehouse", str(wh)) == 0
    capsys.readouterr()
    assert ingest("worlds", str(path), "--dataset", "d", "--warehouse", str(wh)) == 0
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"qlb ingest: warning: {path} holds no lines (")
    assert err.endswith("); nothing stored, no ingest recorded\n")
    assert ingest("worlds", str(path), "--dataset", "d", "--warehouse", str(wh), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["empty_file"], report["ingest_id"], report["lines"]) == (True, None, 0)
    assert (report["rejected_lines"], report["rejected_lines_not_listed"]) == ([], 0)
    assert rows_of(str(wh), "SELECT count(*) FROM ingests") == [(1,)]
    with duckdb.connect(str(wh)) as con:                      # the library says so too, and records nothing
        result = ingest_file(con, IngestRequest("worlds", path, "d"))
        assert result.empty and result.report.n_lines == 0
        assert con.execute("SELECT count(*) FROM ingests").fetchone() == (1,)


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["ingest", "dry-run"])
def test_a_file_without_lines_into_a_dataset_not_there_is_an_error(tmp_path, worlds_file, capsys, dry_run):
    """Nothing would be stored and the dataset would not be created: exit 1 and one line saying both
    (exit 0 let a script go on as if the dataset were there); responses get the missing dataset's exit 2."""
    wh = tmp_path / "w.duckdb"
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert ingest("worlds", str(path), "--dataset", "d", "--warehouse", str(wh), "--json", *dry_run) == 1
    out, err = capsys.readouterr()
    would = "would be " if dry_run else ""
    assert out == "" and err == (f"qlb ingest: error: {path} holds no lines (the file is empty): nothing {would}stored, "
                                 f"and dataset 'd' does not exist ({wh} holds no warehouse yet); a file without "
                                 "lines creates no dataset\n")
    assert not wh.exists()                                      # not even a warehouse made for it
    assert ingest("worlds", str(worlds_file), "--dataset", "d", "--warehouse", str(wh)) == 0
    capsys.readouterr()
    assert ingest("corpus", str(path), "--dataset", "dd", "--warehouse", str(wh), *dry_run) == 1
    assert f"and dataset 'dd' does not exist (the warehouse {wh} has d)" in capsys.readouterr().err
    assert ingest("responses", str(path), "--dataset", "dd", "--warehouse", str(wh), *dry_run) == 2
    assert capsys.readouterr().err.startswith("qlb ingest: error: no dataset 'dd' in the warehouse (have: d)")
    assert rows_of(str(wh), "SELECT dataset_id FROM datasets") == [("d",)]


@pytest.mark.parametrize("name", ["", " my-audit", "x" * 257])
def test_a_dataset_name_that_is_empty_padded_or_too_long_is_bad_usage(tmp_path, worlds_file, capsys, wh, name):
    assert ingest("worlds", str(worlds_file), "--dataset", name, "--warehouse", str(tmp_path / "w.duckdb")) == 2
    assert capsys.readouterr().err.startswith("qlb ingest: error: --dataset: a dataset name ")
    assert not (tmp_path / "w.duckdb").exists()
    with pytest.raises(ingest_mod.IngestError, match="a dataset name"):       # the library makes no such dataset
        ingest_file(wh, IngestRequest("worlds", worlds_file, name))
    assert wh.execute("SELECT count(*) FROM datasets").fetchone() == (0,)


def test_a_directory_is_named_as_one(tmp_path, capsys):
    assert ingest("worlds", str(tmp_path), "--dataset", "d", "--warehouse", str(tmp_path / "w.duckdb")) == 1
    assert capsys.readouterr().err == f"qlb ingest: error: {tmp_path}: is a directory, not a file (name one file to ingest)\n"
    with pytest.raises(ingest_mod.IngestError, match="is a directory"):
        validate_file(None, IngestRequest("worlds", tmp_path, "d"))


def test_a_corrupt_parquet_file_is_named(tmp_path, capsys):
    path = tmp_path / "worlds.parquet"
    path.write_bytes(b"not parquet")
    assert ingest("worlds", str(path), "--dataset", "d", "--warehouse", str(tmp_path / "w.duckdb")) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"qlb ingest: error: {path}: not a readable Parquet file (") and "Traceback" not in err
    assert not (tmp_path / "w.duckdb").exists()


def test_a_json_error_names_the_column_within_its_line(tmp_path, worlds_file, capsys):
    line = json.dumps(make_world("w9", "p9", "missed_transfer"))
    path = write_lines(tmp_path / "w.jsonl", [json.dumps(w).encode() for w in two_pairs()] + [line[:40].encode()],
                       raw=True)
    assert ingest("worlds", str(path), "--dataset", "d", "--warehouse", str(tmp_path / "w.duckdb")) == 3
    err = capsys.readouterr().err
    assert err.startswith("w.jsonl:5: line is not valid JSON: ") and err.rstrip().endswith(" at column 40")


def test_the_same_records_in_another_file_record_no_ingest_and_leave_runs_fresh(tmp_path, capsys):
    """The same worlds exported again (another order of fields, so another sha256) store nothing: no ingest is
    recorded, so the dataset's fingerprint, and every audit run's freshness, stays as it was."""
    from warehouse.db import reader
    from warehouse.results import dataset_fingerprint
    wh = str(tmp_path / "w.duckdb")
    worlds = two_pairs()
    assert ingest("worlds", str(write_lines(tmp_path / "a.jsonl", worlds)), "--dataset", "d", "--warehouse", wh) == 0
    with reader(wh) as con:
        before = dataset_fingerprint(con, "d")
    again = tmp_path / "b.jsonl"
    again.write_text("".join(json.dumps(dict(reversed(list(w.items())))) + "\n" for w in worlds))
    capsys.readouterr()
    assert ingest("worlds", str(again), "--dataset", "d", "--warehouse", wh) == 0
    said = capsys.readouterr().out
    assert "4 already stored (the same values; skipped)" in said and "unchanged: nothing new, no ingest recorded" in said
    with reader(wh) as con:
        assert dataset_fingerprint(con, "d") == before
    assert rows_of(wh, "SELECT count(*) FROM ingests") == [(1,)]
