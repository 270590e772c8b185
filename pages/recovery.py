"""Release-view recovery: how often can an attacker tell the two registered mechanisms apart from
each release view? (TUPLE.md sections 3-4; paper Figure 4, Tables 22-24)."""
from __future__ import annotations

import time
from typing import Callable

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dashboard import data_access as da
from dashboard.routing import page_entry
from dashboard.widgets import (audit_page_start, chart, csv_bytes, finding, md_text, model_domain_grid, pick_run,
                               shown_frame, table, wide_table)
from qlb.present import names
from qlb.present.answers import status_sentence
from qlb.present.figures import recovery_figure
from qlb.present.recovery_text import class_label, class_sentence
from qlb.present.robustness import (ALL_COLUMN, SUBSET_COLUMN, both_correct_sentence, both_correct_table, nesting_note,
                                    model_tracks, tracks_sentence)
from qlb.tuple.release_views import DECODER_FAMILIES, VIEWS

INTRO = (
    "For each test world the attacker knows the public request, the authorized class and the two registered "
    "mechanisms, and sees one release view of the model's response; it must say which mechanism is the true one. "
    "50% is guessing. Attackers are fitted on the training worlds, chosen on the validation worlds, then scored "
    "once on the test worlds. Intervals: 95%, bootstrap over hypothesis pairs (2,000 resamples)."
)

# --- the attacker's candidates in words (``names.attacker_words``) ------------------------------------------------
def selected_words(selected: str, view: str) -> str:
    """The recompute's ``domain: candidate [subview]; ...`` summary with each candidate in words."""
    return "; ".join(f"{domain}: {names.attacker_words(cand, view)}" for domain, _, cand in
                     (part.partition(": ") for part in selected.split("; ")))


# --- findings -----------------------------------------------------------------------------------------------------
def span(frame: pd.DataFrame, value: str, cell: Callable[[pd.Series], str]) -> str:
    """The lowest and highest ``value`` in ``frame`` with their model, each shown by ``cell(row)``."""
    ordered = frame.sort_values([value, "model"])
    lo, hi = ordered.iloc[0], ordered.iloc[-1]
    return f"{cell(lo)} ({lo['model']})" if len(ordered) == 1 else \
        f"{cell(lo)} ({lo['model']}) to {cell(hi)} ({hi['model']})"


def comparison(diff: pd.DataFrame, view_a: str, view_b: str) -> pd.DataFrame:
    """The paired differences ``view_a`` minus ``view_b`` per model."""
    return diff[(diff["view_a"] == view_a) & (diff["view_b"] == view_b)]


def points(row: pd.Series) -> str:
    """One paired difference with its interval, in points."""
    return names.points_interval(row["difference"], row["ci_low"], row["ci_high"])


def recovery_cell(row: pd.Series) -> str:
    """One recovery with its interval, in percent."""
    return names.pct_interval(row["accuracy"], row["ci_low"], row["ci_high"])


def choice_sentence(pooled: pd.DataFrame) -> str | None:
    """Recovery from the choice alone against the 50% guess."""
    choice = pooled[pooled["view"] == "choice"]
    if choice.empty:
        return None
    above = int((choice["ci_low"] > 0.5).sum())
    return (f"Seeing only the released choice, the attacker recovers the protected mechanism in "
            f"{span(choice, 'accuracy', recovery_cell)} "
            f"of test worlds, against 50% for guessing; the 95% interval lies above 50% for "
            f"{names.how_many(above, len(choice))}.")


def full_output_sentence(diff: pd.DataFrame) -> str | None:
    """What releasing the full native output instead of the choice alone changes, model by model."""
    d = comparison(diff, "full_native", "choice")
    if d.empty:
        return None
    up, down = int((d["ci_low"] > 0).sum()), int((d["ci_high"] < 0).sum())
    text = (f"Releasing the {names.name('view', 'full_native')} output (choice, every class probability and the "
            f"confidence) instead of the choice alone changes recovery by {span(d, 'difference', points)} "
            f"points on the same test worlds; the gain is clear (interval above 0) for {names.how_many(up, len(d))}")
    return text + (f", and recovery clearly drops for {names.how_many(down, len(d))}." if down else ".")


