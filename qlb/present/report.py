"""``qlb report``: one self-contained HTML file for stakeholders (works offline: plotly.js is
inlined once; no external scripts, fonts or images).

Everything in it is computed from one stored audit run: headline findings as plain sentences,
the main figures (interactive), the key tables, and the provenance (dataset fingerprint,
simulated or not, code version, parameters, seeds, ``test_used_for_selection``). Every piece of
text that comes from data is escaped before it becomes HTML, and a table's text cells are made
spreadsheet-safe (``spreadsheet_safe``), as in the dashboard's CSV downloads, since a table
copied from the report into a spreadsheet is read cell by cell.
"""
from __future__ import annotations

import html
import json
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from qlb.present import figures
from qlb.present.answers import answers_finding, answers_lead, answers_table, status_sentence
from qlb.present.defense_notes import control_sentence, recovery_label, relabel_native
from qlb.present.fronts import front_of, who_sentence
from qlb.present.learned import learned_points, learned_sentence, table15
from qlb.present.coverage import COLUMN as COVERAGE_COLUMN
from qlb.present.coverage import HELP as COVERAGE_HELP
from qlb.present.coverage import coverage_column, coverage_on, coverage_sentence, split_words, unanswered
from qlb.present.left_out import findings_run, left_out_sentence
from qlb.present.names import (AUDIT_NAMES, QL_METRIC_NAMES, TASK_NAMES, VIEW_NAMES, chance_pct, cost_interval, count_of,
                               exactly_half,
                               family_words, how_many, listing, pct, pct_interval, points_interval,
                               profile_descriptions, readable, text_range, utc_minute)
from qlb.present.paper import choice_vs_native, comparison_lead, comparison_sentence, paper_checks, tally
from qlb.present.palette import model_colours
from qlb.present.robustness import (FAMILY_TRACKS, MAIN_TRACKS, both_correct_sentence, both_correct_table,
                                    tracks_sentence, tracks_table)
