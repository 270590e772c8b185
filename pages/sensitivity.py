"""Cost-profile sensitivity: what each release is worth to the legitimate recipient under the six
fixed cost profiles, the non-inferiority check, per-domain costs, per-world actions, and a
what-if replay under edited costs (TUPLE.md section 5; paper Appendix C, F.2, I.8-I.9)."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import data_access as da
from dashboard.routing import page_entry
from dashboard.widgets import audit_page_start, chart, data_table, finding, md_text, pick_run, profile_help, table
from qlb.present.figures import cost_difference_heatmap
from qlb.present.names import (TASK_HELP, VIEW_HELP, as_shown, authored_sentence, cost_interval, name, pct,
                               profile_descriptions, under)
from qlb.present.sensitivity_text import richer_worse_sentence
from qlb.tuple.costs import authored, domain_costs, profile_order
from qlb.tuple.release_views import VIEWS
from qlb.tuple.utility import DELTA, whatif
from qlb.tuple.workflows import TASKS

INTRO = (
    "Recipient policies (empirical prior, regularized logistic on the public fields and the "
    "released fields, or the released distribution itself) are fitted on train, chosen by "
    "validation mean cost under each cost profile, frozen, and replayed on the test worlds. "
    "Costs are the decision task's units ({authored} under the authored costs); an unavailable "
    "response always goes to trusted review. Intervals: 95% "
    "pair-clustered bootstrap. A lower-information release is non-inferior to full native when "
    f"the upper end of the paired interval of its extra cost is at most delta = {DELTA}."
)
LEAD_VIEW = "choice"      # the lower-information release the findings follow (the paper's headline comparison)


def render() -> None:
    """The Cost-profile sensitivity page: findings on non-inferiority, the lower-information release minus full native
    over every model × profile, the non-inferiority table, mean cost per view and per domain, per-world actions, the
    selected policies and the what-if replay."""
    start = audit_page_start("Cost-profile sensitivity",
                             lambda path, dataset: INTRO.replace("{authored}",
                                                                 authored_sentence(da.ontology(path, dataset))))
    if start is None:
        return
    path, dataset = start
    run_id = pick_run(da.utility_runs(path, dataset), "sensitivity_run", context=da.run_context(path, dataset), empty=
                      "No utility audit in this dataset yet: run `qlb audit` (about a minute for nine models).")
    if run_id is None:
        return
    res = da.query(path, "utility_results", (run_id,))
    diff = da.query(path, "utility_differences", (run_id,))
    profiles = profile_order(res["profile"])
    lower = [v for v in VIEWS if v != "full_native" and v in set(diff["view_a"])]
    tasks = [t for t in TASKS if t in set(diff["task"])]
    if not lower:
        st.info("This run compares no lower-information release with full native: run `qlb audit` with more views.")
        return
    findings(diff, lower, profiles)

    described = profile_descriptions(da.ontology(path, dataset))
    task, profile, view = controls(tasks, profiles, lower, described)
    heatmap_section(diff, task, view, profiles, run_id, described)
    noninferiority_table(diff, tasks, view, profile, run_id)
    mean_cost_tables(path, dataset, res, task, profile, view, run_id)
    models = sorted(res["model"].unique())
    actions_browser(path, run_id, models, task, profile)
    whatif_panel(path, dataset, run_id, res, models, task)


def reference_profile(profiles: list[str]) -> str:
    """The profile the findings are stated under: the authored costs when the run has them."""
    return "authored" if "authored" in profiles else profiles[0]


def findings(diff: pd.DataFrame, lower: list[str], profiles: list[str]) -> None:
    """Three sentences: non-inferiority of every lower-information release under the reference costs (and, when a
    release that holds every field of another counts lower, why), how the headline view's count moves with the cost
    profile, and its closest call (the comparison whose interval's upper end is nearest the margin, on either side)
    with the interval."""
    ref = reference_profile(profiles)
    at_ref = diff[diff["profile"] == ref]
    per_view = [(v, int(at_ref.loc[at_ref["view_a"] == v, "noninferior"].sum()), int((at_ref["view_a"] == v).sum()))
                for v in lower]
    per_view.sort(key=lambda x: -x[1])
    total = sum(k for _, k, _ in per_view)
    finding(f"{under(ref)}, a lower-information release is non-inferior to full native (the upper end of the 95% "
            f"interval of its extra cost per case is at most {DELTA}) in {total} of {len(at_ref)} model × task "
            "comparisons: " + ", ".join(f"{name('view', v)} {k} of {n}" for v, k, n in per_view) + ".",
            lead="Non-inferiority.")
    backwards = richer_worse_sentence(at_ref, lower, DELTA)
    if backwards:
        finding(backwards, lead="More information, less often good enough.")
    view = LEAD_VIEW if LEAD_VIEW in lower else lower[0]
    d = diff[diff["view_a"] == view]
    by_profile = [(p, int(d.loc[d["profile"] == p, "noninferior"].sum())) for p in profiles]
    counts = {k for _, k in by_profile}
    cells = int((d["profile"] == profiles[0]).sum())
    if len(counts) == 1:
        text = (f"{name('view', view).capitalize()} is non-inferior to full native in {counts.pop()} of {cells} "
                f"model × task comparisons under every one of the {len(profiles)} cost profiles.")
    else:
        text = (f"Of the {cells} model × task comparisons, {name('view', view)} is non-inferior to full native in "
                + ", ".join(f"{k} under the {name('profile', p)}" if p == "authored"
                            else f"{k} with {name('profile', p)}" for p, k in by_profile) + ".")
    finding(text, lead="Across cost profiles.")
    at = d[d["profile"] == ref].dropna(subset=["ci_high"])
    if at.empty:
        return
    close = at.assign(gap=(at["ci_high"] - DELTA).abs()).sort_values(["gap", "model", "task"]).iloc[0]
    side = "below" if close["ci_high"] <= DELTA else "above"
    finding(f"{under(ref)}, the {name('view', view)} comparison nearest the {DELTA} margin is {close['model']} in "
            f"{name('task', close['task'])}: "
            f"{cost_interval(close['difference'], close['ci_low'], close['ci_high'], signed=True)} "
            f"extra cost per case, the upper end of its interval {close['gap']:.3f} {side} the margin.",
            lead="Closest call.")


def controls(tasks: list[str], profiles: list[str], lower: list[str], described: dict[str, str]) -> tuple[str, str, str]:
    """The task, cost profile and lower-information release pickers (kept in the URL)."""
    task = st.segmented_control("Task", tasks, default=tasks[0], required=True, key="task", bind="query-params",
                                format_func=lambda t: name("task", t),
                                help="\n".join(f"- **{name('task', t)}**: {TASK_HELP.get(t, '')}" for t in tasks))
    c1, c2 = st.columns(2)
    profile = c1.selectbox("Cost profile", profiles, key="profile", bind="query-params",
                           format_func=lambda p: name("profile", p), help=profile_help(profiles, described))
    view = c2.selectbox("Lower-information release", lower, index=lower.index(LEAD_VIEW) if LEAD_VIEW in lower else 0,
                        key="view", bind="query-params", format_func=lambda v: name("view", v),
                        help="Compared with full native on the same worlds:\n"
                             + "\n".join(f"- **{name('view', v)}**: {VIEW_HELP.get(v, '')}" for v in lower))
    return task, profile, view


def heatmap_section(diff: pd.DataFrame, task: str, view: str, profiles: list[str], run_id: str,
                    described: dict[str, str]) -> None:
    """The chosen task: the view's extra cost over full native per model × profile, a sentence that counts the
    non-inferior cells of exactly this heatmap, and what each profile changes."""
    st.subheader(f"{md_text(name('view', view).capitalize())} − full native, {md_text(name('task', task))}: "
                 "every model × cost profile")
    d = diff[(diff["task"] == task) & (diff["view_a"] == view)]
    k = int(d["noninferior"].sum())
    finding(f"For {name('task', task)}, {name('view', view)} is non-inferior to full native in {k} of {len(d)} "
            f"model × cost-profile cells (marked ✓).", lead="In this heatmap:")
    chart(cost_difference_heatmap(diff, task, view, described=described), d, f"cost_difference_{task}_{view}",
          f"Mean test cost per case of {md_text(name('view', view))} minus full native for "
          f"{md_text(name('task', task))}, in cost units (red: full native is cheaper; blue: the lower-information "
          f"release is cheaper); ✓ marks non-inferiority (upper 95% bound ≤ {DELTA}). Hover a cell for its "
          f"interval and what the profile changes. Run {md_text(run_id)}. (The TUPLE paper's Tables 35-37.)")
    with st.expander("What each cost profile changes"):
        data_table(pd.DataFrame({"profile": profiles, "what changes": [described.get(p, "") for p in profiles]}))


def noninferiority_table(diff: pd.DataFrame, tasks: list[str], view: str, profile: str, run_id: str) -> None:
    """The chosen profile: the view's extra cost over full native per task and model (one row each, so the
    table stays whole on a narrow screen whatever its numbers), with its interval and the non-inferiority mark."""
    st.subheader(f"Non-inferiority {md_text(under(profile)[0].lower() + under(profile)[1:])}")
    ni = diff[(diff["profile"] == profile) & (diff["view_a"] == view)]
    ni = ni.assign(order=ni["task"].map({t: i for i, t in enumerate(tasks)})).sort_values(["order", "model"])
    interval = "extra cost [95% CI]"
    long = pd.DataFrame({"task": [name("task", t) for t in ni["task"]], "model": ni["model"].to_numpy(),
                         interval: [cost_interval(v, lo, hi, signed=True) for v, lo, hi in
                                    zip(ni["difference"], ni["ci_low"], ni["ci_high"])],
                         "non-inferior": ["✓ yes" if ok else "no" for ok in ni["noninferior"]]})
    tip = (f"Extra mean cost per case of {name('view', view)} over full native [95% paired interval]; "
           f"non-inferior when the upper bound is at most {DELTA}.")
    table(long, f"noninferiority_{view}_{profile}",
          column_config={interval: st.column_config.TextColumn(interval, help=tip)},
          caption=f"Extra mean test cost per case of {md_text(name('view', view))} over full native [95% paired "
          f"interval], per task and model; ✓: non-inferior (upper bound ≤ {DELTA}). Run {md_text(run_id)}. "
          "(The TUPLE paper's Appendix I.8.)")


def mean_cost_tables(path: str, dataset: str, res: pd.DataFrame, task: str, profile: str, view: str,
                     run_id: str) -> None:
    """Mean cost per model and release view (a pivot), the chosen view and full native in detail, and per domain."""
    st.subheader("Mean cost per release view")
    here = res[(res["task"] == task) & (res["profile"] == profile)]
    pooled = here[here["scope"] == "pooled"]
    views = [v for v in VIEWS if v in set(pooled["view"])]
    wide = pooled.pivot(index="model", columns="view", values="mean_cost").reindex(columns=views)
    wide.columns = [name("view", v) for v in views]
    cost_cols = {c: st.column_config.NumberColumn(c, format="%.3f") for c in wide.columns}
    table(wide.reset_index(), f"mean_cost_{task}_{profile}",
          f"Test mean cost per case (cost units) of the validation-selected policy per model and release view "
          f"({md_text(name('task', task))}, {md_text(name('profile', profile))}). Run {md_text(run_id)}.",
          column_config=cost_cols)
    pair = [view, "full_native"]
    with st.expander(f"{md_text(name('view', view).capitalize())} and full native in detail: intervals, coverage, "
                     "errors"):
        detail = pooled[pooled["view"].isin(pair)].sort_values(["model", "view"])
        out = pd.DataFrame({"model": detail["model"].to_numpy(), "view": detail["view"].to_numpy(),
                            "mean cost per case [95% CI]": [
                                cost_interval(v, lo, hi)
                                for v, lo, hi in zip(detail["mean_cost"], detail["ci_low"], detail["ci_high"])]})
        detail = detail.rename(columns={"clarification_rate": "clarify_rate"})
        rates = {"selective": ["coverage", "routed_error"], "clarification": ["clarify_rate"]}.get(task, [])
        for col in [*rates, "fallback_rate"]:       # a rate with no cases to count (N/A) is shown as text
            out[col] = [pct(v) for v in detail[col]] if detail[col].isna().any() else detail[col].to_numpy()
        out["oracle_cost"] = detail["oracle_cost"].to_numpy()
        out["n"] = detail["n"].to_numpy()
        table(out, f"mean_cost_detail_{task}_{profile}_{view}",
              "Oracle-T cost: the evaluator-only bound of a recipient that knows the true class. N/A: no case was "
              "routed, so there is no routed error.")
    st.subheader("Per domain")
    domains = list(da.ontology(path, dataset).domains)
    dom = here[here["scope"].isin(domains) & here["view"].isin(pair)]
    dwide = dom.pivot_table(index=["model", "view"], columns="scope", values="mean_cost").reset_index()
    dwide.columns.name = None
    table(dwide, f"mean_cost_by_domain_{task}_{profile}_{view}",
          f"Test mean cost per case (cost units) per domain, {md_text(name('view', view))} and full native "
          f"({md_text(name('task', task))}, {md_text(name('profile', profile))}). Run {md_text(run_id)}.",
          column_config={d: st.column_config.NumberColumn(d, format="%.3f") for d in domains})


def actions_browser(path: str, run_id: str, models: list[str], task: str, profile: str) -> None:
    """What the frozen policy of one task and profile did on each test world of a chosen model and view, and the
    policies selected for that model."""
    st.subheader("Per-world actions")
    c1, c2, c3 = st.columns(3)
    model = c1.selectbox("Model", models, key="model", bind="query-params")
    view = c2.selectbox("Release view", list(VIEWS), index=list(VIEWS).index("full_native"), key="actions_view",
                        format_func=lambda v: name("view", v),
                        help="\n".join(f"- **{name('view', v)}**: {VIEW_HELP.get(v, '')}" for v in VIEWS))
    acts = da.query(path, "policy_actions_for", (run_id, model, view, task, profile, 2000))
    domains = sorted(acts["domain"].unique())
    if domains:
        domain = c3.selectbox("Domain", domains, key="actions_domain",
                              help="The test worlds of one domain (each domain has its own selected policy).")
        acts = acts[acts["domain"] == domain]
    clarifying = task == "clarification"
    shown = pd.DataFrame({"world_id": acts["world_id"], "available": acts["available"],
                          "what happened" if clarifying else "plan": transcript(acts) if clarifying else acts["plan"],
                          "cost": acts["cost"], "oracle_cost": acts["oracle_cost"]})
    table(shown, f"policy_actions_{model}_{view}_{task}_{profile}",
          f"What the frozen {md_text(name('task', task))} policy did on each test world ({md_text(model)}, "
          f"{md_text(name('view', view))}, {md_text(name('profile', profile))}): "
          + ("the check it bought, the answer and the action (or the action alone)" if clarifying else "its plan")
          + ", the realized cost and the oracle-T bound (cost units). The policy of each domain is in the list below.")
    with st.expander(f"Selected recipient policies of {md_text(model)}"):
        pol = da.query(path, "utility_policies", (run_id,))
        pol = pol[(pol["task"] == task) & (pol["profile"] == profile) & (pol["model"] == model)]
        table(pol.drop(columns=["model", "task", "profile"]).rename(columns={"review_factor": "review factor"}),
              f"utility_policies_{model}_{task}_{profile}",
              "The candidate (and review factor for selective routing) chosen on validation per domain and view, "
              "frozen before the test split was replayed.")


def transcript(acts: pd.DataFrame) -> list[str]:
    """Per world of a clarification policy: ``check → yes → action``, or the action when no check was bought."""
    return [f"{c} → {'yes' if a else 'no'} → {f}" if isinstance(c, str) else f
            for c, a, f in zip(acts["check_name"], acts["check_answer"], acts["final_action"])]


def whatif_panel(path: str, dataset: str, run_id: str, res: pd.DataFrame, models: list[str], task: str) -> None:
    """Edit the authored costs and replay the choice and full-native recipient policies under them, beside the stored
    authored run (the chosen task's rows)."""
    with st.expander("What if the costs were different?"):
        st.caption("Edit the authored costs; the engine re-selects each recipient policy (candidate and review "
                   "factor) on validation under the new costs and replays it on test, for choice and full native. "
                   "The candidates' fits on train never depend on costs: the run's frozen fits are reused, so "
                   "the authored costs reproduce the stored run exactly.")
        onto = da.ontology(path, dataset)
        base = authored(onto)
        c1, c2, c3 = st.columns(3)
        wrong = c1.number_input("Wrong route", 0.0, 1000.0, float(base["wrong_route"]), step=1.0, key="wi_wrong",
                                help="Cost units of routing a case to the wrong class.")
        review = c2.number_input("Trusted review", 0.0, 1000.0, float(base["review"]), step=0.5, key="wi_review",
                                 help="Cost units of sending a case to trusted review (and of general inspection).")
        check = c3.number_input("Check", 0.0, 1000.0, float(base["check"]), step=0.1, key="wi_check",
                                help="Cost units of one yes/no clarification check.")
        c4, c5 = st.columns(2)
        domain = c4.selectbox("Asymmetric matrix: domain", list(onto.domains), key="wi_domain")
        classes = onto.domain(domain).classes
        cls = c5.selectbox("Column (true class)", list(classes), key="wi_class")
        authored_col = domain_costs(domain, ontology=onto).asymmetric[:, classes.index(cls)]
        col_frame = pd.DataFrame({"action": [f"route {c}" for c in classes] + ["general inspection"],
                                  "cost": authored_col})
        edited = st.data_editor(col_frame, disabled=["action"], hide_index=True, key=f"wi_col_{domain}_{cls}",
                                column_config={"cost": st.column_config.NumberColumn(min_value=0.0, step=0.1)})
        chosen = st.multiselect("Models", models, default=models, key="wi_models")
        if st.button("Replay with these costs", key="wi_go", disabled=not chosen):
            values = pd.to_numeric(edited["cost"], errors="coerce").to_numpy(float)
            if not np.isfinite(values).all() or (values < 0).any():
                st.error("Every cost in the edited column must be a number ≥ 0.")
                return
            bar = st.progress(0.0, text="fitting recipients ...")
            t0 = time.perf_counter()
            prepared = []
            for i, m in enumerate(chosen, start=1):
                prepared += da.prepared_utility(path, dataset, run_id, m, ("choice", "full_native"))
                bar.progress(i / (len(chosen) + 1), text=f"recipients of {md_text(m)} ready")
            new, new_diff = whatif(prepared, wrong_route=wrong, review=review, check=check,
                                   columns={domain: {cls: values.tolist()}})
            bar.progress(1.0, text=f"replayed in {time.perf_counter() - t0:.1f} s")
            st.session_state["wi_result"] = (new, new_diff)
        if "wi_result" in st.session_state:
            whatif_tables(*st.session_state["wi_result"], res, task)


def whatif_tables(new: pd.DataFrame, new_diff: pd.DataFrame, res: pd.DataFrame, task: str) -> None:
    """The what-if replay of the chosen task beside the stored authored run, and its non-inferiority check."""
    old = res[(res["scope"] == "pooled") & (res["profile"] == "authored") & (res["task"] == task)]
    both = new[(new["scope"] == "pooled") & (new["task"] == task)][["model", "view", "mean_cost"]].merge(
        old[["model", "view", "mean_cost"]], on=["model", "view"], suffixes=(" (what-if)", " (authored)"))
    both = both.rename(columns={"mean_cost (what-if)": "mean cost (what-if)",
                                "mean_cost (authored)": "mean cost (authored)"})
    both["change"] = as_shown(both["mean cost (what-if)"] - both["mean cost (authored)"], 3)
    costs = {c: st.column_config.NumberColumn(c, format="%+.3f" if c == "change" else "%.3f")
             for c in ("mean cost (what-if)", "mean cost (authored)", "change")}
    table(both, f"whatif_costs_{task}", f"Pooled test mean cost per case ({md_text(name('task', task))}) under the "
                                        "edited costs beside the stored authored run.", column_config=costs)
    nd = new_diff[(new_diff["view_a"] == "choice") & (new_diff["task"] == task)]
    out = pd.DataFrame({"model": nd["model"].to_numpy(),
                        "extra cost per case [95% CI]": [cost_interval(v, lo, hi, signed=True) for v, lo, hi in
                                                         zip(nd["difference"], nd["ci_low"], nd["ci_high"])],
                        "noninferior": nd["noninferior"].astype(bool).to_numpy()})
    table(out, f"whatif_noninferiority_{task}", "Choice minus full native under the edited costs, with the "
                                                f"non-inferiority mark (upper bound ≤ {DELTA}).")


page_entry(render)
