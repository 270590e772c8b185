"""Release-view recovery: how often can an attacker tell the two registered mechanisms apart from
each release view? (TUPLE.md sections 3-4; paper Figure 4, Tables 23-24)."""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from dashboard import data_access as da
from qlb.present.figures import recovery_figure
from dashboard.routing import page_entry
from dashboard.widgets import audit_page_start, chart, md_text, pick_run, percent_columns, table
from qlb.tuple.release_views import DECODER_FAMILIES, VIEWS



INTRO = (
    "For each test world the attacker knows the public request, the authorized class T and the "
    "two registered mechanisms, and sees one release view of the model's response; it must say "
    "which mechanism is the true one. 50% is guessing. Decoders are fitted on train (4-fold "
    "grouped by pair), selected on validation, frozen, then scored once on test. Intervals: 95% "
    "pair-clustered bootstrap, 2,000 resamples."
)


def render() -> None:
    """The Release-view recovery page: pooled recovery per view (Figure 4), paired view differences, recovery per
    domain, the selected decoders, and the predictions and recompute panels."""
    start = audit_page_start("Release-view recovery", INTRO)
    if start is None:
        return
    path, dataset = start
    run_id = pick_run(da.decoding_runs(path, dataset), "recovery_run",
                      "No decoding audit in this dataset yet: run `qlb audit --jobs 2` (a few minutes for nine models).")
    if run_id is None:
        return
    rec = da.query(path, "recovery_results", (run_id,))
    models = sorted(rec["model"].unique())
    chosen = st.multiselect("Models", models, default=models, key="recovery_models")
    rec = rec[rec["model"].isin(chosen)]
    pooled = rec[rec["scope"] == "pooled"]

    st.subheader("Recovery per release view")
    chart(recovery_figure(pooled), pooled, "recovery_by_view",
          f"Paper Figure 4: pooled test recovery (288 worlds per model in the reference design) per model and "
          f"release view with 95% pair-clustered intervals; dashed line: 50%. Run {md_text(run_id)}.")
    wide = pooled.pivot(index="model", columns="view", values="accuracy").reindex(columns=list(VIEWS))
    views = [v for v in VIEWS if v in wide.columns]
    coarse = da.query(path, "coarse_accuracy", (run_id,))
    coarse = coarse[coarse["scope"] == "pooled"].set_index("model")
    shown = percent_columns(wide.reset_index(), views, 1)
    if not coarse.empty:
        shown.insert(1, "coarse accuracy [95%]", [
            "N/A" if m not in coarse.index else
            f"{100 * coarse.at[m, 'accuracy']:.1f}% [{100 * coarse.at[m, 'ci_low']:.1f}, {100 * coarse.at[m, 'ci_high']:.1f}]"
            for m in shown["model"]])
    loss = pooled[pooled["view"] == "full_native"].set_index("model")["log_loss"]
    shown["full native log loss"] = [f"{loss[m]:.3f}" if m in loss.index and pd.notna(loss[m]) else "N/A"
                                     for m in shown["model"]]
    table(shown, "recovery_pooled",
          f"Paper Table 22: test coarse accuracy (the released choice is the true class; an unavailable response "
          f"counts as wrong) and pooled test recovery per release view, with the full native attacker's mean test "
          f"log loss (nats; ln 2 = 0.693 is guessing). Run {md_text(run_id)}.")

    st.subheader("Paired differences between views")
    diff = da.query(path, "recovery_differences", (run_id,))
    diff = diff[diff["model"].isin(chosen)].copy()
    diff["difference (points)"] = [f"{100 * d:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"
                                   for d, lo, hi in zip(diff["difference"], diff["ci_low"], diff["ci_high"])]
    diff["comparison"] = diff["view_a"] + " − " + diff["view_b"]
    table(diff[["model", "comparison", "difference (points)", "n"]], "recovery_differences",
          f"Paper Table 23: view A minus view B on the same test worlds, same pair resamples. "
          f"Run {md_text(run_id)}.")

    st.subheader("By domain")
    dom = rec[~rec["scope"].isin(["pooled"])]
    dom_wide = dom.pivot_table(index=["model", "view"], columns="scope", values="accuracy").reset_index()
    dom_wide.columns.name = None
    cols = [c for c in dom_wide.columns if c not in ("model", "view")]
    table(percent_columns(dom_wide, cols, 1), "recovery_by_domain",
          f"Paper Table 24: test recovery per domain and the domain macro-average. Run {md_text(run_id)}.")

    st.subheader("Selected decoders")
    sel = da.query(path, "decoder_selections", (run_id,))
    sel = sel[sel["model"].isin(chosen)]
    table(sel, "decoder_selections", "The validation-selected candidate per (model, domain, view), frozen before "
                                     "the test split was scored (test_used_for_selection = false).")
    predictions_browser(path, run_id, chosen or models)
    recompute_panel(path, dataset, run_id, pooled, chosen or models)