def confidence_sentence(diff: pd.DataFrame) -> str | None:
    """What the stated confidence adds to the choice: for how many models the point estimate is higher (the paper
    comparison's rule), and for which the paired 95% interval is above 0, every one named."""
    d = comparison(diff, "choice_confidence", "choice")
    if d.empty:
        return None
    up = int((d["difference"] > 0).sum())
    clear = d[d["ci_low"] > 0].sort_values(["difference", "model"], ascending=[False, True])
    head = (f"Adding the stated confidence to the choice changes recovery by {span(d, 'difference', points)} points; "
            f"it is higher for {names.how_many(up, len(d))}")
    if clear.empty:
        return f"{head}, and the paired 95% interval is above 0 for none of them."
    listed = names.listing([f"{r['model']} {points(r)}" for _, r in clear.iterrows()])
    return (f"{head}, and the paired 95% interval is above 0 for {names.how_many(len(clear), len(d))}: "
            f"{listed} points.")


def findings(pooled: pd.DataFrame, diff: pd.DataFrame) -> None:
    """The page's findings over every model of the run: the choice against guessing, the full output against the
    choice, and what the stated confidence adds."""
    for lead, text in (("The answer's status.", status_sentence(pooled)),
                       ("The choice alone.", choice_sentence(pooled)),
                       ("The full output.", full_output_sentence(diff)),
                       ("The stated confidence.", confidence_sentence(diff))):
        if text is not None:
            finding(text, lead)


# --- the page -----------------------------------------------------------------------------------------------------
def view_picker(key: str, label: str = "Release view", default: str = "full_native") -> str:
    """A release-view selectbox (raw view names as options, display names shown)."""
    return st.selectbox(label, list(VIEWS), index=list(VIEWS).index(default), key=key,
                        format_func=lambda v: names.name("view", v),
                        help=" ".join(f"{names.name('view', v)}: {names.VIEW_HELP[v]}" for v in VIEWS))


def recovery_chart(pooled: pd.DataFrame) -> go.Figure:
    """Paper Figure 4 (views under their display names), with the model axis titled."""
    return recovery_figure(pooled).update_layout(xaxis_title="model")


def render() -> None:
    """The Release-view recovery page: findings, pooled recovery per view (Figure 4), one view model by model with
    coarse accuracy, log loss and domains (Tables 22, 24), the paired view differences (Table 23), the selected
    attackers, the predictions, the recompute panel and the robustness checks (Tables 29, 30)."""
    start = audit_page_start("Release-view recovery", INTRO)
    if start is None:
        return
    path, dataset = start
    run_id = pick_run(da.decoding_runs(path, dataset), "recovery_run", context=da.run_context(path, dataset), empty=
                      "No recovery audit in this dataset yet: run `qlb audit --jobs 2` (a few minutes for nine models).")
    if run_id is None:
        return
    rec = da.query(path, "recovery_results", (run_id,))
    diff = da.query(path, "recovery_differences", (run_id,))
    findings(rec[rec["scope"] == "pooled"], diff)
    models = sorted(rec["model"].unique())
    chosen = st.multiselect("Models", models, default=models, key="recovery_models")
    rec = rec[rec["model"].isin(chosen)]
    pooled = rec[rec["scope"] == "pooled"]
    worlds = f"{int(pooled['n'].max()):,} test worlds per model" if not pooled.empty else "no test worlds"

    st.subheader("Secret recovery per release view")
    chart(recovery_chart(pooled), shown_frame(pooled)[0], "recovery_by_view",
          f"Secret recovery per model and release view ({worlds}), with 95% intervals; dashed line: 50%, "
          f"guessing. Run {md_text(run_id)}. (The TUPLE paper's Figure 4.)")
    inverted = nesting_note(pooled)
    if inverted:
        st.caption(md_text(inverted))
    one_view_tables(path, dataset, run_id, rec, worlds, len(models))
    differences_table(diff[diff["model"].isin(chosen)], run_id)
    selections_table(path, run_id, chosen or models)
    predictions_browser(path, run_id, chosen or models)
    recompute_panel(path, dataset, run_id, pooled, chosen or models)
    robustness_section(path, run_id, pooled[pooled["view"] == "full_native"], chosen or models)