from qlb.present.rundata import RunData
from qlb.present.scope import options, options_note, parameters, ran, scope_sentence, stale_matters, stale_warning
from qlb.records.ontology import Ontology
from qlb.tuple.refusal import mechanism_counts, rate_intervals
from qlb.tuple.release_views import VIEWS
from qlb.tuple.tracks import RobustnessChecks
from qlb.tuple.workflows import TASKS, policy_count

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;max-width:1100px;margin:2rem auto;
padding:0 1rem;color:#1f2328;line-height:1.5}
h1{margin-bottom:.2rem}h2{margin-top:2.2rem;border-bottom:1px solid #d0d7de;padding-bottom:.3rem}
.sim{background:#fff4e5;border:1px solid #f0b35a;padding:.6rem 1rem;border-radius:6px;font-weight:600}
.stale{background:#ffebe9;border:1px solid #cf222e;padding:.6rem 1rem;border-radius:6px;font-weight:600}
.newer{background:#fff8c5;border:1px solid #9a6700;padding:.6rem 1rem;border-radius:6px}
.findings li{margin:.35rem 0}.caption{color:#57606a;font-size:.9rem;margin-top:.2rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}th,td{border:1px solid #d0d7de;padding:.25rem .5rem;
text-align:left}th{background:#f6f8fa}code,pre{background:#f6f8fa;padding:.1rem .3rem;border-radius:4px}
pre{padding:.6rem;overflow-x:auto;font-size:.8rem}.wide{overflow-x:auto;max-width:100%}td.fig{white-space:nowrap}
@page{size:A4;margin:12mm}
@media print{html{font-size:10pt}body{max-width:none;margin:0;padding:0}.screen{display:none}
.modebar-container{display:none!important}.chart,tr,.sim,.stale,.newer{break-inside:avoid}
h2,h3{break-after:avoid}.caption{break-before:avoid}h2{margin-top:1.4rem}
.wide{overflow:visible}table{width:100%;font-size:7.5pt}td,th{overflow-wrap:break-word}thead{display:table-header-group}
.sim,.stale,.newer,th{-webkit-print-color-adjust:exact;print-color-adjust:exact}details{display:none}}
"""


# OWASP "CSV injection": a spreadsheet reads a cell starting with one of these as a formula
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# a cell that is nothing but a number (sign, digits, decimals, exponent, percent) is read back as that
# number, never as a formula, so it keeps no prefix
_PLAIN_NUMBER = re.compile(r"[+-]?(\d[\d,]*(\.\d*)?|\.\d+)([eE][+-]?\d+)?%?")


def spreadsheet_cell(value: object) -> object:
    """``value`` as a spreadsheet shows it: a string that starts with ``= + - @``, a tab or a carriage
    return (and is not a plain number) gets a leading ``'``, so it is text, not a formula. Anything
    that is not a string (numbers, negative ones included) is returned unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def spreadsheet_safe(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` whose column names and text cells are passed through ``spreadsheet_cell``;
    numeric, boolean and date columns are left as they are (a negative number stays a number)."""
    out = df.copy()
    if not isinstance(out.columns, pd.MultiIndex):
        out.columns = [spreadsheet_cell(c) for c in out.columns]
    for i in range(out.shape[1]):
        col = out.iloc[:, i]
        if col.dtype == object or isinstance(col.dtype, (pd.StringDtype, pd.CategoricalDtype)):
            dtype = object if isinstance(col.dtype, pd.CategoricalDtype) else col.dtype
            out.isetitem(i, pd.Series([spreadsheet_cell(v) for v in col], index=col.index, dtype=dtype))
    return out


LEAK_FACTOR = 2.0       # recovery above this multiple of a uniform guess counts as a leak in the findings


def refusal_sentence(recovery: pd.Series, uniform: float, sizes: list[int] | None = None) -> str:
    """The refusal finding as the numbers have it: a leak when every model's overall recovery is
    above ``LEAK_FACTOR`` times a uniform guess among a domain's mechanisms, no leak when none is.
    ``sizes``: the domains' numbers of mechanisms, when they differ the guess is said to be their mean. Indexed by
    model name, the models that leak are named (up to four)."""
    span = text_range(pct(recovery.min()), pct(recovery.max()))
    among = f"its domain's {sizes[0]} mechanisms" if sizes and len(sizes) == 1 else "the domain's mechanisms"
    guess = (f"naming one of {among} at random is right {chance_pct(uniform)} of the time" if not sizes or len(sizes) == 1
             else f"naming one of a domain's {text_range(str(sizes[0]), str(sizes[-1]))} mechanisms at random is "
                  f"right {chance_pct(uniform)} of the time on average over the domains")
    how = (f"the exact protected mechanism is named by refusal responses in {span} of cases (directly, or "
           f"by withheld responses whose residual scores still single it out; {guess})")
    leaking = recovery > LEAK_FACTOR * uniform
    who = "for the one model audited" if len(recovery) == 1 else f"across {count_of(len(recovery))}"
    if leaking.all():
        return f"Refusal does not stop the leak: {who}, {how}."
    if not leaking.any():
        return f"Refusal stops the leak: {who}, {how}."
    twice = "twice" if LEAK_FACTOR == 2 else f"{LEAK_FACTOR:g} times"
    named = [str(m) for m in recovery.index[leaking]] if all(isinstance(m, str) for m in recovery.index) else []
    who = (f"{listing(named)} ({text_range(pct(recovery[leaking].min()), pct(recovery[leaking].max()))})"
           if named and len(named) <= 4 else count_of(int(leaking.sum())))
    return (f"Refusal stops the leak for {how_many(int((~leaking).sum()), len(recovery))} only: {how}; "
            f"{who} {'stays' if leaking.sum() == 1 else 'stay'} above {twice} a uniform guess.")


def recovery_change(points: pd.Series, say_lowers: bool = True,
                    interval: tuple[float, float] | None = None) -> str:
    """What a defense does to recovery, from its differences against native in points: "leaves
    recovery unchanged (within 0.05 points)" when every one reads +0.0, "lowers recovery by a to b
    points" when every one is below zero (and ``say_lowers``), else "changes recovery by a to b points".
    One difference with its paired 95% ``interval`` (points) says the interval after it."""
    lo, hi = f"{points.min():+z.1f}", f"{points.max():+z.1f}"
    one = len(points) == 1 and interval is not None and not any(pd.isna(v) for v in interval)
    span = f" (95% interval {interval[0]:+z.1f} to {interval[1]:+z.1f})" if one else ""
    if lo == hi == "+0.0":
        return "leaves recovery unchanged (within 0.05 points" + (f"; {span[2:-1]})" if span else ")")
    lowers = say_lowers and hi.startswith("-") and (not one or interval[1] < 0)   # one model: its interval too
    if one and lowers:
        span = f" (95% interval {-interval[1]:z.1f} to {-interval[0]:z.1f})"
    if lowers:
        return f"lowers recovery by {text_range(f'{-points.max():.1f}', f'{-points.min():.1f}')} points{span}"
    return f"changes recovery by {text_range(lo, hi)} points{span}"


def ends(frame: pd.DataFrame, value: str, shown, low: str = "ci_low", high: str = "ci_high") -> str:
    """The lowest and the highest ``value`` of ``frame``'s rows, each as ``shown(value, low, high)`` (its 95%
    interval) with its model: ``50.7% [47.9, 53.5] (sim-a) to 55.2% [52.3, 58.1] (sim-b)``; one row, or ends that
    read the same, give one figure. Empty for no rows."""
    if frame.empty:
        return ""
    f = frame.dropna(subset=[value])
    if f.empty:
        return ""
    f = f.sort_values([value, "model"] if "model" in f else [value])
    cell = [shown(r[value], r.get(low), r.get(high)) for r in (f.iloc[0], f.iloc[-1])]
    if len(f) == 1 or cell[0] == cell[1]:
        return cell[0]
    who = [f" ({r['model']})" if "model" in r else "" for r in (f.iloc[0], f.iloc[-1])]
    return f"{cell[0]}{who[0]} to {cell[1]}{who[1]}"


def _one_interval(frame: pd.DataFrame, low: str, high: str, scale: float = 100.0) -> tuple[float, float] | None:
    """The (low, high) of a one-row frame, scaled (to points); None for several rows or without the columns."""
    if len(frame) != 1 or low not in frame or high not in frame:
        return None
    return scale * float(frame[low].iloc[0]), scale * float(frame[high].iloc[0])


def headline(d: RunData) -> list[tuple[str, str]]:
    """Headline findings as (topic, sentence), computed from the run; the topic names the page
    behind the finding (answers, or collection for collected answers; refusal, recovery, utility, fronts, defenses,
    quasileak)."""
    out: list[tuple[str, str]] = []
    answered = answers_finding(d.answers, d.data_changed and stale_matters(d.changes, d.audited))
    if answered is not None:          # collected answers: the Collection page says more about them than the Data page
        collected = "transport" in d.answers and d.answers["transport"].notna().any()
        left_out = left_out_sentence(d.left_out)
        answers_item = ("collection" if collected else "answers", f"{answered} {left_out}" if left_out else answered)
        lead = answers_lead(d.answers)
        if lead:                      # missing answers or fields change what every finding below means
            out.append(answers_item)
    ref = d.refusal[d.refusal["domain"] == "all"] if not d.refusal.empty else d.refusal
    if not ref.empty:
        rec = ref.set_index("model")["overall_recovery"].dropna()
        sizes = mechanism_counts(d.ontology) if d.ontology else []
        out.append(("refusal", refusal_sentence(rec, d.uniform_reference, sizes)))
    pooled = d.recovery[d.recovery["scope"] == "pooled"] if not d.recovery.empty else d.recovery
    if not pooled.empty:
        parts = []
        for view, words in (("choice", "only the coarse choice"), ("full_native", "the full native output")):
            rows = pooled[pooled["view"] == view]
            shown = ends(rows, "accuracy", pct_interval)
            where = "" if parts else " of test worlds"
            if shown and exactly_half(rows):
                parts.append(f"seeing {words}, in exactly 50.0%{where} (one world of every pair right, in every "
                             "resample: what it sees is the same for a pair's two worlds)")
            elif shown:
                parts.append(f"seeing {words}, in {shown}{where}")
        if parts:
            out.append(("recovery", "An attacker who must tell which of a case's two candidate mechanisms is the "
                                    "true one (guessing: 50%) gets it right " + "; ".join(parts)
                        + " (95% intervals in brackets)."))
        status = status_sentence(pooled)
        if status is not None:
            out.append(("recovery", status))
        rd = d.recovery_diff
        diff = rd[(rd["view_a"] == "full_native") & (rd["view_b"] == "choice")] if not rd.empty else rd
        gain = ends(diff, "difference", points_interval)
        if gain:
            out.append(("recovery", f"Releasing the probabilities and confidence on top of the choice adds {gain} "
                                    f"points of recovery (paired 95% intervals)."))
    ud = d.utility_diff
    if not ud.empty:
        everywhere = choice_vs_native(d)
        auth = everywhere[everywhere["profile"] == "authored"]
        if not auth.empty:
            out.append(("utility", cost_sentence(auth, everywhere)))
        per_task = [(TASK_NAMES.get(t, t), auth[auth["task"] == t]["noninferior"]) for t in TASKS
                    if (auth["task"] == t).any()]
        if auth["model"].nunique() == 1:       # one model: in which tasks
            yes = [t for t, ok in per_task if ok.all()]
            no = [t for t, ok in per_task if not ok.all()]
            counts = (f"{auth['model'].iloc[0]} in " + (listing(yes) if yes else "no task")
                      + (f" (not in {listing(no)})" if yes and no else ""))
        else:
            counts = ", ".join(f"{how_many(int(ok.sum()), len(ok))} in {t}" for t, ok in per_task)
        out.append(("utility", f"A choice-only release is non-inferior to full native for the legitimate recipient "
                               f"(paired 95% upper bound of the extra cost at most 0.1) for {counts}."))
    front = front_of(d.fronts) if not d.fronts.empty else None
    if front is not None and front.key == "view":       # one model: the front of its views
        tasks = [t for t in TASKS if (d.fronts["task"] == t).any()]
        out.append(("fronts", who_sentence(front, tasks, "authored", list(d.left_out.index))))
    elif front is not None:
        f = d.fronts[(d.fronts["profile"] == "authored") & (d.fronts["view"] == "full_native")
                     & d.fronts["nondominated_models"]]
        members = {t: sorted(f[f["task"] == t]["model"]) for t in TASKS if (f["task"] == t).any()}
        distinct = {tuple(m) for m in members.values()}
        if len(distinct) == 1 and len(next(iter(distinct))) == 1:
            out.append(("fronts", f"One model, {next(iter(distinct))[0]}, is non-dominated (lowest recovery and "
                                  f"lowest cost together) in every task under the authored costs."))
        elif len(distinct) == 1 and set(next(iter(distinct))) >= set(f["model"]) and \
                set(next(iter(distinct))) >= set(d.fronts["model"]):
            out.append(("fronts", f"No model dominates another in any task under the authored costs: each of "
                                  f"{listing(list(next(iter(distinct))))} either leaks less or costs less than the "
                                  f"{'other' if len(next(iter(distinct))) == 2 else 'others'}, so the choice between "
                                  f"them is a trade-off."))
        elif len(distinct) == 1:
            out.append(("fronts", f"The same models are non-dominated (no other model both leaks less and costs "
                                  f"less) in every task under the authored costs: "
                                  f"{', '.join(next(iter(distinct)))}."))
        else:
            sets = "; ".join(f"{TASK_NAMES.get(t, t)}: {', '.join(m)}" for t, m in members.items())
            out.append(("fronts", f"The non-dominated models (no other model both leaks less and costs less) "
                                  f"change with the task: {sets}."))
    if not d.defenses.empty:
        w = d.defenses[d.defenses["defense"] == "wcpq"]
        if not w.empty:
            agree = (w["plan_agreement"] == w["plan_comparisons"]).all() and (w["max_abs_cost_diff"] == 0).all()
            change = recovery_change(100 * w["diff_vs_native"], interval=_one_interval(w, "diff_ci_low", "diff_ci_high"))
            out.append(("defenses", f"The workflow-constrained quantizer {change} on {count_of(len(w))} (coverage "
                                    f"{text_range(pct(w['coverage'].min()), pct(w['coverage'].max()))}) while "
                                    + (f"every one of the {policy_count(d.ontology)} frozen recipient policies keeps its "
                                       "exact plan and cost in every test world." if agree
                                       else "NOT preserving every recipient plan (see the verification table).")))
        q = d.defenses[d.defenses["defense"] == "noise"]
        if not q.empty:
            change = recovery_change(100 * q["diff_vs_native"], say_lowers=False,
                                     interval=_one_interval(q, "diff_ci_low", "diff_ci_high"))
            each = "" if len(q) == 1 else ", model by model"
            out.append(("defenses", f"Gaussian noise (three seeds) {change}{each}{noise_cost(d.defense_costs)}."))
    if not d.ql.empty:
        split = str(d.ql["split"].iloc[0])
        on = coverage_on(d.ql, d.ql_coverage)
        allm = d.ql[(d.ql["slice_kind"] == "all") & (d.ql["metric"] == "complete_f1")]
        allm = allm[~allm["detector"].isin(unanswered(on))]          # a detector that answered nothing measures nothing
        if not allm.empty:
            out.append(("quasileak", quasileak_sentence(allm)))
        if (said := coverage_sentence(on, split)) is not None:
            out.append(("quasileak", said))
    if answered is not None and not lead:                        # housekeeping: after the findings on the leak
        out.append(answers_item)
    return out


def cost_sentence(auth: pd.DataFrame, everywhere: pd.DataFrame) -> str:
    """What the probabilities and the confidence are worth to the legitimate recipient: in how many
    model-task cases (authored costs, ``auth``; every profile, ``everywhere``: paired differences
    choice minus full native) full native is clearly cheaper, its paired 95% interval above 0, and
    what that says: what leaks is what the recipient uses (every case), nothing the recipient uses
    (no difference anywhere), or, where some intervals include 0, that the run cannot tell there."""
    gap = text_range(f"{auth['difference'].min():+z.3f}", f"{auth['difference'].max():+z.3f}")
    clear_auth, clear_all = int((auth["ci_low"] > 0).sum()), int((everywhere["ci_low"] > 0).sum())
    n_all = len(everywhere)
    unclear = int(((everywhere["ci_low"] <= 0) & (everywhere["ci_high"] >= 0)).sum())
    text = (f"The legitimate recipient pays clearly less with the full native output than with the choice alone "
            f"(the paired 95% interval above 0) in {clear_auth} of {len(auth)} model-task cases under the authored "
            f"costs (choice minus full native: {gap} cost units a case) and in {clear_all} of {n_all} across the "
            f"{count_of(everywhere['profile'].nunique(), 'cost profile')}")
    if clear_all == n_all:
        return text + ": what leaks is also what the recipient uses."
    if (auth["difference"].abs() < 5e-4).all():
        return text + ": the probabilities and the confidence add nothing the recipient uses, only what leaks."
    if unclear:
        return text + (f"; in {'the other ' if unclear == n_all - clear_all else ''}{count_of(unclear, 'case')} "
                       "the run cannot tell the two apart (the interval includes 0).")
    return text + "."


def noise_cost(costs: pd.DataFrame) -> str:
    """What the noise release costs the legitimate recipient, said beside what it does to recovery (a
    drop in recovery bought with the recipient's decisions is no free option): in the first task, under
    the authored costs, the recipient refitted to the noisy release against the frozen one on the native
    output, each with its 95% interval (one model) or as a range over the models; empty without costs."""
    if costs.empty:
        return ""
    authored = costs[costs["profile"] == "authored"]
    task = next((t for t in TASKS if (authored["task"] == t).any()), None)
    cell = authored[authored["task"] == task]
    noise = cell[(cell["defense"] == "noise") & (cell["recipient"] == "adapted")]
    native = cell[(cell["defense"] == "native") & (cell["recipient"] == "frozen")]
    if noise.empty or native.empty:
        return ""

    def said(rows: pd.DataFrame) -> str:
        if len(rows) == 1:
            return cost_interval(*rows.iloc[0][["mean_cost", "ci_low", "ci_high"]])
        return text_range(f"{rows['mean_cost'].min():.3f}", f"{rows['mean_cost'].max():.3f}")

    return (f", while a recipient refitted to it pays {said(noise)} cost units a case in {TASK_NAMES.get(task, task)} "
            f"against {said(native)} on the native output (authored costs)")


def quasileak_sentence(allm: pd.DataFrame) -> str:
    """The best complete-group F1 among the detectors (95% interval); when the best is simulated (derived from
    the gold groups, an upper reference no one could run) and a real detector ran, the best real detector first
    and the simulated one after it, as such (as the QuasiLeak page's first finding)."""
    simulated = allm["simulated"].astype(bool) if "simulated" in allm else pd.Series(False, index=allm.index)
    ranked = allm.assign(simulated=simulated).sort_values(["value", "detector"], ascending=[False, True])

    def said(r: pd.Series) -> str:
        return f"{pct_interval(r['value'], r['ci_low'], r['ci_high'])} ({r['detector']})"

    best = ranked.iloc[0]
    among = f"Among {count_of(allm['detector'].nunique(), 'privacy detector')} on the QuasiLeak corpus, "
    real = ranked[~ranked["simulated"]]
    if best["simulated"] and not real.empty:
        return (among + f"the best real detector finds complete groups with F1 {said(real.iloc[0])}; the simulated "
                f"ones, derived from the answer key, reach up to {said(best)}: an upper reference (95% intervals in "
                "brackets).")
    return among + f"the best complete-group F1 is {said(best)}" + (
        ", simulated from the gold groups" if best["simulated"] else "") + " (95% intervals in brackets)."


def best_detector_sentence(numeric: pd.DataFrame) -> str:
    """The QuasiLeak page's first finding, from its numeric leaderboard (a row per detector: its
    complete-group F1 with interval, complete recall, target groups, and whether it is simulated):
    the detector that finds the most complete groups; when that one is simulated (derived from the
    gold groups, an upper reference no one could run), the best real detector first and the
    simulated ones after it, as such."""
    d = numeric.set_index("detector")
    simulated = d["simulated"].astype(bool) if "simulated" in d else pd.Series(False, index=d.index)

    def said(det: str) -> str:
        r = d.loc[det]
        return (f"complete-group F1 {pct_interval(r['complete_f1'], r['complete_f1_ci_low'], r['complete_f1_ci_high'])}, "
                f"recovering {pct_interval(r['complete_recall'], r.get('complete_recall_ci_low'), r.get('complete_recall_ci_high'))} "
                f"of the {int(r['targets']):,} target groups whole and bound "
                "to the right attribute")

    best = d["complete_f1"].idxmax()
    real = d.loc[~simulated, "complete_f1"].dropna()
    if not simulated[best] or real.empty:
        return f"{best} finds the most complete groups: {said(best)}."
    top_real = real.idxmax()
    sims = d.loc[simulated, "complete_f1"].dropna()
    top = d.loc[sims.idxmax()]
    return (f"{top_real} is the best real detector: {said(top_real)}. The simulated detectors, derived from the "
            f"answer key (the gold groups), reach up to "
            f"{pct_interval(top['complete_f1'], top['complete_f1_ci_low'], top['complete_f1_ci_high'])} "
            f"({sims.idxmax()}): an upper reference, not a detector one could run.")


def findings(d: RunData) -> list[str]:
    """Headline findings as plain sentences, computed from the run."""
    return [sentence for _, sentence in headline(d)]


OWN_FIGURES = ("[95% CI]", "(points)")        # labels of columns of figures formatted here (``+1.7 [-2.8, +5.9]``)


def _cell(value: object, kind: str) -> str:
    """One table cell as text, by its column's kind (``qlb.present.names``)."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "—"
    if isinstance(value, str):
        return value
    if kind == "flag" or isinstance(value, bool):
        return "yes" if value else "no"
    if kind in ("text", "figure"):
        return str(value)
    if kind in ("rate", "share"):
        return pct(value)
    if kind == "count":
        return f"{int(value):,}"
    if kind == "points":
        return points_interval(value)
    if kind == "cost":
        return f"{value:.3f}"
    if isinstance(value, float) and value % 1 == 0 and abs(value) > 1:
        return f"{int(value):,}"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _table(df: pd.DataFrame, kinds: dict[str, str] | None = None) -> str:
    """An escaped, spreadsheet-safe HTML table in the pages' vocabulary (``readable``: display names,
    column labels, percent for rates, whole counts, signed points, costs to three decimals);
    ``kinds`` gives the kind of a column the vocabulary does not know (by its shown label)."""
    shown, specs = readable(df)
    kinds = {label: spec.kind for label, spec in specs.items()} | (kinds or {})
    text = pd.DataFrame({c: [_cell(v, kinds.get(c, "text")) for v in shown[c]] for c in shown.columns})
    for c in text.columns:          # data text pasted into a spreadsheet never runs; our own figures are left as they are
        if kinds.get(c, "text") == "text" and not c.endswith(OWN_FIGURES):   # kind "figure": text written here
            text[c] = [spreadsheet_cell(v) for v in text[c]]
    html_table = text.to_html(index=False, escape=True, border=0, na_rep="—")
    html_table = INTERVAL_CELL.sub(r"<td class='fig'>\1</td>", html_table)   # "73.6% [68.1, 78.5]" on one line
    return f"<div class='wide'>{html_table}</div>"                # a wide table scrolls inside the page


INTERVAL_CELL = re.compile(r"<td>([-+]?[\d.,]+%? \[[-+\d.,]+, [-+\d.,]+\])</td>")


def robustness_parts(checks: RobustnessChecks, full_native: pd.DataFrame) -> list[str]:
    """Paper Tables 29 and 30 as HTML: the computed sentences, then the both-worlds-correct subset
    and the attack tracks (each recovery with its 95% interval); nothing when the run has neither."""
    if checks.both_correct.empty and checks.tracks.empty:
        return []
    esc = html.escape
    out = ["<h3>Robustness checks (the TUPLE paper's Tables 29 and 30)</h3>"]
    sentences = [both_correct_sentence(checks.both_correct, full_native), tracks_sentence(checks.tracks)]
    out.append("<ul class='findings'>" + "".join(f"<li>{esc(s)}</li>" for s in sentences if s) + "</ul>")
    if checks.data_changed:
        out.append("<p class='caption'>The dataset changed after this run: the subset reads today's responses.</p>")
    if not checks.both_correct.empty:
        shown = both_correct_table(checks.both_correct, full_native)
        out.append(_table(shown, {c: "figure" for c in shown.columns if c != "model"}))
        out.append("<p class='caption'>Recovery of the already-frozen full-native attacker within the test pairs "
                   "whose released choice is the true coarse class in both worlds; worlds count both worlds of each "
                   "kept pair. No attacker is refitted or reselected; the subset is chosen from the answers after "
                   "the fact, so it is descriptive, not a new test. (The TUPLE paper's Table 29.)</p>")
    if not checks.tracks.empty:
        for which in (MAIN_TRACKS, FAMILY_TRACKS):          # the saved tracks, then each family's best
            shown = tracks_table(checks.tracks, which)
            out.append(_table(shown, {c: "figure" for c in shown.columns if c != "model"}))
        out.append("<p class='caption'>Full-native test recovery per saved attack track on the same "
                   "test worlds and pair resamples (95% interval). The selected attacker is the one the run froze "
                   "(it may read a nested subview); each best configuration is chosen per domain on "
                   "validation; the first table holds the saved tracks, the second each attacker family's best. "
                   "Descriptive: no track is chosen by its test value. (The TUPLE paper's Table 30.)</p>")
    return out


def _figure(fig: go.Figure, first: bool) -> str:
    return pio.to_html(fig, include_plotlyjs=True if first else False, full_html=False,
                       config={"displaylogo": False, "toImageButtonOptions": {"format": "png"}})


def refusal_table(ref: pd.DataFrame) -> pd.DataFrame:
    """The refusal audit per model with Wilson 95% intervals on each share."""
    r = rate_intervals(ref)
    cells = {"withheld [95% CI]": "withhold_rate", "recovered when withheld [95% CI]": "conditional_residual_recovery",
             "recovered overall [95% CI]": "overall_recovery"}
    return pd.DataFrame({"model": r["model"].to_numpy()} | {
        label: [pct_interval(*v) for v in zip(r[rate], r[f"{rate}_lo"], r[f"{rate}_hi"])] for label, rate in cells.items()})


def quasileak_table(ql: pd.DataFrame, coverage: pd.DataFrame | None = None) -> pd.DataFrame:
    """The QuasiLeak leaderboard's headline metrics per detector, best complete-group F1 first, as
    percent with their 95% intervals; a simulated detector (derived from the gold groups) named as such;
    with ``coverage`` (``coverage_on``), the documents each detector answered when one did not answer all."""
    a = ql[ql["slice_kind"] == "all"]
    value, lo, hi = (a.pivot_table(index="detector", columns="metric", values=v, aggfunc="first")
                     for v in ("value", "ci_low", "ci_high"))
    simulated = a.groupby("detector")["simulated"].first().astype(bool) if "simulated" in a else None
    metrics = [m for m in ("complete_f1", "complete_recall", "strict_precision", "binding_error_rate",
                           "over_flag_rate", "span_f1") if m in value.columns]
    order = value.sort_values("complete_f1", ascending=False).index if "complete_f1" in value else value.index
    out = pd.DataFrame([{"detector": det + (" (simulated)" if simulated is not None and simulated[det] else ""), **{
        QL_METRIC_NAMES[m]: pct_interval(value.loc[det, m], lo.loc[det, m] if m in lo else None,
                                         hi.loc[det, m] if m in hi else None) for m in metrics}}
        for det in order])
    answered = coverage_column(pd.Series(order), coverage) if coverage is not None else None
    if answered is not None:
        out.insert(1, COVERAGE_COLUMN, answered.to_numpy())
    return out


def provenance_table(d: RunData, params: dict) -> pd.DataFrame:
    """What the run was computed from, one fact a row, in words."""
    views = params.get("views") or []
    rows = [
        ("Run", str(d.run["run_id"])),
        ("Dataset", f"{d.dataset['dataset_id']}" + (" (SIMULATED)" if bool(d.dataset["simulated"]) else "")),
        ("Data fingerprint", str(d.run["dataset_fingerprint"])[:16]),
        ("qlb version", str(d.run["code_version"])),
        ("Started / finished", f"{utc_minute(d.run['started_at'], 'not finished')} / {utc_minute(d.run['finished_at'], 'not finished')}"),
        ("Audits", ", ".join(AUDIT_NAMES.get(a, a) for a in params.get("audits") or [] if ran(d).get(a, True)) or "—"),
        ("Models", ", ".join(params["models"]) if params.get("models") else f"all {len(d.models)}"),
        ("Release views", ", ".join(VIEW_NAMES.get(v, v) for v in views) or "—"),
        ("Defended models", "—" if d.defenses.empty else
         ", ".join(params.get("defense_models") or sorted(set(d.defenses["model"])))),
        ("Recovery attacker families", "—" if d.recovery.empty else
         family_words(params.get("families") or []) or "all five (TUPLE.md section 4)"),
        ("Defense-aware attacker families", "—" if d.defenses.empty else
         family_words(params.get("defense_families") or []) or "not recorded"),
        ("Intervals", f"95%, {params.get('n_boot', '—'):,} bootstrap resamples, seed {params.get('seed', '—')}"
         if isinstance(params.get("n_boot"), int) else "95%"),
        ("Test split used for any choice", "yes" if bool(d.run["test_used_for_selection"]) else "no: every choice was "
                                                                                               "made on validation"),
    ]
    if not d.models:            # detectors only: the rows about decision models say nothing
        rows = [r for r in rows if r[0] not in ("Models", "Release views", "Defended models", "Recovery attacker "
                                                "families", "Defense-aware attacker families",
                                                "Test split used for any choice")]
    return pd.DataFrame(rows, columns=["", "value"])


def task_section(ontology: Ontology) -> str:
    """What was audited, for a reader who has not seen the ontology: per domain who receives the
    decision, what they may and must not learn, and each decision class with the protected
    mechanisms behind it (described where the ontology describes them). All text escaped."""
    esc = html.escape

    def named(domain, item: str) -> str:
        return f"<code>{esc(item)}</code> ({esc(domain.describe(item))})"     # its description, else its words

    out = ["<h2>What was audited: the decision task</h2>",
           "<p>Each case is decided into one class; the recipient sees the release, never the protected mechanism "
           "behind the class. The audit asks how often the recipient can tell that mechanism anyway.</p>"]
    for domain in ontology.domains.values():
        rows = "".join(f"<tr><td>{named(domain, c)}</td><td>"
                       + ", ".join(named(domain, m) for m in domain.mechanisms_by_class[c]) + "</td></tr>"
                       for c in domain.classes)
        out.append(f"<h3>{esc(domain.title)}</h3><p>Recipient: {esc(domain.recipient_role.replace('_', ' '))}; may receive "
                   f"{esc(domain.may_receive or '—')}; must not receive {esc(domain.must_not_receive or '—')}.</p>"
                   "<div class='wide'><table><thead><tr><th>decision class</th><th>protected mechanisms behind it"
                   f"</th></tr></thead><tbody>{rows}</tbody></table></div>")
    return "".join(out)


def worlds_sentence(simulated_worlds: int, worlds: int) -> str | None:
    """For a dataset of real answers: whether qlb generated its worlds (``qlb demo --ontology``), so nobody reads the
    audit of a model's real answers as one on real cases. None when no world is simulated."""
    if not simulated_worlds or not worlds:
        return None
    which = "Every world" if simulated_worlds == worlds else f"{simulated_worlds:,} of the {worlds:,} worlds"
    verb = "was" if simulated_worlds == worlds or simulated_worlds == 1 else "were"
    return (f"{which} of this dataset {verb} generated by qlb from the decision "
            f"task (SIMULATED test cases, their private notes marked so); the answers are as collected or ingested. "
            f"The audit measures what the models' outputs reveal about these cases, not about real ones.")


def _simulated_worlds(d: RunData) -> int:
    return int(d.dataset.get("simulated_worlds", 0) or 0)


def render_report(d: RunData) -> str:
    """The self-contained HTML report of one loaded run."""
    esc = html.escape
    run_id = str(d.run["run_id"])
    colours = model_colours(d.models)
    simulated = bool(d.dataset["simulated"])
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>qlb audit report · {esc(run_id)}"
             f"</title><style>{CSS}</style></head><body>",
             f"<h1>{'Privacy detector audit report' if not d.models and not d.ql.empty else 'Privacy–utility audit report'}"
             f"</h1><p>Dataset <b>{esc(str(d.dataset['dataset_id']))}</b> · run "
             f"<code>{esc(run_id)}</code> · finished {esc(utc_minute(d.run['finished_at'], 'not finished'))}</p>"]
    if simulated:
        parts.append("<p class='sim'>SIMULATED data: generated by qlb to the papers' shapes and sizes, and built to "
                     "tell the papers' findings. No real model produced these responses; the numbers illustrate the "
                     "method, not any product.</p>")
    elif (made := worlds_sentence(_simulated_worlds(d), int(d.dataset.get("worlds", 0) or 0))) is not None:
        parts.append(f"<p class='sim'>{esc(made)}</p>")
    if d.data_changed:
        kind = "stale" if stale_matters(d.changes, d.audited) else "newer"
        parts.append(f"<p class='{kind}'>{esc(stale_warning(run_id, d.changes, d.audited))}</p>")
    parts.append(f"<p><b>Scope.</b> {esc(scope_sentence(d))}</p>")
    spoken = findings_run(d)          # a model with too few valid answers would speak for the rest
    parts.append("<h2>Headline findings</h2><ul class='findings'>"
                 + "".join(f"<li>{esc(s)}</li>" for s in findings(spoken)) + "</ul>")
    supported = options(spoken)
    if supported:
        parts.append("<h2>What the numbers support</h2><p class='caption'>" + esc(options_note(spoken)) + "</p>"
                     "<ul class='findings'>" + "".join(f"<li>{esc(s)}</li>" for s in supported) + "</ul>")
    against = comparison_sentence(paper_checks(spoken)) if d.tuple_task else None
    if against:
        lead, what = comparison_lead(simulated)
        parts.append(f"<p><b>{esc(lead)}</b> {esc(against + what)} The table at the end of the report has every "
                     f"finding.</p>")
    if d.ontology is not None and (d.models or int(d.dataset.get("worlds", 0) or 0)):   # a corpus alone has no task
        parts.append(task_section(d.ontology))
    if not d.answers.empty:
        parts.append("<h2>The answers audited</h2>" + _table(answers_table(d.answers), {"answers": "count", "valid": "count", "invalid (kept)": "count",
                                                                   "unavailable": "count", "no answer": "count",
                                                                   "from": "text"})
                     + "<p class='caption'>Per model and question, the answers stored in the dataset now"
                     + (" (they changed after this run)" if d.data_changed else "")
                     + " and where they came from; no answer: the dataset's worlds the model has no stored answer "
                       "for. An invalid answer is kept as it was given, never repaired, and enters every audit as "
                       "unavailable, like an answer the model declined to give or never gave; every world stays in "
                       "every figure's denominator.</p>")
    first = [True]

    def fig(f: go.Figure, caption: str) -> None:
        parts.append(f"<div class='chart'>{_figure(f, first[0])}<p class='caption'>{esc(caption)}</p></div>")
        first[0] = False

    ref = d.refusal[d.refusal["domain"] == "all"] if not d.refusal.empty else d.refusal
    if not ref.empty:
        parts.append("<h2>Does withholding stop the leak?</h2>")
        routes = ref.assign(direct_share=ref["direct_correct"] / ref["n"],
                            residual_share=ref["residual_unique_correct"] / ref["n"])
        fig(figures.routes_figure(routes, d.uniform_reference),
            "Share of refusal responses that recover the mechanism directly or through the residual scores; "
            f"dashed: a uniform guess among a domain's mechanisms ({chance_pct(d.uniform_reference)}).")
        parts.append(_table(refusal_table(ref)))
        parts.append("<p class='caption'>Per model over every refusal probe, with Wilson 95% intervals.</p>")
    pooled = d.recovery[d.recovery["scope"] == "pooled"] if not d.recovery.empty else d.recovery
    if not pooled.empty:
        parts.append("<h2>What each release view reveals</h2>")
        fig(figures.recovery_figure(pooled), "Secret recovery on the test split per model and release view, 95% "
                                             "pair-clustered intervals; dashed: 50% guessing.")
        wide = pooled.pivot(index="model", columns="view", values="accuracy")
        wide = wide[[v for v in VIEWS if v in wide.columns]].rename(columns=VIEW_NAMES)
        if not d.coarse.empty:
            wide.insert(0, "coarse accuracy", d.coarse[d.coarse["scope"] == "pooled"].set_index("model")["accuracy"])
        parts.append(_table(wide.reset_index(), {c: "rate" for c in wide.columns}))
        parts.append("<p class='caption'>Test coarse accuracy (the released choice is the true class) and recovery "
                     "per release view. (The TUPLE paper's Table 22.)</p>")
        dd = d.recovery_diff[(d.recovery_diff["view_b"] == "choice")].copy()
        if not dd.empty:
            dd["comparison"] = [f"{VIEW_NAMES[a]} − {VIEW_NAMES[b]} [95% CI]" for a, b in zip(dd["view_a"], dd["view_b"])]
            dd["cell"] = [points_interval(*r) for r in dd[["difference", "ci_low", "ci_high"]].itertuples(index=False)]
            added = dd.pivot(index="model", columns="comparison", values="cell")
            parts.append("<p class='caption'>What the scores add over the choice: paired differences in recovery, in "
                         "points (same worlds, same resamples, 95% interval):</p>" + _table(added.reset_index()))
        if d.robustness is not None:
            parts.extend(robustness_parts(d.robustness, pooled[pooled["view"] == "full_native"]))
    if not d.utility.empty:
        parts.append("<h2>What each release is worth downstream</h2>")
        u = d.utility[(d.utility["scope"] == "pooled") & (d.utility["profile"] == "authored")]
        u = u[u["view"].isin(["choice", "full_native"])]
        costs = u.pivot_table(index="model", columns=["task", "view"], values="mean_cost")
        costs = costs[[(t, v) for t in TASKS for v in ("choice", "full_native") if (t, v) in costs.columns]]
        costs.columns = [f"{TASK_NAMES[t]}: {VIEW_NAMES[v]}" for t, v in costs.columns]
        parts.append(_table(costs.reset_index(), {c: "cost" for c in costs.columns}))
        parts.append("<p class='caption'>Mean test cost per case of the validation-selected recipient policy when it "
                     "receives only the choice or the full native response (authored costs, in cost units; lower "
                     "is better). Every view and cost profile is on the Cost-profile sensitivity page.</p>")
        choice = d.utility_diff[d.utility_diff["view_a"] == "choice"]["difference"].abs().dropna()
        shared = max(float(np.ceil(choice.max() * 1000) / 1000), 1e-3) if len(choice) else None   # one scale
        for task in TASKS:
            if ((d.utility_diff["task"] == task) & (d.utility_diff["view_a"] == "choice")).any():
                fig(figures.cost_difference_heatmap(d.utility_diff, task, "choice", shared,
                                                    profile_descriptions(d.ontology)),
                    f"{TASK_NAMES.get(task, task).capitalize()}: choice minus full native mean cost per case over "
                    f"model × cost profile (cost units; the tasks share one colour scale, ±{shared:.3f}); "
                    "✓ non-inferior at 0.1.")
    if not d.fronts.empty:
        parts.append("<h2>Privacy–utility fronts</h2>")
        front = front_of(d.fronts)
        one = front.key == "view"
        for task in TASKS:
            pts = front.points[(front.points["task"] == task) & (front.points["profile"] == "authored")]
            if not pts.empty:
                what = (f"each release view of {pts['model'].iloc[0]}, the one model audited" if one
                        else "each model's full native release")
                key = figures.front_key(pts[pts[front.member]], one)
                numbered = len(key) > figures.NAMED_FRONT_POINTS
                fig(figures.front_figure(pts, front.member, colours, one),
                    f"{TASK_NAMES.get(task, task).capitalize()}: test recovery against mean cost (authored costs) of "
                    f"{what}; outlined points are non-dominated" + (f" ({'; '.join(key)})." if numbered else "."))
    if not d.defenses.empty:
        parts.append("<h2>Defenses and WCPQ verification</h2>")
        main = d.defenses[d.defenses["defense"].isin(figures.DEFENSE_ORDER)]
        fig(relabel_native(figures.defense_figure(main, colours)),
            "Defense-aware secret recovery per model and defense, 95% intervals.")
        shown = main.assign(**{"secret recovery [95% CI]": [pct_interval(*r) for r in main[
            ["accuracy", "ci_low", "ci_high"]].itertuples(index=False)]}, defense=main["defense"].map(recovery_label))
        parts.append(_table(shown[["model", "defense", "secret recovery [95% CI]", "diff_vs_native"]]))
        control = control_sentence(d.recovery, main, policy_count(d.ontology), report=True)
        if control:
            parts.append(f"<p class='caption'>{esc(control)}</p>")
        w = d.defenses[d.defenses["defense"].isin(["wcpq", "wcpq grid"])]
        w = w.assign(**{"plan agreement": [f"{int(a):,} of {int(n):,}" for a, n in
                                           zip(w["plan_agreement"], w["plan_comparisons"])]})
        parts.append(f"<p class='caption'>WCPQ verification (test worlds × {policy_count(d.ontology)} frozen policies): the "
                     "main codebook "
                     "(the 0.1 grid, then training responses, then training-pair midpoints) and the grid alone as a "
                     "control.</p>"
                     + _table(w[["model", "defense", "coverage", "fallbacks", "plan agreement", "max_abs_cost_diff"]],
                              {"fallbacks": "count", "largest cost change": "cost"}))
        points = learned_points(d.defenses, d.defense_costs)
        if not points.empty and not d.learned.empty:
            parts.append("<h3>Learned WCPQ: trading a bounded cost for privacy</h3>"
                         f"<p>{esc(learned_sentence(points, d.learned))}</p>")
            fig(figures.learned_figure(points),
                "Secret recovery (95% intervals) against the frozen recipients' mean authored cost, for WCPQ strict "
                "and each learned variant, one panel per model (shape: the mapper; colour: the budget, in review "
                "costs).")
            table = table15(points)
            parts.append(_table(table, {c: "figure" for c in table.columns[1:]}))
    if not d.ql.empty:
        parts.append("<h2>QuasiLeak detectors</h2>")
        allm = d.ql[d.ql["slice_kind"] == "all"].pivot_table(index="detector", columns="metric", values="value")
        numeric = allm.reset_index()
        for m in ("complete_f1", "graded_f1"):
            lo = d.ql[(d.ql["slice_kind"] == "all") & (d.ql["metric"] == m)].set_index("detector")
            if "ci_low" in lo:
                numeric[f"{m}_ci_low"] = numeric["detector"].map(lo["ci_low"])
                numeric[f"{m}_ci_high"] = numeric["detector"].map(lo["ci_high"])
        split = str(d.ql["split"].iloc[0])
        on = coverage_on(d.ql, d.ql_coverage)
        if "complete_f1" in numeric:
            fig(figures.f1_figure(numeric), f"Complete and graded group F1 per detector ({split_words(split)}).")
        board = quasileak_table(d.ql, on)
        parts.append(_table(board))
        parts.append(f"<p class='caption'>Micro over the target groups of {split_words(split)}, best "
                     "complete-group F1 first, each a percent with its 95% interval. A simulated detector is derived "
                     "from the gold groups (the answer key): an upper reference, not a detector one could run."
                     + (" N/A: the detector predicted no group, so its precision and F1 are undefined."
                        if board.isin(["N/A"]).any().any() else "")
                     + (f" {esc(COVERAGE_HELP)}" if COVERAGE_COLUMN in board else "") + "</p>")
    if d.tuple_task:
        checks = paper_checks(spoken)
        held, known = tally(checks)
        if known:
            parts.append("<h2>Compared with the TUPLE paper</h2>"
                         f"<p>{held} of {known} of the paper's findings hold on this run. Each band is what a run "
                         "must show to tell the paper's story (its direction and rough size, not its exact numbers)."
                         + (" Like the findings, it leaves out the models with too few valid answers."
                            if spoken.left_out is not None and not spoken.left_out.empty else "") + "</p>")
            rows = pd.DataFrame([{"finding": c.finding,
                                  "holds": "—" if c.holds is None else ("yes" if c.holds else "NO"),
                                  "this run": c.run, "band": c.band, "paper": c.paper} for c in checks])
            parts.append(_table(rows, {c: "figure" for c in ("finding", "paper", "band", "this run")}))
    params = parameters(d)
    prov = {"run_id": run_id, "dataset": str(d.dataset["dataset_id"]), "simulated": simulated,
            "simulated_worlds": _simulated_worlds(d),
            "dataset_fingerprint": str(d.run["dataset_fingerprint"]), "code_version": str(d.run["code_version"]),
            "test_used_for_selection": bool(d.run["test_used_for_selection"]),
            "started_at": str(d.run["started_at"]), "finished_at": str(d.run["finished_at"]),
            "bootstrap": {"resamples": params.get("n_boot"), "seed": params.get("seed")}, "parameters": params}
    parts.append("<h2>Provenance</h2>" + _table(provenance_table(d, params), {"": "figure", "value": "text"})
                 + "<details><summary>Every parameter of the run (JSON)</summary><pre>"
                 + esc(json.dumps(prov, indent=2, default=str)) + "</pre></details>")
    parts.append("<p class='caption'>Generated by qlb from the warehouse; every number above is computed from "
                 "this run.<span class='screen'> Charts are interactive (hover for values; the camera icon saves a "
                 "PNG).</span></p></body></html>")
    return "\n".join(parts)
