"""Downstream utility (TUPLE.md section 5) and fronts (section 6): hand-computed workflow costs,
the oracle bound, a perfect model, frozen recipients against scikit-learn, selection blind to
test labels, and the non-dominated set against a brute-force check."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.feature_extraction import DictVectorizer

from qlb.tuple.costs import PROFILES, CostProfile, DomainCosts, domain_costs
from qlb.tuple.fronts import non_dominated
from qlb.tuple.recipient_estimators import fit_logistic
from qlb.tuple.recipients import Recipient, features
from qlb.tuple.utility import action_rows, result_tables, utility_domain
from qlb.tuple.workflows import FALLBACK, REVIEW, asymmetric, clarification, oracle_cost, run_task, selective
from tests.conftest import DECODED_AUDIT

CLASSES = ("ADDRESS", "DAMAGE", "DELAY", "DELIVERY_RECORD")
# candidate order DELAY, ADDRESS, DAMAGE, DELIVERY_RECORD -> ranks of the canonical classes
RANK = np.array([[1, 2, 0, 3]])


def costs(wrong=10.0, review=2.0, check=0.4) -> DomainCosts:
    base = domain_costs("delivery")
    return DomainCosts("delivery", CLASSES, wrong, review, check, 2.0, base.asymmetric)


def one(q, t, avail=True):
    q = np.array([q], float)
    return q, np.repeat(RANK, len(q), 0), np.array([avail]), np.array([t])


# ---------------------------------------------------------------- cost profiles

def test_authored_delivery_costs_match_the_ontology():
    c = domain_costs("delivery")
    assert (c.wrong_route, c.review, c.check, c.fallback) == (10.0, 2.0, 0.4, 2.0)
    # the paper's DELAY column for actions DELAY, ADDRESS, DAMAGE, DELIVERY_RECORD, inspection
    delay = c.asymmetric[:, CLASSES.index("DELAY")]
    assert [delay[2], delay[0], delay[1], delay[3], delay[4]] == [0, 5, 8, 8, 1.8]


def test_profiles_scale_what_they_name():
    a = domain_costs("delivery")
    assert domain_costs("delivery", "review_half").review == 1.0
    assert np.allclose(domain_costs("delivery", "review_double").asymmetric[4], 2 * a.asymmetric[4])
    assert domain_costs("delivery", "check_quarter").check == pytest.approx(0.1)
    e = domain_costs("delivery", "error_double")
    assert e.wrong_route == 20.0
    assert e.asymmetric[2].tolist() == [6.0, 12.0, 0.0, 8.0]              # DELAY row, off-diagonal x2
    assert e.asymmetric[4].tolist() == a.asymmetric[4].tolist()           # inspection unchanged
    col = domain_costs("delivery", "asymmetric_class0_double").asymmetric[:, 0]
    assert col.tolist() == [0.0, 16.0, 6.0, 10.0, 3.6]                     # zero stays zero
    for p in PROFILES:                                                     # the fallback never moves
        assert domain_costs("delivery", p).fallback == 2.0
    with pytest.raises(ValueError, match="unknown cost profile"):
        CostProfile.named("nope")


# ---------------------------------------------------------------- workflows by hand

def test_selective_routes_below_the_review_threshold():
    c = costs()
    out = selective(*one([0.7, 0.1, 0.1, 0.1], 0), c)              # risk 3 >= 2: review
    assert out.first[0] == REVIEW and out.cost[0] == 2.0
    out = selective(*one([0.85, 0.05, 0.05, 0.05], 0), c)          # risk 1.5 < 2: route, right
    assert out.first[0] == 0 and out.cost[0] == 0.0
    out = selective(*one([0.85, 0.05, 0.05, 0.05], 1), c)          # route, wrong
    assert out.cost[0] == 10.0
    # on the boundary: risk 10 * (1 - 0.75) = 2.5 equals review 2 x factor 1.25 exactly (every
    # number a binary fraction), and routing needs risk strictly below it
    q = [0.75, 0.125, 0.0625, 0.0625]
    assert c.wrong_route * (1 - q[0]) == c.review * 1.25 == 2.5
    assert selective(*one(q, 0), c, factor=1.25).first[0] == REVIEW
    assert selective(*one(q, 0), c, factor=1.25 + 1e-12).first[0] == 0


def test_selective_ties_go_to_the_public_candidate_order_and_unavailable_falls_back():
    c = costs(wrong=1.0)
    assert selective(*one([0.45, 0.45, 0.05, 0.05], 0), c).first[0] == 0   # ADDRESS before DAMAGE
    assert selective(*one([0.05, 0.45, 0.45, 0.05], 0), c).first[0] == 2   # DELAY is transmitted first
    out = selective(*one([0.97, 0.01, 0.01, 0.01], 0, avail=False), c)
    assert out.first[0] == FALLBACK and out.cost[0] == 2.0


def test_clarification_by_hand():
    c = costs()
    # act now 5.0; check ADDRESS 0.4 + 10 * (1 - .5 - .3) = 2.4 ties check DAMAGE: ADDRESS is earlier
    for t, expected in ((0, 0.4), (1, 0.4), (2, 10.4), (3, 10.4)):
        out = clarification(*one([0.5, 0.3, 0.1, 0.1], t), c)
        assert out.checked[0] and out.first[0] == 0 and out.route_yes[0] == 0 and out.route_no[0] == 1
        assert out.cost[0] == pytest.approx(expected)
    out = clarification(*one([0.97, 0.01, 0.01, 0.01], 3), c)     # act now 0.3 < check 0.6
    assert not out.checked[0] and out.first[0] == 0 and out.cost[0] == 10.0
    # act now 1.0 equals check ADDRESS 0.4 + 10 * 0.06: acting now wins the tie
    out = clarification(*one([0.9, 0.04, 0.03, 0.03], 0), c)
    assert not out.checked[0] and out.cost[0] == 0.0
    out = clarification(*one([0.5, 0.3, 0.1, 0.1], 0, avail=False), c)
    assert out.first[0] == FALLBACK and not out.checked[0] and out.cost[0] == 2.0


def test_asymmetric_by_hand():
    c = domain_costs("delivery")
    out = asymmetric(*one([0.25] * 4, 1), c)                       # inspection 1.825 is the cheapest
    assert out.first[0] == 4 and out.cost[0] == pytest.approx(2.2)
    out = asymmetric(*one([0, 0, 1, 0], 0), c)                     # sure of DELAY: route it
    assert out.first[0] == 2 and out.cost[0] == 3.0
    # every route equally expensive (zero matrix): the class transmitted first
    zero = DomainCosts("delivery", CLASSES, 10, 2, 0.4, 2, np.zeros((5, 4)))
    assert asymmetric(*one([0.25] * 4, 0), zero).first[0] == 2


def test_oracle_is_a_lower_bound_for_any_policy():
    rng = np.random.default_rng(3)
    n = 400
    q = rng.dirichlet(np.ones(4) * 0.7, size=n)
    rank = np.array([rng.permutation(4) for _ in range(n)])
    avail = rng.random(n) > 0.1
    t = rng.integers(0, 4, n)
    for profile in PROFILES:
        c = domain_costs("it", profile)
        for task in ("selective", "clarification", "asymmetric"):
            bound = oracle_cost(task, avail, t, c)
            for f in (0.5, 1.0, 1.5):
                assert (bound <= run_task(task, q, rank, avail, t, c, f).cost + 1e-12).all()


# ---------------------------------------------------------------- recipients and selection

def design_frame(model: str = "perfect", p_right: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Delivery worlds of the simulated design with a planted model response."""
    from qlb.simulate.tuple_sim import simulate_worlds
    rng = np.random.default_rng(seed)
    rows = []
    for w in simulate_worlds(20261011):
        if w["domain"] != "delivery":
            continue
        if model == "perfect":
            choice = w["coarse"]
        else:                                         # a noisy model: right 70% of the time
            choice = w["coarse"] if rng.random() < 0.7 else str(rng.choice(CLASSES))
        probs = {c: (p_right if c == choice else (1 - p_right) / 3) for c in CLASSES}
        rows.append({**{k: w[k] for k in ("world_id", "pair_id", "domain", "split", "coarse", "recipient_role",
                                          "candidate_order", "intake_channel", "operating_window")},
                     "status": "ok", "choice": choice, "probabilities": probs, "confidence": p_right})
    return pd.DataFrame(rows)


