"""The SIMULATED reference demo tells the TUPLE paper's story (issue 15).

``qlb.present.paper`` states each of the paper's findings with the band a run must fall in. Here:
each check is shown to fail on a run that breaks it (hand-made tables); the checks the suite's own
demo warehouses can answer hold on them (refusal on the demo; no output, WCPQ coverage and
temperature on the decoded warehouse, which uses the fast decoder families); and every check
holds on a full demo run when one is given (``QLB_DEMO_WAREHOUSE``: a warehouse built by
``qlb demo``, about 10 minutes on 2 cores; ``benchmarks/bench_regime.py`` builds one and prints the table).
"""
from __future__ import annotations

import os

import pandas as pd
import pytest

from qlb.present.paper import checks_frame, failing, paper_checks
from qlb.present.rundata import RunData
from qlb.runs.report import load_run
from warehouse.db import reader

MODELS = [f"m{i}" for i in range(9)]
NONE = pd.DataFrame()


def run_data(**tables: pd.DataFrame) -> RunData:
    t = {k: tables.get(k, NONE) for k in ("refusal", "recovery", "recovery_diff", "utility", "utility_diff",
                                           "fronts", "defenses", "defense_costs", "ql")}
    return RunData(pd.Series({"run_id": "r"}), pd.Series({"dataset_id": "d", "simulated": True}), models=MODELS, **t)


def by_key(d: RunData) -> dict:
    return {c.key: c for c in paper_checks(d)}


def recovery(choice: float = 0.54, native: float = 0.7, no_output: float = 0.5) -> pd.DataFrame:
    rows = []
    for m in MODELS:
        for view, acc in (("no_output", no_output), ("choice", choice), ("choice_confidence", choice + 0.03),
                          ("full_probabilities", native - 0.01), ("full_native", native)):
            rows.append({"model": m, "view": view, "scope": "pooled", "accuracy": acc})
    return pd.DataFrame(rows)


def diffs(conf_gain: float = 0.03, gap: float = 0.16) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "view_a": a, "view_b": "choice", "difference": v}
                         for m in MODELS for a, v in (("choice_confidence", conf_gain), ("full_native", gap))])


def test_a_run_in_the_papers_regime_passes_the_recovery_checks():
    c = by_key(run_data(recovery=recovery(), recovery_diff=diffs()))
    assert all(c[k].holds for k in ("no_output", "choice", "full_native", "confidence_adds", "native_gap"))
    assert c["refusal_recovery"].holds is None and c["wcpq_coverage"].holds is None     # audits not in the run


@pytest.mark.parametrize("change, key", [
    (dict(no_output=0.5035), "no_output"),                 # one pair told apart by a status
    (dict(choice=0.49), "choice"),                         # the choice leaks nothing
    (dict(choice=0.62), "choice"),                         # the choice alone leaks too much
    (dict(native=0.82), "full_native"),
])
def test_a_recovery_outside_the_band_fails_its_check(change, key):
    c = by_key(run_data(recovery=recovery(**change), recovery_diff=diffs()))
    assert c[key].holds is False
    assert [f.key for f in failing(list(c.values()))] == [key]


def test_confidence_must_add_for_every_model():
    d = diffs()
    d.loc[(d["model"] == "m3") & (d["view_a"] == "choice_confidence"), "difference"] = -0.01
    c = by_key(run_data(recovery=recovery(), recovery_diff=d))
    assert c["confidence_adds"].holds is False and c["confidence_adds"].run.startswith("higher for 8 of 9 models")


def utility_diff(cheaper: bool = True, clarification_ni: int = 6) -> pd.DataFrame:
    rows = []
    for i, m in enumerate(MODELS):
        for task in ("selective", "clarification", "asymmetric"):
            for profile in ("authored", "review_half"):
                ni = task == "clarification" and i < clarification_ni
                rows.append({"model": m, "view_a": "choice", "view_b": "full_native", "task": task,
                             "profile": profile, "difference": 0.05 if cheaper or i else -0.01, "noninferior": ni})
    return pd.DataFrame(rows)


