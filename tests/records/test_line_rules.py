"""One set of line rules for JSON Lines, CSV and Parquet (issue 20, item 4): a large cell, bad
UTF-8, NaN and deep nesting reject one row at most, and reading goes on."""
from __future__ import annotations

import csv
import io
import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import assume, given, settings, strategies as st

from qlb.records import readers
from qlb.records.readers import read_records

DEEP = "[" * 100_000 + "]" * 100_000
RESPONSE_COLUMNS = frozenset({"probabilities", "confidence", "scores"})


def write_csv(path, header, rows) -> None:
    buf = io.StringIO(newline="")
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    path.write_bytes(buf.getvalue().encode())


def test_a_csv_cell_over_131072_characters_is_read_and_the_rows_after_it_too(tmp_path):
    p = tmp_path / "c.csv"
    big = "word " * 30_000                                   # 150,000 characters
    write_csv(p, ["doc_id", "text"], [["d1", "short"], ["d2", big], ["d3", "after"]])
    recs = list(read_records(p))
    assert [r.line_no for r in recs] == [2, 3, 4]
    assert all(r.error is None for r in recs)
    assert recs[1].obj["text"] == big and recs[2].obj["doc_id"] == "d3"


def test_a_csv_cell_over_the_line_limit_rejects_its_row_naming_the_field(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 1000)
    p = tmp_path / "c.csv"
    write_csv(p, ["doc_id", "text", "note"], [["d1", "a", "x"], ["d2", "b\n" * 800, "y"], ["d3", "c", "z"]])
    recs = list(read_records(p))
    assert [(r.line_no, r.field) for r in recs if r.error] == [(3, "text")]
    assert "1,000" in recs[1].error
    assert [r.obj["doc_id"] for r in recs if r.error is None] == ["d1", "d3"]   # line numbers after it stay right
    assert recs[2].line_no == 804


def test_a_physical_line_over_the_limit_is_never_held_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 1000)
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a": 1}\n{"a": "' + b"x" * 50_000 + b'"}\n{"a": 3}\n')
    recs = list(read_records(p))
    assert [r.line_no for r in recs] == [1, 2, 3]
    assert recs[1].error and "50,009 bytes" in recs[1].error and len(recs[1].raw) < 5000
    assert recs[2].text == '{"a": 3}'
    q = tmp_path / "x.csv"                      # the same in CSV, with a quoted cell that runs on
    q.write_bytes(b'a,b\n1,2\n3,"' + b"y" * 50_000 + b'\nstill in the cell",4\n5,6\n')
    recs = list(read_records(q))
    assert [(r.line_no, r.field) for r in recs if r.error] == [(3, "b")]
    assert [r.obj for r in recs if r.error is None] == [{"a": "1", "b": "2"}, {"a": "5", "b": "6"}]


def test_every_bad_utf8_csv_row_is_rejected_on_its_own(tmp_path):
    p = tmp_path / "r.csv"
    p.write_bytes(b"model,world_id\nm,w1\nm,w\xff2\nm,w3\nm,w\xfe4\nm,w\xc3\xa95\n")
    recs = list(read_records(p))
    assert [(r.line_no, bool(r.error)) for r in recs] == [(2, False), (3, True), (4, False), (5, True), (6, False)]
    assert all("UTF-8" in r.error for r in recs if r.error)
    assert [r.obj["world_id"] for r in recs if not r.error] == ["w1", "w3", "w\u00e95"]
    assert not any("\ufffd" in str(r.obj) for r in recs if not r.error)


def test_a_quoted_csv_cell_keeps_its_line_breaks_and_quotes(tmp_path):
    p = tmp_path / "q.csv"
    p.write_bytes(b'a,b\r\n"one\r\ntwo ""three""",x\r\n4,"5"\r\n')
    recs = list(read_records(p))
    assert recs[0].obj == {"a": 'one\r\ntwo "three"', "b": "x"} and recs[0].line_no == 2
    assert recs[1].obj == {"a": "4", "b": "5"} and recs[1].line_no == 4


def test_parquet_nan_is_kept_as_a_number_like_json_lines(tmp_path):
    p = tmp_path / "r.parquet"
    pq.write_table(pa.table({"world_id": ["w1", "w2"], "confidence": pa.array([float("nan"), None])}), p)
    recs = list(read_records(p, RESPONSE_COLUMNS))
    assert math.isnan(recs[0].obj["confidence"]) and recs[1].obj["confidence"] is None
    j = tmp_path / "r.jsonl"
    j.write_text('{"world_id": "w1", "confidence": NaN}\n')
    assert "NaN" in list(read_records(j))[0].text         # JSON Lines hands NaN to the same parser
    c = tmp_path / "r.csv"
    c.write_text("world_id,confidence\nw1,NaN\nw2,Infinity\n")
    cells = [r.obj["confidence"] for r in read_records(c, RESPONSE_COLUMNS)]
    assert math.isnan(cells[0]) and cells[1] == math.inf


