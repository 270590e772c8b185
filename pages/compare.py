"""Run comparison: two stored audit runs side by side (before and after a defense, a model
update, new data): what moved, then recovery, downstream cost, defenses, refusal and the
QuasiLeak detectors in both runs, each with its 95% interval, and the change B − A."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import data_access as da
from dashboard.routing import page_entry
from dashboard.widgets import audit_page_start, chart, finding, md_text, table
from qlb.present.compare_text import (MOVED_POINTS, SECTION, DefaultRuns, Setting, capital, cost_change,
                                      default_runs, largest_cell, largest_change, outside_interval, paired,
                                      picker_label, rates, settings, setup_note, short_id)
from qlb.present.figures import plot_text, plot_texts
from qlb.present.names import (QL_METRIC_HELP, QL_METRIC_NAMES, TASK_NAMES, as_shown, cost_interval, name,
                               pct_interval, profile_descriptions, utc_minute)
from qlb.tuple.release_views import VIEWS

INTRO = (
    "Pick two audit runs of this dataset (say, before and after a model update or new exports). "
    "Every table shows run A and run B, each with its own 95% interval, and the change B − A, on "
    "what both runs computed; rows only one run has are left out."
)
QL_METRICS = ("complete_f1", "complete_recall", "strict_precision", "graded_f1", "graded_recall",
              "lenient_precision", "binding_error_rate", "over_flag_rate", "document_flag_recall", "span_f1")
CHANGE = "B − A (points)"
COST_CHANGE = "B − A (cost units)"
# shown as "B − A" (narrow enough for a 1,024 px screen; the unit is in the tooltip and the caption)
CHANGE_CONFIG = {CHANGE: st.column_config.NumberColumn(
                     "B − A", format="%+.1f", help="Run B minus run A, in percentage points, from the unrounded "
                                                   "rates."),
                 COST_CHANGE: st.column_config.NumberColumn(
                     "B − A", format="%+.3f", help="Run B minus run A, in cost units per case, from the unrounded "
                                                   "costs.")}
UNROUNDED = "B − A is from the unrounded rates (it can differ by 0.1 from the shown figures' difference)"
PICKER_HELP = ("The end of the run id (what tells two runs apart) · when the run started (UTC) · the audits it "
               "stored results for · its models and attacker families when restricted. The page opens on the "
               "Overview's run as run B and the closest earlier run as run A.")


# ------------------------------------------------------------------------------------ the runs
def provenance(run: pd.Series, which: str, items: list[Setting]) -> str:
    """One run's provenance as a Markdown line (data text escaped): its id, start, data
    fingerprint, code version, the audits it stored results for and its models."""
    value = {s.label: (s.a if which == "A" else s.b) for s in items}
    return (f"**Run {which}**: {md_text(run['run_id'])}, started {utc_minute(run['started_at'])}; "
            f"data fingerprint {md_text(value['data fingerprint'])}, code {md_text(value['code version'])}; "
            f"audits with results: {md_text(value['audits with results'])}; models: {md_text(value['models'])}.")


def settings_section(items: list[Setting]) -> None:
    """Provenance: what differs between the two runs' settings (plain words, both values), then
    what is the same."""
    differ = [s for s in items if s.differs]
    if differ:
        st.markdown("**What differs between the runs**\n\n" + "\n".join(
            f"- {md_text(capital(s.differs))}." + ("" if s.a in s.differs else
                                                   f" Run A: {md_text(s.a)}; run B: {md_text(s.b)}.")
            for s in differ))
    same = [s for s in items if s.a == s.b and s.a != "—"]
    if same:
        st.markdown("**Same in both runs**: " + "; ".join(f"{md_text(s.label)}: {md_text(s.a)}" for s in same) + ".")


# ------------------------------------------------------------------------ results of both runs
def _refusal_rows(path: str, run: str) -> pd.DataFrame:
    """A run's refusal results over all domains, with the 95% Wilson interval of overall recovery."""
    rows = da.query(path, "refusal_results", (run,))
    rows = rows[rows["domain"] == "all"].copy()
    ci = [da.wilson_interval(round(v * n), n) for v, n in zip(rows["overall_recovery"], rows["n"])]
    rows["ci_low"], rows["ci_high"] = [c[0] for c in ci], [c[1] for c in ci]
    return rows


def run_results(path: str, run: str) -> dict[str, pd.DataFrame]:
    """One run's results as compared: pooled recovery, pooled mean cost under the authored profile,
    defense-aware recovery (the noise defense as its three-seed mean), refusal recovery over all
    domains and the QuasiLeak detector scores over the whole scored split."""
    rec = da.query(path, "recovery_results", (run,))
    util = da.query(path, "utility_results", (run,))
    dfs = da.query(path, "defense_results", (run,))
    ql = da.query(path, "ql_scores", (run,))
    return {"recovery": rec[rec["scope"] == "pooled"],
            "cost": util[(util["scope"] == "pooled") & (util["profile"] == "authored")],
            "defenses": dfs[dfs["seed"].isna()],
            "refusal": _refusal_rows(path, run),
            "quasileak": ql[(ql["slice_kind"] == "all") & ql["metric"].isin(QL_METRICS)]}


