"""QuasiLeak detectors: which detectors recover complete quasi-evidence groups, bound to the right
attribute, and only where the policy says hide? (QUASILEAK.md section 3)."""
from __future__ import annotations

import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import data_access as da
from dashboard.highlight import document_html, legend_html, policy_chips
from dashboard.routing import page_entry
from dashboard.widgets import audit_page_start, chart, html_block, md_text, table
from qlb.present.figures import f1_figure, plot_text, plot_texts
from qlb.quasileak.scoring import HEADLINE, METRIC_KEYS, explain_targets

LEADERBOARD_METRICS = ("complete_recall", "graded_recall", "strict_precision", "lenient_precision", "complete_f1",
                       "graded_f1", "binding_error_rate", "over_flag_rate", "document_flag_recall", "span_f1")
DETECTOR_PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#999999"]


INTRO = (
    "Detectors must recover complete groups of individually weak cues, bind each group to the "
    "attribute it reveals, and report only attributes the policy labels hide. A predicted cue "
    "matches a gold cue at character IoU >= 0.5; intervals are 95% document-clustered bootstrap "
    "(2,000 resamples)."
)


def _fmt(v, lo=None, hi=None) -> str:
    if v is None or pd.isna(v):
        return "N/A"
    if lo is None or pd.isna(lo):
        return f"{v:.3f}"
    return f"{v:.3f} [{lo:.3f}, {hi:.3f}]"


