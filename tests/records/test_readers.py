"""Reading rules (CONTRACT.md section 1): BOM, CRLF, blank lines, bad UTF-8, CSV and Parquet."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qlb.records.readers import detect_format, read_records


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