def recovery_cells(frame: pd.DataFrame) -> list[str]:
    """Each row's recovery (or accuracy) with its interval; N/A where a row is missing."""
    return [recovery_cell(r) for _, r in frame.iterrows()]


POOLED_COLUMNS = {
    "secret recovery": st.column_config.TextColumn(help=f"{names.COLUMNS['accuracy'].help} With its 95% interval."),
    "log loss": st.column_config.NumberColumn(format="%.3f", help=names.COLUMNS["log_loss"].help),
    "domain average": st.column_config.TextColumn(
        help="Recovery per domain, averaged with each domain weighted equally; with its 95% interval."),
    "coarse accuracy": st.column_config.TextColumn(
        help="How often the released choice is the true authorized class (the same for every view); with its 95% "
             "interval."),
}


def one_view_tables(path: str, dataset: str, run_id: str, rec: pd.DataFrame, worlds: str, n_models: int) -> None:
    """Paper Tables 22 and 24 for one picked release view: per model, the test recovery (all domains and the domain
    average), the attacker's log loss and the coarse accuracy; then the recovery per domain (a row per model, or per
    domain when the run's ``n_models`` are fewer than its domains)."""
    st.subheader("One release view, model by model")
    view = view_picker("recovery_view")
    here = rec[rec["view"] == view]
    pooled = here[here["scope"] == "pooled"].set_index("model")
    coarse = da.query(path, "coarse_accuracy", (run_id,))
    shown = pd.DataFrame({
        "model": pooled.index,
        "secret recovery": recovery_cells(pooled),
        "domain average": recovery_cells(here[here["scope"] == "macro"].set_index("model").reindex(pooled.index)),
        "log_loss": pooled["log_loss"].to_numpy(),
        "coarse accuracy": recovery_cells(coarse[coarse["scope"] == "pooled"].set_index("model").reindex(pooled.index)),
    })
    view_name = md_text(names.name("view", view))
    table(shown, "recovery_pooled",
          f"Per model for the {view_name} view, each rate with its 95% interval in brackets: test recovery over "
          f"all domains and averaged over domains, the attacker's mean test log loss (natural log; 0.693 is "
          f"guessing) and the coarse accuracy (the released choice is the true class; an unavailable response counts "
          f"as wrong). {worlds.capitalize()}; run {md_text(run_id)}. (The TUPLE paper's Table 22.)",
          column_config=POOLED_COLUMNS)
    domains = here[~here["scope"].isin(["pooled", "macro"])]
    wide = model_domain_grid(domains.assign(cell=recovery_cells(domains)), n_models, domain="scope")
    table(wide, "recovery_by_domain",
          f"Test recovery per domain for the {view_name} view, with its 95% interval. Run {md_text(run_id)}. "
          f"(The TUPLE paper's Table 24.)")
    by_class = da.recovery_by_class(path, dataset, run_id, view)
    by_class = by_class[by_class["model"].isin(pooled.index)]
    sentence = class_sentence(by_class, names.name("view", view))
    if sentence is not None:
        finding(sentence, lead="Which decisions leak.")
        grid = model_domain_grid(by_class.assign(cell=recovery_cells(by_class), decision=class_label(by_class)),
                                 n_models, domain="decision", label="decision class")
        wide_table(grid, "recovery_by_class",
                   f"Test recovery per decision class (the authorized class both worlds of a pair share) for the "
                   f"{view_name} view, with its 95% pair-clustered interval widened to cover Wilson's over the "
                   f"class's pairs (a class has few pairs: the bootstrap alone is too narrow there, and has no width "
                   f"at 0% or 100%): a domain's average can hide a leak in one of its classes. Run {md_text(run_id)}.")


