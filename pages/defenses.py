"""Defenses and WCPQ verification: can the release be made less revealing without changing what
the recipient does? (TUPLE.md section 7; paper Section 6, Table 3, Figure 10, Table 13.)"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import data_access as da
from qlb.tuple.defenses import static_grid
from qlb.present.defense_notes import (COST_WHY, NATIVE_ATTACKED, codeword_note, control_sentence, method_points,
                                       recovery_label, relabel_native, release_column, restricted_sentence,
                                       temperature_note)
from qlb.present.figures import DEFENSE_ORDER as ORDER, defense_figure, learned_figure
from qlb.present.learned import (figure11_caption, learned_points, learned_sentence, proxy_table, table15,
                                 verification_table)
from qlb.present.names import (TASK_HELP, cost_interval, family_words, how_many, name, pct, pct_interval,
                               points_interval, profile_descriptions)
from qlb.tuple.release_views import DECODER_FAMILIES
from qlb.present.palette import model_colours
from dashboard.routing import page_entry
from dashboard.widgets import audit_page_start, chart, finding, md_text, pick_run, profile_help, table, wide_table
from qlb.tuple.costs import profile_order
from qlb.tuple.recipients import candidate_ranks
from qlb.tuple.workflows import TASKS, action_labels, policy_count, run_task

INTRO = (
    "This page tests ways of blurring the probabilities a model releases (rounding them, keeping only the top two, "
    "flattening them, adding noise) and measures how often an attacker can still recover the protected mechanism from "
    "each. WCPQ, the workflow-constrained quantizer, is built so that the downstream recipient's decisions never "
    "change: it swaps each response for a stand-in on which every recipient policy acts exactly as on the original."
)

CODEBOOKS = {"wcpq": "main", "wcpq grid": "grid only"}


def render() -> None:
    """The Defenses page: which models the run defended, findings on recovery and WCPQ, recovery per defense (Figure 10,
    Table 3), WCPQ verification (Table 13), the recipient's cost per defense and the world inspector."""
    start = audit_page_start("Defenses and WCPQ verification", INTRO)
    if start is None:
        return
    path, dataset = start
    ontology = da.ontology(path, dataset)
    policies = policy_count(ontology)
    with st.expander("How the defenses are evaluated"):
        st.markdown("\n".join(f"- {point}" for point in method_points(policies, len(TASKS))))
    run_id = pick_run(da.defense_runs(path, dataset), "defenses_run", context=da.run_context(path, dataset), empty=
                      "No defense audit in this dataset yet: run `qlb audit --jobs 2` (it needs the recovery and "
                      "the utility audits, which it runs too).")
    if run_id is None:
        return
    res = da.query(path, "defense_results", (run_id,))
    costs = da.query(path, "defense_costs", (run_id,))
    models = sorted(res["model"].unique())
    everyone = da.query(path, "models_with_responses", (dataset,))["model"]
    main = res[res["defense"].isin(ORDER)]
    wcpq = res[res["defense"].isin(list(CODEBOOKS))].sort_values(["model", "defense"])
    params = da.run_parameters(path, dataset, run_id)
    findings(main, wcpq, models, len(set(everyone)), res, policies)
    control_note(da.query(path, "recovery_results", (run_id,)), main, params.get("defense_families"),
                 params.get("families") or list(DECODER_FAMILIES), policies)

    shown = table_models(models)
    recovery_section(path, dataset, run_id, res, main, model_colours(everyone), shown)
    verification_section(wcpq, run_id, policies)
    learned_section(da.query(path, "learned_wcpq", (run_id,)), res, costs, run_id, policies)
    cost_section(costs[costs["model"].isin(shown)], run_id, policies, profile_descriptions(ontology))
    inspector(path, dataset, run_id, models)


TABLE_MODELS = 4      # more defended models than this: the per-model tables show a chosen few (<= 30 rows each)


def table_models(models: list[str]) -> list[str]:
    """The models the per-model tables show: all of them for a few, else the ones chosen in a picker
    (the first ``TABLE_MODELS`` by default); the chart and the WCPQ verification always show every model."""
    if len(models) <= TABLE_MODELS:
        return models
    return st.multiselect(
        "Models in the tables", models, default=models, key="defense_models",
        help=f"The recovery and cost tables list one row per model and defense; with {len(models)} defended models "
             "they can be narrowed to the models chosen here. The chart and the WCPQ verification show every "
             "model.") or models


