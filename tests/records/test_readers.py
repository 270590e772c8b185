"""Reading rules (CONTRACT.md section 1): BOM, CRLF, blank lines, bad UTF-8, CSV and Parquet."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qlb.records.readers import RAW_SHOWN, csv_cells, detect_format, read_records, whole_file_problem


def test_jsonl_bom_crlf_blank_and_bad_utf8(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'\xef\xbb\xbf{"a": 1}\r\n\r\n   \n{"a": "\xff"}\r\n{"a": 3}')
    recs = list(read_records(p))
    assert [r.line_no for r in recs] == [1, 4, 5]
    assert recs[0].text == '{"a": 1}'            # BOM and CR gone
    assert recs[1].error.startswith("line is not valid UTF-8")
    assert "\\xff" in recs[1].raw                 # raw kept, readable
    assert recs[2].text == '{"a": 3}'             # last line without newline


def test_csv_cells_and_json_columns(tmp_path):
    p = tmp_path / "x.csv"
    p.write_bytes('\ufeffmodel,world_id,status,choice,probabilities,confidence\r\n'
                  'm,w1,ok,DELAY,"{""DELAY"": 1.0}",0.9\r\n'
                  '\r\n'
                  'm,w2,unavailable,,,\r\n'
                  'm,w3,ok\r\n'.encode())
    recs = list(read_records(p, frozenset({"probabilities", "confidence"})))
    assert recs[0].line_no == 2 and recs[0].obj["probabilities"] == {"DELAY": 1.0}
    assert recs[0].obj["confidence"] == 0.9 and recs[0].obj["world_id"] == "w1"
    assert recs[1].line_no == 4 and recs[1].obj["choice"] is None and recs[1].obj["probabilities"] is None
    assert recs[2].line_no == 5 and "cells" in recs[2].error


def test_a_csv_rows_text_starts_with_its_header_so_its_cells_keep_their_names(tmp_path):
    """What the quarantine keeps of a CSV row: the header's line, then the row's, both as received
    (a quoted line break too); ``csv_cells`` reads the row's cells back by name, and reads nothing
    from a row without its header or a row cut at the line limit."""
    p = tmp_path / "x.csv"
    p.write_bytes(b'\xef\xbb\xbfworld_id, domain\r\nw1,"a\r\nb"\r\nw2\r\n')
    first, short = read_records(p)
    assert first.raw == 'world_id, domain\nw1,"a\r\nb"'
    assert short.raw == "world_id, domain\nw2" and short.error == "row has 1 cell, header has 2"
    assert csv_cells(first.raw) == {"world_id": "w1", "domain": "a\r\nb"}
    assert csv_cells('world_id,domain\nw1,""') == {"world_id": "w1", "domain": None}     # empty: missing
    assert csv_cells('w1,"a\r\nb"') is None                              # an older qlb's row, no header
    assert csv_cells(short.raw) is None
    cut = "world_id,text\nw1," + "x" * RAW_SHOWN + ",more ... (over the line limit)"
    assert csv_cells(cut) is None


def test_a_csv_header_of_another_separator_is_said_so(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("world_id;pair_id;domain\nw1;p1;delivery\n")
    header, row = read_records(p)
    assert header.error == ("header: one column, 'world_id;pair_id;domain': its names are separated by ';'; a CSV "
                            "file's cells are separated by ','")
    assert row.error.startswith("the header (line 1) cannot be used: one column, ")


def test_a_file_that_fails_whole_is_said_why(tmp_path):
    utf16 = tmp_path / "w.jsonl"
    utf16.write_bytes('{"world_id": "w1"}\n'.encode("utf-16"))
    assert whole_file_problem(utf16) == "the file is UTF-16 or UTF-32 (its byte-order mark says so): save it as UTF-8"
    array = tmp_path / "w.json"
    array.write_text('\n  [\n {"world_id": "w1"}\n]\n')
    assert whole_file_problem(array).startswith("the file starts with '[': it looks like one JSON array")
    assert whole_file_problem(tmp_path / "w.jsonl", "csv") is not None          # the byte-order mark, any format
    fine = tmp_path / "ok.csv"
    fine.write_text("[a],b\n1,2\n")
    assert whole_file_problem(fine) is None and whole_file_problem(array, "csv") is None


def test_parquet_maps_and_lists(tmp_path):
    p = tmp_path / "x.parquet"
    table = pa.table({
        "model": ["m", "m"], "world_id": ["w1", "w2"], "status": ["ok", "ok"], "choice": ["DELAY", None],
        "probabilities": pa.array([[("DELAY", 1.0)], None], type=pa.map_(pa.string(), pa.float64())),
        "confidence": [0.5, None],
    })
    pq.write_table(table, p)
    recs = list(read_records(p))
    assert recs[0].obj["probabilities"] == {"DELAY": 1.0}
    assert recs[1].obj["probabilities"] is None and recs[1].obj["confidence"] is None
    assert json.loads(recs[0].raw)["world_id"] == "w1"


def test_format_from_name():
    assert detect_format("a.JSONL") == "jsonl" and detect_format("b.csv") == "csv"
    assert detect_format("c.parquet") == "parquet"
    with pytest.raises(ValueError, match="cannot tell the format"):
        detect_format("d.xlsx")
