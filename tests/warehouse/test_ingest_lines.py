"""Ingest under hostile files (issue 20, items 4 and 7): every format keeps the JSON Lines
verdicts, and a file is stored in batches, still in one transaction."""
from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qlb.cli import main
from qlb.records import readers
from tests.conftest import native, write_lines
from warehouse import ingest as ingest_mod
from warehouse.ingest import IngestRequest, ingest_file

DEEP = "[" * 60_000 + "]" * 60_000          # under csv's old field limit: it reached json.loads
POLICY = {"health": "hide", "age": "keep"}


def count(con, table: str) -> int:
    return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def doc(i: int, text: str = "The juice box by the bed, and the fridge stays cold.") -> dict:
    return {"doc_id": f"d{i:02d}", "split": "test", "context_id": "c", "text": text,
            "profile": json.dumps({"health": "diabetes"}), "policy": json.dumps(POLICY),
            "groups": json.dumps([{"attribute": "health", "cues": [[4, 13], [34, 40]]}])}


def write_csv(path, rows: list[dict]) -> None:
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    path.write_bytes(buf.getvalue().encode())


def test_a_corpus_csv_with_a_150k_character_document_stores_all_30(wh, tmp_path):
    docs = [doc(i) for i in range(30)]
    docs[4] = doc(4, "The juice box by the bed, and the fridge stays cold. " + "x" * 150_000)
    write_csv(tmp_path / "c.csv", docs)
    r = ingest_file(wh, IngestRequest("corpus", tmp_path / "c.csv", "ds"))
    assert not r.report.rejects and len(r.report.accepted) == 30
    assert count(wh, "ql_documents") == 30
    assert wh.execute("SELECT max(length(text)) FROM ql_documents").fetchone()[0] > 150_000


def test_csv_bad_utf8_rows_are_each_rejected_and_later_rows_stored_intact(wh, worlds_file, tmp_path):
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    p = tmp_path / "r.csv"
    p.write_bytes(b"model,world_id,status\n"
                  b"m\xff,w1,unavailable\nm,w2,unavailable\nm\xfe,w3,unavailable\nm\xc3\xa9,w4,unavailable\n")
    r = ingest_file(wh, IngestRequest("responses", p, "ds"))
    assert [(x.line_no, "UTF-8" in x.reason) for x in r.report.rejects] == [(2, True), (4, True)]
    stored = wh.execute("SELECT model, world_id FROM responses ORDER BY world_id").fetchall()
    assert stored == [("m", "w2"), ("m\u00e9", "w4")]           # no U+FFFD stored


def test_parquet_nan_confidence_is_invalid_exactly_as_in_json_lines(wh, worlds_file, tmp_path):
    ingest_file(wh, IngestRequest("worlds", worlds_file, "jsonl"))
    j = tmp_path / "r.jsonl"
    j.write_text(json.dumps(native("m", "w1")).replace("0.93", "NaN") + "\n")
    ingest_file(wh, IngestRequest("responses", j, "jsonl"))
    row = native("m", "w1", confidence=float("nan"))
    table = pa.table({k: [json.dumps(v) if k == "probabilities" else v] for k, v in row.items()})
    pq.write_table(table, tmp_path / "r.parquet")
    ingest_file(wh, IngestRequest("worlds", worlds_file, "pq"))
    ingest_file(wh, IngestRequest("responses", tmp_path / "r.parquet", "pq"))
    got = wh.execute("SELECT dataset_id, valid, invalid_reason, isnan(confidence) FROM responses "
                     "ORDER BY dataset_id").fetchall()
    assert got == [("jsonl", False, "confidence nan is outside [0, 1]", True),
                   ("pq", False, "confidence nan is outside [0, 1]", True)]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_a_deep_json_cell_is_a_rejected_line_not_a_crash(tmp_path, worlds_file, capsys, fmt):
    wh = str(tmp_path / "w.duckdb")
    assert main(["ingest", "worlds", str(worlds_file), "--dataset", "d", "--warehouse", wh]) == 0
    rows = [{**native("m", "w1"), "probabilities": DEEP}, native("m", "w2")]
    rows = [{k: json.dumps(v) if k == "probabilities" and not isinstance(v, str) else v for k, v in r.items()}
            for r in rows]
    path = tmp_path / f"r.{fmt}"
    if fmt == "csv":
        write_csv(path, rows)
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)
    capsys.readouterr()
    assert main(["ingest", "responses", str(path), "--dataset", "d", "--warehouse", wh, "--json"]) == 3
    out, err = capsys.readouterr()
    assert json.loads(out)["accepted"] == 1 and json.loads(out)["rejected"] == 1
    line = 2 if fmt == "csv" else 1                     # a Parquet file has no header line
    assert err.startswith(f"r.{fmt}:{line}: probabilities: ") and "recursion limit" in err


