"""The stakeholder report: self-contained, computed from the run, escaped, within budget."""
from __future__ import annotations

import re

import duckdb
import pandas as pd

from qlb.cli import main
from qlb.present.report import _table, findings
from qlb.runs.report import build_report, load_run


def test_report_of_the_decoded_demo(decoded_warehouse, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "--warehouse", str(decoded_warehouse), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert out.stat().st_size < 15e6
    assert "SIMULATED data" in text and "Headline findings" in text
    assert '&quot;test_used_for_selection&quot;: false' in text
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=|<img |@import", text)   # nothing fetched
    assert text.count("<script") >= 5                                                # figures inline
    con = duckdb.connect(str(decoded_warehouse), read_only=True)
    try:
        d = load_run(con)
        rec = d.recovery[(d.recovery["scope"] == "pooled") & (d.recovery["view"] == "choice")]["accuracy"]
    finally:
        con.close()
    assert f"{100 * rec.min():.1f}% to {100 * rec.max():.1f}%" in text               # a sentence from the run
    assert any("workflow-constrained quantizer" in s for s in findings(d))


def test_report_run_selection_and_errors(decoded_warehouse, tmp_path, capsys):
    assert main(["report", "--warehouse", str(decoded_warehouse), "--run", "nope", "--out",
                 str(tmp_path / "x.html")]) == 1
    assert "no run 'nope'" in capsys.readouterr().err
    assert main(["report", "--warehouse", str(decoded_warehouse), "--out", str(tmp_path / "x.pdf")]) == 2
    con = duckdb.connect(str(decoded_warehouse), read_only=True)
    try:
        runs = con.execute("SELECT run_id FROM runs ORDER BY started_at").fetchall()
        html = build_report(con, runs[0][0])              # an older, less complete run still reports
    finally:
        con.close()
    assert runs[0][0] in html and "Privacy–utility fronts" not in html


def test_report_escapes_text_from_data():
    cell = _table(pd.DataFrame({"model": ["<script>alert(1)</script>"], "x": [0.5]}))
    assert "<script>" not in cell and "&lt;script&gt;" in cell
