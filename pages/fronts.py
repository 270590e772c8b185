"""Privacy-utility fronts: per task, secret recovery (from the decoding audit) against the
recipient's mean cost (from the utility audit), with the non-dominated set drawn
(TUPLE.md section 6; paper Section 7.4, Appendix I.3)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import data_access as da
from qlb.present.figures import front_figure
from qlb.present.palette import model_colours
from dashboard.routing import page_entry
from dashboard.widgets import audit_page_start, chart, md_text, pick_run, table
from qlb.tuple.costs import profile_order
from qlb.tuple.workflows import TASKS

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


def render() -> None:
    """The Privacy-utility fronts page: test recovery against mean cost per task and profile with the non-dominated
    set, and the front's members per task."""
    start = audit_page_start("Privacy-utility fronts", INTRO)
    if start is None:
        return
    path, dataset = start
    runs = da.front_runs(path, dataset)
    empty = ""
    if runs.empty:
        empty = ("The utility audit is stored but no run has both it and the decoding audit: run `qlb audit "
                 "--jobs 2` (the decoding takes a few minutes for nine models)."
                 if not da.utility_runs(path, dataset).empty else
                 "No fronts yet: run `qlb audit --jobs 2` to compute the decoding and utility audits.")
    run_id = pick_run(runs, "fronts_run", empty)
    if run_id is None:
        return
    points = da.query(path, "front_points", (run_id,))
    c1, c2, c3 = st.columns([2, 2, 2])
    with c1:
        task = st.segmented_control("Task", list(TASKS), default=TASKS[0], required=True, key="task",
                                    bind="query-params", help="; ".join(f"{t}: {h}" for t, h in TASK_HELP.items()))
    with c2:
        profile = st.selectbox("Cost profile", profile_order(points["profile"]), key="profile",
                               bind="query-params", help="The authored costs, or one of the five fixed perturbations.")
    with c3:
        every = st.toggle("Show every model × view point", key="every_view", bind="query-params",
                          help="Off: one point per model (its full native release).")
    sel = points[(points["task"] == task) & (points["profile"] == profile)]
    member = "nondominated_all" if every else "nondominated_models"
    shown = sel if every else sel[sel["view"] == "full_native"]
    colours = model_colours(points["model"])
    st.subheader(f"{md_text(task.capitalize())} · {md_text(profile)}")
    front_names = ", ".join(shown.loc[shown[member], "model"] + ("" if not every else " · " + shown.loc[shown[member], "view"]))
    st.markdown(f"**On the front:** {md_text(front_names) or 'none'}")
    chart(front_figure(shown, member, colours, every), shown, f"front_{task}_{profile}",
          f"Test recovery (x) against mean {md_text(task)} cost under the {md_text(profile)} profile (y), "
          "95% pair-clustered intervals on both; solid outlined points are non-dominated, faded ones dominated; "
          "dotted: the front. "
          + ("Symbols: ● full_native, ▲ full_probabilities, ◆ choice_confidence, ■ choice, ○ no_output. " if every else "")
          + f"Run {md_text(run_id)}.")
    view_table = shown.copy()
    view_table["recovery"] = [f"{100 * v:.2f}% [{100 * lo:.2f}, {100 * hi:.2f}]" for v, lo, hi in
                              zip(shown["recovery"], shown["recovery_ci_low"], shown["recovery_ci_high"])]
    view_table["mean cost"] = [f"{v:.4f} [{lo:.4f}, {hi:.4f}]" for v, lo, hi in
                               zip(shown["mean_cost"], shown["cost_ci_low"], shown["cost_ci_high"])]
    view_table["on the front"] = ["yes" if v else "" for v in shown[member]]
    table(view_table[["model", "view", "recovery", "mean cost", "on the front"]], f"front_points_{task}_{profile}",
          f"The points above with their intervals. Run {md_text(run_id)}.")

    st.subheader("The front changes with the task")
    per_model = points[(points["view"] == "full_native") & (points["profile"] == profile)]
    rows = [{"task": t, "non-dominated models (full native)": ", ".join(sorted(
        per_model.loc[(per_model["task"] == t) & per_model["nondominated_models"], "model"])) or "none"}
        for t in TASKS]
    table(pd.DataFrame(rows), f"front_members_{profile}",
          f"Non-dominated models per task under the {md_text(profile)} profile (Appendix I.3). "
          f"Run {md_text(run_id)}.")


page_entry(render)
