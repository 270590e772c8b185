"""Defenses and WCPQ verification: can the release be made less revealing without changing what
the recipient does? (TUPLE.md section 7; paper Section 6, Table 3, Figure 10, Table 13.)"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import data_access as da
from qlb.tuple.defenses import static_grid
from qlb.present.figures import DEFENSE_LABELS as LABELS, DEFENSE_ORDER as ORDER, defense_figure
from qlb.present.palette import model_colours
from dashboard.routing import page_entry
from dashboard.widgets import audit_page_start, chart, md_text, pick_run, table
from qlb.tuple.recipients import candidate_ranks
from qlb.tuple.workflows import TASKS, action_labels, argmax_public, run_task

INTRO = (
    "Every defense starts from the same native response and changes only the probability field "
    "(choice and confidence kept; WCPQ sets confidence to its codeword's maximum). Fresh decoders "
    "are fitted and selected on the defended train and validation releases, frozen, and scored on "
    "test; every release's attacker, the native control's too, also sees the release's public "
    "workflow signatures (what the 18 frozen recipients do with it), and the temperature attacker "
    "reads the release through the public inverse. WCPQ replaces each response by the first "
    "codeword that makes all 18 frozen full-native recipient policies (3 tasks x 6 cost profiles) "
    "behave identically, else releases it unchanged; its main codebook is the 0.1 grid, then the "
    "model's training responses, then the midpoints of its training pairs, and the grid alone is "
    "shown as a control. Intervals: 95% pair-clustered bootstrap; noise averages the three seeds' "
    "per-world outcomes."
)

def render() -> None:
    """The Defenses page: recovery per defense (Figure 10, Table 3), WCPQ verification (Table 13), the recipient's
    cost per defense and the world inspector."""
    start = audit_page_start("Defenses and WCPQ verification", INTRO)
    if start is None:
        return
    path, dataset = start
    run_id = pick_run(da.defense_runs(path, dataset), "defenses_run",
                      "No defense audit in this dataset yet: run `qlb audit --jobs 2` (it needs the decoding and "
                      "the utility audits, which it runs too).")
    if run_id is None:
        return
    res = da.query(path, "defense_results", (run_id,))
    costs = da.query(path, "defense_costs", (run_id,))
    models = sorted(res["model"].unique())
    colours = model_colours(da.query(path, "models_with_responses", (dataset,))["model"])
    main = res[res["defense"].isin(ORDER)]

    families = da.run_parameters(path, dataset, run_id).get("defense_families")
    st.subheader("Recovery per defense")
    chart(defense_figure(main, colours), main, "defense_recovery",
          f"Paper Figure 10: defense-aware test recovery per model and defense with 95% pair-clustered intervals; "
          f"dashed line: 50%. Decoder families: {md_text(', '.join(families)) if families else 'all'}. "
          f"Run {md_text(run_id)}.")
    t3 = main.copy()
    t3["recovery [95%]"] = [f"{100 * a:.2f}% [{100 * lo:.2f}, {100 * hi:.2f}]"
                            for a, lo, hi in zip(t3["accuracy"], t3["ci_low"], t3["ci_high"])]
    t3["vs native, points [95%]"] = ["—" if pd.isna(d) else f"{100 * d:+.2f} [{100 * lo:+.2f}, {100 * hi:+.2f}]"
                                     for d, lo, hi in zip(t3["diff_vs_native"], t3["diff_ci_low"], t3["diff_ci_high"])]
    t3["defense"] = t3["defense"].map(LABELS)
    table(t3[["model", "defense", "recovery [95%]", "vs native, points [95%]", "n"]], "defense_table3",
          f"Paper Table 3: recovery per defense and the paired difference against the native control on the same "
          f"test worlds and resamples. Run {md_text(run_id)}.")
    seeds = res[res["defense"].str.startswith("noise seed")]
    if not seeds.empty:
        with st.expander("Noise, seed by seed"):
            s = seeds[["model", "seed", "accuracy", "ci_low", "ci_high", "diff_vs_native"]].copy()
            table(s.round(4), "defense_noise_seeds", "Each seed has its own adapted decoders and recipients.")

    st.subheader("WCPQ verification")
    w = res[res["defense"].isin(["wcpq", "wcpq grid"])].sort_values(["model", "defense"]).copy()
    authored = costs[(costs["profile"] == "authored") & (costs["recipient"] == "frozen")]
    rows = []
    for r in w.itertuples(index=False):
        row = {"model": r.model, "codebook": "grid, training vectors, pair midpoints" if r.defense == "wcpq"
               else "static grid only (control)", "coverage": f"{r.coverage:.2%}", "fallbacks": int(r.fallbacks),
               "plan agreement": f"{int(r.plan_agreement):,} / {int(r.plan_comparisons):,}",
               "max |Δ cost|": r.max_abs_cost_diff}
        for task in TASKS:
            c = authored[(authored["model"] == r.model) & (authored["task"] == task)].set_index("defense")["mean_cost"]
            row[f"{task}: native"] = round(float(c.get("native", np.nan)), 4)
            row[f"{task}: WCPQ"] = round(float(c.get(r.defense, np.nan)), 4)
        rows.append(row)
    ok = bool(len(w)) and (w["plan_agreement"] == w["plan_comparisons"]).all() and (w["max_abs_cost_diff"] == 0).all()
    (st.success if ok else st.error)(
        "Every response–policy comparison agrees and no world's cost moves under any of the 18 policies."
        if ok else "WCPQ verification failed for at least one model: see the table.")
    table(pd.DataFrame(rows), "wcpq_verification",
          f"Paper Table 13: the main strict codebook (the static grid, then the model's training responses, then "
          f"the midpoints of its training pairs) and the canonical control (the static grid alone); coverage "
          f"(covered / available test responses), identity fallbacks, complete-plan "
          f"agreement over test worlds x 18 frozen policies, the largest per-world realized cost difference over all "
          f"18, and mean authored costs of the frozen policies on the native and WCPQ releases. "
          f"Run {md_text(run_id)}.")

    st.subheader("What the recipient pays")
    recipient = st.segmented_control("Recipients", ["adapted", "frozen"], default="adapted", required=True,
                                     key="defense_recipient",
                                     help="adapted: policies refitted and selected on the defended release; "
                                          "frozen: the 18 full-native policies replayed on it")
    profile = st.selectbox("Cost profile", sorted(costs["profile"].unique(), key=lambda p: p != "authored"),
                           key="profile", bind="query-params")
    c = costs[(costs["recipient"] == recipient) & (costs["profile"] == profile)
              & costs["defense"].isin(ORDER)].copy()
    native = costs[(costs["recipient"] == "frozen") & (costs["profile"] == profile) & (costs["defense"] == "native")]
    c = pd.concat([native, c]).drop_duplicates(["model", "defense", "task"])
    c["cost"] = [f"{v:.4f} [{lo:.4f}, {hi:.4f}]" for v, lo, hi in zip(c["mean_cost"], c["ci_low"], c["ci_high"])]
    wide = c.pivot(index=["model", "defense"], columns="task", values="cost").reindex(columns=list(TASKS)).reset_index()
    wide.columns.name = None
    wide["defense"] = wide["defense"].map(LABELS)
    table(wide, f"defense_costs_{recipient}_{profile}",
          f"Mean test cost per defense ({md_text(recipient)} recipients; the native row is the frozen full-native "
          f"policies), profile {md_text(profile)}, 95% pair-clustered intervals. A native-distribution recipient "
          f"cannot read top-two scores, so frozen top-two has no pooled cost. Run {md_text(run_id)}.")

    inspector(path, dataset, run_id, models)


def inspector(path: str, dataset: str, run_id: str, models: list[str]) -> None:
    """One test world of a model: its native and defended releases side by side, and what each of the 18 frozen
    policies does with the native and the WCPQ release."""
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
    releases = da.query(path, "defense_release_of", (run_id, model, world_id))
    if native.empty:
        st.info("This world is not in the dataset any more.")
        return
    w = native.iloc[0]
    dom = da.ontology(path, dataset).domain(w["domain"])
    order = list(w["candidate_order"])
    vec = {"native": w["probabilities"] if isinstance(w["probabilities"], dict) else {}}
    conf = {"native": w["confidence"]}
    for r in releases.itertuples(index=False):
        vec[r.defense] = json.loads(r.probabilities) if isinstance(r.probabilities, str) else {}
        conf[r.defense] = r.confidence
    side = pd.DataFrame({"class (public order)": order + ["confidence"]})
    for name, v in vec.items():
        side[name] = [("—" if c not in v else f"{v[c]:.4f}") for c in order] + \
                     ["—" if conf[name] is None or pd.isna(conf[name]) else f"{conf[name]:.4f}"]
    code = int(worlds.set_index("world_id").loc[world_id, "codeword"])
    st.markdown(f"**{md_text(world_id)}** · {md_text(dom.title)} · status {md_text(w['status'])} · "
                f"choice {md_text(w['choice'] or '—')} · "
                + (f"WCPQ codeword #{code}" + (" (the 0.1 grid)" if code < len(static_grid(len(dom.classes)))
                                                 else " (a training response or pair midpoint)")
                   if code >= 0 else "WCPQ identity fallback (released unchanged)"))
    table(side, f"inspector_{model}_{world_id}", "The native release and every defended release of this world, "
                                                 "side by side; — means not released.")
    policies = da.frozen_policies(path, run_id, model).get(w["domain"], [])
    if not policies or w["status"] != "ok":
        return
    wc = native.copy()
    wc["probabilities"] = [vec.get("wcpq", w["probabilities"])]
    wc["confidence"] = conf.get("wcpq", w["confidence"])
    rank = candidate_ranks(native, dom.classes)
    t = np.array([dom.classes.index(w["coarse"])])
    rows = []
    for p in policies:
        outs = []
        for f in (native, wc):
            q = p.recipient.q(f)
            o = run_task(p.task, q, rank, np.array([True]), t, p.costs, p.factor)
            outs.append((dom.classes[argmax_public(q, rank)[0]], action_labels(o, dom.classes, dict(dom.checks))[0],
                         float(o.cost[0])))
        rows.append({"task": p.task, "profile": p.profile, "policy": p.recipient.name,
                     "native: category": outs[0][0], "native: plan": outs[0][1], "native: cost": outs[0][2],
                     "WCPQ: plan": outs[1][1], "WCPQ: cost": outs[1][2],
                     "same": "yes" if outs[0][:2] == outs[1][:2] and outs[0][2] == outs[1][2] else "NO"})
    table(pd.DataFrame(rows), f"inspector_policies_{model}_{world_id}",
          "What each of the 18 frozen full-native policies does with the native and the WCPQ release of this "
          "world (plans include both check branches; costs for the world's true class).")


page_entry(render)
