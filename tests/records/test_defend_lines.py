"""`qlb defend` under hostile lines (issue 20, item 5): a bad line is reported and left out, the
output is strict JSON with one line per response."""
from __future__ import annotations

import json

import pytest

from qlb.cli import main
from tests.conftest import native, write_lines

DEEP = "[" * 100_000 + "]" * 100_000


def strict(line: str) -> dict:
    """Parse one output line as strict JSON (NaN, Infinity and -Infinity are not JSON)."""
    def refuse(name: str):
        raise ValueError(f"{name} is not JSON")
    return json.loads(line, parse_constant=refuse)


@pytest.mark.parametrize("method", ["quantize", "top2", "temperature", "noise"])
def test_defend_reports_bad_lines_and_writes_strict_unique_json(tmp_path, worlds_file, capsys, method):
    good = native("m", "w1", probabilities={"ADDRESS": 0.3, "DAMAGE": 0.3, "DELAY": 0.25, "DELIVERY_RECORD": 0.15},
                  choice="ADDRESS")
    lines = [
        json.dumps(good).encode(),
        b'{"model": "m", "world_id": "w2", "status": "ok", "extra": ' + DEEP.encode() + b"}",   # 2: deep
        json.dumps(native("m", "w2")).replace("0.93", "NaN").encode(),                          # 3: NaN
        json.dumps(native("m", "w3")).replace("0.95", "Infinity").encode(),                     # 4: Infinity
        json.dumps(native("m", "w4")).encode(),
        json.dumps(native("m", "w1")).encode(),                                                 # 6: duplicate
        b'{"model": "m", "world_id": "w\xff"}',                                                 # 7: bad UTF-8
    ]
    resp = write_lines(tmp_path / "r.jsonl", lines, raw=True)
    out = tmp_path / "out.jsonl"
    capsys.readouterr()
    code = main(["defend", "--method", method, "--in", str(resp), "--out", str(out), "--worlds", str(worlds_file),
                 "--json"])
    stdout, err = capsys.readouterr()
    assert code == 3
    assert [e.split(":")[1] for e in err.splitlines()] == ["2", "3", "4", "6", "7"]
    assert "duplicate response for model 'm' and world 'w1'" in err
    written = [strict(x) for x in out.read_text().splitlines()]
    assert [w["world_id"] for w in written] == ["w1", "w4"]
    report = json.loads(stdout)
    assert report["written"] == 2 and report["rejected"] == 5


def test_defend_keeps_valid_lines_of_every_kind_strict(tmp_path, capsys):
    rows = [native("m", "w1"), native("m", "w2", status="unavailable", choice=None, probabilities=None,
                                      confidence=None),
            native("m", "w3", probabilities={"DELAY": 0.5, "ADDRESS": 0.6})]        # invalid: passed through
    resp = write_lines(tmp_path / "r.jsonl", rows)
    out = tmp_path / "out.jsonl"
    assert main(["defend", "--method", "quantize", "--in", str(resp), "--out", str(out)]) == 0
    written = [strict(x) for x in out.read_text().splitlines()]
    assert [w["world_id"] for w in written] == ["w1", "w2", "w3"]
    assert written[2] == rows[2] and written[1] == rows[1]