def fronts(same_everywhere: bool) -> pd.DataFrame:
    rows = []
    for task, winners in (("selective", {"m0"}), ("clarification", {"m0", "m4"}), ("asymmetric", {"m0"})):
        for m in MODELS:
            rows.append({"task": task, "profile": "authored", "model": m, "view": "full_native",
                         "nondominated_models": m in ({"m0"} if same_everywhere else winners)})
    return pd.DataFrame(rows)


def test_utility_checks_follow_the_paired_differences():
    good = by_key(run_data(utility_diff=utility_diff(), fronts=fronts(False)))
    assert all(good[k].holds for k in ("native_cheaper_authored", "native_cheaper_all", "noninferior",
                                       "fronts_change"))
    assert good["native_cheaper_all"].run == "54 of 54"
    bad = by_key(run_data(utility_diff=utility_diff(cheaper=False, clarification_ni=2), fronts=fronts(True)))
    assert bad["native_cheaper_authored"].run == "24 of 27" and bad["native_cheaper_authored"].holds is False
    assert bad["noninferior"].holds is False and bad["fronts_change"].holds is False


def defenses(coverage: float = 0.995, temperature: float = 0.0, wcpq: float = -0.15) -> pd.DataFrame:
    rows = []
    for m in MODELS[:3]:
        for name, diff in (("native", None), ("quantize", -0.06), ("top2", -0.004), ("temperature", temperature),
                           ("noise", -0.09), ("wcpq", wcpq)):
            rows.append({"model": m, "defense": name, "diff_vs_native": diff,
                         "coverage": coverage if name == "wcpq" else None,
                         "plan_agreement": 5184 if name == "wcpq" else None,
                         "plan_comparisons": 5184 if name == "wcpq" else None,
                         "max_abs_cost_diff": 0.0 if name == "wcpq" else None})
    return pd.DataFrame(rows)


def test_defense_checks():
    good = by_key(run_data(defenses=defenses()))
    assert all(good[k].holds for k in ("wcpq_recovery", "wcpq_coverage", "temperature", "top2", "quantize", "noise"))
    bad = by_key(run_data(defenses=defenses(coverage=0.9479, temperature=0.042, wcpq=-0.02)))
    assert {k for k in ("wcpq_recovery", "wcpq_coverage", "temperature") if bad[k].holds is False} == \
        {"wcpq_recovery", "wcpq_coverage", "temperature"}


def learned(gap: float = 0.01, zero_rise: float = 0.0, top_rise: float = 0.05, over: float = 0.0):
    """defenses, defense_costs and learned_wcpq rows of three models with four learned variants:
    ``gap`` the paired minus no-pair recovery, ``zero_rise``/``top_rise`` the cost increase at
    budgets 0 and 0.5 (every task), ``over`` how far budget 0.5's largest increase exceeds it."""
    res, costs, info = [], [], []
    for m in MODELS[:3]:
        for ep, acc, rise in (("native", 0.7, 0.0), ("wcpq", 0.55, 0.0), ("wcpq learned 0 no pair", 0.54, zero_rise),
                              ("wcpq learned 0 paired", 0.54 + gap, zero_rise),
                              ("wcpq learned 0.5 no pair", 0.53, top_rise), ("wcpq learned 0.5 paired", 0.53 + gap,
                                                                            top_rise)):
            res.append({"model": m, "defense": ep, "accuracy": acc, "ci_low": acc - 0.04, "ci_high": acc + 0.04,
                        "diff_vs_native": acc - 0.7, "diff_ci_low": None, "diff_ci_high": None, "coverage": 0.995,
                        "plan_agreement": 5184, "plan_comparisons": 5184, "max_abs_cost_diff": 0.0})
            costs += [{"model": m, "defense": ep, "recipient": "frozen", "task": t, "profile": "authored",
                       "mean_cost": 0.2 + rise} for t in ("selective", "clarification", "asymmetric")]
            if ep.startswith("wcpq learned"):
                budget = float(ep.split()[2])
                info.append({"model": m, "domain": "d", "defense": ep, "budget": budget,
                             "max_cost_increase": budget * 0.8 + (over if budget else 0.0)})
    return {"defenses": pd.DataFrame(res), "defense_costs": pd.DataFrame(costs)}, pd.DataFrame(info)


