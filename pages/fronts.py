"""Privacy-utility fronts: per task, secret recovery (from the decoding audit) against the
recipient's mean cost (from the utility audit), with the non-dominated set drawn
(TUPLE.md section 6; paper Section 7.4, Appendix I.3)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import data_access as da
from dashboard.palette import VIEW_SYMBOLS, model_colours
from dashboard.routing import page_entry
from dashboard.widgets import audit_page_start, chart, table
from qlb.costs import PROFILES
from qlb.workflows import TASKS

INTRO = (
    "Each point is one release: how often an attacker recovers the protected mechanism from it "
    "(x, test recovery, lower is more private) and what the legitimate recipient pays when it acts "
    "on it (y, mean test cost, lower is more useful). A point is on the front when no other point "
    "is at least as good on both axes and better on one (unrounded means). The per-model points "
    "are each model's full native release; the toggle adds every model x view point. Membership "
    "is descriptive, not a significance claim."
)
TASK_HELP = {"selective": "route or send to trusted review", "clarification": "act now or buy one check first",
             "asymmetric": "route or inspect under the action-by-class cost matrix"}


def front_figure(points: pd.DataFrame, member: str, colours: dict[str, str], every_view: bool) -> go.Figure:
    fig = go.Figure()
    for (model, view), d in points.groupby(["model", "view"], sort=True):
        on = bool(d[member].iloc[0])
        fig.add_trace(go.Scatter(
            x=d["recovery"], y=d["mean_cost"], mode="markers", name=f"{model} · {view}" if every_view else model,
            legendgroup=model, showlegend=not every_view or view == "full_native",
            marker=dict(color=colours[model], size=13 if on else 10, symbol=VIEW_SYMBOLS[view],
                        line=dict(color="#000000", width=1.5 if on else 0)),
            opacity=1.0 if on else 0.3,
            error_x=dict(type="data", symmetric=False, array=d["recovery_ci_high"] - d["recovery"],
                         arrayminus=d["recovery"] - d["recovery_ci_low"], thickness=1, color=colours[model]),
            error_y=dict(type="data", symmetric=False, array=d["cost_ci_high"] - d["mean_cost"],
                         arrayminus=d["mean_cost"] - d["cost_ci_low"], thickness=1, color=colours[model]),
            customdata=d[["model", "view", "recovery_ci_low", "recovery_ci_high", "cost_ci_low", "cost_ci_high"]],
            hovertemplate="<b>%{customdata[0]}</b> · %{customdata[1]}<br>recovery %{x:.2%} "
                          "[%{customdata[2]:.2%}, %{customdata[3]:.2%}]<br>mean cost %{y:.4f} "
                          "[%{customdata[4]:.4f}, %{customdata[5]:.4f}]"
                          + ("<br>on the front" if on else "<br>dominated") + "<extra></extra>"))
    front = points[points[member]].sort_values(["recovery", "mean_cost"])
    if len(front) > 1:
        fig.add_trace(go.Scatter(x=front["recovery"], y=front["mean_cost"], mode="lines", name="front",
                                 line=dict(color="#333333", dash="dot", shape="hv"), hoverinfo="skip"))
    fig.update_layout(height=480, margin=dict(l=10, r=10, t=30, b=10),
                      xaxis=dict(title="secret recovery on test (lower = more private)", tickformat=".0%"),
                      yaxis=dict(title="mean cost on test (lower = more useful)"),
                      legend=dict(title="model" if not every_view else "model · view"))
    return fig


def render() -> None:
    start = audit_page_start("Privacy-utility fronts", INTRO)
    if start is None:
        return
    path, dataset = start
    runs = da.front_runs(path, dataset)
    if runs.empty:
        if not da.utility_runs(path, dataset).empty:
            st.info("The utility audit is stored but no run has both it and the decoding audit: run "
                    "`qlb audit --jobs 2` (the decoding takes a few minutes for nine models).")
        else:
            st.info("No fronts yet: run `qlb audit --jobs 2` to compute the decoding and utility audits.")
        return
    run_id = st.selectbox("Run", runs["run_id"].tolist(), key="fronts_run", help="Newest first.")
    points = da.query(path, "front_points", (run_id,))
    c1, c2, c3 = st.columns([2, 2, 2])
    with c1:
        task = st.segmented_control("Task", list(TASKS), default=TASKS[0], required=True, key="task",
                                    bind="query-params", help="; ".join(f"{t}: {h}" for t, h in TASK_HELP.items()))
    with c2:
        profile = st.selectbox("Cost profile", [p for p in PROFILES if p in set(points["profile"])], key="profile",
                               bind="query-params", help="The authored costs, or one of the five fixed perturbations.")
    with c3:
        every = st.toggle("Show every model × view point", key="every_view", bind="query-params",
                          help="Off: one point per model (its full native release).")
    sel = points[(points["task"] == task) & (points["profile"] == profile)]
    member = "nondominated_all" if every else "nondominated_models"
    shown = sel if every else sel[sel["view"] == "full_native"]
    colours = model_colours(points["model"])
    st.subheader(f"{task.capitalize()} · {profile}")
    front_names = ", ".join(shown.loc[shown[member], "model"] + ("" if not every else " · " + shown.loc[shown[member], "view"]))
    st.markdown(f"**On the front:** {front_names or 'none'}")
    chart(front_figure(shown, member, colours, every), shown, f"front_{task}_{profile}",
          f"Test recovery (x) against mean {task} cost under the {profile} profile (y), 95% pair-clustered "
          f"intervals on both; solid outlined points are non-dominated, faded ones dominated; dotted: the front. "
          f"Run {run_id}.")
    view_table = shown.copy()
    view_table["recovery"] = [f"{100 * v:.2f}% [{100 * lo:.2f}, {100 * hi:.2f}]" for v, lo, hi in
                              zip(shown["recovery"], shown["recovery_ci_low"], shown["recovery_ci_high"])]
    view_table["mean cost"] = [f"{v:.4f} [{lo:.4f}, {hi:.4f}]" for v, lo, hi in
                               zip(shown["mean_cost"], shown["cost_ci_low"], shown["cost_ci_high"])]
    view_table["on the front"] = ["yes" if v else "" for v in shown[member]]
    table(view_table[["model", "view", "recovery", "mean cost", "on the front"]], f"front_points_{task}_{profile}",
          f"The points above with their intervals. Run {run_id}.")

    st.subheader("The front changes with the task")
    per_model = points[(points["view"] == "full_native") & (points["profile"] == profile)]
    rows = [{"task": t, "non-dominated models (full native)": ", ".join(sorted(
        per_model.loc[(per_model["task"] == t) & per_model["nondominated_models"], "model"])) or "none"}
        for t in TASKS]
    table(pd.DataFrame(rows), f"front_members_{profile}",
          f"Non-dominated models per task under the {profile} profile (Appendix I.3). Run {run_id}.")


page_entry(render)