def test_a_perfect_confident_model_routes_at_zero_cost():
    res = utility_domain("perfect", "delivery", design_frame(), views=("choice", "full_native"))
    for s in res.selected:
        if s.task in ("selective", "asymmetric"):
            assert s.outcome.cost.max() == 0.0, (s.view, s.task, s.profile, s.recipient.name)


def test_no_output_recipient_cannot_beat_the_prior_and_full_native_beats_no_output():
    res = utility_domain("noisy", "delivery", design_frame("noisy", 0.6), views=("no_output", "full_native"),
                         profiles=("authored",))
    cost = {(s.view, s.task): s.outcome.cost.mean() for s in res.selected}
    val = {(s.view, s.task): s.val_cost for s in res.selected}
    assert cost[("no_output", "selective")] == 2.0                 # uniform prior: always review
    for task in ("clarification", "asymmetric"):
        assert cost[("full_native", task)] < cost[("no_output", task)]
    for task in ("selective", "clarification", "asymmetric"):     # the prior is always a candidate
        assert val[("full_native", task)] <= val[("no_output", task)]


def test_selection_never_reads_test_labels():
    frame = design_frame("noisy", 0.6)
    a = utility_domain("noisy", "delivery", frame, views=("choice",), profiles=("authored",))
    shuffled = frame.copy()
    test = shuffled["split"] == "test"
    shuffled.loc[test, "coarse"] = np.random.default_rng(1).permutation(shuffled.loc[test, "coarse"].to_numpy())
    b = utility_domain("noisy", "delivery", shuffled, views=("choice",), profiles=("authored",))
    for sa, sb in zip(a.selected, b.selected):
        assert (sa.recipient.name, sa.factor, sa.val_cost) == (sb.recipient.name, sb.factor, sb.val_cost)
        assert (sa.outcome.plan() == sb.outcome.plan()).all()       # same decisions, other truth