def test_the_other_stateless_commands_share_the_line_rules(tmp_path, worlds_file, capsys):
    base = {"model": "m", "status": "ok", "choice": "WITHHOLD", "scores": json.dumps({"WITHHOLD": 0.9})}
    rows = [{**base, "world_id": "w1"}, {**base, "world_id": "w2", "scores": DEEP}]
    write_csv(tmp_path / "f.csv", rows)
    capsys.readouterr()
    assert main(["refusal", "--worlds", str(worlds_file), "--responses", str(tmp_path / "f.csv"), "--json"]) == 3
    out, err = capsys.readouterr()
    assert json.loads(out)["models"]["m"]["all"]["n"] == 1
    assert err.startswith(f"{tmp_path / 'f.csv'}:3: scores: ")
    docs = [doc(1), {**doc(2), "groups": DEEP}]
    write_csv(tmp_path / "c.csv", docs)
    preds = write_lines(tmp_path / "p.jsonl", [{"doc_id": "d01", "detector": "lex", "groups": []}])
    assert main(["quasileak", "score", "--corpus", str(tmp_path / "c.csv"), "--predictions", str(preds),
                 "--json"]) == 3
    out, err = capsys.readouterr()
    assert "lex" in json.loads(out)["detectors"] and f"{tmp_path / 'c.csv'}:3: groups: " in err


# ------------------------------------------------------------------------------ bounded memory
def spy_on_response_inserts(monkeypatch, seen) -> None:
    """Call ``seen(rows)`` before each insert of response rows: the per-line path's
    ``insert_new_rows``, the bulk path's ``insert_rows`` (its KeyLedger has found the new keys)."""
    real_new, real_rows = ingest_mod.insert_new_rows, ingest_mod.insert_rows

    def new_rows(con, table, frame, key):
        seen(frame)
        return real_new(con, table, frame, key)

    def rows(con, table, frame):
        if table == "responses":
            seen(frame)
        return real_rows(con, table, frame)

    monkeypatch.setattr(ingest_mod, "insert_new_rows", new_rows)
    monkeypatch.setattr(ingest_mod, "insert_rows", rows)


@pytest.mark.parametrize("bulk", [True, False])
def test_ingest_writes_in_batches_and_holds_no_accepted_records(wh, worlds_file, tmp_path, monkeypatch, bulk):
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    monkeypatch.setattr(ingest_mod, "BATCH_LINES", 2)
    monkeypatch.setattr(readers, "BULK_BLOCK", 300)           # a line or two per bulk block
    sizes = []
    spy_on_response_inserts(monkeypatch, lambda frame: sizes.append(len(frame["line_no"])))
    rows = [native(m, w) for m in ("m1", "m2") for w in ("w1", "w2", "w3", "w4")] + [native("m1", "w3")]
    r = ingest_file(wh, IngestRequest("responses", write_lines(tmp_path / "r.jsonl", rows), "ds"),
                    bulk_validation=bulk)
    assert max(sizes) <= 2 and len(sizes) >= 4                  # validated, inserted and dropped in batches
    assert len(r.report.accepted) == 8 and r.report.n_lines == 9
    with pytest.raises(TypeError, match="keeps no accepted records"):
        list(r.report.accepted)                                   # counted, not kept: they are in the warehouse
    assert [(x.line_no, x.reason) for x in r.report.rejects] == [
        (9, "duplicate response for model 'm1' and world 'w3' (the first is kept)")]   # across batches
    assert count(wh, "responses") == 8 and count(wh, "rejects") == 1
    assert wh.execute("SELECT raw_text FROM rejects").fetchone()[0] == json.dumps(rows[-1])


