"""Pages under Streamlit's AppTest, on the simulated demo warehouse."""
from __future__ import annotations

import base64
from contextlib import contextmanager
import json
import re

import numpy as np

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.data_access import release_readers
from tests.conftest import ROOT

APP = str(ROOT / "app.py")


@pytest.fixture
def app(demo_warehouse, monkeypatch):
    monkeypatch.setenv("QLB_WAREHOUSE", str(demo_warehouse))
    monkeypatch.chdir(ROOT)
    yield AppTest.from_file(APP, default_timeout=60)
    release_readers()   # AppTest shares this process: close the cached read-only handle


@contextmanager
def opened(path, page: str, monkeypatch, timeout: int = 60, query: dict | None = None):
    """The app on the warehouse at ``path`` (``query``: the URL's query string), switched to ``page``;
    the cached read-only handle is closed afterwards."""
    monkeypatch.setenv("QLB_WAREHOUSE", str(path))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(APP, default_timeout=timeout)
    at.query_params.update(query or {})
    at.run()
    at.switch_page(page).run()
    try:
        yield at
    finally:
        release_readers()


def plotly_traces(chart) -> list[dict]:
    """The traces of a rendered Plotly chart, with typed arrays ({dtype, bdata}) decoded."""
    def decode(v):
        if isinstance(v, dict) and "bdata" in v:
            arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
            return arr.reshape([int(x) for x in str(v.get("shape", len(arr))).split(",")]) if "shape" in v else arr
        return v
    return [{k: decode(v) for k, v in t.items()} for t in json.loads(chart.proto.spec)["data"]]


def frames(at: AppTest) -> list:
    """Every table on the page (interactive grids and static tables) as DataFrames."""
    return [df.value for df in at.dataframe] + [t.value for t in at.table]


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [m.value for m in at.caption] + [str(m.value) for m in at.warning]
    parts += [h.value for h in at.title] + [h.value for h in at.subheader]
    return "\n".join(parts)


def stats(at: AppTest) -> dict[str, str]:
    """The headline figures of ``widgets.stat_row`` (label -> shown value)."""
    import html
    import re
    pattern = r'qlb-stat-label"[^>]*>(.*?)</div><div class="qlb-stat-value"[^>]*>(.*?)</div>'
    return {html.unescape(k): html.unescape(v) for m in at.markdown for k, v in re.findall(pattern, m.value)}


def test_overview_shows_the_demo(app):
    at = app.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Overview"
    metrics = stats(at)
    assert metrics["Worlds"] == "1,440"
    assert metrics["Pairs"] == "720"
    assert metrics["Models"] == "9"
    assert metrics["Native responses"] == "12,960"
    assert metrics["Refusal responses"] == "12,960"
    assert metrics["QuasiLeak documents"] == "5,000"
    assert "SIMULATED" in texts(at)
    assert at.sidebar.selectbox[0].value == "simulated-reference"
    tables = frames(at)
    models = next(f for f in tables if "model" in f.columns and "invalid (kept)" in f.columns)
    assert len(models) == 9 and models["responses"].sum() == 12960
    assert models["invalid (kept)"].sum() > 0 and "description" not in models.columns
    refusal = next(f for f in tables if list(f.columns) == ["model", "responses", "unavailable"])
    assert refusal["responses"].sum() == 12960
    described = next(e for e in at.expander if e.label.startswith("What each of the 9 models is"))
    assert described.markdown[0].value.count("- **sim") == 9
    assert any(c.label == "Details" for c in at.get("page_link"))
    splits = next(f for f in tables if "domain" in f.columns and "train" in f.columns)
    assert list(splits.columns) == ["domain", "train", "validation", "test"]
    assert splits[["train", "validation", "test"]].sum().tolist() == [864, 288, 288]


