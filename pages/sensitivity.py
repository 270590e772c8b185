"""Cost-profile sensitivity: what each release is worth to the legitimate recipient under the six
fixed cost profiles, the non-inferiority check, per-domain costs, per-world actions, and a
what-if replay under edited costs (TUPLE.md section 5; paper Appendix C, F.2, I.8-I.9)."""
from __future__ import annotations

import time

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import data_access as da
from qlb.present.figures import cost_difference_heatmap
from dashboard.routing import page_entry
from dashboard.widgets import audit_page_start, chart, finding, md_text, pick_run, table
from qlb.tuple.costs import authored, domain_costs, profile_order
from qlb.tuple.release_views import VIEWS
from qlb.tuple.utility import DELTA, whatif
from qlb.tuple.workflows import TASKS

INTRO = (
    "Recipient policies (empirical prior, regularized logistic on the public fields and the "
    "released fields, or the released distribution itself) are fitted on train, chosen by "
    "validation mean cost under each cost profile, frozen, and replayed on the test worlds. "
    "Costs are benchmark units (wrong route 10, trusted review 2, check 0.4 in the authored "
    "profile); an unavailable response always goes to trusted review at 2. Intervals: 95% "
    "pair-clustered bootstrap. A lower-information release is non-inferior to full native when "
    f"the upper end of the paired interval of its extra cost is at most delta = {DELTA}."
)


def interval(v, lo, hi, digits: int = 4) -> str:
    """``v [lo, hi]`` with ``digits`` decimals."""
    return f"{v:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def render() -> None:
    """The Cost-profile sensitivity page: view minus full native cost, non-inferiority, mean cost per view and per
    domain, per-world actions, the selected policies and the what-if replay."""
    start = audit_page_start("Cost-profile sensitivity", INTRO)
    if start is None:
        return
    path, dataset = start
    run_id = pick_run(da.utility_runs(path, dataset), "sensitivity_run",
                      "No utility audit in this dataset yet: run `qlb audit` (about a minute for nine models).")
    if run_id is None:
        return
    res = da.query(path, "utility_results", (run_id,))
    diff = da.query(path, "utility_differences", (run_id,))
    c1, c2, c3 = st.columns(3)
    with c1:
        task = st.segmented_control("Task", list(TASKS), default=TASKS[0], required=True, key="task",
                                    bind="query-params")
    with c2:
        profile = st.selectbox("Cost profile", profile_order(res["profile"]), key="profile",
                               bind="query-params")
    with c3:
        lower = [v for v in VIEWS if v != "full_native" and v in set(diff["view_a"])]
        view = st.selectbox("Lower-information release", lower, index=lower.index("choice") if "choice" in lower else 0,
                            key="view", bind="query-params", help="Compared with full native on the same worlds.")

    ni = diff[(diff["profile"] == profile) & (diff["view_a"] == view)].copy()
    count = int(ni["noninferior"].sum())
    finding(f"model × task comparisons of {view} against full native are non-inferior under the {profile} profile "
            "(details below).", lead=f"{count} of {len(ni)}")

    st.subheader(f"{md_text(view)} − full native, every model × profile")
    d = diff[(diff["task"] == task) & (diff["view_a"] == view)]
    chart(cost_difference_heatmap(diff, task, view), d, f"cost_difference_{task}_{view}",
          f"Mean test cost of {md_text(view)} minus full native for the {md_text(task)} task (positive: full native "
          f"is cheaper); ✓ marks non-inferiority (upper 95% bound ≤ {DELTA}). Paper Tables 35-37. "
          f"Run {md_text(run_id)}.")

    st.subheader("Non-inferiority")
    ni["Δ cost [95% interval]"] = [f"{v:+.4f} [{lo:+.4f}, {hi:+.4f}]" for v, lo, hi in
                                   zip(ni["difference"], ni["ci_low"], ni["ci_high"])]
    ni["non-inferior"] = np.where(ni["noninferior"], "✓ yes", "no")
    wide = ni.pivot(index="model", columns="task", values="non-inferior").reindex(columns=list(TASKS)).reset_index()
    wide.columns.name = None
    table(ni[["model", "task", "Δ cost [95% interval]", "non-inferior", "n"]], f"noninferiority_{view}_{profile}",
          f"{md_text(view)} minus full native per model and task, profile {md_text(profile)}, delta = {DELTA} "
          f"(paper Appendix I.8). Run {md_text(run_id)}.")

    st.subheader("Mean cost per release view")
    pooled = res[(res["scope"] == "pooled") & (res["task"] == task) & (res["profile"] == profile)].copy()
    pooled["mean cost [95% interval]"] = [interval(v, lo, hi) for v, lo, hi in
                                          zip(pooled["mean_cost"], pooled["ci_low"], pooled["ci_high"])]
    cols = ["model", "view", "mean cost [95% interval]", "oracle_cost", "fallback_rate", "n"]
    if task == "selective":
        cols[3:3] = ["coverage", "routed_error"]
    if task == "clarification":
        cols[3:3] = ["clarification_rate"]
    table(pooled[cols], f"mean_cost_{task}_{profile}",
          f"Test mean cost of the validation-selected policy per model and view ({md_text(task)}, "
          f"{md_text(profile)}); oracle_cost is the evaluator-only oracle-T bound. Run {md_text(run_id)}.")

    st.subheader("Per domain")
    dom = res[(res["scope"].isin(list(da.ontology(path, dataset).domains))) & (res["task"] == task)
              & (res["profile"] == profile)]
    dwide = dom.pivot_table(index=["model", "view"], columns="scope", values="mean_cost").reset_index()
    dwide.columns.name = None
    table(dwide.round(4), f"mean_cost_by_domain_{task}_{profile}",
          f"Test mean cost per domain ({md_text(task)}, {md_text(profile)}). Run {md_text(run_id)}.")

    actions_browser(path, run_id, sorted(res["model"].unique()), task, profile)
    with st.expander("Selected recipient policies"):
        pol = da.query(path, "utility_policies", (run_id,))
        pol = pol[(pol["task"] == task) & (pol["profile"] == profile)]
        table(pol, f"utility_policies_{task}_{profile}",
              "The candidate (and review factor for selective routing) chosen on validation per (model, domain, "
              "view), frozen before the test split was replayed.")
    whatif_panel(path, dataset, run_id, res, sorted(res["model"].unique()))


