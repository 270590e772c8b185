"""Run comparison: two stored audit runs side by side (before and after a defense, a model
update, new data): what moved, then recovery, downstream cost, defenses, refusal and the
QuasiLeak detectors in both runs, each with its 95% interval, and the change B − A."""
from __future__ import annotations

import json

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import data_access as da
from dashboard.routing import page_entry
from dashboard.widgets import RUN_HELP, audit_page_start, chart, finding, md_text, table
from qlb.present.figures import plot_text, plot_texts
from qlb.present.names import (QL_METRIC_HELP, QL_METRIC_NAMES, TASK_NAMES, as_shown, audit_names, cost_interval,
                               name, pct_interval, profile_descriptions, run_label, utc_minute)
from qlb.tuple.release_views import VIEWS

INTRO = (
    "Pick two audit runs of this dataset (say, before and after a model update or new exports). "
    "Every table shows run A and run B, each with its own 95% interval, and the change B − A, on "
    "what both runs computed; rows only one run has are left out."
)
QL_METRICS = ("complete_f1", "complete_recall", "strict_precision", "graded_f1", "graded_recall",
              "lenient_precision", "binding_error_rate", "over_flag_rate", "document_flag_recall", "span_f1")
MOVED_POINTS = 0.01     # a rate that changed by less than one point has not moved
MOVED_COST = 0.01       # nor a mean cost that changed by less than 0.01 cost units
CHANGE = "B − A (points)"
COST_CHANGE = "B − A (cost units)"
# shown as "B − A" (narrow enough for a 1,024 px screen; the unit is in the tooltip and the caption)
CHANGE_CONFIG = {CHANGE: st.column_config.NumberColumn(
                     "B − A", format="%+.1f", help="Run B minus run A, in percentage points."),
                 COST_CHANGE: st.column_config.NumberColumn(
                     "B − A", format="%+.3f", help="Run B minus run A, in cost units per case.")}


# ------------------------------------------------------------------------------------ the runs
def provenance(run: pd.Series, which: str) -> str:
    """One run's provenance as a Markdown line (data text escaped): its id, start, data
    fingerprint, code version, audits and models."""
    params = json.loads(run["parameters"])
    models = ", ".join(params.get("models") or ["all"])
    return (f"**Run {which}**: {md_text(run['run_id'])}, started {utc_minute(run['started_at'])}; "
            f"data fingerprint {md_text(str(run['dataset_fingerprint'])[:12])}, code {md_text(run['code_version'])}; "
            f"audits: {md_text(audit_names(params))}; models: {md_text(models)}.")


def setup_note(ra: pd.Series, rb: pd.Series) -> str:
    """One sentence on what differs between the runs' inputs: the data, the code, the models."""
    data = ("read the same data (same dataset fingerprint)" if ra["dataset_fingerprint"] == rb["dataset_fingerprint"]
            else "read different data (the dataset fingerprints differ)")
    code = ("the same code version" if ra["code_version"] == rb["code_version"]
            else f"code {md_text(ra['code_version'])} in run A and {md_text(rb['code_version'])} in run B")
    return f"The two runs {data}, with {code}."


