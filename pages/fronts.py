"""Privacy-utility fronts: per task, secret recovery (from the recovery audit) against the
recipient's mean cost (from the utility audit), with the non-dominated set drawn
(TUPLE.md section 6; paper Section 7.4, Appendix I.3)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import data_access as da
from dashboard.routing import page_entry
from dashboard.widgets import audit_page_start, chart, finding, md_text, pick_run, profile_help, table
from qlb.present.figures import front_figure, front_key
from qlb.present.fronts import (MEMBERSHIP_NOTE, Front, front_of, members_heading, members_note, price_of_privacy,
                                review_cost, stability_sentence, who_sentence)
from qlb.present.names import TASK_HELP, cost_interval, name, pct_interval, profile_descriptions
from qlb.present.palette import model_colours
from qlb.tuple.costs import profile_order
from qlb.tuple.release_views import VIEWS
from qlb.tuple.workflows import TASKS

INTRO = (
    "Each point is one release: how often an attacker recovers the protected mechanism from it "
    "(x, secret recovery on the test worlds, lower is more private) and what the legitimate recipient "
    "pays per case when it acts on it (y, mean test cost in the profile's cost units, lower is more "
    "useful). A point is on the front when no other point is at least as good on both axes and "
    "better on one (unrounded means). The per-model points are each model's full native release; "
    "the toggle adds every model × release view point (with one model in the run, its release views are the "
    "points)."
)
FRONT_ROWS = "front"     # the every-view table's default rows: the points on the front


def render() -> None:
    """The Privacy-utility fronts page: findings on who is on the front, test recovery against mean cost per task and
    profile with the non-dominated set, and the front's members per task."""
    start = audit_page_start("Privacy-utility fronts", INTRO)
    if start is None:
        return
    path, dataset = start
    runs = da.front_runs(path, dataset)
    empty = ""
    if runs.empty:
        empty = ("The utility audit is stored but no run has both it and the recovery audit: run `qlb audit "
                 "--jobs 2` (the recovery audit takes a few minutes for nine models)."
                 if not da.utility_runs(path, dataset).empty else
                 "No fronts yet: run `qlb audit --jobs 2` to compute the recovery and utility audits.")
    run_id = pick_run(runs, "fronts_run", empty, context=da.run_context(path, dataset))
    if run_id is None:
        return
    points = da.query(path, "front_points", (run_id,))
    tasks = [t for t in TASKS if t in set(points["task"])]
    profiles = profile_order(points["profile"])
    front = front_of(points)
    onto = da.ontology(path, dataset)
    findings(front, points, tasks, profiles, onto)

    described = profile_descriptions(onto)
    task, profile, every = controls(tasks, profiles, front.key == "view", described)
    sel = points[(points["task"] == task) & (points["profile"] == profile)]
    member = "nondominated_all" if every else "nondominated_models"
    shown = sel if every else sel[sel["view"] == "full_native"]
    front_chart(shown, member, every, task, profile, run_id, model_colours(points["model"]), described)
    points_table(shown, member, every, task, profile, run_id)
    members_by_task(front, tasks, profiles, profile, run_id)


def controls(tasks: list[str], profiles: list[str], one_model: bool, described: dict[str, str]
             ) -> tuple[str, str, bool]:
    """The task, cost profile and every-view pickers (kept in the URL); with one model in the run its release
    views are always shown (one point alone is no front)."""
    task = st.segmented_control("Task", tasks, default=tasks[0], required=True, key="task",
                                bind="query-params", format_func=lambda t: name("task", t),
                                help="\n".join(f"- **{name('task', t)}**: {TASK_HELP.get(t, '')}" for t in tasks))
    c1, c2 = st.columns([1, 1], vertical_alignment="bottom")
    with c1:
        profile = st.selectbox("Cost profile", profiles, key="profile", bind="query-params",
                               format_func=lambda p: name("profile", p),
                               help=profile_help(profiles, described))
    with c2:
        if one_model:
            st.caption("One model in this run: each point is one of its release views.")
            return task, profile, True
        every = st.toggle("Show every model × view point", key="every_view", bind="query-params",
                          help="Off: one point per model (its full native release). On: every model × release "
                               "view, each view its own symbol (see the legend).")
    return task, profile, every


def findings(front: Front, points: pd.DataFrame, tasks: list[str], profiles: list[str], ontology) -> None:
    """Up to three sentences: who is on the front (of models, or of the one model's release views) under the reference
    costs and whether it changes with the task (with the caveat that membership is descriptive), how often each is on
    it over every task × profile, and what full privacy costs (in words when it is sending every case to trusted
    review, from the dataset's decision task's review cost)."""
    reference = "authored" if "authored" in profiles else profiles[0]
    finding(f"{who_sentence(front, tasks, reference)} {MEMBERSHIP_NOTE}", lead="Who is on the front.")
    finding(stability_sentence(front, tasks, profiles), lead="Across cost profiles.")
    finding(price_of_privacy(points, tasks, reference, review_cost(reference, ontology)),
            lead="What full privacy costs.")