def verdict(row: pd.Series) -> str:
    """Whether a paired difference is clear: its 95% interval above 0, below 0, or across 0."""
    if row["ci_low"] > 0:
        return "higher (interval above 0)"
    if row["ci_high"] < 0:
        return "lower (interval below 0)"
    return "no clear difference"


def comparison_name(pair: str) -> str:
    """``full_native:choice`` as ``full native vs choice``."""
    a, _, b = pair.partition(":")
    return f"{names.name('view', a)} vs {names.name('view', b)}"


def differences_table(diff: pd.DataFrame, run_id: str) -> None:
    """Paper Table 23 for one picked comparison: view A minus view B per model on the same test worlds, with the
    paired interval and whether the difference is clear."""
    st.subheader("Paired differences between views")
    pairs = list(dict.fromkeys(f"{a}:{b}" for a, b in zip(diff["view_a"], diff["view_b"])))
    if not pairs:
        st.info("This run stored no paired differences.")
        return
    default = "full_native:choice" if "full_native:choice" in pairs else pairs[0]
    pair = st.selectbox("Comparison", pairs, index=pairs.index(default), key="recovery_comparison",
                        format_func=comparison_name,
                        help="Recovery with the first view minus recovery with the second, on the same test worlds.")
    a, _, b = pair.partition(":")
    d = comparison(diff, a, b)
    shown = pd.DataFrame({"model": d["model"], "difference [95% CI]": [points(r) for _, r in d.iterrows()],
                          "reading": [verdict(r) for _, r in d.iterrows()]})
    table(shown, "recovery_differences",
          f"Recovery with {md_text(names.name('view', a))} minus recovery with "
          f"{md_text(names.name('view', b))}, in percentage points, on the same test worlds and the same pair "
          f"resamples (paired 95% interval). Run {md_text(run_id)}. (The TUPLE paper's Table 23.)",
          column_config={"difference [95% CI]": st.column_config.TextColumn(
              help="In percentage points; positive: the first view gives the attacker more.")})


def selections_table(path: str, run_id: str, models: list[str]) -> None:
    """The validation-selected attacker of each release view for one model and domain, in words (a list: the
    descriptions are too long for a table's cells), and the run's selections as a CSV."""
    st.subheader("Which attacker was selected")
    sel = da.query(path, "decoder_selections", (run_id,))
    c1, c2 = st.columns(2)
    model = c1.selectbox("Model", models, key="sel_model")
    domain = c2.selectbox("Domain", sorted(sel.loc[sel["model"] == model, "domain"].unique()), key="sel_domain")
    here = sel[(sel["model"] == model) & (sel["domain"] == domain)].set_index("view").reindex(VIEWS).dropna(
        subset=["candidate"]).reset_index()
    st.caption("The result is the test recovery shown above; the validation score below only chose the attacker, "
               "on worlds the test never uses.")
    st.markdown("\n".join(
        f"- **{md_text(names.name('view', r.view))}**: "
        f"{md_text(names.attacker_words(f'{r.candidate} [{r.candidate_view}]', r.view))}. Validation score (chose the "
        f"attacker; not the result): {names.pct(r.val_accuracy)} recovery, log loss {r.val_log_loss:.3f}; best of "
        f"{int(r.n_candidates):,} candidates."
        for r in here.itertuples()))
    cols = st.columns([4, 1])
    cols[0].caption(f"For {md_text(model)} in {md_text(domain)}: per release view, the attacker with the best "
                    f"validation score (recovery on the validation worlds, then log loss), frozen before the test "
                    f"worlds were scored. Run "
                    f"{md_text(run_id)}.")
    cols[1].download_button("CSV", csv_bytes(shown_frame(sel.assign(
        candidate=[names.attacker_words(c, v) for c, v in zip(sel["candidate"], sel["view"])]))[0]),
        file_name="attacker_selections.csv", mime="text/csv", key="dl_attacker_selections", icon=":material/download:",
        help="Download every model's, domain's and view's selected attacker as CSV.")