def test_data_page_quarantine(app):
    at = app.run()
    at.switch_page("pages/data.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Data"
    tables = frames(at)
    rejects = next(f for f in tables if "raw text as received" in f.columns)
    assert len(rejects) == 7 and set(rejects["file"]) == {"native_responses.jsonl", "refusal_responses.jsonl"}
    assert "line is not valid UTF-8 (byte 72)" in rejects["problem"].tolist()
    assert "None" not in rejects["field"].astype(str).tolist() and "" in rejects["field"].tolist()
    invalid = next(f for f in tables if "response as stored" in f.columns)
    assert len(invalid) == 9 and not invalid["response as stored"].str.contains("{", regex=False).any()
    assert invalid["response as stored"].str.match(r"choice \w+; \w+ [\d.]+ · ").all()
    assert invalid["source"].str.fullmatch(r"line [\d,]+ of native_responses\.jsonl").all()   # a file's line
    from dashboard.widgets import source_of
    assert source_of("collect:col-20261204-162903-f11caa", 3) == "collected (col-20261204-162903-f11caa)"
    assert any("7 lines of this dataset were rejected when ingested &#40;2 refusal responses, 5 native responses"
               in m.value for m in at.markdown)
    at.selectbox(key="quarantine_kind").select("refusal").run()
    rejects = next(f for f in frames(at) if "raw text as received" in f.columns)
    assert len(rejects) == 2


def test_data_page_upload_proposes_an_own_dataset_and_lists_every_problem(app, tmp_path):
    """The current dataset is simulated: an upload is proposed a dataset of its own, with the reason.
    A file whose lines break several rules: every error of every line is listed (file, line,
    field, problem), not only the first, and nothing is written."""
    at = app.run()
    at.switch_page("pages/data.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_input[0].label == "Into dataset" and at.text_input[0].value == "my-audit"
    assert any("simulated\\-reference, is SIMULATED" in c.value for c in at.caption)
    at.text_input[0].set_value("simulated-reference").run()
    assert any("is a SIMULATED dataset" in w.value for w in at.warning)
    at.text_input[0].set_value("my-audit").run()
    next(s for s in at.selectbox if s.label == "Kind").select("responses").run()
    lines = [b'{"model": 5, "world_id": 3, "status": "maybe"}', b"not json", b'{"world_id": "w1"}']
    at.file_uploader(key="upload").set_value(("bad.jsonl", b"\n".join(lines) + b"\n", "application/json"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    problems = next(f for f in frames(at) if "problem" in f.columns)
    assert list(problems.columns) == ["file", "line", "outcome", "field", "problem"]
    assert (problems["file"] == "bad.jsonl").all() and (problems["outcome"] == "rejected").all()
    first = problems[problems["line"] == 1]
    assert first["field"].tolist() == ["model", "world_id", "status"]
    assert "Input should be 'ok' or 'unavailable' (got 'maybe')" in first["problem"].tolist()
    assert problems[problems["line"] == 2]["problem"].str.startswith("line is not valid JSON").tolist() == [True]
    assert problems[problems["line"] == 3][["field", "problem"]].values.tolist() == [
        ["status", "required field is missing"]]
    assert any("3 lines: 0 will be stored; 3 will be quarantined, with 5 problems" in m.value for m in at.markdown)
    assert "my-audit" not in set(at.sidebar.selectbox[0].options)          # nothing written


def test_no_warehouse_yet(tmp_path, monkeypatch):
    monkeypatch.setenv("QLB_WAREHOUSE", str(tmp_path / "missing.duckdb"))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    assert any("qlb demo" in w.value for w in at.sidebar.warning)


def test_overview_sections_and_chart(app):
    at = app.run()
    at.toggle(key="overview_chart").set_value(True).run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 1
    at.segmented_control(key="overview_section").set_value("QuasiLeak corpus").run()
    corpus = next(f for f in frames(at) if "targets" in f.columns)
    assert corpus["documents"].sum() == 5000 and corpus.set_index("split")["documents"]["test"] == 750
    at.segmented_control(key="overview_section").set_value("Ingests and quarantine").run()
    q = next(f for f in frames(at) if "rejected lines" in f.columns)
    assert q["rejected lines"].sum() == 7


def test_refusal_page(app):
    from scipy.stats import binomtest
    at = app.run()
    at.switch_page("pages/refusal.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Refusal audit"
    findings = [m.value for m in at.markdown if "qlb-finding" in m.value]
    assert len(findings) == 2 and "Refusal does not stop the leak: across 9 models" in findings[0]
    assert "Wilson 95% interval" in findings[0] and "sim-juniper never withheld" in findings[1]
    tables = frames(at)
    by_model = next(f for f in tables if "recovered when withheld" in f.columns)
    assert len(by_model) == 9 and by_model["cases"].sum() > 12800
    juniper = by_model.set_index("model").loc["sim-juniper"]
    assert juniper["recovered when withheld"] == "N/A"
    assert juniper["withheld (share)"].startswith("0.0% [0.0, ")
    # every rate is shown with its Wilson interval: the same as scipy's, from the counts behind it
    direct = next(f for f in tables if "named the mechanism" in f.columns).set_index("model")
    partition = next(f for f in tables if "true first" in f.columns).set_index("model")
    alder = by_model.set_index("model").loc["sim-alder"]
    recovered = int(direct.loc["sim-alder", "named the mechanism"] + partition.loc["sim-alder", "true first"])
    ci = binomtest(recovered, int(alder["cases"])).proportion_ci(method="wilson")
    assert alder["recovered overall"] == f"{100 * recovered / alder['cases']:.1f}% [{100 * ci.low:.1f}, {100 * ci.high:.1f}]"
    charts = at.get("plotly_chart")
    assert len(charts) == 2                      # recovery routes + one response's 17 scores
    routes = plotly_traces(charts[0])
    assert [t["name"] for t in routes if t["type"] == "bar"] == ["named the mechanism",
                                                                 "withheld, residual ranks it first"]
    stacked = [sum(v) for v in zip(*(t["y"] for t in routes if t["type"] == "bar"))]
    total = next(t for t in routes if t["type"] == "scatter" and "error_y" in t)   # the overall recovery, interval
    assert [round(v, 6) for v in stacked] == [round(v, 6) for v in total["y"]]
    overall = by_model.set_index("model")["recovered overall"].str.split("%").str[0].astype(float)
    assert [round(100 * v, 1) for v in stacked] == overall.tolist()
    scores = plotly_traces(charts[1])
    assert len(scores[0]["x"]) == 17
    # filters: one domain, two models
    at.selectbox(key="refusal_domain").select("it").run()
    at.multiselect(key="refusal_models").set_value(["sim-alder", "sim-juniper"]).run()
    by_model = next(f for f in frames(at) if "recovered when withheld" in f.columns and "domain" not in f.columns)
    assert by_model["model"].tolist() == ["sim-alder", "sim-juniper"]
    assert by_model["cases"].max() < 500             # one domain only
    per_domain = next(f for f in frames(at) if "equipment" in f.columns)
    assert per_domain["model"].tolist() == ["sim-alder", "sim-juniper"] and list(per_domain.columns) == [
        "model", "delivery", "equipment", "it"]
    at.segmented_control(key="refusal_domain_rate").set_value("conditional_residual_recovery").run()
    per_domain = next(f for f in frames(at) if "equipment" in f.columns).set_index("model")
    assert (per_domain.loc["sim-juniper"] == "N/A").all()
    at.selectbox(key="drill_outcome").select("residual_tied").run()
    assert not at.exception
    assert "withheld, residual tied" in at.selectbox(key="drill_outcome").options
    assert any("exact" in m.value or "shared" in m.value for m in at.markdown)
    assert not any("residual_tied" in m.value for m in at.markdown)


def test_per_domain_tables_put_the_longer_list_down_the_side():
    import pandas as pd
    from dashboard.widgets import model_domain_grid
    few = pd.DataFrame([(m, d, f"{m}/{d}") for m in ("a", "b", "c") for d in ("x", "y")],
                       columns=["model", "scope", "cell"])
    paper = model_domain_grid(few, 3, domain="scope")            # the papers' layout: a row per model
    assert list(paper.columns) == ["model", "x", "y"] and paper.loc[paper["model"] == "b", "y"].item() == "b/y"
    many = pd.DataFrame([(m, f"d{i:02}", f"{m}/{i}") for m in ("a", "b") for i in range(20)],
                        columns=["model", "domain", "cell"])
    own = model_domain_grid(many, 2)                               # 20 domains, 2 models: a row per domain
    assert list(own.columns) == ["domain", "a", "b"] and len(own) == 20
    assert own.loc[own["domain"] == "d07", "b"].item() == "b/7"
    picked = model_domain_grid(few[few["model"] != "c"], 3, domain="scope")   # 2 of the run's 3 models picked
    assert list(picked.columns) == ["model", "x", "y"]                           # the table does not turn
    odd = pd.DataFrame([("domain", "scope", "1"), ("domain", "model", "2"), ("b", "scope", "3")],
                       columns=["model", "scope", "cell"])                  # names that are the side's own label
    grid = model_domain_grid(odd, 1, domain="scope")
    assert list(grid.columns) == ["domain name", "b", "domain"]               # a model is called "domain"
    assert grid.set_index("domain name").loc["model", "b"] == "—"              # a pair without a cell


def test_quasileak_page(app):
    at = app.run()
    at.switch_page("pages/quasileak.py").run()
    assert not at.exception, [e.value for e in at.exception]
    board = next(f for f in frames(at) if "complete recall" in f.columns)
    assert len(board.columns) <= 4                                     # fits a 1,024 px screen
    assert set(board["detector"]) == {"pattern-pii", "lexicon-cues", "sim-det-strong", "sim-det-local",
                                      "sim-det-binder"}
    assert board["detector"].iloc[0] == "sim-det-strong"            # sorted by complete F1
    assert board.set_index("detector")["simulated"]["sim-det-local"]
    assert not board.set_index("detector")["simulated"]["lexicon-cues"]
    assert all(re.fullmatch(r"\d+\.\d% \[\d+\.\d, \d+\.\d\]", v) for v in board["complete-group F1"])
    assert any("is the best real detector" in m.value and "upper reference" in m.value for m in at.markdown)
    errors = next(f for f in frames(at) if "over-flag" in f.columns)
    assert list(errors["detector"]) == list(board["detector"]) and len(errors.columns) <= 4
    more = next(f for f in frames(at) if "predicted groups" in f.columns)
    assert (more["predicted groups"] > 0).all()
    assert all(len(f.columns) <= 4 for f in frames(at))                 # every table fits a 1,024 px screen
    f1 = plotly_traces(at.get("plotly_chart")[0])
    assert len(f1[0]["x"]) == 5
    at.selectbox(key="ql_breakdown_kind").select("attribute").run()
    by_attr = plotly_traces(at.get("plotly_chart")[1])
    assert len(by_attr) == 5 and len(by_attr[0]["x"]) == 8        # 5 detectors x 8 attributes
    at.selectbox(key="ql_view_detector").select("lexicon-cues").run()
    assert not at.exception
    body = [m.value for m in at.markdown if "white-space:pre-wrap" in m.value]
    assert len(body) == 1 and "border-bottom" in body[0]
    verdicts = [m.value for m in at.markdown if m.value.startswith("- **Gold group")]
    assert verdicts and all("credit" in v for v in verdicts)


def test_recovery_page(decoded_warehouse, monkeypatch):
    with opened(decoded_warehouse, "pages/recovery.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        findings = [m.value for m in at.markdown if "qlb-finding" in m.value]
        assert [f.split("</b>")[0].split("<b>")[1] for f in findings] == [
            "The choice alone.", "The full output.", "The stated confidence.", "Which decisions leak."]
        assert "of test worlds, against 50% for guessing" in findings[0] and "both models" in findings[1]
        internal = ("full_native", "choice_confidence", "no_output", "shrink=", "ensemble of", "[full_")
        assert not [m.value for m in at.markdown if any(word in m.value for word in internal)]
        pooled = next(f for f in frames(at) if "coarse accuracy" in f.columns)
        assert pooled["model"].tolist() == ["sim-alder", "sim-dogwood"]
        at.selectbox(key="recovery_view").select("no_output").run()
        pooled = next(f for f in frames(at) if "coarse accuracy" in f.columns)
        assert pooled["secret recovery"].str.startswith("50.0% [").all()
        fig = [t for t in plotly_traces(at.get("plotly_chart")[0]) if "hovertemplate" in t]   # the points
        assert [t["name"] for t in fig] == ["no output", "choice", "choice + confidence", "full probabilities",
                                            "full native"]
        assert all(len(t["x"]) == 2 for t in fig)
        diff = next(f for f in frames(at) if "reading" in f.columns)
        assert len(diff) == 2 and diff["difference [95% CI]"].str.match(r"^[+-]\d+\.\d \[").all()
        chosen = [m.value for m in at.markdown if "Validation score" in m.value]
        assert len(chosen) == 1 and chosen[0].count("Validation score") == 5      # one line per release view
        # recompute from the run's fits with the run's families: exactly the stored result
        assert at.multiselect(key="rc_families").value == ["prior", "logistic", "template"]
        assert at.toggle(key="rc_refit").value is False
        at.selectbox(key="rc_view").select("full_native").run()
        at.button(key="rc_go").click().run()
        assert not at.exception, [e.value for e in at.exception]
        rc = next(f for f in frames(at) if "result" in f.columns).set_index("result")
        assert len(rc) == 2 and rc["secret recovery [95% CI]"].nunique() == 1
        # fewer families, refit from scratch
        at.selectbox(key="rc_view").select("no_output").run()
        at.multiselect(key="rc_families").set_value(["prior", "template"]).run()
        at.toggle(key="rc_refit").set_value(True).run()
        at.button(key="rc_go").click().run()
        assert not at.exception, [e.value for e in at.exception]
        rc = next(f for f in frames(at) if "result" in f.columns).set_index("result")
        assert rc.loc["recomputed (refit)", "secret recovery [95% CI]"].startswith("50.0% [")
        # a family the run did not fit can only be refitted, whatever the switch says
        at.toggle(key="rc_refit").set_value(False).run()
        at.multiselect(key="rc_families").set_value(["prior", "shared_scorer"]).run()
        at.button(key="rc_go").click().run()
        assert not at.exception, [e.value for e in at.exception]
        rc = next(f for f in frames(at) if "result" in f.columns).set_index("result")
        assert "recomputed (refit)" in rc.index and rc.loc["recomputed (refit)", "attacker families"] == \
            "base rate, shared mechanism scorer"


def test_refusal_recompute_now_stores_a_quick_new_run(demo_warehouse, tmp_path, monkeypatch):
    import shutil

    import duckdb
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(demo_warehouse, wh)           # this test writes a run: keep the shared demo as it is
    with opened(wh, "pages/refusal.py", monkeypatch) as at:
        before = at.selectbox(key="refusal_run").options
        at.button[0].click().run()
        assert not at.exception, [e.value for e in at.exception]
        after = at.selectbox(key="refusal_run").options
        assert len(after) == len(before) + 1
        picked = at.selectbox(key="refusal_run")
        assert picked.index == 0 and after[0] not in before                      # the picker shows the new run
        # by when it started, its audits and the end of its id (the value stays the run id)
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC · refusal, QuasiLeak · run-…(\w{6})", after[0])
        assert after[0].endswith(picked.value[-6:])
        new_run = picked.value
        assert "The Overview and the report show run-…" in " ".join(c.value for c in at.caption)
    con = duckdb.connect(str(wh), read_only=True)
    try:   # the page's recompute never starts the minutes-long decoding audit
        params = con.execute("SELECT parameters FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()[0]
    finally:
        con.close()
    assert '"decoding"' not in params
    # opened afresh, the page shows the run the Overview and the report show (the most complete), not the
    # newest: the pages and the Overview tell the same numbers
    with opened(wh, "pages/overview.py", monkeypatch) as at:
        links = {el.proto.page: el.proto.query_string for el in at.get("page_link") if el.proto.label == "Details"}
        assert any(el.proto.label == "Terms" and el.proto.page.endswith("glossary") for el in at.get("page_link"))
        full = links["refusal"].removeprefix("run=")
        assert full != new_run and links.get("data") == ""          # the Data page has no run to open on
        con = duckdb.connect(str(wh), read_only=True)
        try:
            kinds = dict(con.execute("SELECT run_id, count(DISTINCT kind) FROM (SELECT run_id, 'refusal' AS kind FROM "
                                     "refusal_results UNION ALL SELECT run_id, 'utility' FROM utility_results UNION ALL "
                                     "SELECT run_id, 'ql' FROM ql_scores) GROUP BY run_id").fetchall())
        finally:
            con.close()
        assert kinds[full] > kinds[new_run]                         # the most complete run, not the newest
    with opened(wh, "pages/refusal.py", monkeypatch) as at:
        assert at.selectbox(key="refusal_run").value == full
        assert not any("The Overview and the report show" in c.value for c in at.caption)
    with opened(wh, "pages/refusal.py", monkeypatch, query={"run": new_run}) as at:   # a link picks its run
        assert at.selectbox(key="refusal_run").value == new_run


def test_sensitivity_page_and_whatif(app):
    at = app.run()
    at.switch_page("pages/sensitivity.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Cost-profile sensitivity"
    heat = plotly_traces(at.get("plotly_chart")[0])[0]
    assert heat["type"] == "heatmap" and len(heat["y"]) == 9 and list(heat["x"])[0] == "authored costs"
    assert len(heat["x"]) == 6 and "review at half cost" in list(heat["x"])      # display names, not review_half
    # the sentence above the heatmap counts exactly the heatmap's ✓ cells (one task, every model × profile)
    marks = sum("✓" in str(c) for row in heat["text"] for c in row)
    assert f"choice is non-inferior to full native in {marks} of 54 model × cost-profile cells" in texts(at)
    assert "non-inferior to full native" in texts(at) and "Under the authored costs" in texts(at)
    # one row per task and model (whole at 1,024 px whatever the numbers); its authored selective-routing
    # marks are the heatmap's authored column
    ni = next(f for f in frames(at) if "non-inferior" in f.columns)
    assert len(ni) == 27 and list(ni.columns) == ["task", "model", "extra cost [95% CI]", "non-inferior"]
    assert list(dict.fromkeys(ni["task"])) == ["selective routing", "one-step clarification", "asymmetric-cost routing"]
    assert all(c.count("[") == 1 for c in ni["extra cost [95% CI]"])            # estimate [low, high]
    selective = ni[ni["task"] == "selective routing"]
    assert list(selective["model"]) == list(heat["y"])
    assert list(selective["non-inferior"] == "✓ yes") == ["✓" in str(row[0]) for row in heat["text"]]
    costs = next(f for f in frames(at) if "choice + confidence" in f.columns and "no output" in f.columns)
    assert len(costs) == 9 and "full native" in costs.columns
    detail = next(f for f in frames(at) if "mean cost per case [95% CI]" in f.columns)
    assert len(detail) == 9 * 2 and "coverage" in detail.columns and "routed error" in detail.columns
    assert "None" not in detail.astype(str).to_numpy()
    acts = next(f for f in frames(at) if "plan" in f.columns)           # one domain's 96 test worlds of 288
    assert len(acts) == 96 and set(acts["available"]) <= {True, False}
    assert at.selectbox(key="actions_domain").value == "delivery"
    at.selectbox(key="actions_domain").set_value("it").run()
    other = next(f for f in frames(at) if "plan" in f.columns)
    world = acts.columns[0]                                             # the world column, by its display label
    assert len(other) == 96 and not set(other[world]) & set(acts[world])
    at.segmented_control(key="task").set_value("clarification").run()
    assert not at.exception
    assert "clarified" in next(f for f in frames(at) if "mean cost per case [95% CI]" in f.columns).columns
    # what-if at the authored costs reproduces the stored run exactly; a dearer check changes it
    at.button(key="wi_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    same = next(f for f in frames(at) if "mean cost (what-if)" in f.columns)
    assert len(same) == 9 * 2 and (same["change"].abs() < 1e-9).all()
    at.number_input(key="wi_check").set_value(5.0).run()
    at.button(key="wi_go").click().run()
    # the check price moves every clarification cost (at 5, half the wrong route, no check is
    # ever worth buying; at 0.4 every one of these policies bought some) and nothing else
    clar = next(f for f in frames(at) if "mean cost (what-if)" in f.columns)
    assert len(clar) == 9 * 2 and (clar["change"].abs() > 1e-6).all()
    for task in ("selective", "asymmetric"):
        at.segmented_control(key="task").set_value(task).run()
        changed = next(f for f in frames(at) if "mean cost (what-if)" in f.columns)
        assert len(changed) == 9 * 2 and (changed["change"].abs() < 1e-9).all()


def test_fronts_page(decoded_warehouse, monkeypatch):
    with opened(decoded_warehouse, "pages/fronts.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        traces = plotly_traces(at.get("plotly_chart")[0])
        points = [t for t in traces if t.get("mode") == "markers" and "hovertemplate" in t]
        assert sorted(t["name"] for t in points) == ["sim-alder", "sim-dogwood"]
        shown = next(f for f in frames(at) if "on the front" in f.columns)
        assert len(shown) == 2 and shown["on the front"].sum() >= 1
        tasks = ["selective routing", "one-step clarification", "asymmetric-cost routing"]
        members = next(f for f in frames(at) if "asymmetric-cost routing" in f.columns)
        assert list(members.columns) == ["model", *tasks] and len(members) >= 1
        assert all(c.endswith(" of 6 profiles)") for t in tasks for c in members[t])
        # the section heading is true for the table under it
        same = len({frozenset(members.loc[members[t].str.startswith("yes"), "model"]) for t in tasks}) == 1
        heading = next(c.value for c in at.caption if "on the front in every task" in c.value
                       or "changes with the task" in c.value)
        assert ("the same models are on the front in every task" in heading) == same
        assert "Who is on the front." in texts(at)
        at.toggle(key="every_view").set_value(True).run()
        assert not at.exception
        traces = plotly_traces(at.get("plotly_chart")[0])
        assert len([t for t in traces if t.get("mode") == "markers" and "hovertemplate" in t]) == 2 * 5
        key = {t["name"] for t in traces if "hovertemplate" not in t and t.get("mode") == "markers"}
        assert {"sim-alder", "sim-dogwood", "no output", "choice", "full native"} <= key     # colour and symbol key
        shown = next(f for f in frames(at) if "release" in f.columns)            # the table's default rows: the front
        assert 1 <= len(shown) <= 2 * 5 and all(" · " in r for r in shown["release"])


def test_fronts_page_with_one_model_compares_its_release_views(one_model_warehouse, monkeypatch):
    """One model alone is no front: the page shows its release views (no toggle), says which of them are on the
    front, and its table lists views, not models."""
    from qlb.present.names import name
    with opened(one_model_warehouse, "pages/fronts.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert not [t for t in at.toggle if t.key == "every_view"]
        said = texts(at)
        assert "sim-alder" in said and "the front compares its release views." in said
        assert "a release view is on the front" in said and "for all 1" not in said and "1 models" not in said
        traces = plotly_traces(at.get("plotly_chart")[0])
        assert len([t for t in traces if t.get("mode") == "markers" and "hovertemplate" in t]) == 5
        members = next(f for f in frames(at) if "asymmetric-cost routing" in f.columns)
        assert members.columns[0] == "release view"
        assert set(members["release view"]) <= {name("view", v) for v in
                                                ("no_output", "choice", "choice_confidence", "full_probabilities",
                                                 "full_native")}


def test_a_link_reopens_the_same_view(demo_warehouse, monkeypatch):
    """Task, profile and model are bound to the URL's query string (?task=...&profile=...)."""
    query = {"task": "asymmetric-cost routing", "profile": "errors at double cost", "model": "sim-cedar"}
    with opened(demo_warehouse, "pages/sensitivity.py", monkeypatch, query=query) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert at.segmented_control(key="task").value == "asymmetric"
        assert at.selectbox(key="profile").value == "error_double"
        assert at.selectbox(key="model").value == "sim-cedar"
        assert "Non-inferiority under the cost profile “errors at double cost”" in texts(at)


def test_defenses_page(decoded_warehouse, monkeypatch):
    with opened(decoded_warehouse, "pages/defenses.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert "This run defended 1 of the dataset" in texts(at)                 # scope first
        assert "is about this model only" in texts(at)
        traces = plotly_traces(at.get("plotly_chart")[0])
        assert [t["name"] for t in traces] == ["sim-alder"] and len(traces[0]["x"]) == 7
        assert traces[0]["mode"] == "markers"                                    # categories: no lines
        t3 = next(f for f in frames(at) if "vs native [95% CI]" in f.columns)
        assert len(t3) == 7 and t3.iloc[0]["vs native [95% CI]"] == "control"
        ver = next(f for f in frames(at) if "plan agreement" in f.columns)
        assert len(ver) == 2 and set(ver["codebook"]) == {"main", "grid only"}
        assert (ver["plan agreement"] == "5,184 / 5,184").all() and (ver["largest cost change"] == 0).all()
        assert ((ver["coverage"] > 50) & (ver["coverage"] <= 100)).all()     # shown in percent (the demo: 87.5 to 100)
        assert any("Every response–policy comparison agrees" in s.value for s in at.success)
        assert "costs the recipient nothing" in texts(at)
        # the learned variant (paper H.2): a computed finding, Figure 11, Table 15 and its verification
        assert "Under the learned variants, secret recovery is" in texts(at)
        assert "Every release stayed within its budget" in texts(at)
        fig11 = next(c for c in at.get("plotly_chart") if "mapper" in c.proto.spec)
        assert ({(t["meta"][0], t["name"]) for t in plotly_traces(fig11) if "hovertemplate" in t}
                == {("sim-alder", "WCPQ strict"), ("sim-alder", "budget 0.2 · pair loss")})
        t15 = next(f for f in frames(at) if "mapper" in f.columns)          # a row per mapper, a column per model
        assert list(t15.columns) == ["mapper", "sim-alder"]
        assert list(t15["mapper"]) == ["WCPQ strict", "budget 0.2 · pair loss"]
        assert re.fullmatch(r"\d+\.\d% \[\d+\.\d, \d+\.\d\]", t15.iloc[1]["sim-alder"])
        lv = next(f for f in frames(at) if "verification fallbacks" in f.columns)
        assert len(lv) == 1 and lv.iloc[0]["largest cost increase"] <= lv.iloc[0]["budget"] + 1e-9
        assert len(lv.iloc[0]["seed chosen"].split(" / ")) == 3
        assert 50 < lv.iloc[0]["coverage"] <= 100                                # percent, scaled once
        paid = next(f for f in frames(at) if "recipients" in f.columns)
        assert {"WCPQ strict", "native (control)", "quantize 0.1"} <= set(paid["defense"])   # WCPQ rows included
        assert set(paid.loc[paid["defense"] == "WCPQ strict", "recipients"]) == {"frozen"}
        side = next(f for f in frames(at) if "class (public order)" in f.columns)
        assert list(side.columns)[1:] == ["native (control)", "quantize 0.1", "top-two",
                                          "WCPQ codeword"]
        at.multiselect(key="inspector_releases").select("temperature").run()
        side = next(f for f in frames(at) if "class (public order)" in f.columns)
        assert "temperature τ=2" in side.columns
        pol = next(f for f in frames(at) if "WCPQ: plan" in f.columns)
        assert len(pol) == 18 and pol["same plan and cost"].all()
        assert "Of the 18 frozen full-native policies, every one acts the same" in texts(at)
        at.segmented_control(key="defense_recipient").set_value("frozen").run()
        assert not at.exception
        paid = next(f for f in frames(at) if "recipients" in f.columns)
        assert set(paid["recipients"]) == {"frozen"}


REFUSAL_COLUMNS = ["model", "run A [95% CI]", "run B [95% CI]", "B − A (points)"]


def test_compare_runs_page(decoded_warehouse, monkeypatch):
    """The decoded warehouse holds the demo run and a second run on the same data: the pickers
    name each run by its start (to the minute) and audits, and what both computed (utility and
    refusal of the two decoded models, every QuasiLeak score) agrees exactly, as the findings say."""
    with opened(decoded_warehouse, "pages/compare.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        labels = at.selectbox(key="run_a").options + at.selectbox(key="run_b").options
        assert all(re.fullmatch(r"run-…\w{6} · \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC · [\w, ]+"
                                r"( · \d models)?( · \d attacker famil(y|ies))?", x)       # the id first: whole at 1,024 px
                   for x in labels), labels
        assert at.selectbox(key="run_a").value != at.selectbox(key="run_b").value
        shown = texts(at)
        assert "No change." in shown and "rates both runs hold are the same in the two runs" in shown
        assert "none of the" in shown and "Downstream cost." in shown
        assert "Not compared: secret recovery" in shown
        views = at.selectbox(key="compare_cost_view").options
        tasks = at.selectbox(key="compare_cost_task").options
        assert at.selectbox(key="compare_cost_task").label == "Task"          # as every other page calls it
        assert len(views) == 5 and tasks == ["selective routing", "one-step clarification",
                                                    "asymmetric-cost routing"]
        for key, choices in (("compare_cost_view", views), ("compare_cost_task", tasks)):
            for i in range(len(choices)):
                at.selectbox(key=key).select_index(i).run()
                util = next(f for f in frames(at) if "B − A (cost units)" in f.columns)
                assert list(util.columns) == ["model", "run A [95% CI]", "run B [95% CI]", "B − A (cost units)"]
                assert len(util) == 2 and (util["B − A (cost units)"].abs() < 1e-12).all()
                assert (util["run A [95% CI]"] == util["run B [95% CI]"]).all()
        ref = next(f for f in frames(at) if list(f.columns) == REFUSAL_COLUMNS)     # recovery: only in run B
        assert len(ref) == 2 and (ref["B − A (points)"].abs() < 1e-12).all()
        assert ref["run A [95% CI]"].str.fullmatch(r"\d+\.\d% \[\d+\.\d, \d+\.\d\]").all()
        metrics = at.selectbox(key="compare_ql_metric").options
        assert metrics[0] == "complete-group F1" and len(metrics) == 10
        for i in range(len(metrics)):
            at.selectbox(key="compare_ql_metric").select_index(i).run()
            ql = next(f for f in frames(at) if "detector" in f.columns and "B − A (points)" in f.columns)
            assert len(ql) == 5 and (ql["B − A (points)"].abs() < 1e-12).all()
        at.switch_page("pages/glossary.py").run()
        assert not at.exception and "WCPQ" in texts(at)


def test_compare_runs_page_names_the_largest_change(decoded_warehouse, tmp_path, monkeypatch):
    """A third run after a change of the data (a sixth of sim-alder's refusal answers lost): the
    findings name the largest change with both runs' intervals, and the refusal table puts it first."""
    import shutil

    from qlb.runs.audit import run_audits
    from warehouse.db import writer
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(decoded_warehouse, wh)           # this test writes: keep the shared one as it is
    with writer(wh) as con:
        con.execute("UPDATE refusal_responses SET status = 'unavailable', choice = NULL, scores = NULL "
                    "WHERE model = 'sim-alder' AND hash(world_id) % 6 = 0")
        run_audits(con, "simulated-reference", force=True, decode=False, utility=False, n_boot=100)
    with opened(wh, "pages/compare.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        at.selectbox(key="run_b").select_index(0).run()       # the newest run (the page opens on the Overview's)
        ref = next(f for f in frames(at) if list(f.columns) == REFUSAL_COLUMNS)
        assert ref["model"].iloc[0] == "sim-alder" and ref["B − A (points)"].iloc[0] != 0
        assert (ref["B − A (points)"].iloc[1:] == 0).all()
        shown = texts(at)
        change = ref["B − A (points)"].iloc[0]
        lead = "Largest change." if abs(change) >= 1 else "No rate moved by more than 1 point."
        assert lead in shown and "efusal-probe recovery of sim-alder went from " in shown
        assert f"({change:+.1f} points)".translate(str.maketrans({"(": "&#40;", ")": "&#41;"})) in shown


def test_collection_page_without_collections_says_how_to_collect(app, demo_warehouse):
    """The simulated demo holds no `qlb collect` run: the page gives the exact commands, which load
    the user's worlds into a dataset of their own and collect there (as the Data page says, user
    data and simulated data never mix); collecting on the simulated worlds is offered apart, saying
    how those answers are labelled."""
    import shlex
    from pathlib import Path
    at = app.run()
    at.switch_page("pages/collection.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Collection"
    assert any("No collection runs in this dataset yet" in i.value for i in at.info)
    where = shlex.quote(str(Path(demo_warehouse).resolve()))
    aside = next(e for e in at.expander if e.label == "To try a real model on these simulated worlds instead")
    aside_code = {c.value for c in aside.code}
    joined = lambda text: text.replace(" \\\n  ", " ")          # noqa: E731  one option a line, `\` continued
    own = joined("\n".join(c.value for c in at.code if c.value not in aside_code))
    assert f"qlb ingest worlds my_worlds.jsonl --dataset my-audit --warehouse {where}" in own
    for transport in ("--transport typed --base-url http://127.0.0.1:8000",
                      "--transport openai --base-url http://127.0.0.1:8080/v1 --endpoint-model llama3",
                      "--transport python --target my_module:answer"):
        assert f"qlb collect native --dataset my-audit --model my-model --warehouse {where} {transport}" in own
    assert f"qlb audit --dataset my-audit --warehouse {where}" in own
    assert "simulated-reference" not in own
    assert any("your data and simulated data never mix" in c.value for c in at.caption)
    assert "Collecting answers from your own model" in texts(at)
    assert "You can still ask your own model about the simulated worlds" not in texts(at)
    assert (f"qlb collect native --dataset simulated-reference --model triage-example --warehouse {where} "
            "--transport python --target qlb.examples.triage_model:answer") in joined(aside.code[0].value)
    note = aside.markdown[0].value
    assert "SIMULATED badge" in note and "names each real model" in note and "not your data" in note
    assert not frames(at) and not at.get("plotly_chart")


@pytest.fixture
def collected_warehouse(tmp_path):
    """A small warehouse with two runs of the real collector (python transport, tests.app.collect_target):
    the first stores 2 valid and 2 invalid answers (w2: probabilities summing to 2; w3: an HTML choice),
    the second asks w2 and w3 again with --replace-invalid and gets valid answers."""
    from qlb.runs.collect import CollectOptions, collect
    from tests.conftest import two_pairs, write_lines
    from warehouse.db import writer
    from warehouse.ingest import IngestRequest, ingest_file
    rows = two_pairs()
    for r in rows[2:]:
        r["request"] = "Order #2 is late"       # the target tells the two pairs apart by their request
    path = tmp_path / "qlb.duckdb"
    with writer(path) as con:
        ingest_file(con, IngestRequest("worlds", write_lines(tmp_path / "worlds.jsonl", rows), "ds"))
        first = collect(con, CollectOptions(probe="native", dataset_id="ds", model="m1", transport="python",
                                            target="tests.app.collect_target:answer"))
        second = collect(con, CollectOptions(probe="native", dataset_id="ds", model="m1", transport="python",
                                             target="tests.app.collect_target:fixed", replace_invalid=True))
    assert (first.stored, first.valid, first.invalid) == (4, 2, 2)
    assert (second.stored, second.valid, second.skipped_existing) == (2, 2, 2)
    return path, first.collection_id, second.collection_id


def test_collection_page_shows_runs_outcomes_reasons_and_calls(collected_warehouse, monkeypatch):
    from qlb.collect.requests import body_sha256
    from tests.app.collect_target import HOSTILE
    path, first, second = collected_warehouse
    with opened(path, "pages/collection.py", monkeypatch, 60) as at:
        assert not at.exception, [e.value for e in at.exception]
        import html
        summary = html.unescape(texts(at))
        assert ("2 collection runs for this dataset: 6 native answers from m1 (4 valid, 2 invalid, 0 unavailable), "
                "median latency") in summary
        assert "2 earlier answers replaced" in summary
        counts = next(f for f in frames(at) if "not valid" in f.columns and "stopped early" in f.columns)
        assert counts[["valid", "not valid"]].values.tolist() == [[2, 0], [2, 2]]
        assert counts["stopped early"].tolist() == ["", ""]
        runs = next(f for f in frames(at) if "collection_id" in f.columns and "settings" in f.columns)
        assert runs["endpoint"].tolist() == ["tests.app.collect_target:fixed", "tests.app.collect_target:answer"]
        assert runs["collection_id"].tolist() == [second, first]                      # newest first
        assert runs["asked"].tolist() == [2, 4]
        assert "replace_invalid=True" in runs["settings"].iloc[0] and "timeout=180.0" in runs["settings"].iloc[0]
        assert "{" not in runs["settings"].iloc[0]
        assert at.selectbox(key="collection").value == second
        assert any("Every call of this run gave a valid answer" in s.value for s in at.success)

        at.selectbox(key="collection").select(first).run()
        assert not at.exception, [e.value for e in at.exception]
        shown = stats(at)
        assert (shown["Worlds asked"], shown["Valid"], shown["Invalid"], shown["Unavailable"], shown["Calls"]) == (
            "4", "2", "2", "0", "4")
        outcomes = next(f for f in frames(at) if "share of stored answers [95% interval]" in f.columns)
        # Wilson 95% for 2 of 4: 0.5 +- 1.96 * sqrt(1 + 1.96^2 / 4) / (4 + 1.96^2) = [0.150, 0.850]
        assert outcomes.set_index("outcome")["share of stored answers [95% interval]"].to_dict() == {
            "valid": "50.0% [15.0, 85.0]", "invalid": "50.0% [15.0, 85.0]", "unavailable": "0.0% [0.0, 49.0]"}
        bars = plotly_traces(at.get("plotly_chart")[0])[0]
        assert list(bars["x"]) == ["valid", "invalid", "unavailable"] and list(bars["y"]) == [2, 2, 0]
        reasons = next(f for f in frames(at) if "reason" in f.columns and "calls" in f.columns)
        assert set(reasons["outcome"]) == {"invalid"} and reasons["calls"].tolist() == [1, 1]
        assert "probabilities sum to 2, outside 1 +- 0.001" in reasons["reason"].tolist()
        assert any(HOSTILE in r for r in reasons["reason"])

        # the inspector opens the first world without a valid answer: w2, probabilities summing to 2
        assert at.selectbox(key="world").value == "w2"
        attempts = next(f for f in frames(at) if "attempt" in f.columns)
        assert attempts[["attempt", "outcome"]].values.tolist() == [[1, "invalid"]]
        body_code, raw_code = at.code[0].value, at.code[1].value
        sent = body_sha256(json.loads(body_code))                                   # the body that was sent
        assert attempts["request sha256"].iloc[0] == f"{sent[:12]}…"
        assert any(sent[:12] in s.value for s in at.success)
        assert any("Matches the archived sha256" in s.value for s in at.success)
        assert json.loads(raw_code)["answers"]["coarse_cause"]["probabilities"]["DELAY"] == 1.4

        # a hostile raw answer is code (text), never Markdown or HTML
        at.selectbox(key="world").select("w3").run()
        assert not at.exception, [e.value for e in at.exception]
        raw = at.code[1]
        assert HOSTILE in raw.value and raw.language == "json"
        rendered = ([m.value for m in at.markdown] + [c.value for c in at.caption] + [s.value for s in at.success]
                    + [w.value for w in at.warning] + [i.value for i in at.info])
        assert not any("<script>" in v for v in rendered)

        history = next(f for f in frames(at) if "replaced by run" in f.columns)
        assert sorted(history["world"]) == ["w2", "w3"] and set(history["replaced by run"]) == {second}
        assert HOSTILE in history["choice"].tolist()


def test_collection_page_replaced_answers_say_unavailable_and_why(tmp_path, monkeypatch):
    """Walk-through: a replaced HTTP 401 answer showed a ticked "valid" box, no reason and raw column
    names; the table now names its outcome and the server's reason, under readable labels."""
    from qlb.runs.collect import CollectOptions, collect
    from tests.collect.stubs import StubServer, ok, typed
    from tests.conftest import two_pairs, write_lines
    from warehouse.db import writer
    from warehouse.ingest import IngestRequest, ingest_file
    path = tmp_path / "qlb.duckdb"

    def refuse_two(p, b, h, n):
        return ok({"error": {"message": "invalid api key"}}, status=401) if n <= 2 else typed(b)
    with writer(path) as con, StubServer(refuse_two) as stub:
        ingest_file(con, IngestRequest("worlds", write_lines(tmp_path / "worlds.jsonl", two_pairs()), "ds"))
        options = dict(probe="native", dataset_id="ds", model="m1", transport="typed", base_url=stub.url)
        assert collect(con, CollectOptions(**options)).unavailable == 2
        stub.respond = lambda p, b, h, n: typed(b)
        assert collect(con, CollectOptions(**options, replace_invalid=True)).valid == 2
    with opened(path, "pages/collection.py", monkeypatch) as at:
        assert not at.exception, [e.value for e in at.exception]
        history = next(f for f in frames(at) if "replaced by run" in f.columns)
    assert not {"invalid_reason", "replaced_at", "valid"} & set(history.columns)
    assert history["outcome"].tolist() == ["unavailable", "unavailable"]
    assert history["reason"].tolist() == ["HTTP 401 Unauthorized: invalid api key"] * 2


def test_data_page_ontology_section_shows_validates_and_ingests(demo_warehouse, tmp_path, monkeypatch):
    """The Data page's decision-task section: the dataset's ontology as a tree (TUPLE by default),
    an uploaded file's every problem before anything is written, then the ingest button."""
    import shutil

    from tests.records.ontologies import LENDING_PATH, as_text, three_by_three
    from warehouse.db import open_reader
    from warehouse.ontologies import dataset_ontology_sha256
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(demo_warehouse, wh)           # this test writes: keep the shared demo as it is
    with opened(wh, "pages/data.py", monkeypatch) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert "Decision task (ontology)" in [h.value for h in at.subheader]
        assert any("uses the default **TUPLE** ontology" in m.value for m in at.markdown)
        labels = [e.label for e in at.expander]
        assert any(label.startswith("Delivery operations (delivery): 4 classes, 16 mechanisms") for label in labels)
        assert any("missed\\_transfer" in m.value for m in at.markdown)        # mechanisms, escaped

        # a broken file: every problem shown, no ingest button, nothing written
        bad = three_by_three()
        bad["domains"]["support"]["classes"]["BILLING"] = ["card_expired"]
        bad["domains"]["support"]["asymmetric_costs"]["OUTAGE"]["OUTAGE"] = 2.0
        at.text_input(key="ontology_dataset").set_value("lending").run()
        at.file_uploader(key="ontology_upload").set_value(("bad.json", as_text(bad).encode(), "application/json"))
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("is rejected: 4 problems" in e.value for e in at.error)
        report = next(c.value for c in at.code if "bad.json:" in c.value).splitlines()
        assert "bad.json: domains.support.classes.BILLING: 1 mechanism, need at least 2 (line 17)" in report
        assert "bad.json: domains.support.asymmetric_costs.OUTAGE.OUTAGE: the diagonal must be 0 (got 2.0) (line 50)" in report
        assert not [b for b in at.button if b.key == "ontology_button"]

        # the example: valid, previewed, then ingested into a new dataset the sidebar switches to
        at.file_uploader(key="ontology_upload").set_value(
            ("lending_ontology.json", LENDING_PATH.read_bytes(), "application/json"))
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("is valid: 2 domains, 7 classes, 19 mechanisms" in s.value for s in at.success)
        assert any(e.label.startswith("Consumer loans (consumer\\_loans)") for e in at.expander)
        at.button(key="ontology_button").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("uses lending\\_ontology\\.json" in s.value for s in at.success)
        assert at.session_state["dataset"] == "lending"
        assert any("uses its own ontology, from the file **lending\\_ontology\\.json**" in m.value for m in at.markdown)
        assert any(re.search(r"attached 20\d\d-\d\d-\d\d \d\d:\d\d UTC\)", m.value) for m in at.markdown)
        assert any("medical\\_debt: The credit file shows unpaid medical bills\\." in m.value for m in at.markdown)
    con = open_reader(wh)
    try:
        assert dataset_ontology_sha256(con, "lending") == parse_sha(LENDING_PATH)
        assert dataset_ontology_sha256(con, "simulated-reference") != parse_sha(LENDING_PATH)
    finally:
        con.close()


def parse_sha(path) -> str:
    from qlb.records.ontology import ontology_sha256
    return ontology_sha256(path.read_text("utf-8"))


def column_formats(at: AppTest) -> dict[str, dict]:
    """Each interactive grid column's configuration (label -> Streamlit's column config), all grids."""
    return {label: config for df in at.dataframe for label, config in json.loads(df.proto.columns or "{}").items()}


def test_overview_data_tabs_show_plain_headers_dates_and_counts(app):
    """The corpus and ingest tabs: plain-word headers (no warehouse column names), whole counts
    shown with thousands separators, the ingest's time to the minute in UTC and its digest short."""
    at = app.run()
    at.segmented_control(key="overview_section").set_value("QuasiLeak corpus").run()
    assert not at.exception, [e.value for e in at.exception]
    corpus = next(f for f in frames(at) if "targets" in f.columns)
    assert list(corpus.columns) == ["split", "documents", "contexts", "gold groups", "targets"]
    assert corpus["gold groups"].sum() > corpus["targets"].sum() > 0
    detectors = next(f for f in frames(at) if "detector" in f.columns)
    assert list(detectors.columns) == ["detector", "documents", "predicted groups"]
    formats = column_formats(at)
    for label in ("gold groups", "targets", "predicted groups", "documents"):
        assert formats[label]["type_config"]["format"] == "localized", (label, formats[label])
    assert "hide attribute" in formats["targets"]["help"]
    shown = [c for f in frames(at) for c in f.columns]
    assert not [c for c in shown if "_" in str(c)], shown

    at.segmented_control(key="overview_section").set_value("Ingests and quarantine").run()
    assert not at.exception, [e.value for e in at.exception]
    ingests = next(f for f in frames(at) if "file sha256" in f.columns)
    assert list(ingests.columns) == ["ingest", "kind", "file", "format", "model", "lines", "accepted",
                                     "invalid (kept)", "rejected", "finished", "file sha256"]
    assert ingests["finished"].str.fullmatch(r"20\d\d-\d\d-\d\d \d\d:\d\d UTC").all(), ingests["finished"].tolist()
    assert ingests["file sha256"].str.fullmatch(r"[0-9a-f]{12}…").all()
    native = ingests.set_index("file").loc["native_responses.jsonl"]
    assert (native["lines"], native["accepted"], native["invalid (kept)"], native["rejected"]) == (12965, 12960, 9, 5)
    formats = column_formats(at)
    for label in ("lines", "accepted", "invalid (kept)", "rejected", "rejected lines"):
        assert formats[label]["type_config"]["format"] == "localized", (label, formats[label])
    assert "SHA-256" in formats["file sha256"]["help"]
    quarantine = next(f for f in frames(at) if "rejected lines" in f.columns)
    assert list(quarantine.columns) == ["kind", "file", "rejected lines", "first rejected line"]
    invalid = next(f for f in frames(at) if "reason" in f.columns)
    assert list(invalid.columns) == ["model", "reason", "responses"] and invalid["responses"].sum() == 9
    shown = [c for f in frames(at) for c in f.columns]
    assert not [c for c in shown if "_" in str(c)], shown


def test_glossary_names_the_attacker_families_and_wcpq(demo_warehouse, monkeypatch):
    """The Glossary defines the attacker (giving the paper's word, decoder, once) and lists the attacker
    families by their display names, from the code's own list, names no family the library lacks, and
    spells out WCPQ."""
    from dashboard.widgets import md_text
    from qlb.present.names import FAMILY_NAMES, listing
    from qlb.tuple.release_views import DECODER_FAMILIES
    with opened(demo_warehouse, "pages/glossary.py", monkeypatch) as at:
        assert not at.exception, [e.value for e in at.exception]
        shown = texts(at)
        lines = shown.splitlines()
        attacker = next(line for line in lines if line.startswith("- **Attacker**:"))
        library = next(line for line in lines if line.startswith("- **Attacker families**:"))
        families = listing([FAMILY_NAMES[f] for f in DECODER_FAMILIES])
        assert families == ("base rate, logistic regression, random forest, shared mechanism scorer and "
                            "Gaussian templates")
        assert md_text(families) in library, library
        assert "the paper calls it a decoder" in attacker.replace("\\", "")   # the paper's word, said once
        assert sum(line.lower().count("decoder") for line in lines) == 1
        assert not any("ensemble" in line or "template," in line for line in (attacker, library))
        assert "- **WCPQ**: The workflow\\-constrained quantizer" in shown
        at.text_input(key="glossary_find").set_value("workflow-constrained").run()
        assert any(line.startswith("- **WCPQ**") for line in texts(at).splitlines())



def test_a_model_registered_without_answers_is_named_not_counted(demo_warehouse, tmp_path, monkeypatch):
    """A collection that stops before its first answer leaves a model with no answer: the Overview counted it
    among the models (8 where every audit page said 7) and listed it with zeros."""
    import shutil

    import duckdb
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(demo_warehouse, wh)
    con = duckdb.connect(str(wh))
    con.execute("INSERT INTO models VALUES ('simulated-reference', 'm-silent', false, NULL)")
    con.close()
    with opened(wh, "pages/overview.py", monkeypatch) as at:
        assert not at.exception, [e.value for e in at.exception]
        assert stats(at)["Models"] == "9"
        assert all("m-silent" not in f["model"].tolist() for f in frames(at) if "model" in f.columns)
        assert any("Registered without any stored answer, so not counted: m\\-silent" in c.value for c in at.caption)


def test_data_page_words_a_rejected_world_with_its_field_and_one_world_singular(tmp_path):
    """Walk-through: on the Data page a world whose mechanism is not its class's showed a blank field,
    and the quarantine sentence said "(1 worlds)"."""
    from dashboard import data_access as da
    from dashboard.quarantine import lines_by_kind
    from tests.conftest import two_pairs, write_lines
    assert lines_by_kind({"worlds": 1, "responses": 5}) == "1 world, 5 native responses"
    assert lines_by_kind({"refusal": 2, "corpus": 1}) == "2 refusal responses, 1 QuasiLeak document"
    rows = two_pairs()
    rows[1]["mechanism"] = "author_is_minor"
    worlds = write_lines(tmp_path / "worlds.jsonl", rows)
    report = da.validate_upload(str(tmp_path / "none.duckdb"), "worlds", str(worlds), "d", None, "worlds.jsonl")
    problems = da.line_problems(report, str(worlds))
    first = problems[problems["line"] == 2].iloc[0]
    assert first["field"] == "mechanism" and first["problem"].startswith("'author_is_minor' is not a mechanism of ")