def findings(main: pd.DataFrame, wcpq: pd.DataFrame, models: list[str], n_models: int,
             every: pd.DataFrame | None = None, policies: int = policy_count()) -> None:
    """Three sentences: which models the run defended, which defenses lower recovery (and the largest drop, with its
    interval, over ``every`` defense result of the run, learned variants included), and what WCPQ does to recovery
    and to the recipient."""
    if len(models) >= n_models:
        scope = ("This run defended the dataset's one model." if n_models == 1
                 else f"This run defended every one of the dataset's {n_models} models.")
    else:
        these = "this model" if len(models) == 1 else "these models"
        scope = (f"This run defended {len(models)} of the dataset's {n_models} models ({', '.join(models)}); "
                 f"everything on this page is about {these} only (qlb audit --defense-models chooses them).")
    finding(scope, lead="Scope.")
    finding(recovery_sentence(main, every), lead="Which defenses lower recovery.")
    if not wcpq.empty:
        finding(wcpq_sentence(wcpq[wcpq["defense"] == "wcpq"] if (wcpq["defense"] == "wcpq").any() else wcpq, policies),
                lead="What WCPQ costs.")


def control_note(recovery: pd.DataFrame, main: pd.DataFrame, families: list[str] | None = None,
                 decoding: list[str] | None = None, policies: int = policy_count()) -> None:
    """Right after the findings, a short callout: why this page's native figure (``NATIVE_ATTACKED``) is not the
    full-native figure of the Release-view recovery page, both from the run (``control_sentence``); and a warning
    when the defense-aware attacker uses fewer attacker families than the recovery audit's ``decoding``."""
    said = control_sentence(recovery, main, policies, md_text)
    if said:
        st.info(f"**Two “full native” recovery figures.** {said}", icon=":material/info:")
    restricted = restricted_sentence(families, [f for f in DECODER_FAMILIES if f in (decoding or DECODER_FAMILIES)],
                                     md_text)
    if restricted:
        st.warning(restricted, icon=":material/warning:")


CONTROLS = ("native", "wcpq grid")      # the native release and WCPQ's grid-only codebook: controls, not defenses


def recovery_sentence(main: pd.DataFrame, every: pd.DataFrame | None = None) -> str:
    """Per defense, for how many models recovery falls against the native control (paired 95% interval below zero);
    the largest fall with its interval and the lowest defended recovery, over every defense of ``every`` (the
    learned WCPQ variants too; default ``main``) but never a control; and whether that reaches guessing."""
    defended = main[~main["defense"].isin(CONTROLS)].dropna(subset=["diff_vs_native"])
    if defended.empty:
        return "The run holds no defense other than the native control."
    pool = defended if every is None else every[~every["defense"].isin(CONTROLS)
                                                & ~every["defense"].str.startswith("noise seed")   # the mean stands
                                                ].dropna(subset=["diff_vs_native"])
    n = defended["model"].nunique()
    falls = {d: int((g["diff_ci_high"] < 0).sum()) for d, g in defended.groupby("defense")}
    ordered = [d for d in ORDER if d in falls]
    some = [f"{how_many(falls[d], n)} under {name('defense', d)}" for d in ordered if falls[d]]
    none = [name("defense", d) for d in ordered if not falls[d]]
    text = "Compared with the native control on the same test worlds, recovery falls (paired 95% interval below zero) "
    text += (f"for {join(some)}" + (f", and for none under {join(none, 'or')}" if none else "") if some
             else "for no model under any defense")
    big = pool.sort_values(["diff_vs_native", "model"]).iloc[0]
    if big["diff_vs_native"] < 0:
        fall = points_interval(big["diff_vs_native"], big["diff_ci_low"], big["diff_ci_high"])
        text += (f". The largest fall: {fall} points ({name('defense', big['defense'])}, {big['model']})")
    low = pool.sort_values(["accuracy", "model"]).iloc[0]
    reach = "is still above guessing (50%)" if low["ci_low"] > 0.5 else "reaches guessing (50%) within its interval"
    return (text + f". The lowest defended recovery, {pct_interval(low['accuracy'], low['ci_low'], low['ci_high'])} "
            f"({name('defense', low['defense'])}, {low['model']}), {reach}.")


def join(items: list[str], word: str = "and") -> str:
    """``a; b and c`` (or ``a; b or c``): semicolons, as defense names hold commas."""
    return items[0] if len(items) == 1 else f"{'; '.join(items[:-1])} {word} {items[-1]}"