def test_frozen_logistic_recipient_matches_scikit_learn():
    frame = design_frame("noisy", 0.6)
    train = frame[frame["split"] == "train"]
    dicts = features(train, CLASSES)
    y = train["coarse"].map({c: i for i, c in enumerate(CLASSES)}).to_numpy()
    rec = fit_logistic(dicts, y, CLASSES, C=0.1)
    vec = DictVectorizer(sparse=False)
    x = vec.fit_transform(dicts)
    ref = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=2000)).fit(x, y)
    test = frame[frame["split"] == "test"]
    expected = ref.predict_proba(vec.transform(features(test, CLASSES)))
    assert np.allclose(rec.q(test), expected, atol=1e-6)
    again = Recipient.from_json(rec.to_json())                     # the stored form replays exactly
    assert np.array_equal(again.q(test), rec.q(test))
    assert json.loads(rec.to_json())["kind"] == "logistic"


def test_result_tables_means_and_paired_differences():
    frame = design_frame("noisy", 0.6)
    res = utility_domain("noisy", "delivery", frame, views=("choice", "full_native"), profiles=("authored",))
    actions = action_rows([res])
    assert len(actions) == 2 * 3 * 96                                # views x tasks x test worlds
    results, diffs = result_tables(actions, n_boot=500)
    for row in results[results["scope"] == "pooled"].itertuples():
        sub = actions[(actions["view"] == row.view) & (actions["task"] == row.task)]
        assert row.mean_cost == pytest.approx(sub["cost"].mean())
        assert row.ci_low <= row.mean_cost <= row.ci_high
    for row in diffs.itertuples():
        a = actions[(actions["view"] == row.view_a) & (actions["task"] == row.task)].set_index("world_id")["cost"]
        b = actions[(actions["view"] == row.view_b) & (actions["task"] == row.task)].set_index("world_id")["cost"]
        assert row.difference == pytest.approx((a - b).mean())
        assert row.noninferior == (row.ci_high <= 0.1)
    sel = actions[actions["task"] == "selective"]
    pooled = results[(results["task"] == "selective") & (results["scope"] == "pooled")].set_index("view")
    for view, sub in sel.groupby("view"):
        assert pooled.loc[view, "coverage"] == pytest.approx(sub["routed"].mean())