@pytest.mark.parametrize("change, key", [(dict(over=0.2), "learned_budget"), (dict(zero_rise=0.01), "learned_cost"),
                                         (dict(top_rise=0.0), "learned_cost"), (dict(gap=-0.01), "learned_pair")])
def test_learned_wcpq_checks(change, key):
    tables, info = learned()
    good = by_key(RunData(pd.Series({"run_id": "r"}), pd.Series({"dataset_id": "d"}), *[NONE] * 6,
                          tables["defenses"], tables["defense_costs"], NONE, models=MODELS, learned=info))
    assert all(good[k].holds for k in ("learned_budget", "learned_cost", "learned_pair"))
    assert good["learned_cost"].run == "budget 0: up to +0.000 a case; budget 0.5: up to +0.050"
    tables, info = learned(**change)
    bad = by_key(RunData(pd.Series({"run_id": "r"}), pd.Series({"dataset_id": "d"}), *[NONE] * 6,
                         tables["defenses"], tables["defense_costs"], NONE, models=MODELS, learned=info))
    assert bad[key].holds is False
    assert by_key(run_data())["learned_pair"].holds is None            # no learned WCPQ in the run
    tables, info = learned()
    keep = ~tables["defenses"]["defense"].str.startswith("wcpq learned 0.5")
    partial = by_key(RunData(pd.Series({"run_id": "r"}), pd.Series({"dataset_id": "d"}), *[NONE] * 6,
                             tables["defenses"][keep], tables["defense_costs"], NONE, models=MODELS,
                             learned=info[info["budget"] < 0.5]))
    assert partial["learned_cost"].holds is None and partial["learned_budget"].holds


def test_refusal_checks_on_the_suites_demo(demo_warehouse):
    """The demo warehouse holds the refusal audit: every refusal-probe answer is valid and keeps
    its scores, and the mechanism is recovered from most of them (the paper: 91.88% to 99.93%)."""
    with reader(demo_warehouse) as con:
        c = by_key(load_run(con, dataset="simulated-reference"))
    assert c["refusal_valid"].holds, c["refusal_valid"].run
    assert c["refusal_recovery"].holds, c["refusal_recovery"].run


def test_structural_checks_on_the_decoded_warehouse(decoded_warehouse):
    """What does not depend on the decoder families the suite's small audit uses: no output is
    exactly 50% (outages take whole pairs) and the temperature attacker, who reads the public
    inverse, does as well as native; the one learned WCPQ variant stays within its budget."""
    with reader(decoded_warehouse) as con:
        c = by_key(load_run(con, dataset="simulated-reference"))
    for key in ("no_output", "temperature", "learned_budget"):
        assert c[key].holds, (key, c[key].run)
    assert c["learned_pair"].holds is None and c["learned_cost"].holds is None     # one variant: no comparison


@pytest.mark.skipif(not os.environ.get("QLB_DEMO_WAREHOUSE"),
                    reason="the full demo run takes about 10 minutes: set QLB_DEMO_WAREHOUSE to a warehouse built by "
                           "`qlb demo` (benchmarks/bench_regime.py builds one and runs every check)")
def test_the_full_demo_tells_the_papers_story():
    with reader(os.environ["QLB_DEMO_WAREHOUSE"]) as con:
        checks = paper_checks(load_run(con, dataset="simulated-reference"))
    table = checks_frame(checks)
    assert table["holds"].notna().all(), table[table["holds"].isna()]
    assert not failing(checks), checks_frame(failing(checks)).to_string()