# ------------------------------------------------------------------------ results of both runs
def paired(a: pd.DataFrame, b: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """The rows both runs hold: ``keys``, each run's ``value`` with its interval (``a``, ``a_lo``,
    ``a_hi``, ``b``, ``b_lo``, ``b_hi``) and ``change`` = b − a; the largest changes first."""
    def side(df: pd.DataFrame, s: str) -> pd.DataFrame:
        return df[keys + [value, "ci_low", "ci_high"]].rename(columns={value: s, "ci_low": f"{s}_lo",
                                                                         "ci_high": f"{s}_hi"})
    m = side(a, "a").merge(side(b, "b"), on=keys)
    m["change"] = m["b"] - m["a"]
    order = (-m["change"].abs().fillna(0)).sort_values(kind="stable").index     # ties keep the keys' order
    return m.loc[order].reset_index(drop=True)


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
SECTION = {"recovery": "secret recovery", "cost": "downstream cost", "defenses": "recovery under defenses",
           "refusal": "refusal probes", "quasileak": "QuasiLeak"}


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


# how a finding sentence names one rate of each audit the findings weigh
SUBJECTS = {
    "recovery": lambda r: f"{name('view', r['view'])} secret recovery of {r['model']}",
    "defenses": lambda r: (f"secret recovery of {r['model']} with no defense (the defense audit's native control)"
                           if r["defense"] == "native" else
                           f"secret recovery of {r['model']} under {name('defense', r['defense'])}"),
    "refusal": lambda r: f"refusal-probe recovery of {r['model']}",
    "quasileak": lambda r: f"{QL_METRIC_NAMES['complete_f1']} of detector {r['detector']}",
}


def rates(both: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Every rate both runs hold that the findings weigh, one row each: its audit, how a sentence
    names it, both runs' values with intervals and the change (QuasiLeak: complete-group F1 only)."""
    cols = ["audit", "subject", "a", "a_lo", "a_hi", "b", "b_lo", "b_hi", "change"]
    parts = []
    for audit, subject in SUBJECTS.items():
        p = both.get(audit)
        if p is None:
            continue
        if audit == "quasileak":
            p = p[p["metric"] == "complete_f1"]
        parts.append(p.assign(audit=SECTION[audit], subject=[subject(r) for _, r in p.iterrows()])[cols])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)


# ---------------------------------------------------------------------------------- findings
def _went(row: pd.Series) -> str:
    """``<subject> went from <A [CI]> in run A to <B [CI]> in run B (<change> points)``."""
    return (f"{row['subject']} went from {pct_interval(row['a'], row['a_lo'], row['a_hi'])} in run A to "
            f"{pct_interval(row['b'], row['b_lo'], row['b_hi'])} in run B ({100 * row['change']:+z.1f} points)")


def _capital(text: str) -> str:
    """``text`` with its first letter upper case (the rest as it is: names keep their case)."""
    return text[:1].upper() + text[1:]


def largest_change(figs: pd.DataFrame) -> tuple[str, str]:
    """(lead, sentence): the largest change of a rate between the runs, or that none moved."""
    figs = figs.dropna(subset=["change"])
    n = len(figs)
    if n == 0:
        return "No change to report.", "No rate has a value in both runs."
    if (figs["change"].abs() < 5e-7).all():
        return "No change.", f"All {n} rates both runs hold are the same in the two runs (to 0.0001 points)."
    top = figs.loc[figs["change"].abs().idxmax()]
    if abs(top["change"]) < MOVED_POINTS:
        return ("No rate moved by more than 1 point.",
                f"The largest change of the {n} rates both runs hold: {_went(top)}.")
    moved = int((figs["change"].abs() >= MOVED_POINTS).sum())
    return ("Largest change.", f"{_capital(_went(top))}. {moved} of the {n} rates both runs hold moved by 1 point "
                               "or more.")


def outside_interval(figs: pd.DataFrame) -> str:
    """How many rates lie, in run B, outside their 95% interval in run A, by audit."""
    figs = figs.dropna(subset=["a_lo", "a_hi", "b"])
    n = len(figs)
    out = figs[(figs["b"] < figs["a_lo"] - 1e-9) | (figs["b"] > figs["a_hi"] + 1e-9)]
    if out.empty:
        return f"In run B, none of the {n} rates lies outside its 95% interval in run A."
    by = ", ".join(f"{k} {v}" for k, v in out.groupby("audit", sort=False).size().items())
    if len(out) == 1:
        return f"In run B, 1 of the {n} rates lies outside its 95% interval in run A ({by})."
    return f"In run B, {len(out)} of the {n} rates lie outside their 95% interval in run A ({by})."


def cost_change(cost: pd.DataFrame) -> str:
    """The largest change of a mean cost per case (authored costs), or that none moved."""
    cost = cost.dropna(subset=["change"])
    n = len(cost)
    if n == 0:
        return "No mean cost has a value in both runs."
    if (cost["change"].abs() < 5e-7).all():
        return f"All {n} mean costs per case (authored costs) are the same in the two runs."
    top = cost.loc[cost["change"].abs().idxmax()]
    what = (f"mean cost per case of {top['model']} ({name('view', top['view'])}, {name('task', top['task'])}, "
            "authored costs)")
    went = (f"{what} went from {cost_interval(top['a'], top['a_lo'], top['a_hi'])} in run A to "
            f"{cost_interval(top['b'], top['b_lo'], top['b_hi'])} in run B ({top['change']:+z.3f} cost units)")
    if abs(top["change"]) < MOVED_COST:
        return f"No mean cost moved by 0.01 cost units or more; the largest change of the {n}: {went}."
    return f"The {went}, the largest change of the {n} mean costs both runs hold."


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
        f"run {r} [95% CI]", help=f"{_capital(what)} in run {r}, with its 95% interval.") for r in "AB"}}


