"""Output defenses and the WCPQ strict mapper (TUPLE.md section 7): exact vectors, seeded noise,
the public temperature inverse, the static grid, and the mapper's guarantee on random policies."""
from __future__ import annotations


import numpy as np
import pandas as pd
import pytest

from qlb.tuple.costs import PROFILES, domain_costs
from qlb.tuple.defenses import noise, quantize, static_grid, temperature, temperature_inverse, to_dict, top2
from qlb.tuple.recipients import Recipient, candidate_ranks
from qlb.tuple.wcpq import Policy, map_domain, released_frame, verify
from qlb.tuple.workflows import TASKS, run_task

CLASSES = ("ADDRESS", "DAMAGE", "DELAY", "DELIVERY_RECORD")


def test_quantize_exact_vectors_and_ties_in_public_order():
    cases = {
        (0.25, 0.25, 0.25, 0.25): (0.3, 0.3, 0.2, 0.2),        # four equal remainders: the first two win
        (0.15, 0.15, 0.35, 0.35): (0.2, 0.2, 0.3, 0.3),
        (0.7, 0.1, 0.1, 0.1): (0.7, 0.1, 0.1, 0.1),            # 10 * 0.7 is 6.999...: still 0.7
        (1 / 3, 1 / 3, 1 / 3, 0.0): (0.4, 0.3, 0.3, 0.0),
        (0.06, 0.04, 0.45, 0.45): (0.1, 0.0, 0.5, 0.4),        # remainders .6 .4 .5 .5: 0.06 then 0.45 (first)
        (0.0, 0.0, 0.0, 1.0): (0.0, 0.0, 0.0, 1.0),
    }
    for p, expected in cases.items():
        assert quantize(np.array([p]))[0].tolist() == pytest.approx(list(expected), abs=1e-12), p
    rng = np.random.default_rng(0)
    q = quantize(rng.dirichlet(np.ones(4), 500))
    assert np.allclose(q.sum(axis=1), 1.0) and np.allclose(q * 10, np.round(q * 10))


def test_top2_keeps_two_original_scores_and_leaves_the_rest_missing():
    out = top2(np.array([[0.4, 0.3, 0.3, 0.0], [0.1, 0.2, 0.3, 0.4]]))
    assert out[0, :2].tolist() == [0.4, 0.3] and np.isnan(out[0, 2:]).all()   # tie: earlier candidate
    assert np.isnan(out[1, :2]).all() and out[1, 2:].tolist() == [0.3, 0.4]   # not renormalized
    assert to_dict(out[0], CLASSES) == {"ADDRESS": 0.4, "DAMAGE": 0.3}        # absent, never 0


def test_temperature_and_its_public_inverse():
    rng = np.random.default_rng(1)
    p = np.vstack([rng.dirichlet(np.ones(4) * 0.3, 1000), [[0.0, 0.0, 0.0, 1.0]], [[0.5, 0.5, 0.0, 0.0]]])
    t = temperature(p)
    assert np.allclose(t.sum(axis=1), 1.0)
    assert np.allclose(t[0], np.sqrt(p[0]) / np.sqrt(p[0]).sum())
    assert np.abs(temperature_inverse(t) - p).max() < 1e-12


def test_noise_is_seeded_per_world_and_always_a_distribution():
    rng = np.random.default_rng(2)
    p = rng.dirichlet(np.ones(4), 50)
    ids = [f"w{i}" for i in range(50)]
    a, b = noise(p, ids, 20261011), noise(p, ids, 20261011)
    assert np.array_equal(a, b)                                   # same seed, same noise
    assert not np.allclose(a, noise(p, ids, 20261012))            # another seed, other noise
    assert (a >= 0).all() and np.allclose(a.sum(axis=1), 1.0)
    rev = noise(p[::-1], ids[::-1], 20261011)[::-1]               # a world's draw ignores file order
    assert np.array_equal(a, rev)
    assert noise(np.zeros((1, 4)), ["z"], 1, sigma=0.0).tolist() == [[0.25] * 4]    # all zero: uniform


