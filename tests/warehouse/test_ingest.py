"""Ingest: idempotency, one transaction per file, quarantine contents, invalid kept, cross-line
rules, migrations."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.conftest import make_world, native, two_pairs, write_lines
from warehouse import ingest as ingest_mod
from warehouse import queries
from warehouse.db import current_version, latest_version, migrate, open_reader, writer
from warehouse.ingest import IngestRequest, ingest_file, validate_file


def count(con, table: str) -> int:
    return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def snapshot(con) -> dict:
    return {t: count(con, t) for t in ("datasets", "ingests", "rejects", "worlds", "responses",
                                       "refusal_responses", "models", "ql_documents", "ql_groups")}


def test_worlds_then_responses(wh, worlds_file, tmp_path):
    r = ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    assert len(r.report.accepted) == 4 and not r.report.rejects
    resp = write_lines(tmp_path / "r.jsonl", [native("m1", w) for w in ("w1", "w2", "w3", "w4")])
    r2 = ingest_file(wh, IngestRequest("responses", resp, "ds"))
    assert len(r2.report.accepted) == 4
    row = wh.execute("SELECT probabilities, valid, choice_not_argmax FROM responses WHERE world_id = 'w1'").fetchone()
    assert json.loads(row[0]) == native("m1", "w1")["probabilities"] and row[1] is True and row[2] is False
    assert wh.execute("SELECT model, simulated FROM models").fetchall() == [("m1", False)]


def test_same_file_twice_changes_nothing(wh, worlds_file):
    first = ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    before = snapshot(wh)
    second = ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    assert second.duplicate and second.ingest_id == first.ingest_id
    assert snapshot(wh) == before


def test_same_worlds_in_another_file_are_already_stored_not_duplicated(wh, worlds_file, tmp_path):
    """Another file restating stored worlds: the same values are skipped (already stored), other
    values under a stored world_id are rejected naming the ingest whose world is kept."""
    first = ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    changed = make_world("w3", "p2", "missed_transfer", split="test", request="Order #2 is late")
    again = write_lines(tmp_path / "again.jsonl", two_pairs()[:2] + [make_world("w9", "p9", "missed_transfer"), changed])
    r = ingest_file(wh, IngestRequest("worlds", again, "ds"))
    assert r.report.already_stored == 2 and len(r.report.accepted) == 1
    assert [(x.line_no, x.reason) for x in r.report.rejects] == [
        (4, f"duplicate world_id 'w3' with other values than the one ingest #{first.ingest_id} stored "
            "(the stored one is kept)")]
    assert count(wh, "worlds") == 5
    assert wh.execute("SELECT request FROM worlds WHERE world_id = 'w3'").fetchone() == ("Order #1 is late",)


def test_failure_mid_file_leaves_warehouse_unchanged(wh, worlds_file, tmp_path, monkeypatch):
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    resp = write_lines(tmp_path / "r.jsonl", [json.dumps(native("m1", w)).encode() for w in ("w1", "w2")]
                       + [b"{bad"], raw=True)
    before = snapshot(wh)
    real_insert = ingest_mod.insert_rows

    def failing_insert(con, table, frame):
        real_insert(con, table, frame)      # the responses go in ...
        if table == "rejects":
            raise RuntimeError("disk full")  # ... then the write fails part-way

    monkeypatch.setattr(ingest_mod, "insert_rows", failing_insert)
    with pytest.raises(RuntimeError, match="disk full"):
        ingest_file(wh, IngestRequest("responses", resp, "ds"))
    assert snapshot(wh) == before
    monkeypatch.setattr(ingest_mod, "insert_rows", real_insert)
    r = ingest_file(wh, IngestRequest("responses", resp, "ds"))      # and the retry works
    assert not r.duplicate and count(wh, "responses") == 2


def test_quarantine_keeps_raw_line_number_and_reason(wh, worlds_file, tmp_path):
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    lines = [
        json.dumps(native("m1", "w1")).encode(),
        b"",                                                         # blank: skipped
        b'{"model": "m1", "world_id": "w2", "status": "ok", "choi',  # truncated JSON
        json.dumps(native("m1", "w1")).encode(),                     # duplicate (model, world)
        json.dumps(native("m1", "w404")).encode(),                   # unknown world
        b'{"model": "m1", "world_id": "w3", "status": "\xff"}',      # bad UTF-8
        b'[1, 2]',                                                   # not an object
        json.dumps(native("m1", "w4", status="done")).encode(),      # bad status
        json.dumps(native("m1", "w2", probabilities={"DELAY": 2.0})).encode(),  # invalid but kept
    ]
    resp = write_lines(tmp_path / "r.jsonl", lines, raw=True)
    r = ingest_file(wh, IngestRequest("responses", resp, "ds"))
    rejects = wh.execute("SELECT line_no, field, reason, raw_text, file_name FROM rejects ORDER BY line_no").fetchall()
    assert [x[0] for x in rejects] == [3, 4, 5, 6, 7, 8]
    reasons = {x[0]: x[2] for x in rejects}
    assert "not valid JSON" in reasons[3]
    assert "duplicate response" in reasons[4]
    assert "unknown world_id 'w404'" in reasons[5]
    assert "UTF-8" in reasons[6]
    assert "not a JSON object" in reasons[7]
    assert rejects[5][1] == "status"
    assert rejects[0][3] == lines[2].decode() and rejects[0][4] == "r.jsonl"
    stored = wh.execute("SELECT world_id, valid, invalid_reason FROM responses ORDER BY world_id").fetchall()
    assert stored[0] == ("w1", True, None)
    assert stored[1][0] == "w2" and stored[1][1] is False and "sum to 2" in stored[1][2]
    assert r.report.n_invalid == 1
    ing = wh.execute("SELECT n_lines, n_accepted, n_invalid, n_rejected FROM ingests WHERE kind = 'responses'").fetchone()
    assert ing == (8, 2, 1, 6)
    assert r.report.messages()[0].startswith("r.jsonl:3: ")


def test_model_option(wh, worlds_file, tmp_path):
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    rows = [{k: v for k, v in native("x", "w1").items() if k != "model"}, native("other", "w2")]
    resp = write_lines(tmp_path / "r.jsonl", rows)
    r = ingest_file(wh, IngestRequest("responses", resp, "ds", model="named"))
    assert [x.field for x in r.report.rejects] == ["model"]
    assert wh.execute("SELECT model FROM responses").fetchall() == [("named",)]
    r2 = validate_file(wh, IngestRequest("responses", resp, "ds2"))
    assert r2.rejects[0].reason.startswith("model is missing")


def test_pair_rules(wh, tmp_path):
    worlds = [
        make_world("a1", "pa", "missed_transfer"),
        make_world("a2", "pa", "missed_transfer"),                      # same S as its pair
        make_world("b1", "pb", "missed_transfer"),
        make_world("b2", "pb", "sorting_backlog", request="different"),  # public field differs
        make_world("c1", "pc", "missed_transfer"),
        make_world("c2", "pc", "sorting_backlog"),
        make_world("c3", "pc", "sorting_backlog"),                      # third world of a pair
    ]
    r = ingest_file(wh, IngestRequest("worlds", write_lines(tmp_path / "w.jsonl", worlds), "ds"))
    reasons = {x.line_no: x.reason for x in r.report.rejects}
    assert set(reasons) == {2, 4, 7}
    assert "both worlds have mechanism" in reasons[2]
    assert "field request differs" in reasons[4]
    assert "already has two worlds" in reasons[7]


def test_refusal_rules(wh, worlds_file, tmp_path):
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    base = {"model": "m", "status": "ok", "choice": "WITHHOLD", "scores": {"missed_transfer": 0.4, "WITHHOLD": 0.9}}
    rows = [
        {**base, "world_id": "w1"},
        {**base, "world_id": "w2", "choice": "bgp_flap"},
        {**base, "world_id": "w3", "scores": {"missed_transfer": -1}},
        {**base, "world_id": "w4", "scores": {"dns_misroute": 0.3}},
        {**base, "world_id": "w1"},
        {**base, "world_id": "w2", "status": "unavailable", "choice": None, "scores": None},
    ]
    r = ingest_file(wh, IngestRequest("refusal", write_lines(tmp_path / "f.jsonl", rows), "ds"))
    assert [x.line_no for x in r.report.rejects] == [2, 3, 4, 5]
    assert [x.field for x in r.report.rejects][:3] == ["choice", "scores.missed_transfer", "scores"]
    assert count(wh, "refusal_responses") == 2


def test_corpus_and_predictions(wh, tmp_path):
    text = "The juice box by the bed, and the fridge stays cold."
    cues = [[text.index("juice box"), text.index("juice box") + 9], [text.index("fridge"), text.index("fridge") + 6]]
    policy = {a: "keep" for a in ("age", "gender", "nationality", "education", "occupation", "income",
                                  "relationship")} | {"health": "hide"}
    docs = [{"doc_id": "d1", "split": "test", "context_id": "c", "text": text, "profile": {"health": "diabetes"},
             "policy": policy, "groups": [{"attribute": "health", "cues": cues}]}]
    ingest_file(wh, IngestRequest("corpus", write_lines(tmp_path / "c.jsonl", docs), "ds"))
    assert wh.execute("SELECT n_targets, n_groups FROM ql_documents").fetchone() == (1, 1)
    assert wh.execute("SELECT attribute, policy_label, arity, cue_distance FROM ql_groups").fetchone() == \
        ("health", "hide", 2, cues[1][1] - cues[0][0])
    preds = [{"doc_id": "d1", "detector": "lex", "groups": [{"attribute": "health", "cues": cues}]},
             {"doc_id": "d2", "detector": "lex", "groups": []},
             {"doc_id": "d1", "detector": "lex", "groups": []}]
    r = ingest_file(wh, IngestRequest("predictions", write_lines(tmp_path / "p.jsonl", preds), "ds"))
    assert [x.line_no for x in r.report.rejects] == [2, 3]
    assert count(wh, "ql_predictions") == 1


def test_a_corpus_with_its_own_attribute_set(wh, tmp_path):
    """The attribute set is the documents' policy keys (here religion and union membership), the
    same in every document; predictions must name those attributes; scores break down by them."""
    from qlb.quasileak.leaderboard import score_tables
    from qlb.runs.quasileak import load_corpus, load_predictions
    text = "She sings at St Mary's on Sundays and chairs the branch meeting of the dockers' local."
    rel = [[text.index("St Mary's"), text.index("St Mary's") + 9], [text.index("Sundays"), text.index("Sundays") + 7]]
    uni = [[text.index("branch meeting"), text.index("branch meeting") + 14],
           [text.index("dockers' local"), text.index("dockers' local") + 14]]
    policy = {"religion": "hide", "union": "keep"}
    docs = [{"doc_id": f"d{i}", "split": "test", "context_id": "c", "text": text, "profile": {"religion": "catholic"},
             "policy": policy, "groups": [{"attribute": "religion", "cues": rel}, {"attribute": "union", "cues": uni}]}
            for i in (1, 2)]
    docs.append({**docs[0], "doc_id": "d3", "policy": {"religion": "hide", "union": "keep", "health": "keep"}})
    r = ingest_file(wh, IngestRequest("corpus", write_lines(tmp_path / "c.jsonl", docs), "own"))
    assert len(r.report.accepted) == 2 and [x.line_no for x in r.report.rejects] == [3]
    assert "differ from the corpus's attribute set" in r.report.rejects[0].reason
    preds = [{"doc_id": "d1", "detector": "det", "groups": [{"attribute": "religion", "cues": rel}]},
             {"doc_id": "d2", "detector": "det", "groups": [{"attribute": "health", "cues": rel}]}]
    r = ingest_file(wh, IngestRequest("predictions", write_lines(tmp_path / "p.jsonl", preds), "own"))
    assert [x.line_no for x in r.report.rejects] == [2] and "health" in r.report.rejects[0].reason
    scores = score_tables(load_corpus(wh, "own"), load_predictions(wh, "own"), "test", n_boot=50)
    by_attr = scores[(scores["slice_kind"] == "attribute") & (scores["metric"] == "complete_recall")]
    assert dict(zip(by_attr["slice"], by_attr["value"])) == {"religion": 0.5}   # hide targets only; d2 not found


def test_csv_and_parquet_ingest_match_jsonl(wh, worlds_file, tmp_path):
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    rows = [native("m1", "w1"), native("m1", "w2", confidence=None),
            native("m1", "w3", status="unavailable", choice=None, probabilities=None, confidence=None)]
    frame = pd.DataFrame(rows)
    frame["probabilities"] = [json.dumps(p) if p else None for p in frame["probabilities"]]
    frame.to_csv(tmp_path / "r.csv", index=False)
    ingest_file(wh, IngestRequest("worlds", worlds_file, "csv"))
    r = ingest_file(wh, IngestRequest("responses", tmp_path / "r.csv", "csv"))
    assert len(r.report.accepted) == 3 and not r.report.rejects
    frame.to_parquet(tmp_path / "r.parquet")
    ingest_file(wh, IngestRequest("worlds", worlds_file, "pq"))
    r = ingest_file(wh, IngestRequest("responses", tmp_path / "r.parquet", "pq"))
    assert len(r.report.accepted) == 3 and not r.report.rejects
    got = wh.execute("SELECT dataset_id, world_id, status, choice, probabilities, confidence FROM responses "
                     "WHERE dataset_id IN ('csv', 'pq') ORDER BY dataset_id, world_id").fetchall()
    assert [g[1:] for g in got[:3]] == [g[1:] for g in got[3:]]
    assert json.loads(got[0][4]) == rows[0]["probabilities"] and got[1][5] is None


def test_readers_are_read_only(tmp_path, worlds_file):
    path = tmp_path / "wh.duckdb"
    with writer(path) as con:
        ingest_file(con, IngestRequest("worlds", worlds_file, "ds"))
    con = open_reader(path)
    try:
        with pytest.raises(Exception, match="read-only"):
            con.execute("DELETE FROM worlds")
        assert queries.fetch_df(con, "split_counts", ["ds"])["worlds"].sum() == 4
    finally:
        con.close()


def test_forward_migration(tmp_path):
    path = tmp_path / "wh.duckdb"
    with writer(path) as con:
        assert current_version(con) == latest_version()
    mig = tmp_path / "migrations"
    mig.mkdir()
    v = latest_version() + 1
    (mig / f"{v:03d}_add_notes.sql").write_text("ALTER TABLE datasets ADD COLUMN notes VARCHAR;")
    with writer(path) as con:
        assert migrate(con, mig) == v
        assert migrate(con, mig) == v          # idempotent
        con.execute("SELECT notes FROM datasets").fetchall()


def test_retry_after_rejects_resumes_without_duplicates(wh, worlds_file, tmp_path):
    resp = write_lines(tmp_path / "r.jsonl", [native("m1", "w1"), native("m1", "w5")])
    first = ingest_file(wh, IngestRequest("responses", resp, "ds"))      # no worlds yet: both rejected
    assert len(first.report.rejects) == 2
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    second = ingest_file(wh, IngestRequest("responses", resp, "ds"))     # same file: rejected lines retried
    assert not second.duplicate and second.ingest_id == first.ingest_id
    assert len(second.report.accepted) == 1 and len(second.report.rejects) == 1
    assert count(wh, "rejects") == 1                      # quarantine replaced, not appended
    third = ingest_file(wh, IngestRequest("responses", resp, "ds"))      # w1 already stored by this file: skipped
    assert third.report.already_stored == 1 and len(third.report.rejects) == 1
    assert count(wh, "responses") == 1 and count(wh, "rejects") == 1
    assert wh.execute("SELECT n_accepted, n_rejected FROM ingests WHERE kind = 'responses'").fetchone() == (1, 1)