PREDICTION_COLUMNS = {
    "P(second hypothesis)": st.column_config.NumberColumn(
        format="%.3f", help="The attacker's probability that the true mechanism is the second of the pair's two "
                            "(sorted) hypotheses; above 0.5 names it."),
    "log loss": st.column_config.NumberColumn(format="%.3f", help=names.COLUMNS["log_loss"].help),
}


def predictions_browser(path: str, run_id: str, models: list[str]) -> None:
    """The attacker's probability per test world of the run for one chosen model, view and domain."""
    with st.expander("Per-world predictions"):
        c1, c2, c3 = st.columns(3)
        model = c1.selectbox("Model", models, key="pred_model")
        with c2:
            view = view_picker("pred_view")
        preds = da.query(path, "decoder_predictions_for", (run_id, model, view, 2000))
        domain = c3.selectbox("Domain", sorted(preds["domain"].unique()), key="pred_domain")
        preds = preds[preds["domain"] == domain]
        attacker = names.attacker_words(preds["candidate"].iloc[0], view) if not preds.empty else "none"
        caption = (f"The attacker's probability of the second hypothesis per test world for {md_text(model)} / "
                   f"{md_text(names.name('view', view))} in {md_text(domain)}. Attacker: {md_text(attacker)}. "
                   f"Run {md_text(run_id)}.")
        table(preds.drop(columns=["candidate", "domain"]), "attacker_predictions", caption,
              column_config=PREDICTION_COLUMNS)