def test_static_grid():
    g = static_grid()
    assert g.shape == (286, 4) and np.allclose(g.sum(axis=1), 1.0)
    assert g[0].tolist() == [0, 0, 0, 1] and g[-1].tolist() == [1, 0, 0, 0]
    keys = [tuple(np.round(r * 10).astype(int)) for r in g]
    assert keys == sorted(keys) and len(set(keys)) == 286


# ---------------------------------------------------------------- WCPQ on random policies

def random_frame(rng, n: int, on_grid: bool = False) -> pd.DataFrame:
    rows = []
    for i in range(n):
        order = list(rng.permutation(CLASSES))
        p = static_grid()[rng.integers(0, 286)] if on_grid else rng.dirichlet(np.ones(4) * 0.6)
        probs = {c: float(v) for c, v in zip(CLASSES, p)}
        choice = max(CLASSES, key=lambda c: probs[c])
        rows.append({"world_id": f"w{i:03d}", "pair_id": f"p{i // 2}", "domain": "delivery", "split": "test",
                     "coarse": CLASSES[rng.integers(0, 4)], "recipient_role": "merchant_claim_dispatcher",
                     "candidate_order": order, "intake_channel": str(rng.choice(["phone", "email"])),
                     "operating_window": "weekend", "status": "ok" if rng.random() > 0.05 else "unavailable",
                     "choice": choice, "probabilities": probs,
                     "confidence": float(max(p)) if rng.random() > 0.3 else np.nan})
    f = pd.DataFrame(rows)
    f.loc[f["status"] != "ok", ["choice", "probabilities"]] = None
    f.loc[f["status"] != "ok", "confidence"] = np.nan
    return f


def random_policies(rng) -> list[Policy]:
    names = [f"p={c}" for c in CLASSES] + ["confidence", "channel=phone"] + [f"choice={c}" for c in CLASSES]
    out = []
    for task in TASKS:
        for profile in PROFILES:
            kind = rng.choice(["logistic", "logistic", "native", "prior"])
            if kind == "logistic":
                rec = Recipient("logistic", "logistic", CLASSES, None, names, rng.normal(0, 3, (4, len(names))),
                                rng.normal(0, 1, 4))
            elif kind == "native":
                rec = Recipient("native", "native", CLASSES)
            else:
                rec = Recipient("empirical_prior", "prior", CLASSES, rng.dirichlet(np.ones(4)))
            out.append(Policy(task, profile, rec, float(rng.choice([0.5, 1.0, 1.5])), domain_costs("delivery", profile)))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equal_signatures_give_equal_plans_and_costs_for_every_truth(seed):
    rng = np.random.default_rng(seed)
    frame = random_frame(rng, 60)
    policies = random_policies(rng)
    mapping = map_domain(frame, "delivery", policies)
    released = released_frame(frame, mapping)
    v = verify(frame, released, "delivery", policies)
    assert v.plan_agreement == v.comparisons == 60 * 18
    assert v.max_abs_cost_diff == 0.0
    rank = candidate_ranks(frame, CLASSES)
    avail = (frame["status"] == "ok").to_numpy()
    for p in policies:                      # every hypothetical coarse truth, not only the realized one
        for t in range(4):
            tt = np.full(len(frame), t)
            a = run_task(p.task, p.recipient.q(frame), rank, avail, tt, p.costs, p.factor)
            b = run_task(p.task, p.recipient.q(released), rank, avail, tt, p.costs, p.factor)
            assert np.array_equal(a.plan(), b.plan()) and np.array_equal(a.cost, b.cost)
    covered = mapping.code_index >= 0
    assert covered.sum() > 0
    for i in np.flatnonzero(covered):       # a covered release is its codeword, confidence its max
        probs = released["probabilities"][i]
        assert np.allclose(list(probs.values()), static_grid()[mapping.code_index[i]])
        if not np.isnan(frame["confidence"][i]):
            assert released["confidence"][i] == max(probs.values())
    assert released.loc[~avail, "probabilities"].isna().all()      # unavailable passes through