KEYS = {"recovery": (["model", "view"], "accuracy"), "cost": (["model", "view", "task"], "mean_cost"),
        "defenses": (["model", "defense"], "accuracy"), "refusal": (["model"], "overall_recovery"),
        "quasileak": (["detector", "split", "metric"], "value")}


def compared(path: str, a: str, b: str) -> tuple[dict[str, pd.DataFrame], list[str]]:
    """({audit: the rows both runs hold}, each audit left out and why: only one run holds it, or
    the two runs share no row of it)."""
    ra, rb = run_results(path, a), run_results(path, b)
    both, left_out = {}, []
    for audit, (keys, value) in KEYS.items():
        if ra[audit].empty and rb[audit].empty:
            continue
        if ra[audit].empty or rb[audit].empty:
            left_out.append(f"{SECTION[audit]} (only run {'B' if ra[audit].empty else 'A'} holds it)")
            continue
        pairs = paired(ra[audit], rb[audit], keys, value)
        if pairs.empty:
            left_out.append(f"{SECTION[audit]} (no {keys[0]} in common)")
        else:
            both[audit] = pairs
    return both, left_out


# ---------------------------------------------------------------------------------- findings
def findings(both: dict[str, pd.DataFrame], figs: pd.DataFrame) -> None:
    """The page's opening sentences: the largest change of the rates ``figs``, how many left run
    A's interval, and the largest change of downstream cost."""
    if not figs.empty:
        lead, text = largest_change(figs)
        finding(text, lead)
        finding(outside_interval(figs), "Beyond the intervals.")
    if "cost" in both:
        finding(cost_change(both["cost"]), "Downstream cost.")


def change_figure(figs: pd.DataFrame) -> go.Figure:
    """Every rate both runs hold as one dot at its change B − A (points), by audit: dots on the
    zero line did not move."""
    fig = go.Figure()
    for audit, d in figs.groupby("audit", sort=False):
        fig.add_box(y=as_shown(100 * d["change"], 1), name=plot_text(audit), boxpoints="all", jitter=0.5, pointpos=0,
                    fillcolor="rgba(0,0,0,0)", line_color="rgba(0,0,0,0)", marker=dict(color="#0072B2", size=7),
                    hoveron="points", text=plot_texts(d["subject"]), hovertemplate="%{text}<br>%{y:+.1f} points"
                                                                                 "<extra></extra>")
    fig.add_hrect(y0=-100 * MOVED_POINTS, y1=100 * MOVED_POINTS, fillcolor="#DDDDDD", opacity=0.5, line_width=0,
                  layer="below")
    fig.add_hline(y=0, line_color="#555555")
    fig.update_layout(height=340, margin=dict(l=10, r=10, t=20, b=10), showlegend=False,
                      yaxis=dict(title="change, run B − run A (points)", tickformat="+.1f", zeroline=False),
                      xaxis=dict(title="audit"))
    return fig


def chart_data(figs: pd.DataFrame) -> pd.DataFrame:
    """The rates behind the change chart, in percent and points, with plain column names."""
    out = figs[["audit", "subject"]].rename(columns={"subject": "rate"})
    for col, label in (("a", "run A (%)"), ("a_lo", "run A 95% low (%)"), ("a_hi", "run A 95% high (%)"),
                       ("b", "run B (%)"), ("b_lo", "run B 95% low (%)"), ("b_hi", "run B 95% high (%)"),
                       ("change", CHANGE)):
        out[label] = 100 * figs[col].astype(float)
    return out


# ------------------------------------------------------------------------------------- tables
def run_columns(what: str) -> dict[str, object]:
    """Column configuration of a comparison table: what the run columns hold, and the change."""
    return {**CHANGE_CONFIG, **{f"run {r} [95% CI]": st.column_config.TextColumn(
        f"run {r} [95% CI]", help=f"{capital(what)} in run {r}, with its 95% interval.") for r in "AB"}}


