"""`qlb quasileak verify` (issue 15): the construction check of QUASILEAK.md section 2 from a file,
with the lifts computed by hand."""
from __future__ import annotations

import json

from qlb.cli import main

LINES = [
    {"doc_id": "d1", "attribute": "health", "n_values": 5, "cue_confidences": [0.3, 0.35], "group_confidence": 0.9},
    {"doc_id": "d2", "attribute": "age", "n_values": 4, "cue_confidences": [0.7, 0.2], "group_confidence": 0.95},
    {"doc_id": "d3", "attribute": "age", "n_values": 4, "cue_confidences": [0.3], "group_confidence": 0.5},
    {"doc_id": "d4", "attribute": "age", "n_values": 1, "cue_confidences": [0.3], "group_confidence": 0.9},
]


def test_verify_reports_each_group_and_rejects_bad_lines(tmp_path, capsys):
    p = tmp_path / "groups.jsonl"
    p.write_text("\n".join(json.dumps(x) for x in LINES) + '\n{"doc_id": "d5"\n')
    assert main(["quasileak", "verify", "--groups", str(p), "--json"]) == 3
    out = capsys.readouterr()
    got = json.loads(out.out)["groups"]
    assert [(g["doc_id"], g["verified"]) for g in got] == [("d1", True), ("d2", False), ("d3", False)]
    # d1: chance 1/5; cue 0.35 -> (0.35 - 0.2) / 0.8 = 0.1875; group 0.9 -> 0.875
    assert abs(got[0]["max_cue_lift"] - 0.1875) < 1e-12 and abs(got[0]["group_lift"] - 0.875) < 1e-12
    assert "single cue already reveals" in got[1]["reason"] and "does not reveal" in got[2]["reason"]
    assert f"{p}:4: n_values:" in out.err and f"{p}:5: line is not valid JSON" in out.err


def test_verify_thresholds_are_flags(tmp_path, capsys):
    p = tmp_path / "groups.jsonl"
    p.write_text(json.dumps(LINES[1]) + "\n")
    assert main(["quasileak", "verify", "--groups", str(p), "--tau-weak", "0.65"]) == 0
    assert "1 of 1 groups verified (tau_weak 0.65, tau_reveal 0.7)" in capsys.readouterr().out
    assert main(["quasileak", "verify", "--groups", str(p), "--tau-reveal", "1.5"]) != 0