def test_no_codeword_falls_back():
    """Two selective native policies route above max q = 0.82 and 0.88 (review 2, factors 0.9 and
    0.6): a response with max q = 0.85 routes under one and reviews under the other, which no
    grid vector (max 0.8: both review; 0.9: both route) reproduces, so it is released unchanged."""
    rng = np.random.default_rng(3)
    frame = random_frame(rng, 4)
    frame["status"] = "ok"
    frame["choice"] = "ADDRESS"
    frame["candidate_order"] = [list(CLASSES)] * 4                          # ties go to ADDRESS
    frame["probabilities"] = [{"ADDRESS": 0.85, "DAMAGE": 0.05, "DELAY": 0.05, "DELIVERY_RECORD": 0.05},
                              {"ADDRESS": 0.95, "DAMAGE": 0.03, "DELAY": 0.01, "DELIVERY_RECORD": 0.01},
                              {"ADDRESS": 0.7, "DAMAGE": 0.1, "DELAY": 0.1, "DELIVERY_RECORD": 0.1},
                              {"ADDRESS": 0.84, "DAMAGE": 0.06, "DELAY": 0.05, "DELIVERY_RECORD": 0.05}]
    frame["confidence"] = [0.85, np.nan, 0.7, 0.84]
    native = Recipient("native", "native", CLASSES)
    policies = [Policy("selective", "authored", native, f, domain_costs("delivery")) for f in (0.9, 0.6)]
    mapping = map_domain(frame, "delivery", policies)
    assert mapping.code_index[[0, 3]].tolist() == [-1, -1]                  # identity fallback
    released = released_frame(frame, mapping)
    for i in (0, 3):
        assert released["probabilities"][i] == frame["probabilities"][i]
        assert released["confidence"][i] == frame["confidence"][i]
    # both route ADDRESS (0.95) or both review (0.7): the lexicographically first grid vector
    # with ADDRESS on top and max 0.9, resp. at most 0.8
    grid = static_grid()
    assert grid[mapping.code_index[1]].tolist() == [0.9, 0.0, 0.0, 0.1]
    assert grid[mapping.code_index[2]].tolist() == [0.3, 0.1, 0.3, 0.3]
    v = verify(frame, released, "delivery", policies)
    assert v.plan_agreement == v.comparisons == 4 * 2 and v.max_abs_cost_diff == 0.0


@pytest.mark.parametrize("seed", [3, 4])
def test_a_response_on_the_grid_never_falls_back(seed):
    """A grid response's own vector has its signature: it is covered, by itself or an earlier
    codeword with the same signature."""
    rng = np.random.default_rng(seed)
    frame = random_frame(rng, 50, on_grid=True)
    frame["confidence"] = [max(p.values()) if isinstance(p, dict) else np.nan for p in frame["probabilities"]]
    policies = random_policies(rng)
    mapping = map_domain(frame, "delivery", policies)
    avail = (frame["status"] == "ok").to_numpy()
    grid = [tuple(np.round(r * 10).astype(int)) for r in static_grid()]
    own = [grid.index(tuple(round(10 * p[c]) for c in CLASSES)) for p in frame.loc[avail, "probabilities"]]
    assert (mapping.code_index[avail] >= 0).all()
    assert (mapping.code_index[avail] <= np.array(own)).all()