def predictions_browser(path: str, run_id: str, models: list[str]) -> None:
    """P(s1) per test world of the run for one chosen model and view."""
    st.subheader("Per-world predictions")
    c1, c2 = st.columns(2)
    model = c1.selectbox("Model", models, key="pred_model")
    view = c2.selectbox("View", list(VIEWS), index=4, key="pred_view")
    preds = da.query(path, "decoder_predictions_for", (run_id, model, view, 2000))
    table(preds, "decoder_predictions", f"P(s1) per test world for {md_text(model)} / {md_text(view)}; s1 is the "
                                        f"second of the sorted hypotheses. Run {md_text(run_id)}.")


def recompute_panel(path: str, dataset: str, run_id: str, pooled: pd.DataFrame, models: list[str]) -> None:
    """Rerun the decoding of one model and view with chosen decoder families and a new bootstrap (not stored), shown
    beside the stored result."""
    with st.expander("Recompute one model and view"):
        st.caption(
            "Reruns the decoding protocol for one model and view (all three domains) with the decoder "
            "families you choose and a new bootstrap, without storing it. By default it starts from the "
            "run's fitted base configurations: each configuration is fitted on its own, so keeping some "
            "families gives exactly what a refit with those families gives; the ensembles, the stack, the "
            "validation selection and the test scoring are rebuilt. Switch on *Refit* to fit every "
            "configuration again (minutes per view with the forest family).")
        available = da.run_decoder_families(path, dataset, run_id)
        c1, c2 = st.columns(2)
        model = c1.selectbox("Model", models, key="rc_model")
        view = c2.selectbox("View", list(VIEWS), index=1, key="rc_view")
        families = st.multiselect("Decoder families", DECODER_FAMILIES, default=available, key="rc_families",
                                  help="The attacker's library: candidates are built from these families only.")
        c3, c4, c5 = st.columns(3)
        n_boot = c3.number_input("Bootstrap resamples", 200, 5000, 2000, step=100, key="rc_boot")
        seed = c4.number_input("Seed", 0, 2**31 - 1, 20261011, key="rc_seed", help="Seed of the pair resamples.")
        can_reuse = da.has_config_scores(path, dataset, run_id) and set(families) <= set(available)
        refit = c5.toggle("Refit from scratch", value=not can_reuse, disabled=not can_reuse, key="rc_refit",
                          help="Fit every configuration again instead of reusing the run's fits" +
                               ("" if can_reuse else " (required: the run has no stored configuration scores "
                                                     "for these families)")) or not can_reuse
        if st.button("Recompute", key="rc_go", disabled=not families):
            bar = st.progress(0.0, text="decoding ...")
            t0 = time.perf_counter()
            try:
                new, sel = da.recompute_recovery(path, dataset, run_id, model, view, families, refit, int(n_boot),
                                                 int(seed), lambda frac, text: bar.progress(frac, text=md_text(text)))
            except ValueError as exc:      # the dataset changed since the run: its stored fits do not fit it
                bar.empty()
                st.error(f"{md_text(exc)}. The data changed after run {md_text(run_id)}; switch on *Refit from "
                         "scratch*.")
                return
            stored = pooled[(pooled["model"] == model) & (pooled["view"] == view)]
            how = "refit" if refit else "from the run's fits"
            bar.progress(1.0, text=f"done in {time.perf_counter() - t0:.1f} s ({how})")
            rows = [{"result": f"recomputed ({how})", "families": ", ".join(families), "recovery": new["accuracy"],
                     "ci_low": new["ci_low"], "ci_high": new["ci_high"], "selected": sel}]
            if not stored.empty:
                s = stored.iloc[0]
                rows.append({"result": f"stored run {run_id}", "families": ", ".join(available),
                             "recovery": s["accuracy"], "ci_low": s["ci_low"], "ci_high": s["ci_high"],
                             "selected": ""})
            st.session_state["rc_result"] = (pd.DataFrame(rows), f"{md_text(model)} / {md_text(view)}")
        if "rc_result" in st.session_state:
            result, what = st.session_state["rc_result"]
            table(percent_columns(result, ["recovery", "ci_low", "ci_high"], 1), "recovery_recompute",
                  f"The recomputed result beside the stored one: pooled test recovery of {what}.")


page_entry(render)