def wcpq_sentence(w: pd.DataFrame, policies: int = policy_count()) -> str:
    """WCPQ's change in recovery per model (points, interval), its coverage range and whether the recipient's plans and
    costs are unchanged."""
    if len(w) <= TABLE_MODELS:
        changes = ", ".join(f"{points_interval(r.diff_vs_native, r.diff_ci_low, r.diff_ci_high)} points for {r.model}"
                            for r in w.itertuples(index=False))
    else:      # many models: the range, and for how many the paired interval is below zero (each one is in Table 3)
        low = w.loc[w["diff_vs_native"].idxmin()]
        high = w.loc[w["diff_vs_native"].idxmax()]
        changes = (f"{points_interval(low.diff_vs_native, low.diff_ci_low, low.diff_ci_high)} points ({low.model}) to "
                   f"{points_interval(high.diff_vs_native, high.diff_ci_low, high.diff_ci_high)} points ({high.model}), "
                   f"lower for {int((w['diff_ci_high'] < 0).sum())} of {len(w)} models (paired 95% interval below "
                   f"zero)")
    cover = (pct(w["coverage"].min()) if w["coverage"].min() == w["coverage"].max()
             else f"{pct(w['coverage'].min())} to {pct(w['coverage'].max())}")
    agree, compared = int(w["plan_agreement"].sum()), int(w["plan_comparisons"].sum())
    if verified(w):
        cost = (f"costs the recipient nothing: all {compared:,} response–policy plans agree and no test world's cost "
                f"moves under any of the {policies} frozen policies")
    else:
        cost = (f"verification FAILED: {compared - agree:,} of {compared:,} response–policy plans differ, and a "
                f"world's cost moves by up to {w['max_abs_cost_diff'].max():.3f}")
    return (f"{name('defense', w['defense'].iloc[0])} changes recovery by {changes}; it replaces {cover} of the "
            f"available test responses by a codeword (the rest are released unchanged) and {cost}.")


def verified(w: pd.DataFrame) -> bool:
    """Whether every WCPQ row agrees on every response–policy plan and moves no world's cost."""
    return bool(len(w)) and bool((w["plan_agreement"] == w["plan_comparisons"]).all()) \
        and bool((w["max_abs_cost_diff"] == 0).all())


def recovery_section(path: str, dataset: str, run_id: str, res: pd.DataFrame, main: pd.DataFrame,
                     colours: dict[str, str], shown: list[str]) -> None:
    """Figure 10 (every model) and Table 3 (the ``shown`` models): recovery per model and defense, the paired
    difference against the native control, and the noise seeds one by one."""
    families = da.run_parameters(path, dataset, run_id).get("defense_families")
    st.subheader("Recovery per defense")
    chart(relabel_native(defense_figure(main, colours)), main, "defense_recovery",
          f"Defense-aware secret recovery on the test worlds per model and defense, 95% pair-clustered intervals; "
          f"dashed line: 50% (guessing). The defenses are categories, not a scale; {NATIVE_ATTACKED} is the "
          f"unchanged release under the same attacker. Defense-aware attacker families: "
          f"{md_text(family_words(families)) if families else 'not recorded'}. Run {md_text(run_id)}. (The TUPLE "
          f"paper's Figure 10.)")
    t3 = main[main["model"].isin(shown)]
    t3 = t3.assign(order=t3["defense"].map(ORDER.index)).sort_values(["model", "order"])
    out = pd.DataFrame({
        "model": t3["model"].to_numpy(), "defense": t3["defense"].map(recovery_label).to_numpy(),
        "secret recovery [95% CI]": [pct_interval(a, lo, hi) for a, lo, hi in
                                     zip(t3["accuracy"], t3["ci_low"], t3["ci_high"])],
        "vs native [95% CI]": ["control" if pd.isna(d) else points_interval(d, lo, hi) for d, lo, hi in
                               zip(t3["diff_vs_native"], t3["diff_ci_low"], t3["diff_ci_high"])],
        "n": t3["n"].to_numpy()})
    sizes = out["n"].unique()
    tip = (f"Recovery under the defense minus the {NATIVE_ATTACKED} figure, in percentage points, with the "
           "paired 95% interval.")
    table(out.drop(columns="n") if len(sizes) == 1 else out, "defense_table3",
          "Recovery per defense and the paired difference against the native control on the same test worlds and "
          "resamples (negative: the defense lowers recovery)"
          + (f", {int(sizes[0]):,} test worlds each" if len(sizes) == 1 else "")
          + f". Run {md_text(run_id)}. (The TUPLE paper's Table 3.)",
          column_config={"vs native [95% CI]": st.column_config.TextColumn("vs native [95% CI]", help=tip)})
    seeds = res[res["defense"].str.startswith("noise seed") & res["model"].isin(shown)]
    if not seeds.empty:
        with st.expander("Noise, seed by seed"):
            s = pd.DataFrame({
                "model": seeds["model"].to_numpy(), "seed": seeds["seed"].astype("Int64").astype(str).to_numpy(),
                "secret recovery [95% CI]": [pct_interval(a, lo, hi) for a, lo, hi in
                                             zip(seeds["accuracy"], seeds["ci_low"], seeds["ci_high"])],
                "vs native [95% CI]": [points_interval(d, lo, hi) for d, lo, hi in
                                       zip(seeds["diff_vs_native"], seeds["diff_ci_low"], seeds["diff_ci_high"])]})
            table(s, "defense_noise_seeds", "Each seed has its own adapted attackers and recipients.")


