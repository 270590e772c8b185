"""The stakeholder report of a dataset whose dataset, model, world, document and detector names
are hostile (issue #20): the names are text in the HTML, in its tables and in its charts, and a
table cell a spreadsheet would run as a formula keeps a leading '."""
from __future__ import annotations

import html
import json
import re

import pandas as pd
import pytest

from qlb.present.report import _table, spreadsheet_safe
from tests.app.test_injection import DATASET, FORMULA, IMAGE, TAG, ingest_hostile, strings_in


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory) -> str:
    """The report of the hostile dataset's refusal and QuasiLeak run (three models, three
    detectors named with the payloads)."""
    from qlb.runs.audit import run_audits
    from qlb.runs.report import build_report
    from warehouse.db import writer
    folder = tmp_path_factory.mktemp("hostile_report")
    with writer(folder / "qlb.duckdb") as con:
        ingest_hostile(con, folder / "exports")
        run = run_audits(con, DATASET, decode=False, utility=False, n_boot=100)
        return build_report(con, run.run_id)


def cells(text: str) -> list[str]:
    """The text of every table cell of the report, as a reader sees it."""
    return [html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", text, flags=re.S)]


def figure_strings(text: str) -> list[str]:
    """Every string in the report's figures (the JSON handed to Plotly)."""
    return [s for data in re.findall(r"Plotly\.newPlot\(\s*\"[^\"]+\",\s*(\[.*?\]),\s*\{", text, flags=re.S)
            for s in strings_in(json.loads(data))]


def test_report_shows_hostile_names_as_text(hostile_report):
    text = hostile_report
    outside_scripts = re.sub(r"<script\b.*?</script>", "", text, flags=re.S | re.I)
    assert not re.search(r"<img|<a\s", outside_scripts, re.IGNORECASE)  # no tag made of a name
    assert f"Dataset <b>{html.escape(DATASET)}</b>" in text
    shown = cells(text)
    assert {IMAGE, TAG} <= set(shown)                                   # the model names, shown as text
    assert f"{html.escape(TAG)}" in text and TAG not in text
    strings = figure_strings(text)
    assert strings and html.escape(TAG, quote=False) in strings           # a model on a chart, as text
    assert not [s for s in strings if re.search(r"<(img|a)[\s>/]", s, re.IGNORECASE)]


def test_report_tables_keep_formulas_as_text(hostile_report):
    shown = cells(hostile_report)
    assert "'" + FORMULA in shown and FORMULA not in shown
    own_figure = r"[-+]?[\d.,]+%?|[-+]\d[\d.,]*(%| points| \[| to ).*"     # a number, or a figure qlb wrote ("+1.7 [..]")
    live = [c for c in shown if c[:1] in ("=", "+", "-", "@", "\t", "\r") and not re.fullmatch(own_figure, c)]
    assert live == []


def test_spreadsheet_safe_prefixes_text_only():
    df = pd.DataFrame({"model": [FORMULA, "-1+2", "@x", "-0.5", "sim-alder", None], "value": [-0.5, -1.0, 2.0, 0.0,
                                                                                             -3.25, 1.0]})
    out = spreadsheet_safe(df)
    assert out["model"].tolist()[:5] == ["'" + FORMULA, "'-1+2", "'@x", "-0.5", "sim-alder"]
    assert pd.isna(out["model"].iloc[5]) and out["model"].dtype == df["model"].dtype
    assert out["value"].tolist() == df["value"].tolist() and out["value"].dtype == df["value"].dtype
    assert df["model"].iloc[0] == FORMULA                                # the input is not changed
    table = _table(df)
    assert "'=HYPERLINK" in html.unescape(table) and "<td>-0.5</td>" in table