def front_chart(shown: pd.DataFrame, member: str, every: bool, task: str, profile: str, run_id: str,
                colours: dict[str, str], described: dict[str, str]) -> None:
    """The chosen task and profile: who is on the front, and the chart with its caption."""
    st.subheader(f"{md_text(name('task', task).capitalize())} · {md_text(name('profile', profile))}")
    st.caption(md_text(described.get(profile, "")))
    front_names = "; ".join(front_key(shown[shown[member]], every))
    st.markdown(f"**On the front:** {md_text(front_names) or 'none'}")
    fig = front_figure(shown, member, colours, every)
    log = fig.layout.yaxis.type == "log"
    chart(fig, shown, f"front_{task}_{profile}",
          f"Secret recovery on the test worlds (x) against mean {md_text(name('task', task))} cost per case under "
          f"the cost profile “{md_text(name('profile', profile))}” (y), 95% pair-clustered intervals on both. "
          "Outlined points are on the front (dotted line), named beside the marker or, when there are many, numbered as in "
          "the list above the chart; the others are dominated (hover for model, view and intervals). "
          + ("The cost axis is logarithmic: the costliest releases cost several times the cheapest, and a linear "
             "axis would squash the rest. " if log else "")
          + f"Run {md_text(run_id)}.")


def points_table(shown: pd.DataFrame, member: str, every: bool, task: str, profile: str, run_id: str) -> None:
    """The chart's points with their intervals: one per model; with every view on, the points on the front (named
    model · view) or one view's points (one per model)."""
    pick = None
    if every:
        views = [v for v in VIEWS if v in set(shown["view"])]
        pick = st.selectbox("Rows of the table", [FRONT_ROWS, *views], key="front_rows",
                            format_func=lambda v: "the points on the front" if v == FRONT_ROWS
                            else f"every model's {name('view', v)} release",
                            help="The chart has one point per model and view; the table shows one slice of them.")
    front_only = pick == FRONT_ROWS
    if front_only:
        rows = shown[shown[member]]
        first = {"release": [f"{m} · {name('view', v)}" for m, v in zip(rows["model"], rows["view"])]}
    else:
        rows = shown if pick is None else shown[shown["view"] == pick]
        first = {"model": rows["model"].tolist()}
    out = pd.DataFrame({
        **first,
        "secret recovery [95% CI]": [pct_interval(v, lo, hi) for v, lo, hi in
                                     zip(rows["recovery"], rows["recovery_ci_low"], rows["recovery_ci_high"])],
        "mean cost per case [95% CI]": [cost_interval(v, lo, hi) for v, lo, hi in
                                        zip(rows["mean_cost"], rows["cost_ci_low"], rows["cost_ci_high"])]})
    if not front_only:
        out["on the front"] = rows[member].astype(bool).to_numpy()
    which = ("the points on the front" if front_only else
             "each model's full native release" if pick is None else f"each model's {name('view', pick)} release")
    table(out, f"front_points_{task}_{profile}",
          f"The points above with their 95% intervals (cost in the profile's cost units per case): "
          f"{md_text(which)}. Run {md_text(run_id)}.")


def members_by_task(front: Front, tasks: list[str], profiles: list[str], profile: str, run_id: str) -> None:
    """A heading that says the table counts across every cost profile, and a note that says whether the front is the
    same in every task under ``profile`` and what the cells say; per model (or, with one model, per release view)
    that is ever on it and task, whether it is on it under ``profile`` and under how many of the profiles."""
    members = {t: front.members(t, profile) for t in tasks}
    st.subheader(md_text(members_heading(front, profiles)))
    st.caption(md_text(members_note(front, tasks, profiles, profile)))
    on = front.points[front.points[front.member]]
    ever = front.order(on[front.key].unique())
    rows = []
    for v in ever:
        row = {front.noun: front.label(v)}
        for t in tasks:
            k = int(((on[front.key] == v) & (on["task"] == t)).sum())
            row[name("task", t)] = f"{'yes' if v in members[t] else 'no'} ({k} of {len(profiles)} profiles)"
        rows.append(row)
    never = front.points[front.key].nunique() - len(ever)
    what = "the model's full native release" if front.key == "model" else "the release view"
    tip = (f"Whether {what} is on the front under the {name('profile', profile)}, and under how many of the "
           f"{len(profiles)} cost profiles it is.")
    caption = ("Models whose full native release is on the front" if front.key == "model"
               else f"Release views of {front.points['model'].iloc[0]} that are on the front")
    table(pd.DataFrame(rows), f"front_members_{profile}",
          f"{md_text(caption)} for at least one task and profile"
          + (f"; the other {never} never are" if never > 1 else "; the other one never is" if never else "")
          + f". Run {md_text(run_id)}. (The TUPLE paper's Appendix I.3.)",
          column_config={name("task", t): st.column_config.TextColumn(name("task", t), help=tip) for t in tasks})


page_entry(render)
