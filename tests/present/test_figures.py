"""The figures the fronts, sensitivity and defenses pages (and the HTML report) share."""
from __future__ import annotations

import numpy as np
import pandas as pd

from qlb.present.figures import cost_difference_heatmap, defense_figure, front_figure, front_labels


def front_points(costs: dict[tuple[str, str], float], front: set[tuple[str, str]]) -> pd.DataFrame:
    """Front points of (model, view) -> mean cost, recovery 0.5 for no output and 0.7 otherwise."""
    rows = []
    for (model, view), cost in costs.items():
        rec = 0.5 if view == "no_output" else 0.7
        rows.append({"model": model, "view": view, "recovery": rec, "recovery_ci_low": rec - 0.05,
                     "recovery_ci_high": rec + 0.05, "mean_cost": cost, "cost_ci_low": cost * 0.8,
                     "cost_ci_high": cost * 1.2, "member": (model, view) in front})
    return pd.DataFrame(rows)


def test_front_cost_axis_turns_logarithmic_only_for_a_wide_cost_range():
    narrow = front_points({("a", "full_native"): 1.0, ("b", "full_native"): 3.9}, {("a", "full_native")})
    wide = front_points({("a", "full_native"): 1.0, ("b", "no_output"): 10.5}, {("a", "full_native")})
    colours = {"a": "#332288", "b": "#88CCEE"}
    assert front_figure(narrow, "member", colours, False).layout.yaxis.type == "linear"
    fig = front_figure(wide, "member", colours, True)
    assert fig.layout.yaxis.type == "log" and "log scale" in fig.layout.yaxis.title.text
    assert "cost units" in fig.layout.yaxis.title.text and "(%)" in fig.layout.xaxis.title.text


def test_front_legend_names_models_and_views_and_dominated_points_stay_visible():
    pts = front_points({("a", "full_native"): 1.0, ("a", "choice"): 1.5, ("b", "full_native"): 2.0},
                       {("a", "full_native")})
    fig = front_figure(pts, "member", {"a": "#332288", "b": "#DDCC77"}, True)
    key = [t for t in fig.data if t.hoverinfo == "skip" and t.mode == "markers"]
    assert [t.name for t in key] == ["a", "b", "choice", "full native"]          # model colours, then view symbols
    dominated = next(t for t in fig.data if t.name == "b · full native")
    assert dominated.opacity is None and dominated.marker.line.width > 0         # full colour, outlined
    assert "b · full native" in dominated.customdata[0][-1]                       # hover says model and view


def test_front_labels_merge_releases_on_one_spot():
    pts = front_points({("a", "no_output"): 2.0, ("b", "no_output"): 2.0, ("a", "full_native"): 0.7,
                        ("a", "full_probabilities"): 0.7}, set())
    labels = front_labels(pts, every_view=True).set_index("mean_cost")["label"]
    assert labels[2.0] == "no output (2 models)"
    assert labels[0.7] == "a · full probabilities, full native"
    assert front_labels(pts[pts["view"] == "full_native"], every_view=False)["label"].tolist() == ["a"]


def test_a_crowded_front_is_numbered_and_the_key_names_each_number():
    from qlb.present.figures import NAMED_FRONT_POINTS, front_key
    views = ["no_output", "choice", "choice_confidence", "full_probabilities", "full_native"]
    pts = pd.DataFrame([{"model": "a", "view": v, "recovery": 0.5 + 0.05 * i, "recovery_ci_low": 0.45 + 0.05 * i,
                         "recovery_ci_high": 0.55 + 0.05 * i, "mean_cost": 2.0 - 0.3 * i, "cost_ci_low": 1.8 - 0.3 * i,
                         "cost_ci_high": 2.2 - 0.3 * i, "member": True} for i, v in enumerate(views)])
    assert len(pts) > NAMED_FRONT_POINTS
    assert front_key(pts, every_view=True) == ["1 a · no output", "2 a · choice", "3 a · choice + confidence",
                                               "4 a · full probabilities", "5 a · full native"]
    text = next(t for t in front_figure(pts, "member", {"a": "#332288"}, True).data if t.mode == "text").text
    assert [t.strip("\u2003") for t in text] == ["1", "2", "3", "4", "5"]
    few = pts.iloc[:2]
    assert front_key(few, every_view=True) == ["a · no output", "a · choice"]
    text = next(t for t in front_figure(few, "member", {"a": "#332288"}, True).data if t.mode == "text").text
    assert [t.strip("\u2003") for t in text] == ["a · no output", "a · choice"]


def test_heatmap_shows_profile_display_names_and_marks_noninferiority():
    rows = [{"model": m, "view_a": "choice", "view_b": "full_native", "task": "selective", "profile": p,
             "difference": d, "ci_low": d - 0.1, "ci_high": d + 0.1, "noninferior": d + 0.1 <= 0.1, "n": 10}
            for m, d in (("a", 0.0), ("b", 0.5)) for p in ("review_half", "authored")]
    heat = cost_difference_heatmap(pd.DataFrame(rows), "selective", "choice").data[0]
    assert list(heat.x) == ["authored costs", "review at half cost"]
    assert heat.text[0][0].endswith("✓") and "✓" not in heat.text[1][0]
    assert "Trusted review and general inspection cost half" in heat.customdata[0][1][3]
    own = max(abs(r["difference"]) for r in rows)
    assert (heat.zmin, heat.zmax) == (-own, own)                          # its own scale by default
    shared = cost_difference_heatmap(pd.DataFrame(rows), "selective", "choice", 1.5).data[0]
    assert (shared.zmin, shared.zmid, shared.zmax) == (-1.5, 0, 1.5)     # a scale shared with other tasks