def verification_section(w: pd.DataFrame, run_id: str, policies: int = policy_count()) -> None:
    """Table 13: per model and codebook, the coverage, identity fallbacks, plan agreement and largest cost change."""
    st.subheader("WCPQ verification")
    if w.empty:
        st.info("This run holds no WCPQ release.")
        return
    ok = verified(w)
    (st.success if ok else st.error)(
        f"Every response–policy comparison agrees and no world's cost moves under any of the {policies} policies."
        if ok else "WCPQ verification failed for at least one model: see the table.")
    out = pd.DataFrame({
        "model": w["model"].to_numpy(), "codebook": w["defense"].map(CODEBOOKS).to_numpy(),
        "coverage": w["coverage"].to_numpy(), "fallbacks": w["fallbacks"].astype(int).to_numpy(),
        "plan agreement": [f"{int(a):,} / {int(c):,}" for a, c in zip(w["plan_agreement"], w["plan_comparisons"])],
        "max_abs_cost_diff": w["max_abs_cost_diff"].to_numpy()})
    table(out, "wcpq_verification",
          "Verification per model of the main strict codebook (the static grid, then the model's training "
          "responses, then the midpoints of its training pairs) and of the canonical control (the static grid "
          "alone). Coverage: covered / available test responses; fallbacks: responses released unchanged; plan "
          f"agreement: complete plans kept, of test worlds × {policies} frozen policies; largest cost change: over "
          f"every world and all {policies} policies, in cost units. Run {md_text(run_id)}. (The TUPLE paper's "
          "Table 13.)",
          column_config={
              "codebook": st.column_config.TextColumn(
                  "codebook", help="main: the 0.1 grid, then the model's training responses, then the midpoints of "
                                   "its training pairs. grid only: the static 0.1 grid alone, the canonical control."),
              "plan agreement": st.column_config.TextColumn(
                  "plan agreement", help="(world, policy) comparisons whose complete plan is the same for the native "
                                         "and the WCPQ response, of all compared.")})


def learned_section(info: pd.DataFrame, res: pd.DataFrame, costs: pd.DataFrame, run_id: str,
                    policies: int = policy_count()) -> None:
    """The learned bounded-cost variants next to WCPQ strict: a finding, Figure 11 (recovery against the
    recipients' cost), Table 15 (recovery per variant) and their verification."""
    st.subheader("Learned WCPQ: trading a bounded cost for privacy")
    points = learned_points(res, costs)
    if points.empty or info.empty:
        st.info("This run trained no learned WCPQ variant (`qlb audit --learned-wcpq` chooses them; by default all six).")
        return
    finding(learned_sentence(points, info), lead="What a cost budget buys.")
    chart(learned_figure(points), points, "learned_wcpq_figure11", figure11_caption(md_text(run_id)))
    wide_table(table15(points), "learned_wcpq_table15",
               "Secret recovery on the test worlds [95% pair-clustered intervals] under WCPQ strict and the learned "
               "variants, for each model (budget in review costs; with or without the loss that pushes a pair's two "
               f"worlds to the same codeword). Run {md_text(run_id)}. (The TUPLE paper's Table 15.)")
    with st.expander("How each learned variant was chosen and verified"):
        table(verification_table(info), "learned_wcpq_verification",
              "Pooled over the domains: coverage of the available test responses; responses the final verification "
              "released unchanged; codewords kept at deployment and in the pool, and the training seed the proxy "
              "attackers chose, per domain; the largest realized increase of a world's cost over the "
              f"{policies} policies, in review costs, against the budget.",
              column_config={"largest cost increase": st.column_config.NumberColumn(format="%.2f")})
        table(proxy_table(info), "learned_wcpq_proxies",
              f"Seed selection: per seed, the stronger of two proxy attackers ({name('family', 'shared_scorer')} "
              f"and {name('family', 'template')}) on the validation worlds; the seed with the lower recovery wins, "
              "then the higher log loss.",
              percent=("proxy validation recovery",),
              column_config={"proxy log loss": st.column_config.NumberColumn(format="%.3f")})