@pytest.mark.parametrize("bulk", [True, False])
def test_a_failure_in_a_later_batch_leaves_the_warehouse_as_it_was(wh, worlds_file, tmp_path, monkeypatch, bulk):
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    before = {t: count(wh, t) for t in ("responses", "rejects", "ingests", "models")}
    monkeypatch.setattr(ingest_mod, "BATCH_LINES", 2)
    monkeypatch.setattr(readers, "BULK_BLOCK", 300)
    calls = []

    def failing(frame):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk full")

    spy_on_response_inserts(monkeypatch, failing)
    rows = [native("m", w) for w in ("w1", "w2", "w3", "w4")] + [native("m", "nope")]
    with pytest.raises(OSError):
        ingest_file(wh, IngestRequest("responses", write_lines(tmp_path / "r.jsonl", rows), "ds"),
                    bulk_validation=bulk)
    assert {t: count(wh, t) for t in before} == before


def test_a_retry_in_batches_skips_what_the_first_ingest_stored(wh, worlds_file, tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_mod, "BATCH_LINES", 2)
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    rows = [native("m", "w1"), native("m", "w9"), native("m", "w2"), native("m", "w1"), native("m", "w3")]
    resp = write_lines(tmp_path / "r.jsonl", rows)
    first = ingest_file(wh, IngestRequest("responses", resp, "ds"))
    assert [x.line_no for x in first.report.rejects] == [2, 4]
    again = ingest_file(wh, IngestRequest("responses", resp, "ds"))
    assert again.ingest_id == first.ingest_id and again.report.already_stored == 3
    assert [x.line_no for x in again.report.rejects] == [2, 4]           # w1 is still a duplicate of line 1
    assert count(wh, "responses") == 3 and count(wh, "rejects") == 2


def buffer_limit(con) -> str:
    return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]


def test_a_file_is_stored_under_the_ingest_memory_cap_then_the_limit_is_set_back(wh, tmp_path, monkeypatch):
    """Item 7: DuckDB's buffer is capped while a file is stored (its default, 80% of the machine,
    let a 1 GB ingest keep the open transaction's rows in memory), and set back afterwards."""
    before = buffer_limit(wh)
    wh.execute("SET memory_limit = ?", [ingest_mod.INGEST_MEMORY])
    capped = buffer_limit(wh)
    wh.execute("SET memory_limit = ?", [before])
    assert capped != before
    seen = []
    real = ingest_mod.insert_rows

    def spy(con, *args, **kwargs):
        seen.append(buffer_limit(con))
        return real(con, *args, **kwargs)

    monkeypatch.setattr(ingest_mod, "insert_rows", spy)
    docs = [doc(i) for i in range(3)] + [doc(3, "The juice box by the bed, and the fridge stays cold. "
                                               + "y" * (12 << 20))]          # near the 16 MB line limit
    write_csv(tmp_path / "c.csv", docs)
    r = ingest_file(wh, IngestRequest("corpus", tmp_path / "c.csv", "ds"))
    assert not r.report.rejects and len(r.report.accepted) == 4      # a 12 MB text fits under the cap
    assert seen and set(seen) == {capped}
    assert buffer_limit(wh) == before