def test_vectorized_signature_equals_the_plain_path():
    rng = np.random.default_rng(5)
    frame = random_frame(rng, 30)
    frame = frame[frame["status"] == "ok"].reset_index(drop=True)
    for p in random_policies(rng)[:6]:
        from qlb.tuple.wcpq import q_codewords
        code = static_grid()
        qv = q_codewords(p, frame, code, CLASSES)
        for i in range(0, len(frame), 7):
            for j in (0, 57, 285):
                one = frame.iloc[[i]].copy()
                one["probabilities"] = [{c: float(v) for c, v in zip(CLASSES, code[j])}]
                if not np.isnan(one["confidence"].iloc[0]):
                    one["confidence"] = float(code[j].max())
                assert np.allclose(qv[i, j], p.recipient.q(one)[0], atol=1e-12)


def test_demo_wcpq_is_verified(decoded_warehouse):
    import duckdb
    con = duckdb.connect(str(decoded_warehouse), read_only=True)
    try:
        row = con.execute("SELECT plan_agreement, plan_comparisons, max_abs_cost_diff, coverage, accuracy, "
                          "diff_vs_native FROM defense_results WHERE defense = 'wcpq'").fetchone()
        native = con.execute("SELECT mean_cost FROM defense_costs WHERE defense = 'native' AND recipient = 'frozen' "
                             "ORDER BY task, profile").fetchall()
        wcpq = con.execute("SELECT mean_cost FROM defense_costs WHERE defense = 'wcpq' AND recipient = 'frozen' "
                           "ORDER BY task, profile").fetchall()
        grid = con.execute("SELECT plan_agreement, plan_comparisons, max_abs_cost_diff, coverage "
                           "FROM defense_results WHERE defense = 'wcpq grid'").fetchone()
        endpoints = {r[0] for r in con.execute("SELECT defense FROM defense_results").fetchall()}
    finally:
        con.close()
    agreement, comparisons, worst, coverage, acc, diff = row
    assert comparisons == 288 * 18 and agreement == comparisons
    assert worst == 0.0 and 0.5 < coverage <= 1.0
    assert native == wcpq and len(native) == 18
    # the canonical control is verified too; the main codebook holds the grid, so it covers at least as much
    assert grid[1] == 288 * 18 and grid[0] == grid[1] and grid[2] == 0.0 and grid[3] <= coverage
    assert endpoints == {"native", "quantize", "top2", "temperature", "noise", "wcpq", "wcpq grid",
                         "noise seed 20261011", "noise seed 20261012", "noise seed 20261013",
                         "wcpq learned 0.2 paired"}


def test_the_main_codebook_is_the_grid_then_training_vectors_then_pair_midpoints():
    """Paper H.1/H.4: the static grid first, then the training responses (never a validation or
    test answer), then each training pair's midpoint; a vector already in the book is not repeated."""
    from qlb.tuple.wcpq import main_codebook
    classes = ("a", "b", "c", "d")
    rows = [("w1", "p1", "train", {"a": 0.55, "b": 0.25, "c": 0.15, "d": 0.05}),
            ("w2", "p1", "train", {"a": 0.45, "b": 0.35, "c": 0.15, "d": 0.05}),
            ("w3", "p2", "train", {"a": 0.5, "b": 0.2, "c": 0.2, "d": 0.1}),      # on the grid already
            ("w4", "p2", "validation", {"a": 0.61, "b": 0.19, "c": 0.1, "d": 0.1}),
            ("w5", "p3", "test", {"a": 0.71, "b": 0.09, "c": 0.1, "d": 0.1})]
    frame = pd.DataFrame({"world_id": [r[0] for r in rows], "pair_id": [r[1] for r in rows],
                          "split": [r[2] for r in rows], "status": "ok", "probabilities": [r[3] for r in rows]})
    book = main_codebook(frame, classes)
    grid = static_grid(4)
    assert np.array_equal(book[:len(grid)], grid)
    extra = book[len(grid):]
    # w1, w2 (w3 is a grid vector), then the midpoint of p1 = (0.5, 0.3, 0.15, 0.05); p2 has one training world
    assert np.allclose(extra, [[0.55, 0.25, 0.15, 0.05], [0.45, 0.35, 0.15, 0.05], [0.5, 0.3, 0.15, 0.05]])