def shown(pairs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """The table of a rate: ``keys``, each run's value with its 95% interval, B − A in points."""
    out = pairs[keys].copy()
    for s, run in (("a", "A"), ("b", "B")):
        out[f"run {run} [95% CI]"] = [pct_interval(v, lo, hi) for v, lo, hi
                                      in zip(pairs[s], pairs[f"{s}_lo"], pairs[f"{s}_hi"])]
    out[CHANGE] = as_shown(100 * pairs["change"], 1)
    return out


def view_picker(pairs: pd.DataFrame, key: str, helptext: str) -> str:
    """A picker of the release views both runs hold (full native first when there)."""
    views = [v for v in VIEWS if v in set(pairs["view"])]
    return st.selectbox("Release view", views, index=views.index("full_native") if "full_native" in views else 0,
                        format_func=lambda v: name("view", v), key=key, help=helptext)


def recovery_section(pairs: pd.DataFrame) -> None:
    """Pooled secret recovery of each model under one chosen release view, in both runs."""
    st.subheader("Secret recovery")
    view = view_picker(pairs, "compare_view", "Which fields of each response are released to the attacker.")
    rows = pairs[pairs["view"] == view]
    table(shown(rows, ["model"]), "compare_recovery",
          f"Pooled test secret recovery under the {name('view', view)} view (50% is guessing); B − A in "
          "percentage points, largest change first.", column_config=run_columns("secret recovery"))


def cost_section(pairs: pd.DataFrame, described: dict[str, str]) -> None:
    """Pooled mean cost per case of the selected recipient policy, authored costs, one release view
    and one task (a table of four columns: whole at 1,024 px whatever the font)."""
    st.subheader("Downstream cost (authored costs)")
    left, right = st.columns(2)
    with left:
        view = view_picker(pairs, "compare_cost_view", "The fields released to the recipient's policy.")
    tasks = [t for t in TASK_NAMES if t in set(pairs["task"])]
    with right:
        task = st.selectbox("Task", tasks, format_func=lambda t: name("task", t), key="compare_cost_task",
                            help="The downstream task the recipient runs; the Glossary explains each.")
    rows = pairs[(pairs["view"] == view) & (pairs["task"] == task)]
    out = rows[["model"]].copy()
    for s, run in (("a", "A"), ("b", "B")):
        out[f"run {run} [95% CI]"] = [cost_interval(v, lo, hi) for v, lo, hi
                                      in zip(rows[s], rows[f"{s}_lo"], rows[f"{s}_hi"])]
    out[COST_CHANGE] = as_shown(rows["change"], 3)
    table(out, "compare_utility",
          f"Pooled test mean cost per case of the selected recipient policy in {name('task', task)} under the "
          f"{name('view', view)} view; B − A in cost units, largest change first. Authored costs: "
          f"{described.get('authored', '')}", column_config=run_columns("mean cost per case (cost units)"))


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
          f"{_capital(QL_METRIC_NAMES[metric])} of each detector on the {splits} split; B − A in points, largest "
          f"change first. {QL_METRIC_HELP[metric]} Intervals: 95% document-clustered bootstrap (none for "
          "document flag recall and span F1).", column_config=run_columns(QL_METRIC_NAMES[metric]))


def tables(both: dict[str, pd.DataFrame], described: dict[str, str]) -> None:
    """The details: one table per audit both runs hold (``described``: what the task's cost profiles change)."""
    if "recovery" in both:
        recovery_section(both["recovery"])
    if "cost" in both:
        cost_section(both["cost"], described)
    if "defenses" in both:
        st.subheader("Defenses")
        table(shown(both["defenses"], ["model", "defense"]), "compare_defenses",
              "Secret recovery by a defense-aware attacker under each output defense (noise: the mean of three "
              "seeds); B − A in percentage points, largest change first.",
              column_config=run_columns("secret recovery"))
    if "refusal" in both:
        st.subheader("Refusal audit")
        table(shown(both["refusal"], ["model"]), "compare_refusal",
              "Share of all refusal probes that give the mechanism away (named directly, or withheld with the "
              "residual scores ranking it first), with its 95% Wilson interval; B − A in percentage points, "
              "largest change first.",
              column_config=run_columns("recovered overall"))
    if "quasileak" in both:
        quasileak_section(both["quasileak"])


# --------------------------------------------------------------------------------------- page
def pick_runs(runs: pd.DataFrame) -> tuple[pd.Series, pd.Series] | None:
    """The two run pickers (readable labels, run ids as values); None when the same run is picked twice."""
    by_id = runs.set_index("run_id", drop=False)
    ids = runs["run_id"].tolist()
    def label(run_id: str) -> str:
        run = by_id.loc[run_id]
        return run_label(run_id, run["started_at"], run["parameters"])

    a = st.selectbox("Run A (before)", ids, index=1, key="run_a", bind="query-params", format_func=label,
                     help=RUN_HELP)
    b = st.selectbox("Run B (after)", ids, index=0, key="run_b", bind="query-params", format_func=label,
                     help=RUN_HELP)
    if a == b:
        st.warning("Pick two different runs.")
        return None
    return by_id.loc[a], by_id.loc[b]


def render() -> None:
    """The Compare runs page: what moved between two chosen runs, every rate's change on one chart,
    then recovery, downstream cost, defenses, refusal and QuasiLeak in both, and the runs' provenance."""
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
    picked = pick_runs(runs)
    if picked is None:
        return
    ra, rb = picked
    st.caption(setup_note(ra, rb))
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
    st.markdown(provenance(ra, "A"))
    st.markdown(provenance(rb, "B"))


page_entry(render)
