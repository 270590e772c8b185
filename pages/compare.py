"""Run comparison: two stored audit runs side by side (before and after a defense, a model
update, new data): recovery, downstream cost, defenses and refusal, with the differences."""
from __future__ import annotations

import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import data_access as da
from dashboard.routing import page_entry
from dashboard.widgets import audit_page_start, chart, md_text, table
from qlb.present.figures import plot_texts
from qlb.present.palette import VIEW_COLOURS
from qlb.tuple.release_views import VIEWS

INTRO = (
    "Pick two audit runs of this dataset (say, before and after a model update or new exports). "
    "Every table shows run A, run B and B − A on what both runs computed; rows only one run has "
    "are left out. Differences are descriptive: each run's own intervals are on its pages."
)


def _side(a: pd.DataFrame, b: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    m = a[keys + [value]].merge(b[keys + [value]], on=keys, suffixes=(" (A)", " (B)"))
    m["B − A"] = m[f"{value} (B)"] - m[f"{value} (A)"]
    return m


def change_figure(rec: pd.DataFrame) -> go.Figure:
    """Grouped bars of pooled test recovery, run B minus run A, per model and release view."""
    fig = go.Figure()
    for view in VIEWS:
        d = rec[rec["view"] == view]
        if d.empty:
            continue
        fig.add_bar(name=view, x=plot_texts(d["model"]), y=d["B − A"], marker_color=VIEW_COLOURS[view],
                    customdata=d[["accuracy (A)", "accuracy (B)"]],
                    hovertemplate="%{x} · " + view + "<br>A %{customdata[0]:.1%} → B %{customdata[1]:.1%}"
                                  "<br>change %{y:+.1%}<extra></extra>")
    fig.add_hline(y=0, line_color="#555555")
    fig.update_layout(barmode="group", height=380, margin=dict(l=10, r=10, t=30, b=10),
                      yaxis=dict(title="recovery, run B − run A", tickformat="+.0%"), legend=dict(orientation="h", y=1.12))
    return fig


def render() -> None:
    """The Compare runs page: the provenance of two chosen runs, then recovery, downstream cost, defenses and refusal
    in both, with B − A."""
    start = audit_page_start("Compare runs", INTRO)
    if start is None:
        return
    path, dataset = start
    runs = da.all_runs(path, dataset)
    if len(runs) < 2:
        st.info("This dataset has fewer than two audit runs. Run `qlb audit --force` after a change to compare.")
        return
    ids = runs["run_id"].tolist()
    c1, c2 = st.columns(2)
    a = c1.selectbox("Run A", ids, index=1, key="run_a", bind="query-params", help="Newest first.")
    b = c2.selectbox("Run B", ids, index=0, key="run_b", bind="query-params")
    if a == b:
        st.warning("Pick two different runs.")
        return
    ra, rb = runs.set_index("run_id").loc[a], runs.set_index("run_id").loc[b]
    prov = pd.DataFrame({"": ["started", "dataset fingerprint", "code version", "audits", "models"],
                         "run A": [str(ra["started_at"]), ra["dataset_fingerprint"][:12], ra["code_version"],
                                   ", ".join(json.loads(ra["parameters"]).get("audits", [])),
                                   str(json.loads(ra["parameters"]).get("models") or "all")],
                         "run B": [str(rb["started_at"]), rb["dataset_fingerprint"][:12], rb["code_version"],
                                   ", ".join(json.loads(rb["parameters"]).get("audits", [])),
                                   str(json.loads(rb["parameters"]).get("models") or "all")]})
    table(prov, "compare_provenance", "What each run was computed from.")
    if ra["dataset_fingerprint"] != rb["dataset_fingerprint"]:
        st.caption("The two runs read different data (the dataset fingerprints differ).")
    shown = 0

    rec = _side(*(da.query(path, "recovery_results", (r,)).query("scope == 'pooled'") for r in (a, b)),
                ["model", "view"], "accuracy")
    if not rec.empty:
        shown += 1
        st.subheader("Secret recovery")
        chart(change_figure(rec), rec, "compare_recovery",
              f"Pooled test recovery, run B ({md_text(b)}) minus run A ({md_text(a)}), per model and release view.")
        table(rec.round(4), "compare_recovery_table", "Pooled test recovery in both runs.")
    util = _side(*(da.query(path, "utility_results", (r,)).query("scope == 'pooled' and profile == 'authored'")
                   for r in (a, b)), ["model", "view", "task"], "mean_cost")
    if not util.empty:
        shown += 1
        st.subheader("Downstream cost (authored profile)")
        table(util.round(4), "compare_utility", "Pooled test mean cost of the selected recipient policy in both runs.")
    dfs = _side(*(da.query(path, "defense_results", (r,)) for r in (a, b)), ["model", "defense"], "accuracy")
    if not dfs.empty:
        shown += 1
        st.subheader("Defenses")
        table(dfs.round(4), "compare_defenses", "Defense-aware recovery in both runs.")
    ref = _side(*(da.query(path, "refusal_results", (r,)).query("domain == 'all'") for r in (a, b)),
                ["model"], "overall_recovery")
    if not ref.empty:
        shown += 1
        st.subheader("Refusal audit")
        table(ref.round(4), "compare_refusal", "Overall recovery from refusal probes in both runs.")
    if not shown:
        st.info("These two runs have no audit in common to compare.")


page_entry(render)