def cost_section(costs: pd.DataFrame, run_id: str, policies: int = policy_count(),
                 described: dict[str, str] | None = None) -> None:
    """Mean test cost per model and defense with intervals for one task and profile, for adapted or frozen recipients;
    the native control and WCPQ (built so that no recipient needs a refit) are always the frozen full-native
    policies."""
    st.subheader("What the recipient pays")
    tasks = [t for t in TASKS if t in set(costs["task"])]
    if not tasks:
        st.info("This run holds no recipient costs for the defenses.")
        return
    task = st.segmented_control("Task", tasks, default=tasks[0], required=True, key="task", bind="query-params",
                                format_func=lambda t: name("task", t),
                                help="\n".join(f"- **{name('task', t)}**: {TASK_HELP.get(t, '')}" for t in tasks))
    c1, c2 = st.columns(2)
    recipient = c1.segmented_control(
        "Recipients", ["adapted", "frozen"], default="adapted", required=True, key="defense_recipient",
        help=f"adapted: policies refitted and selected on the defended release; frozen: the {policies} full-native "
             "policies replayed on it. The native control and WCPQ always use the frozen policies.")
    profiles = profile_order(costs["profile"])
    profile = c2.selectbox("Cost profile", profiles, key="profile", bind="query-params",
                           format_func=lambda p: name("profile", p),
                           help=profile_help(profiles, described or profile_descriptions()))
    here = costs[(costs["profile"] == profile) & (costs["task"] == task) & costs["defense"].isin(ORDER)]
    always_frozen = here["defense"].isin(["native", *CODEBOOKS])
    c = here[(here["recipient"] == recipient) | (always_frozen & (here["recipient"] == "frozen"))]
    c = c.assign(order=c["defense"].map(ORDER.index)).sort_values(["model", "order"])
    out = pd.DataFrame({"model": c["model"].to_numpy(), "defense": c["defense"].to_numpy(),
                        "recipients": c["recipient"].to_numpy(),
                        "mean cost per case [95% CI]": [cost_interval(v, lo, hi) for v, lo, hi in
                                                        zip(c["mean_cost"], c["ci_low"], c["ci_high"])]})
    missing = [d for d in ORDER if d in set(costs["defense"]) and d not in set(out["defense"])]
    why = {"top2": "a native-distribution recipient cannot read top-two scores"}
    absent = "".join(f"; {md_text(name('defense', d))} has no row here ({why.get(d, 'none stored')})" for d in missing)
    table(out, f"defense_costs_{recipient}_{task}_{profile}",
          f"Mean test cost per case of the {md_text(name('task', task))} recipients under the "
          f"{md_text(name('profile', profile))}, in cost units with 95% pair-clustered intervals: compare intervals, "
          f"not point values{absent}. Run {md_text(run_id)}.")
    with st.expander("Why a defended release can read cheaper"):
        st.markdown(COST_WHY)
        note = temperature_note(costs)
        if note:
            st.markdown(note.strip())


SIDE_BY_SIDE = ["native", "quantize", "top2", "wcpq"]     # the releases the inspector shows first