def test_defense_figure_draws_markers_in_defense_order_without_lines():
    rows = [{"model": "a", "defense": d, "accuracy": 0.7, "ci_low": 0.6, "ci_high": 0.8, "diff_vs_native": None}
            for d in ("wcpq", "native", "quantize")]
    fig = defense_figure(pd.DataFrame(rows), {"a": "#332288"})
    assert fig.data[0].mode == "markers"
    assert list(fig.data[0].x) == ["native (control)", "quantize 0.1", "WCPQ strict"]
    assert "(%)" in fig.layout.yaxis.title.text


def test_the_uniform_guess_line_is_named_in_the_legend_not_over_the_bars():
    from qlb.present.figures import routes_figure
    routes = pd.DataFrame({"model": ["a", "b"], "direct_share": [0.4, 0.1], "residual_share": [0.55, 0.8],
                           "n": [10, 10], "direct_correct": [4, 1], "residual_unique_correct": [5, 8],
                           "overall_recovery": [0.95, 0.9]})
    fig = routes_figure(routes, reference=0.1054)
    assert not fig.layout.annotations                     # nothing printed over the bars
    (line,) = fig.layout.shapes
    assert (line.y0, line.y1, line.line.dash) == (0.1054, 0.1054, "dash")
    assert line.showlegend and line.name == "uniform guess 10.54%" and line.layer == "above"
    assert all(t.type == "bar" for t in fig.data)          # no stand-in trace taking a slot among the bars


def test_heatmap_of_changes_that_read_zero_keeps_a_scale_and_no_minus_zero():
    from qlb.present.figures import cost_difference_heatmap
    rows = [{"model": m, "view_a": "choice", "view_b": "full_native", "task": "selective", "profile": "authored",
             "difference": d, "ci_low": d - 0.0002, "ci_high": d + 0.0002, "noninferior": True, "n": 10}
            for m, d in (("a", -0.0003), ("b", 0.0))]
    fig = cost_difference_heatmap(pd.DataFrame(rows), "selective", "choice")
    heat = fig.data[0]
    assert heat.zmin == -1e-3 and heat.zmax == 1e-3                 # Plotly's auto scale would take over at 0
    assert [t[0] for t in heat.text] == ["+0.000 ✓", "+0.000 ✓"]
    assert not np.signbit(np.asarray(heat.z, dtype=float)).any()    # a hover's %{z:+.3f} never reads -0.000


def test_the_provenance_names_what_ran_and_who_was_defended():
    """Audits asked for but skipped (no input) are not listed; without a restriction the defended
    models are those with defense results, not a dash."""
    from datetime import datetime

    from qlb.present.report import provenance_table
    from qlb.present.rundata import RunData

    empty = pd.DataFrame()
    run = pd.Series({"run_id": "r", "dataset_fingerprint": "f" * 20, "code_version": "1", "test_used_for_selection": False,
                     "started_at": datetime(2026, 12, 4), "finished_at": datetime(2026, 12, 4)})
    d = RunData(run, pd.Series({"dataset_id": "d", "simulated": False}), pd.DataFrame({"model": ["b"]}), empty, empty,
                empty, empty, empty, pd.DataFrame({"model": ["b", "a", "b"]}), empty, empty, models=["a", "b"])
    facts = dict(provenance_table(d, {"audits": ["refusal", "quasileak", "decoding", "defenses"]}).values)
    assert facts["Audits"] == "refusal, defenses" and facts["Defended models"] == "a, b"
    assert dict(provenance_table(d, {"defense_models": ["b"]}).values)["Defended models"] == "b"


def test_the_report_says_what_task_was_audited_and_escapes_its_text():
    """The report's task section names every class and protected mechanism of every domain, with
    the ontology's descriptions, and never passes the ontology's text through as markup."""
    from qlb.present.report import task_section
    from qlb.records.ontology import load_ontology, parse_ontology
    from tests.records.ontologies import as_text, make_domain, make_ontology

    tuple_task = load_ontology()
    text = task_section(tuple_task)
    for domain in tuple_task.domains.values():
        assert domain.title in text and all(f"<code>{m}</code>" in text for m in domain.mechanisms)
    doc = make_ontology({"d": {"A": ["m1", "m2"], "B": ["m3", "m4"]}})
    doc["domains"]["d"] = make_domain({"A": ["m1", "m2"], "B": ["m3", "m4"]}, title="<img src=x onerror=alert(1)>")
    doc["domains"]["d"]["descriptions"]["m1"] = "it's <b>bold</b> & Zürich"
    text = task_section(parse_ontology(as_text(doc), "o.json"))
    assert "<img" not in text and "<b>" not in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text and "it&#x27;s &lt;b&gt;bold&lt;/b&gt; &amp; Zürich" in text
    # the board reads words: the recipient role and an undescribed mechanism in plain words beside the identifier
    del doc["domains"]["d"]["descriptions"]["m3"]
    doc["domains"]["d"]["recipient_role"] = "merchant_claim_dispatcher"
    text = task_section(parse_ontology(as_text(doc), "o.json"))
    assert "Recipient: merchant claim dispatcher;" in text and "<code>m3</code> (M3)" in text