# ---------------------------------------------------------------- fronts

def brute_force(points: list[tuple[float, float]]) -> list[bool]:
    out = []
    for i, (r, c) in enumerate(points):
        dominated = any(r2 <= r and c2 <= c and (r2 < r or c2 < c) for j, (r2, c2) in enumerate(points) if j != i)
        out.append(not dominated)
    return out


def test_non_dominated_set_equals_brute_force():
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(1, 15))
        pts = [(float(rng.integers(0, 5)) / 4, float(rng.integers(0, 5)) / 4) for _ in range(n)]   # many ties
        got = non_dominated(np.array([p[0] for p in pts]), np.array([p[1] for p in pts]))
        assert got.tolist() == brute_force(pts)
    assert non_dominated(np.array([0.6, 0.6]), np.array([0.2, 0.2])).tolist() == [True, True]   # equal points


def test_non_dominated_matches_paretoset_where_installed():
    paretoset = pytest.importorskip("paretoset")
    rng = np.random.default_rng(11)
    pts = rng.random((40, 2))
    # paretoset's plain-numpy path: its numba path compiles for 4-7 s first, for the same answer
    reference = paretoset.paretoset(pts, sense=["min", "min"], use_numba=False)
    assert non_dominated(pts[:, 0], pts[:, 1]).tolist() == reference.tolist()


def test_audit_json_has_the_contract_utility_and_defenses(decoded_warehouse, tmp_path):
    """Rerunning the decoded audit with the same parameters reuses the stored run, and its JSON
    summary carries `utility` and `defenses` in the shape of CONTRACT.md section 2."""
    import shutil

    from qlb.runs.audit import run_audits
    from warehouse.db import writer
    wh = tmp_path / "qlb.duckdb"
    shutil.copy(decoded_warehouse, wh)
    with writer(wh) as con:
        run = run_audits(con, "simulated-reference", jobs=2, **DECODED_AUDIT)
    doc = run.to_json()
    assert run.reused and doc["test_used_for_selection"] is False
    util = doc["utility"]
    assert set(util) == {"sim-alder", "sim-dogwood"}
    cell = util["sim-alder"]["choice"]["clarification"]["error_double"]
    assert set(cell) == {"mean_cost", "ci_low", "ci_high"} and cell["ci_low"] <= cell["mean_cost"] <= cell["ci_high"]
    assert set(util["sim-dogwood"]) == {"no_output", "choice", "choice_confidence", "full_probabilities", "full_native"}
    assert all(set(t) == {"selective", "clarification", "asymmetric"} for t in util["sim-alder"].values())
    d = doc["defenses"]["sim-alder"]
    assert set(d) == {"native", "quantize", "top2", "temperature", "noise", "wcpq", "wcpq grid",
                      "wcpq learned 0.2 paired"}
    assert d["wcpq learned 0.2 paired"]["coverage"] <= 1 and d["wcpq learned 0.2 paired"]["max_abs_cost_diff"] >= 0
    assert d["wcpq grid"]["plan_agreement"] == 1.0 and d["wcpq grid"]["coverage"] <= d["wcpq"]["coverage"]
    # the issue-15 additions: coarse accuracy, non-inferiority and fronts of the reused run
    assert set(doc["coarse_accuracy"]) == {"sim-alder", "sim-dogwood"}
    assert 0.5 < doc["coarse_accuracy"]["sim-alder"]["accuracy"] <= 1 and doc["coarse_accuracy"]["sim-alder"]["n"] == 288
    assert isinstance(doc["noninferior"]["sim-alder"]["choice"]["clarification"]["authored"], bool)
    assert set(doc["fronts"]) == {"selective", "clarification", "asymmetric"}
    assert set(doc["fronts"]["selective"]["authored"]) <= {"sim-alder", "sim-dogwood"}
    assert d["wcpq"]["plan_agreement"] == 1.0 and d["wcpq"]["max_abs_cost_diff"] == 0.0
    assert d["quantize"]["coverage"] is None
    assert {"accuracy", "ci_low", "ci_high", "coverage", "plan_agreement", "max_abs_cost_diff"} == set(d["top2"])