def shown(pairs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The table of a rate: ``keys``, each run's value with its 95% interval, B − A in points."""
    out = pairs[keys].copy()
    for s, run in (("a", "A"), ("b", "B")):
        out[f"run {run} [95% CI]"] = [pct_interval(v, lo, hi) for v, lo, hi
                                      in zip(pairs[s], pairs[f"{s}_lo"], pairs[f"{s}_hi"])]
    out[CHANGE] = as_shown(100 * pairs["change"], 1)
    return out


def view_picker(pairs: pd.DataFrame, key: str, helptext: str, opened_on: str | None = None) -> str:
    """A picker of the release views both runs hold, open on ``opened_on`` (the view of the change
    the findings cite) when given, else on full native when there."""
    views = [v for v in VIEWS if v in set(pairs["view"])]
    first = opened_on if opened_on in views else "full_native" if "full_native" in views else views[0]
    return st.selectbox("Release view", views, index=views.index(first), format_func=lambda v: name("view", v),
                        key=key, help=helptext)


def recovery_section(pairs: pd.DataFrame) -> None:
    """Pooled secret recovery of each model under one chosen release view, in both runs (open on the
    view of the largest change)."""
    st.subheader("Secret recovery")
    top = largest_cell(pairs, ["view"]) or {}
    view = view_picker(pairs, "compare_view", "Which fields of each response are released to the attacker. Opens "
                       "on the view of the largest change.", top.get("view"))
    rows = pairs[pairs["view"] == view]
    table(shown(rows, ["model"]), "compare_recovery",
          f"Pooled test secret recovery under the {name('view', view)} view (50% is guessing); B − A in "
          f"percentage points, largest change first. {UNROUNDED}.", column_config=run_columns("secret recovery"))


def cost_section(pairs: pd.DataFrame, described: dict[str, str]) -> None:
    """Pooled mean cost per case of the selected recipient policy, authored costs, one release view
    and one task, open on the view and task of the largest change (a table of four columns: whole
    at 1,024 px whatever the font)."""
    st.subheader("Downstream cost (authored costs)")
    top = largest_cell(pairs, ["view", "task"]) or {}
    left, right = st.columns(2)
    with left:
        view = view_picker(pairs, "compare_cost_view", "The fields released to the recipient's policy. Opens on "
                           "the view of the largest change.", top.get("view"))
    tasks = [t for t in TASK_NAMES if t in set(pairs["task"])]
    with right:
        task = st.selectbox("Task", tasks, index=tasks.index(top["task"]) if top.get("task") in tasks else 0,
                            format_func=lambda t: name("task", t), key="compare_cost_task",
                            help="The downstream task the recipient runs; the Glossary explains each. Opens on the "
                                 "task of the largest change.")
    rows = pairs[(pairs["view"] == view) & (pairs["task"] == task)]
    out = rows[["model"]].copy()
    for s, run in (("a", "A"), ("b", "B")):
        out[f"run {run} [95% CI]"] = [cost_interval(v, lo, hi) for v, lo, hi
                                      in zip(rows[s], rows[f"{s}_lo"], rows[f"{s}_hi"])]
    out[COST_CHANGE] = as_shown(rows["change"], 3)
    table(out, "compare_utility",
          f"Pooled test mean cost per case of the selected recipient policy in {name('task', task)} under the "
          f"{name('view', view)} view; B − A in cost units (from the unrounded costs), largest change first. "
          f"Authored costs: {described.get('authored', '')}",
          column_config=run_columns("mean cost per case (cost units)"))


def defenses_section(pairs: pd.DataFrame) -> None:
    """Defense-aware secret recovery of one defended model under each defense, in both runs: a
    model picker (open on the model of the largest change) when both runs defended more than one,
    so that the table keeps four columns and stays whole at 1,024 px."""
    st.subheader("Defenses")
    models = list(dict.fromkeys(pairs["model"]))
    top = largest_cell(pairs, ["model"]) or {}
    if len(models) > 1:
        model = st.selectbox("Model", models, index=models.index(top["model"]) if top.get("model") in models else 0,
                             key="compare_defense_model",
                             help="The defended model. Opens on the model of the largest change.")
    else:
        model = models[0]
    rows = pairs[pairs["model"] == model]
    table(shown(rows, ["defense"]), "compare_defenses",
          f"Secret recovery of {md_text(model)} by a defense-aware attacker under each defense (noise: the "
          f"mean of three seeds); B − A in percentage points, largest change first. {UNROUNDED}.",
          column_config=run_columns("secret recovery"))


def quasileak_section(pairs: pd.DataFrame) -> None:
    """One QuasiLeak metric of every detector in both runs."""
    st.subheader("QuasiLeak detectors")
    metrics = [m for m in QL_METRICS if m in set(pairs["metric"])]
    metric = st.selectbox("Metric", metrics, format_func=lambda m: QL_METRIC_NAMES.get(m, m),
                          key="compare_ql_metric",
                          help="Binding error and over-flag: lower is better; every other metric: higher is better. "
                               "The QuasiLeak page explains each.")
    rows = pairs[pairs["metric"] == metric]
    splits = ", ".join(md_text(s) for s in sorted(set(rows["split"])))
    table(shown(rows, ["detector"]), "compare_quasileak",
          f"{capital(QL_METRIC_NAMES[metric])} of each detector on the {splits} split; B − A in points (from the "
          f"unrounded scores), largest change first. {QL_METRIC_HELP[metric]} Intervals: 95% document-clustered "
          "bootstrap (none for document flag recall and span F1).", column_config=run_columns(QL_METRIC_NAMES[metric]))


def tables(both: dict[str, pd.DataFrame], described: dict[str, str]) -> None:
    """The details: one table per audit both runs hold (``described``: what the task's cost profiles change)."""
    if "recovery" in both:
        recovery_section(both["recovery"])
    if "cost" in both:
        cost_section(both["cost"], described)
    if "defenses" in both:
        defenses_section(both["defenses"])
    if "refusal" in both:
        st.subheader("Refusal audit")
        table(shown(both["refusal"], ["model"]), "compare_refusal",
              "Share of all refusal probes that give the mechanism away (named directly, or withheld with the "
              "residual scores ranking it first), with its 95% Wilson interval; B − A in percentage points, "
              f"largest change first. {UNROUNDED}.",
              column_config=run_columns("recovered overall"))
    if "quasileak" in both:
        quasileak_section(both["quasileak"])


# --------------------------------------------------------------------------------------- page
def pick_runs(runs: pd.DataFrame, context: da.RunContext) -> tuple[pd.Series, pd.Series, DefaultRuns] | None:
    """The two run pickers (the end of the run id first, then ``run_label``; run ids as values),
    open on ``default_runs``: run B on the run a ``?run=`` link names or the Overview's, run A on
    the closest earlier run; a caption says which and why (or, once the reader picks others, which
    run the Overview shows). None when the same run is picked twice."""
    by_id = runs.set_index("run_id", drop=False)
    ids = [str(r) for r in runs["run_id"]]
    labels = {r.run_id: picker_label(r.run_id, r.started_at, r.parameters, context.ran.get(str(r.run_id)))
              for r in runs.itertuples()}
    linked = st.query_params.get("run")
    chosen = default_runs(runs, context.ran, context.headline, linked)
    a = st.selectbox("Run A (before)", ids, index=ids.index(chosen.a), key="run_a", bind="query-params",
                     format_func=labels.__getitem__, help=PICKER_HELP)
    b = st.selectbox("Run B (after)", ids, index=ids.index(chosen.b), key="run_b", bind="query-params",
                     format_func=labels.__getitem__, help=PICKER_HELP)
    if (a, b) == (chosen.a, chosen.b):
        st.caption(md_text(chosen.why))
    elif context.headline is not None and context.headline not in (a, b):
        st.caption(md_text(f"The Overview and the report show {short_id(context.headline)}; pick it as run B to "
                           "read the same numbers."))
    if a == b:
        st.warning("Pick two different runs.")
        return None
    return by_id.loc[a], by_id.loc[b], chosen


def render() -> None:
    """The Compare runs page: which runs and why, how their settings differ, what moved between
    them, every rate's change on one chart, then recovery, downstream cost, defenses, refusal and
    QuasiLeak in both, and the runs' provenance and settings."""
    start = audit_page_start("Compare runs", INTRO)
    if start is None:
        return
    path, dataset = start
    runs = da.all_runs(path, dataset)
    if len(runs) < 2:
        st.info(f"This dataset has {'one audit run' if len(runs) == 1 else 'no audit run yet'}: nothing to compare. "
                "For a second run, press **Recompute now** on the Refusal audit or QuasiLeak page, or run "
                "`qlb audit --force` after a change (new exports, a model update).")
        return
    context = da.run_context(path, dataset)
    picked = pick_runs(runs, context)
    if picked is None:
        return
    ra, rb, _ = picked
    items = settings(ra, rb, context.ran.get(str(ra["run_id"])),
                     context.ran.get(str(rb["run_id"])))
    lead, note = setup_note(items)
    finding(note, lead)                                  # before the findings: what a change may come from
    both, left_out = compared(path, str(ra["run_id"]), str(rb["run_id"]))
    if not both:
        st.info("These two runs have no audit in common to compare.")
        return
    figs = rates(both)
    findings(both, figs)
    if not figs.empty:
        chart(change_figure(figs), chart_data(figs), "compare_changes",
              "Every rate both runs hold (secret recovery per model and view, under each defense, refusal-probe "
              "recovery, QuasiLeak complete-group F1) as one dot at its change from run A to run B; dots on the zero "
              "line did not move, dots in the grey band moved by less than 1 point. Hover a dot for what it is.")
    if left_out:
        st.caption("Not compared: " + md_text("; ".join(left_out)) + ".")
    tables(both, profile_descriptions(da.ontology(path, dataset)))
    st.subheader("Provenance")
    st.markdown(provenance(ra, "A", items))
    st.markdown(provenance(rb, "B", items))
    settings_section(items)


page_entry(render)