def inspector(path: str, dataset: str, run_id: str, models: list[str]) -> None:
    """One test world of a model: its native and defended releases side by side, and whether each frozen
    policy acts the same on the native and the WCPQ release."""
    st.subheader("World inspector")
    c1, c2 = st.columns(2)
    model = c1.selectbox("Model", models, key="model", bind="query-params")
    worlds = da.query(path, "defense_worlds", (run_id, model, 5000))
    if worlds.empty:
        st.info("No WCPQ releases stored for this model.")
        return
    world_id = c2.selectbox("Test world", worlds["world_id"].tolist(), key="world", bind="query-params",
                            help="Test worlds of the WCPQ mapping (kept in the URL: a link opens this world).")
    native = da.world_release(path, dataset, model, world_id)
    if native.empty:
        st.info("This world is not in the dataset any more.")
        return
    w = native.iloc[0]
    dom = da.ontology(path, dataset).domain(w["domain"])
    vec = {"native": w["probabilities"] if isinstance(w["probabilities"], dict) else {}}
    conf = {"native": w["confidence"]}
    for r in da.query(path, "defense_release_of", (run_id, model, world_id)).itertuples(index=False):
        vec[r.defense] = json.loads(r.probabilities) if isinstance(r.probabilities, str) else {}
        conf[r.defense] = r.confidence
    code = int(worlds.set_index("world_id").loc[world_id, "codeword"])
    st.markdown(f"**{md_text(world_id)}** · {md_text(dom.title)} · status {md_text(w['status'])} · "
                f"choice {md_text(w['choice'] or '—')} · "
                + (f"WCPQ codeword #{code}" + (" (the 0.1 grid)" if code < len(static_grid(len(dom.classes)))
                                                 else " (a training response or pair midpoint)")
                   if code >= 0 else "WCPQ identity fallback (released unchanged)"))
    releases_side_by_side(vec, conf, list(w["candidate_order"]), model, world_id)
    policies = da.frozen_policies(path, run_id, model).get(w["domain"], [])
    if policies and w["status"] == "ok":
        policies_on_world(policies, native, vec, conf, dom, model, world_id)


def releases_side_by_side(vec: dict, conf: dict, order: list[str], model: str, world_id: str) -> None:
    """The released probabilities and confidence of the chosen releases of one world, one column per release; a
    codeword release (WCPQ and its variants) is labelled a codeword, and said above the table not to be a probability."""
    present = [d for d in vec if d in ORDER] + sorted(d for d in vec if d not in ORDER)
    chosen = st.multiselect("Releases", present, default=[d for d in SIDE_BY_SIDE if d in present],
                            key="inspector_releases", format_func=lambda d: name("defense", d),
                            help="Which releases of this world to show side by side.")
    warning = codeword_note(chosen)
    if warning:                      # before the numbers: a codeword's 0.9 is not a 90% probability
        st.info(warning, icon=":material/info:")
    side = pd.DataFrame({"class (public order)": order + ["confidence"]})
    for defense in (d for d in present if d in chosen):
        v = vec[defense]
        side[release_column(defense)] = [("—" if c not in v else f"{v[c]:.4f}") for c in order] + \
            ["—" if conf[defense] is None or pd.isna(conf[defense]) else f"{conf[defense]:.4f}"]
    table(side, f"inspector_{model}_{world_id}", "The chosen releases of this world side by side; — means not "
                                                 "released; a codeword's numbers are not probabilities.")


def policies_on_world(policies: list, native: pd.DataFrame, vec: dict, conf: dict, dom, model: str,
                      world_id: str) -> None:
    """Whether each frozen full-native policy makes the same plan at the same cost on the native and the
    WCPQ release of one world: a sentence, and the plans in an expander."""
    w = native.iloc[0]
    wc = native.copy()
    wc["probabilities"] = [vec.get("wcpq", w["probabilities"])]
    wc["confidence"] = conf.get("wcpq", w["confidence"])
    rank = candidate_ranks(native, dom.classes)
    t = np.array([dom.classes.index(w["coarse"])])
    rows = []
    for p in policies:
        outs = []
        for f in (native, wc):
            o = run_task(p.task, p.recipient.q(f), rank, np.array([True]), t, p.costs, p.factor)
            outs.append((action_labels(o, dom.classes, dict(dom.checks))[0], float(o.cost[0])))
        rows.append({"task": p.task, "profile": p.profile, "native: plan": outs[0][0], "WCPQ: plan": outs[1][0],
                     "cost": outs[0][1], "same plan and cost": outs[0] == outs[1]})
    plans = pd.DataFrame(rows)
    same = int(plans["same plan and cost"].sum())
    verdict = ("every one acts the same" if same == len(plans)
               else f"{len(plans) - same} act differently")
    st.markdown(f"Of the {len(plans)} frozen full-native policies, {verdict} on the native and the WCPQ release of "
                f"this world (same complete plan, same cost).")
    with st.expander(f"The plans of the {len(policies)} policies on this world"):
        table(plans, f"inspector_policies_{model}_{world_id}",
              "What each frozen full-native policy does with the native and the WCPQ release of this world (plans "
              "include both check branches; the cost is the native plan's, for the world's true class, in cost "
              "units).")


page_entry(render)