def test_a_deep_json_cell_rejects_its_row_in_csv_and_parquet(tmp_path):
    c = tmp_path / "r.csv"
    write_csv(c, ["world_id", "probabilities"], [["w1", DEEP], ["w2", '{"A": 1.0}']])
    recs = list(read_records(c, RESPONSE_COLUMNS))
    assert recs[0].error and recs[0].field == "probabilities" and "recursion limit" in recs[0].error
    assert recs[1].obj["probabilities"] == {"A": 1.0}
    p = tmp_path / "r.parquet"
    pq.write_table(pa.table({"world_id": ["w1", "w2"], "probabilities": [DEEP, '{"A": 1.0}']}), p)
    recs = list(read_records(p, RESPONSE_COLUMNS))
    assert recs[0].error and recs[0].field == "probabilities"
    assert recs[1].obj["probabilities"] == {"A": 1.0}


def test_parquet_bad_utf8_and_large_cells_reject_their_row(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 1000)
    raw = pa.array([b"w1", b"w\xff2", b"w3", b"w4"], type=pa.binary())
    ids = pa.Array.from_buffers(pa.string(), 4, raw.buffers())      # a string column holding bad UTF-8
    p = tmp_path / "r.parquet"
    pq.write_table(pa.table({"world_id": ids, "text": ["a", "b", "c" * 5000, "d"]}), p)
    recs = list(read_records(p))
    assert [(r.line_no, r.field) for r in recs if r.error] == [(2, "world_id"), (3, "text")]
    assert [r.obj["world_id"] for r in recs if not r.error] == ["w1", "w4"]


def test_a_csv_header_it_cannot_use_rejects_every_row(tmp_path):
    p = tmp_path / "h.csv"
    p.write_bytes(b"a,a\n1,2\n3,4\n")
    recs = list(read_records(p))
    assert [r.line_no for r in recs] == [1, 2, 3] and all(r.error for r in recs)
    assert "appears twice" in recs[0].error


@pytest.mark.parametrize("tail", [b'3,"never closed\n4,5\n', b'3,"never closed'])
def test_a_quote_left_open_at_the_end_rejects_that_row(tmp_path, tail):
    p = tmp_path / "o.csv"
    p.write_bytes(b"a,b\n1,2\n" + tail)
    recs = list(read_records(p))
    assert recs[0].obj == {"a": "1", "b": "2"}
    assert recs[1].line_no == 3 and "quote" in recs[1].error


# ------------------------------------------------------------------- CSV as Python's csv reads it
TOKENS = st.sampled_from(["a", "b", " ", ",", '"', "\n", "\r\n", "é"])


@settings(max_examples=300, deadline=None, database=None)
@given(st.lists(TOKENS, min_size=1, max_size=40))
def test_csv_rows_are_the_rows_pythons_csv_module_reads(tmp_path_factory, tokens):
    """Any text (quotes anywhere, quoted line breaks, CRLF): the same rows, cells and first line
    numbers as csv.reader (excel dialect), blank rows skipped; a quote left open at the end
    rejects only that last row."""
    text = "h1,h2\n" + "".join(tokens)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        expected, line = [], 0
        for row in reader:
            expected.append((line + 1, row))
            line = reader.line_num
    except csv.Error:
        assume(False)
    header = expected.pop(0)[1]
    expected = [(n, r) for n, r in expected if any(c.strip() for c in r)]
    p = tmp_path_factory.mktemp("csv") / "x.csv"
    p.write_bytes(text.encode())
    got = list(read_records(p))
    if got and got[-1].error and "quote" in got[-1].error:     # csv.reader returns the cut row as it is
        cut = got.pop()
        if expected and expected[-1][0] == cut.line_no:
            expected.pop()
    assert [r.line_no for r in got] == [n for n, _ in expected]
    for rec, (_, row) in zip(got, expected):
        if len(row) != len(header):
            assert rec.error == f"row has {len(row)} cell{'' if len(row) == 1 else 's'}, header has 2"
        else:
            assert rec.obj == {h: (c if c != "" else None) for h, c in zip(header, row)}