def test_the_cap_is_set_back_when_the_ingest_fails(wh, tmp_path, monkeypatch):
    before = buffer_limit(wh)

    def boom(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(ingest_mod, "insert_rows", boom)
    with pytest.raises(RuntimeError, match="disk on fire"):
        write_csv(tmp_path / "c.csv", [doc(1)])
        ingest_file(wh, IngestRequest("corpus", tmp_path / "c.csv", "ds"))
    assert buffer_limit(wh) == before and count(wh, "ql_documents") == 0


@pytest.mark.parametrize("bulk", [True, False])
def test_a_key_another_dataset_stored_does_not_block_this_datasets_row(wh, worlds_file, tmp_path, monkeypatch,
                                                                       bulk):
    """The store step compares a block with its own dataset's rows only; within a file the first
    of two equal keys is still kept, across batches too."""
    monkeypatch.setattr(ingest_mod, "BATCH_LINES", 2)
    monkeypatch.setattr(readers, "BULK_BLOCK", 300)
    for ds in ("a", "b"):
        ingest_file(wh, IngestRequest("worlds", worlds_file, ds))
    rows = [native("m", "w1"), native("m", "w2"), native("m", "w1", choice="ADDRESS"), native("m", "w3")]
    resp = write_lines(tmp_path / "r.jsonl", rows)
    for ds in ("a", "b"):
        r = ingest_file(wh, IngestRequest("responses", resp, ds), bulk_validation=bulk)
        assert len(r.report.accepted) == 3
        assert [(x.line_no, x.reason) for x in r.report.rejects] == [
            (3, "duplicate response for model 'm' and world 'w1' (the first is kept)")]
    assert wh.execute("SELECT dataset_id, count(*), count(*) FILTER (WHERE world_id = 'w1' AND choice = 'DELAY') "
                      "FROM responses GROUP BY ALL ORDER BY 1").fetchall() == [("a", 3, 1), ("b", 3, 1)]


def test_a_duckdb_error_in_the_bulk_path_is_the_one_raised_and_the_settings_are_set_back(wh, worlds_file, tmp_path,
                                                                                          monkeypatch):
    """A DuckDB error aborts the transaction; the settings the bulk path changes (threads, memory)
    are set back after the rollback, not inside the aborted transaction, where setting them would
    fail and hide the cause (here a full disk, which must be named as such)."""
    from warehouse.db import WarehouseError
    ingest_file(wh, IngestRequest("worlds", worlds_file, "ds"))
    before = {s: wh.execute(f"SELECT current_setting('{s}')").fetchone()[0] for s in ("threads", "memory_limit")}
    real = ingest_mod.insert_rows

    def failing(con, table, frame):
        if table == "responses":
            con.execute("SELECT error('simulated: No space left on device')")
        return real(con, table, frame)

    monkeypatch.setattr(ingest_mod, "insert_rows", failing)
    resp = write_lines(tmp_path / "r.jsonl", [native("m", w) for w in ("w1", "w2", "w3", "w4")])
    with pytest.raises(WarehouseError, match="the disk is full"):
        ingest_file(wh, IngestRequest("responses", resp, "ds"))
    assert {s: wh.execute(f"SELECT current_setting('{s}')").fetchone()[0] for s in before} == before
    assert count(wh, "responses") == 0


def test_identifiers_over_the_length_limit_are_rejected_in_every_kind(wh, tmp_path):
    """World, pair, document and detector ids (and --model) are at most MAX_ID_LENGTH characters:
    a longer one is a rejected line naming its field, never a row DuckDB must index."""
    from qlb.records.schemas import MAX_ID_LENGTH
    from tests.conftest import two_pairs
    from warehouse.ingest import IngestError, validate_file
    long = "x" * (MAX_ID_LENGTH + 1)
    worlds = two_pairs()
    worlds[0] = dict(worlds[0], world_id=long)
    worlds[2] = dict(worlds[2], pair_id=long)
    report = validate_file(wh, IngestRequest("worlds", write_lines(tmp_path / "w.jsonl", worlds), "ds"))
    assert [(r.line_no, r.field) for r in report.rejects][:2] == [(1, "world_id"), (3, "pair_id")]
    write_csv(tmp_path / "c.csv", [doc(1), dict(doc(2), doc_id=long)])
    report = validate_file(wh, IngestRequest("corpus", tmp_path / "c.csv", "ds"))
    assert [(r.line_no, r.field) for r in report.rejects] == [(3, "doc_id")]
    preds = write_lines(tmp_path / "p.jsonl", [{"doc_id": "d01", "detector": long, "groups": []}])
    report = validate_file(wh, IngestRequest("predictions", preds, "ds"))
    assert [(r.line_no, r.field) for r in report.rejects] == [(1, "detector")]
    with pytest.raises(IngestError, match="--model: a model name is 1 to 256 characters"):
        ingest_file(wh, IngestRequest("responses", write_lines(tmp_path / "r.jsonl", [native("m", "w1")]), "ds",
                                      model=long))