def recompute_panel(path: str, dataset: str, run_id: str, pooled: pd.DataFrame, models: list[str]) -> None:
    """Rerun the recovery audit of one model and view with chosen attacker families and a new bootstrap (not
    stored), shown beside the stored result."""
    with st.expander("Recompute one model and view"):
        st.caption(
            "Reruns the recovery audit for one model and view (all domains) with the attacker families you "
            "choose and a new bootstrap, without storing it. By default it starts from the run's fitted "
            "configurations: each is fitted on its own, so keeping some families gives exactly what a refit with "
            "those families gives; the combinations, the validation selection and the test scoring are rebuilt. "
            "Switch on *Refit from scratch* to fit every configuration again (minutes per view with the random "
            "forest).")
        available = da.run_decoder_families(path, dataset, run_id)
        c1, c2 = st.columns(2)
        model = c1.selectbox("Model", models, key="rc_model")
        with c2:
            view = view_picker("rc_view", default="choice")
        families = st.multiselect("Attacker families", DECODER_FAMILIES, default=available, key="rc_families",
                                  format_func=names.FAMILY_NAMES.get,
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
            recompute(path, dataset, run_id, pooled, model, view, families, available, refit, int(n_boot), int(seed))
        if "rc_result" in st.session_state:
            result, what, selected = st.session_state["rc_result"]
            table(result, "recovery_recompute",
                  f"The recomputed result beside the stored one: test recovery of {what} over all domains. "
                  f"Selected attacker per domain (recomputed): {md_text(selected)}.")


def recompute(path: str, dataset: str, run_id: str, pooled: pd.DataFrame, model: str, view: str,
              families: list[str], available: list[str], refit: bool, n_boot: int, seed: int) -> None:
    """Run the recompute with a progress bar and keep its result beside the stored one in the session."""
    bar = st.progress(0.0, text="fitting the attackers ...")
    t0 = time.perf_counter()
    try:
        new, sel = da.recompute_recovery(path, dataset, run_id, model, view, families, refit, n_boot, seed,
                                         lambda frac, text: bar.progress(frac, text=md_text(text)))
    except ValueError as exc:      # the dataset changed since the run: its stored fits do not fit it
        bar.empty()
        st.error(f"{md_text(exc)}. The data changed after run {md_text(run_id)}; switch on *Refit from "
                 "scratch*.")
        return
    how = "refit" if refit else "from the run's fits"
    bar.progress(1.0, text=f"done in {time.perf_counter() - t0:.1f} s ({how})")
    rows = [{"result": f"recomputed ({how})", "attacker families": names.family_words(families),
             "secret recovery [95% CI]": names.pct_interval(new["accuracy"], new["ci_low"], new["ci_high"])}]
    stored = pooled[(pooled["model"] == model) & (pooled["view"] == view)]
    if not stored.empty:
        s = stored.iloc[0]
        rows.append({"result": "stored run", "attacker families": names.family_words(available),
                     "secret recovery [95% CI]": names.pct_interval(s["accuracy"], s["ci_low"], s["ci_high"])})
    st.session_state["rc_result"] = (pd.DataFrame(rows), f"{md_text(model)} / {md_text(names.name('view', view))}",
                                     selected_words(sel, view))


TRACKS_HELP = "\n".join(f"- **{names.TRACK_NAMES[t]}**: {h}" for t, h in names.TRACK_HELP.items())


def robustness_section(path: str, run_id: str, full_native: pd.DataFrame, models: list[str]) -> None:
    """Paper Tables 29 and 30, folded and computed only when opened: the computed sentences, the frozen full-native
    attacker within the pairs both of whose coarse answers are correct, and the saved full-native attack tracks per
    model (descriptive)."""
    # computed only while open (the expander reruns the page when toggled): about 2.6 s for nine models
    section = st.expander("Robustness checks (the TUPLE paper's Tables 29 and 30)", key="recovery_robustness",
                          on_change="rerun")
    if not section.open:
        return
    with section:
        with st.spinner("Computing from the run's stored attacker scores ..."):
            checks = da.robustness_checks(path, run_id)
        both = checks.both_correct[checks.both_correct["model"].isin(models)]
        tracks = checks.tracks[checks.tracks["model"].isin(models)]
        for lead, text in (("Coarse errors.", both_correct_sentence(both, full_native)),
                           ("Attack selection.", tracks_sentence(tracks))):
            if text is not None:
                st.markdown(f"**{lead}** {md_text(text)}")
        if checks.data_changed:
            st.info("The dataset changed after this run: the subset below reads today's responses.")
        if both.empty:
            st.info("This run has no full-native test predictions to check.")
            return
        table(both_correct_table(both, full_native), "recovery_both_correct",
              f"Recovery of the already-frozen full-native attacker within the test pairs whose released choice is "
              f"the true coarse class in both worlds (an unavailable answer counts as wrong), beside its recovery on "
              f"all test worlds. Worlds count both worlds of each kept pair. No attacker is refitted or reselected; "
              f"the subset is chosen after the fact from the answers, so it is descriptive, not a new test. Run "
              f"{md_text(run_id)}. (The TUPLE paper's Table 29.)",
              column_config={SUBSET_COLUMN: st.column_config.TextColumn(help="With its 95% interval (bootstrap over "
                                                                             "the kept pairs)."),
                             ALL_COLUMN: st.column_config.TextColumn(help="The stored result, with its 95% interval.")})
        if tracks.empty:
            st.info("This run stored no per-configuration attacker scores (runs before migration 007), so the attack "
                    "tracks cannot be rebuilt; a new `qlb audit` stores them.")
            return
        model = st.selectbox("Attack tracks of", sorted(tracks["model"].unique()), key="tracks_model",
                             help="The attack tracks of one model at a time; the sentence above covers every "
                                  "model. (The TUPLE paper's Table 30.)")
        table(model_tracks(tracks, model), f"recovery_tracks_{model}",
              f"Test recovery of the {md_text(names.name('view', 'full_native'))} release of {md_text(model)} "
              f"under each saved attack track, on the same test worlds and pair resamples (95% interval). The "
              f"selected attacker is the one the run froze (it may read a nested subview); each best configuration "
              f"is chosen per domain on validation; the averages and the stack combine every configuration. "
              f"Descriptive: no track is chosen by its test value. Run {md_text(run_id)}. (The TUPLE paper's "
              f"Table 30.)",
              column_config={"attack track": st.column_config.TextColumn(help=TRACKS_HELP)})


page_entry(render)
