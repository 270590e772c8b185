"""Pages under Streamlit's AppTest, on the simulated demo warehouse."""
from __future__ import annotations

import base64
import json

import numpy as np

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

APP = str(ROOT / "app.py")


@pytest.fixture
def app(demo_warehouse, monkeypatch):
    monkeypatch.setenv("QLB_WAREHOUSE", str(demo_warehouse))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(APP, default_timeout=60)
    yield at
    from dashboard.data_access import release_readers
    release_readers()   # AppTest shares this process: close the cached read-only handle


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
    models = next(f for f in tables if "model" in f.columns and "native responses" in f.columns)
    assert len(models) == 9 and models["native responses"].sum() == 12960
    assert models["invalid (kept)"].sum() > 0 and models.columns[-1] == "description"
    splits = next(f for f in tables if "domain" in f.columns and "train" in f.columns)
    assert list(splits.columns) == ["domain", "train", "validation", "test"]
    assert splits[["train", "validation", "test"]].sum().tolist() == [864, 288, 288]


def test_data_page_quarantine(app):
    at = app.run()
    at.switch_page("pages/data.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Data"
    tables = frames(at)
    rejects = next(f for f in tables if "raw_text" in f.columns)
    assert len(rejects) == 7 and set(rejects["kind"]) == {"responses", "refusal"}
    assert "line is not valid UTF-8 (byte 72)" in rejects["reason"].tolist()
    invalid = next(f for f in tables if "invalid_reason" in f.columns)
    assert len(invalid) == 9
    at.selectbox(key="quarantine_kind").select("refusal").run()
    rejects = next(f for f in frames(at) if "raw_text" in f.columns)
    assert len(rejects) == 2


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
    corpus = next(f for f in frames(at) if "hide_targets" in f.columns)
    assert corpus["documents"].sum() == 5000 and corpus.set_index("split")["documents"]["test"] == 750
    at.segmented_control(key="overview_section").set_value("Ingests and quarantine").run()
    q = next(f for f in frames(at) if "rejected_lines" in f.columns)
    assert q["rejected_lines"].sum() == 7


def test_refusal_page(app):
    at = app.run()
    at.switch_page("pages/refusal.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Refusal audit"
    tables = frames(at)
    by_model = next(f for f in tables if "conditional_residual_recovery" in f.columns and "domain" not in f.columns)
    assert len(by_model) == 9 and by_model["n"].sum() > 12800
    juniper = by_model.set_index("model").loc["sim-juniper"]
    assert juniper["withheld"] == 0 and juniper["conditional_residual_recovery"] == "N/A"
    charts = at.get("plotly_chart")
    assert len(charts) == 2                      # recovery routes + one response's 17 scores
    routes = plotly_traces(charts[0])
    stacked = [sum(v) for v in zip(*(t["y"] for t in routes if t["type"] == "bar"))]
    overall = by_model.set_index("model")["overall_recovery"].str.rstrip("%").astype(float) / 100
    assert [round(v, 4) for v in stacked] == [round(v, 4) for v in overall.tolist()]
    scores = plotly_traces(charts[1])
    assert len(scores[0]["x"]) == 17
    # filters: one domain, two models
    at.selectbox(key="refusal_domain").select("it").run()
    at.multiselect(key="refusal_models").set_value(["sim-alder", "sim-juniper"]).run()
    by_model = next(f for f in frames(at) if "conditional_residual_recovery" in f.columns and "domain" not in f.columns)
    assert by_model["model"].tolist() == ["sim-alder", "sim-juniper"]
    assert by_model["n"].max() < 500             # one domain only
    at.selectbox(key="drill_outcome").select("residual_tied").run()
    assert not at.exception
    assert any("exact" in m.value or "shared" in m.value for m in at.markdown)


def test_quasileak_page(app):
    at = app.run()
    at.switch_page("pages/quasileak.py").run()
    assert not at.exception, [e.value for e in at.exception]
    board = next(f for f in frames(at) if "complete recall" in f.columns)
    assert set(board["detector"]) == {"pattern-pii", "lexicon-cues", "sim-det-strong", "sim-det-local",
                                      "sim-det-binder"}
    assert board["detector"].iloc[0] == "sim-det-strong"            # sorted by complete F1
    assert (board.set_index("detector")["simulated"]["sim-det-local"] == "SIMULATED")
    assert board["targets"].nunique() == 1 and board["targets"].iloc[0] > 900
    f1 = plotly_traces(at.get("plotly_chart")[0])
    assert len(f1[0]["x"]) == 5
    at.selectbox(key="ql_breakdown_kind").select("attribute").run()
    by_attr = plotly_traces(at.get("plotly_chart")[1])
    assert len(by_attr) == 5 and len(by_attr[0]["x"]) == 8        # 5 detectors x 8 attributes
    at.selectbox(key="ql_view_detector").select("lexicon-cues").run()
    assert not at.exception
    body = [m.value for m in at.markdown if "white-space:pre-wrap" in m.value]
    assert len(body) == 1 and "border-bottom" in body[0]


def test_recovery_page(decoded_warehouse, monkeypatch):
    monkeypatch.setenv("QLB_WAREHOUSE", str(decoded_warehouse))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/recovery.py").run()
    try:
        assert not at.exception, [e.value for e in at.exception]
        pooled = next(f for f in frames(at) if "full_native" in f.columns and "model" in f.columns
                      and "view" not in f.columns)
        assert pooled["model"].tolist() == ["sim-alder", "sim-dogwood"]
        assert (pooled["no_output"] == "50.0%").all()
        fig = plotly_traces(at.get("plotly_chart")[0])
        assert [t["name"] for t in fig] == ["no_output", "choice", "choice_confidence", "full_probabilities",
                                            "full_native"]
        assert all(len(t["x"]) == 2 for t in fig)
        sel = next(f for f in frames(at) if "candidate_view" in f.columns)
        assert len(sel) == 2 * 3 * 5 and (sel["val_accuracy"] >= 0).all()
        # recompute from the run's fits with the run's families: exactly the stored result
        assert at.multiselect(key="rc_families").value == ["prior", "logistic", "template"]
        assert at.toggle(key="rc_refit").value is False
        at.selectbox(key="rc_view").select("full_native").run()
        at.button(key="rc_go").click().run()
        assert not at.exception, [e.value for e in at.exception]
        rc = next(f for f in frames(at) if "result" in f.columns).set_index("families")
        assert len(rc) == 2 and rc["recovery"].nunique() == 1 and rc["ci_low"].nunique() == 1
        # fewer families, refit from scratch
        at.selectbox(key="rc_view").select("no_output").run()
        at.multiselect(key="rc_families").set_value(["prior", "template"]).run()
        at.toggle(key="rc_refit").set_value(True).run()
        at.button(key="rc_go").click().run()
        assert not at.exception, [e.value for e in at.exception]
        rc = next(f for f in frames(at) if "result" in f.columns).set_index("result")
        assert rc.loc["recomputed (refit)", "recovery"] == "50.0%"
        # a family the run did not fit can only be refitted, whatever the switch says
        at.toggle(key="rc_refit").set_value(False).run()
        at.multiselect(key="rc_families").set_value(["prior", "forest"]).run()
        at.button(key="rc_go").click().run()
        assert not at.exception, [e.value for e in at.exception]
        rc = next(f for f in frames(at) if "result" in f.columns).set_index("result")
        assert "recomputed (refit)" in rc.index and rc.loc["recomputed (refit)", "families"] == "prior, forest"
    finally:
        from dashboard.data_access import release_readers
        release_readers()


def test_refusal_recompute_now_stores_a_quick_new_run(demo_warehouse, tmp_path, monkeypatch):
    import shutil

    import duckdb
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(demo_warehouse, wh)           # this test writes a run: keep the shared demo as it is
    monkeypatch.setenv("QLB_WAREHOUSE", str(wh))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/refusal.py").run()
    before = at.selectbox(key="refusal_run").options
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    after = at.selectbox(key="refusal_run").options
    assert len(after) == len(before) + 1
    from dashboard.data_access import release_readers
    release_readers()
    con = duckdb.connect(str(wh), read_only=True)
    try:   # the page's recompute never starts the minutes-long decoding audit
        params = con.execute("SELECT parameters FROM runs ORDER BY started_at DESC LIMIT 1").fetchone()[0]
    finally:
        con.close()
    assert '"decoding"' not in params


def test_sensitivity_page_and_whatif(app):
    at = app.run()
    at.switch_page("pages/sensitivity.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Cost-profile sensitivity"
    heat = plotly_traces(at.get("plotly_chart")[0])[0]
    assert heat["type"] == "heatmap" and len(heat["y"]) == 9 and list(heat["x"])[0] == "authored"
    assert len(heat["x"]) == 6
    ni = next(f for f in frames(at) if "non-inferior" in f.columns and "task" in f.columns)
    assert len(ni) == 9 * 3
    assert "non-inferior under the authored profile" in texts(at)
    costs = next(f for f in frames(at) if "mean cost [95% interval]" in f.columns)
    assert len(costs) == 9 * 5 and "coverage" in costs.columns
    acts = next(f for f in frames(at) if "plan" in f.columns)
    assert len(acts) == 288 and set(acts["available"]) <= {True, False}
    at.segmented_control(key="task").set_value("clarification").run()
    assert not at.exception
    assert "clarification_rate" in next(f for f in frames(at) if "mean cost [95% interval]" in f.columns).columns
    # what-if at the authored costs reproduces the stored run exactly; a dearer check changes it
    at.button(key="wi_go").click().run()
    assert not at.exception, [e.value for e in at.exception]
    same = next(f for f in frames(at) if "mean_cost (what-if)" in f.columns)
    assert len(same) == 9 * 2 * 3 and (same["change"].abs() < 1e-9).all()
    at.number_input(key="wi_check").set_value(5.0).run()
    at.button(key="wi_go").click().run()
    changed = next(f for f in frames(at) if "mean_cost (what-if)" in f.columns).set_index(["model", "view", "task"])
    # the check price moves every clarification cost (at 5, half the wrong route, no check is
    # ever worth buying; at 0.4 every one of these policies bought some) and nothing else
    clar = changed.xs("clarification", level="task")
    assert len(clar) == 9 * 2 and (clar["change"].abs() > 1e-6).all()
    for task in ("selective", "asymmetric"):
        assert (changed.xs(task, level="task")["change"].abs() < 1e-9).all()


def test_fronts_page(decoded_warehouse, monkeypatch):
    monkeypatch.setenv("QLB_WAREHOUSE", str(decoded_warehouse))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/fronts.py").run()
    try:
        assert not at.exception, [e.value for e in at.exception]
        traces = plotly_traces(at.get("plotly_chart")[0])
        points = [t for t in traces if t.get("mode") == "markers"]
        assert sorted(t["name"] for t in points) == ["sim-alder", "sim-dogwood"]
        shown = next(f for f in frames(at) if "on the front" in f.columns)
        assert len(shown) == 2 and (shown["on the front"] == "yes").sum() >= 1
        at.toggle(key="every_view").set_value(True).run()
        assert not at.exception
        traces = plotly_traces(at.get("plotly_chart")[0])
        assert len([t for t in traces if t.get("mode") == "markers"]) == 2 * 5
        members = next(f for f in frames(at) if "non-dominated models (full native)" in f.columns)
        assert members["task"].tolist() == ["selective", "clarification", "asymmetric"]
    finally:
        from dashboard.data_access import release_readers
        release_readers()


def test_a_link_reopens_the_same_view(demo_warehouse, monkeypatch):
    """Task, profile and model are bound to the URL's query string (?task=...&profile=...)."""
    monkeypatch.setenv("QLB_WAREHOUSE", str(demo_warehouse))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update({"task": "asymmetric", "profile": "error_double", "model": "sim-cedar"})
    at.run()
    at.switch_page("pages/sensitivity.py").run()
    try:
        assert not at.exception, [e.value for e in at.exception]
        assert at.segmented_control(key="task").value == "asymmetric"
        assert at.selectbox(key="profile").value == "error_double"
        assert at.selectbox(key="model").value == "sim-cedar"
        assert "non-inferior under the error_double profile" in texts(at)
    finally:
        from dashboard.data_access import release_readers
        release_readers()


def test_defenses_page(decoded_warehouse, monkeypatch):
    monkeypatch.setenv("QLB_WAREHOUSE", str(decoded_warehouse))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/defenses.py").run()
    try:
        assert not at.exception, [e.value for e in at.exception]
        traces = plotly_traces(at.get("plotly_chart")[0])
        assert [t["name"] for t in traces] == ["sim-alder"] and len(traces[0]["x"]) == 7
        t3 = next(f for f in frames(at) if "vs native, points [95%]" in f.columns)
        assert len(t3) == 7 and t3.iloc[0]["vs native, points [95%]"] == "—"
        ver = next(f for f in frames(at) if "plan agreement" in f.columns)
        assert len(ver) == 2 and set(ver["codebook"]) == {"grid, training vectors, pair midpoints",
                                                           "static grid only (control)"}
        assert (ver["plan agreement"] == "5,184 / 5,184").all() and (ver["max |Δ cost|"] == 0).all()
        assert any("Every response–policy comparison agrees" in s.value for s in at.success)
        side = next(f for f in frames(at) if "class (public order)" in f.columns)
        assert {"native", "quantize", "top2", "temperature", "wcpq"} <= set(side.columns)
        pol = next(f for f in frames(at) if "WCPQ: plan" in f.columns)
        assert len(pol) == 18 and (pol["same"] == "yes").all()
        at.segmented_control(key="defense_recipient").set_value("frozen").run()
        assert not at.exception
    finally:
        from dashboard.data_access import release_readers
        release_readers()


def test_compare_runs_page(decoded_warehouse, monkeypatch):
    """The decoded warehouse holds the demo run and a second run on the same data: the utility
    both computed (the two decoded models) must agree exactly."""
    monkeypatch.setenv("QLB_WAREHOUSE", str(decoded_warehouse))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("pages/compare.py").run()
    try:
        assert not at.exception, [e.value for e in at.exception]
        util = next(f for f in frames(at) if "mean_cost (A)" in f.columns)
        assert len(util) == 2 * 5 * 3 and (util["B − A"].abs() < 1e-12).all()
        ref = next(f for f in frames(at) if "overall_recovery (A)" in f.columns)
        assert (ref["B − A"].abs() < 1e-12).all()
        at.switch_page("pages/glossary.py").run()
        assert not at.exception and "WCPQ" in texts(at)
    finally:
        from dashboard.data_access import release_readers
        release_readers()


def test_collection_page_without_collections_says_how_to_collect(app, demo_warehouse):
    """The simulated demo holds no `qlb collect` run: the page gives the exact commands."""
    import shlex
    from pathlib import Path
    at = app.run()
    at.switch_page("pages/collection.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Collection"
    assert any("No collection runs in this dataset yet" in i.value for i in at.info)
    commands = "\n".join(c.value for c in at.code)
    where = shlex.quote(str(Path(demo_warehouse).resolve()))
    for transport in ("--transport typed --base-url http://127.0.0.1:8000",
                      "--transport openai --base-url http://127.0.0.1:8080/v1 --endpoint-model llama3",
                      "--transport python --target my_module:answer"):
        assert (f"qlb collect native --dataset simulated-reference --model my-model --warehouse {where} "
                f"{transport}") in commands
    assert f"qlb audit --dataset simulated-reference --warehouse {where}" in commands
    assert "Collecting answers from your own model" in texts(at)
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
    monkeypatch.setenv("QLB_WAREHOUSE", str(path))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/collection.py").run()
    try:
        assert not at.exception, [e.value for e in at.exception]
        import html
        summary = html.unescape(texts(at))
        assert ("2 collection runs for this dataset: 6 native answers from m1 (4 valid, 2 invalid, 0 unavailable), "
                "median latency") in summary
        assert "2 earlier answers replaced" in summary
        counts = next(f for f in frames(at) if "skipped" in f.columns and "endpoint" in f.columns)
        assert counts[["stored", "valid", "invalid", "skipped"]].values.tolist() == [[2, 2, 0, 2], [4, 2, 2, 0]]
        assert counts["endpoint"].tolist() == ["tests.app.collect_target:fixed", "tests.app.collect_target:answer"]
        runs = next(f for f in frames(at) if "collection_id" in f.columns and "settings" in f.columns)
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
        assert body_sha256(json.loads(body_code)) == attempts["request_sha256"].iloc[0]     # the body that was sent
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

        history = next(f for f in frames(at) if "replaced_by" in f.columns)
        assert sorted(history["world_id"]) == ["w2", "w3"] and set(history["replaced_by"]) == {second}
        assert HOSTILE in history["choice"].tolist()
    finally:
        from dashboard.data_access import release_readers
        release_readers()


def test_data_page_ontology_section_shows_validates_and_ingests(demo_warehouse, tmp_path, monkeypatch):
    """The Data page's decision-task section: the dataset's ontology as a tree (TUPLE by default),
    an uploaded file's every problem before anything is written, then the ingest button."""
    import shutil

    from tests.records.ontologies import LENDING_PATH, as_text, three_by_three
    from warehouse.db import open_reader
    from warehouse.ontologies import dataset_ontology_sha256
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(demo_warehouse, wh)           # this test writes: keep the shared demo as it is
    monkeypatch.setenv("QLB_WAREHOUSE", str(wh))
    monkeypatch.chdir(ROOT)
    try:
        at = AppTest.from_file(APP, default_timeout=60).run()
        at.switch_page("pages/data.py").run()
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
        assert "bad.json: domains.support.classes.BILLING: 1 mechanism, need at least 2" in report
        assert "bad.json: domains.support.asymmetric_costs.OUTAGE.OUTAGE: the diagonal must be 0 (got 2.0)" in report
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
        assert any("uses its own ontology, from lending\\_ontology\\.json" in m.value for m in at.markdown)
        assert any("medical\\_debt: The credit file shows unpaid medical bills\\." in m.value for m in at.markdown)
    finally:
        from dashboard.data_access import release_readers
        release_readers()
    con = open_reader(wh)
    try:
        assert dataset_ontology_sha256(con, "lending") == parse_sha(LENDING_PATH)
        assert dataset_ontology_sha256(con, "simulated-reference") != parse_sha(LENDING_PATH)
    finally:
        con.close()


def parse_sha(path) -> str:
    from qlb.records.ontology import ontology_sha256
    return ontology_sha256(path.read_text("utf-8"))