def leaderboard_frame(scores: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(display table with intervals, numeric table) from the run's 'all' slice."""
    a = scores[scores["slice_kind"] == "all"]
    numeric = a.pivot_table(index="detector", columns="metric", values="value", aggfunc="first")
    lo = a.pivot_table(index="detector", columns="metric", values="ci_low", aggfunc="first")
    hi = a.pivot_table(index="detector", columns="metric", values="ci_high", aggfunc="first")
    sim = a.groupby("detector")["simulated"].first()
    rows = []
    for det in numeric.sort_values("complete_f1", ascending=False).index:
        row = {"detector": det, "simulated": "SIMULATED" if sim[det] else "",
               "targets": int(numeric.loc[det, "targets"]), "predicted groups": int(numeric.loc[det, "predicted_groups"])}
        for m in LEADERBOARD_METRICS:
            has_ci = m in HEADLINE
            row[m.replace("_", " ")] = _fmt(numeric.loc[det, m], lo.loc[det, m] if has_ci else None,
                                             hi.loc[det, m] if has_ci else None)
        rows.append(row)
    out = numeric.reset_index()
    for m in HEADLINE:
        out[f"{m}_ci_low"] = out["detector"].map(lo[m])
        out[f"{m}_ci_high"] = out["detector"].map(hi[m])
    return pd.DataFrame(rows), out


def breakdown_figure(data: pd.DataFrame, metric: str, kind: str) -> go.Figure:
    """Grouped bars of ``metric`` per detector over the slices of one breakdown (arity, attribute, distance or
    context)."""
    fig = go.Figure()
    for i, (det, sub) in enumerate(data.groupby("detector", sort=True)):
        fig.add_bar(name=plot_text(det), x=plot_texts(sub["slice"]), y=sub["value"],
                    marker_color=DETECTOR_PALETTE[i % len(DETECTOR_PALETTE)],
                    hovertemplate="%{x}<br>%{fullData.name}: %{y:.3f}<extra></extra>")
    fig.update_layout(barmode="group", height=360, margin=dict(l=10, r=10, t=30, b=10),
                      xaxis_title=kind, yaxis_title=metric.replace("_", " "),
                      legend=dict(orientation="h", y=1.15))
    return fig


def render() -> None:
    """The QuasiLeak page: a run's detector leaderboard and F1 chart, breakdowns by slice, and the document viewer."""
    start = audit_page_start("QuasiLeak detectors", INTRO)
    if start is None:
        return
    path, dataset = start
    runs = da.quasileak_runs(path, dataset)
    c1, c2 = st.columns([3, 1])
    if c2.button("Recompute now", key="ql_recompute", help="Rescore every detector's stored predictions "
                                                           "through the engine as a new run."):
        with st.spinner("Scoring ..."):
            run = da.run_audit_now(path, dataset)
        st.toast(f"Stored run {md_text(run.run_id)}")
        st.rerun()
    if runs.empty:
        c1.info("No QuasiLeak scores yet. Load a corpus and predictions (Data page), or run a detector with "
                "`qlb quasileak run --detector lexicon-cues`, then press Recompute now.")
        return
    run_id = c1.selectbox("Run", runs["run_id"].tolist(), key="ql_run", help="Newest first.")
    scores = da.query(path, "ql_scores", (run_id,))
    split = scores["split"].iloc[0]

    st.subheader("Leaderboard")
    display, numeric = leaderboard_frame(scores)
    table(display, "quasileak_leaderboard",
          f"All metrics micro over the targets and predicted groups of split '{md_text(split)}'; "
          f"run {md_text(run_id)}. "
          "Intervals for the recall, precision, F1, binding and over-flag metrics. Span F1 is the span-level "
          "reference that ignores groups and attributes. SIMULATED detectors are derived from the gold groups.")
    chart(f1_figure(numeric), numeric, "quasileak_f1",
          f"Complete F1 (strict precision x complete recall) and graded F1 (lenient precision x graded recall) "
          f"per detector with 95% bootstrap intervals; split '{md_text(split)}', run {md_text(run_id)}.")

    st.subheader("Breakdowns")
    b1, b2 = st.columns(2)
    kind = b1.selectbox("By", ["arity", "attribute", "distance", "context"], key="ql_breakdown_kind",
                        help="distance: characters from the first cue's start to the last cue's end.")
    metric = b2.selectbox("Metric", [m for m in METRIC_KEYS if m not in ("targets", "predicted_groups")],
                          key="ql_breakdown_metric")
    data = scores[(scores["slice_kind"] == kind) & (scores["metric"] == metric)][["detector", "slice", "value"]]
    chart(breakdown_figure(data, metric, kind), data, f"quasileak_by_{kind}",
          f"{metric.replace('_', ' ')} by {kind}; in a slice, precision counts only predicted groups bound to "
          f"the slice's targets. Split '{md_text(split)}', run {md_text(run_id)}. Missing bars: the metric is "
          "undefined (N/A).")
    document_viewer(path, dataset, scores, split)


def document_viewer(path: str, dataset: str, scores: pd.DataFrame, split: str) -> None:
    """One document under one detector: the policy, gold and predicted cues highlighted, each target's credit and the
    predicted groups."""
    st.subheader("Document viewer")
    v1, v2 = st.columns(2)
    detector = v1.selectbox("Detector", sorted(scores["detector"].unique()), key="ql_view_detector")
    s = None if split == "all" else split
    doc_ids = da.query(path, "ql_doc_ids", (dataset, s, s, 1000))["doc_id"].tolist()
    doc_id = v2.selectbox("Document", doc_ids, key="ql_view_doc", help="The first 1,000 of the scored split.")
    if not doc_id:
        return
    doc = da.query(path, "ql_document", (dataset, doc_id)).iloc[0]
    gold_rows = da.query(path, "ql_document_groups", (dataset, doc_id))
    gold = [(a, [tuple(c) for c in json.loads(c)]) for a, c in zip(gold_rows["attribute"], gold_rows["cues"])]
    pred_row = da.query(path, "ql_document_prediction", (dataset, detector, doc_id))
    predicted = []
    if not pred_row.empty:
        predicted = [(g["attribute"], [tuple(c) for c in g["cues"]]) for g in json.loads(pred_row["groups"].iloc[0])]
        if isinstance(pred_row["failure"].iloc[0], str):
            st.error(f"The detector failed on this document: {md_text(pred_row['failure'].iloc[0])}")
    policy = json.loads(doc["policy"])
    # HTML blocks (html_block): the text in them is html.escape'd and never read as Markdown
    st.markdown(html_block("<div><b>Policy</b> " + policy_chips(policy) + "</div>"), unsafe_allow_html=True)
    st.markdown(html_block(legend_html(list(policy))), unsafe_allow_html=True)
    st.markdown(html_block(document_html(doc["text"], gold, predicted, policy)), unsafe_allow_html=True)
    explained = pd.DataFrame(explain_targets(policy, gold, predicted))
    if explained.empty:
        st.info("This document has no target (no gold group with a hide attribute).")
    else:
        table(explained, "quasileak_document_targets",
              f"Each target of {md_text(doc_id)} under {md_text(detector)}: its credit and why.")
    preds = pd.DataFrame([{"predicted group": i + 1, "attribute": a, "policy": policy.get(a, "?"),
                           "cues": "; ".join(doc["text"][s_:e_] for s_, e_ in cues)}
                          for i, (a, cues) in enumerate(predicted)])
    if not preds.empty:
        table(preds, "quasileak_document_predictions", "The detector's groups; keep or neutral ones are over-flags.")


page_entry(render)