def actions_browser(path: str, run_id: str, models: list[str], task: str, profile: str) -> None:
    """What the frozen policy of one task and profile did on each test world of a chosen model and view."""
    st.subheader("Per-world actions")
    c1, c2 = st.columns(2)
    model = c1.selectbox("Model", models, key="model", bind="query-params")
    view = c2.selectbox("View", list(VIEWS), index=4, key="actions_view")
    acts = da.query(path, "policy_actions_for", (run_id, model, view, task, profile, 2000))
    table(acts, f"policy_actions_{model}_{view}_{task}_{profile}",
          f"What the frozen {md_text(task)} policy did on each test world ({md_text(model)}, {md_text(view)}, "
          f"{md_text(profile)}): the full plan "
          "(for clarification the transcript: check, answer, action), the realized cost and the oracle bound.")


def whatif_panel(path: str, dataset: str, run_id: str, res: pd.DataFrame, models: list[str]) -> None:
    """Edit the authored costs and replay the choice and full-native recipient policies under them, beside the stored
    authored run."""
    with st.expander("What if the costs were different?"):
        st.caption("Edit the authored costs; the engine re-selects each recipient policy (candidate and review "
                   "factor) on validation under the new costs and replays it on test, for choice and full native. "
                   "The candidates' fits on train never depend on costs: the run's frozen fits are reused, so "
                   "the authored costs reproduce the stored run exactly.")
        onto = da.ontology(path, dataset)
        base = authored(onto)
        c1, c2, c3 = st.columns(3)
        wrong = c1.number_input("Wrong route", 0.0, 1000.0, float(base["wrong_route"]), step=1.0, key="wi_wrong")
        review = c2.number_input("Trusted review", 0.0, 1000.0, float(base["review"]), step=0.5, key="wi_review")
        check = c3.number_input("Check", 0.0, 1000.0, float(base["check"]), step=0.1, key="wi_check")
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
            new, new_diff = st.session_state["wi_result"]
            old = res[(res["scope"] == "pooled") & (res["profile"] == "authored")][["model", "view", "task", "mean_cost"]]
            both = new[new["scope"] == "pooled"][["model", "view", "task", "mean_cost"]].merge(
                old, on=["model", "view", "task"], suffixes=(" (what-if)", " (authored)"))
            both["change"] = both["mean_cost (what-if)"] - both["mean_cost (authored)"]
            table(both.round(4), "whatif_costs", "Pooled test mean cost under the edited costs beside the stored "
                                                 "authored run.")
            nd = new_diff[new_diff["view_a"] == "choice"][["model", "task", "difference", "ci_high", "noninferior"]]
            table(nd.round(4), "whatif_noninferiority", "Choice minus full native under the edited costs, with the "
                                                        f"non-inferiority mark (upper bound ≤ {DELTA}).")


page_entry(render)
