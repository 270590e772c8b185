"""The learned bounded-cost WCPQ extension (paper H.2, ``qlb.tuple.learned_wcpq``): the written-out
gradients against finite differences, the greedy codebooks and prototypes on hand cases, the
deterministic deployment's tie rule, and on the suite's decoded audit the guarantee itself: every
release keeps each policy's selected category and costs at most the budget more for every true
class, replayed here independently of the mapper."""
from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest

from qlb.tuple import learned_wcpq as L


def _problem(seed: int, n: int = 12, m: int = 7):
    rng = np.random.default_rng(seed)
    x, z = rng.normal(size=(n, 5)), rng.normal(size=(n, 4))
    s = rng.integers(0, 2, n).astype(float)
    feasible = rng.random((n, m)) < 0.6
    feasible[np.arange(n), rng.integers(0, m, n)] = True
    pairs = np.array([[0, 1], [2, 3], [4, 5], [6, 7]])
    net, critic = L.init_params(5, 4, m, seed)
    for k in net:                       # away from the starting point, gates included
        net[k] = net[k] + rng.normal(0, 0.3, net[k].shape)
    critic["beta"] = rng.normal(0, 0.5, m)
    return x, z, s, feasible, pairs, net, critic


def _numeric(f, params: dict, key: str, h: float = 1e-6) -> np.ndarray:
    out = np.zeros_like(params[key])
    for idx in np.ndindex(params[key].shape):
        old = params[key][idx]
        params[key][idx] = old + h
        up = f()
        params[key][idx] = old - h
        down = f()
        params[key][idx] = old
        out[idx] = (up - down) / (2 * h)
    return out


@pytest.mark.parametrize("js_weight", [0.0, 2.0])
def test_assignment_gradients_match_finite_differences(js_weight):
    x, z, s, feasible, pairs, net, critic = _problem(3)
    _, logits = L.assignment_logits(net, x)
    _, _, ell = L.critic_loss(critic, z, s, L.soft_assignment(logits, feasible))
    _, grads = L.assignment_loss(net, x, feasible, ell, pairs, js_weight)
    for key in net:
        num = _numeric(lambda: L.assignment_loss(net, x, feasible, ell, pairs, js_weight)[0], net, key)
        assert np.allclose(grads[key], num, atol=1e-6, rtol=1e-4), key


def test_critic_gradients_match_finite_differences():
    x, z, s, feasible, pairs, net, critic = _problem(5)
    _, logits = L.assignment_logits(net, x)
    a = L.soft_assignment(logits, feasible)
    loss, grads, ell = L.critic_loss(critic, z, s, a)
    # the cross entropy by hand, from the definition
    hc = np.tanh(z @ critic["V1"] + critic["c1"])
    p = 1 / (1 + np.exp(-((hc @ critic["v2"] + critic["c2"])[:, None] + critic["beta"][None, :])))
    assert np.isclose(loss, (a * -(s[:, None] * np.log(p) + (1 - s[:, None]) * np.log(1 - p))).sum() / len(z))
    for key in critic:
        num = _numeric(lambda: L.critic_loss(critic, z, s, a)[0], critic, key)
        assert np.allclose(grads[key], num, atol=1e-6, rtol=1e-4), key


def test_the_soft_assignment_never_puts_mass_on_an_infeasible_codeword():
    x, _, _, feasible, _, net, _ = _problem(7)
    _, logits = L.assignment_logits(net, x)
    a = L.soft_assignment(logits, feasible)
    assert np.allclose(a.sum(axis=1), 1.0) and (a[~feasible] == 0).all()


def test_greedy_codebook_by_hand():
    # rows: 4 responses; columns: 4 codewords. Codeword 1 covers three responses; codeword 3
    # covers the last one; codeword 2 admits the pair (0, 3) jointly.
    f = np.array([[1, 1, 1, 0],
                  [0, 1, 0, 0],
                  [0, 1, 0, 0],
                  [0, 0, 1, 1]], bool)
    pairs = np.array([[0, 3]])
    assert L.greedy_codebook(f, pairs, 0.0) == [1, 2]         # gains 3 then 1 (2 before 3: earlier wins)
    assert L.greedy_codebook(f, pairs, 4.0) == [2, 1]         # 2 + 4 for the pair beats 3
    assert L.greedy_codebook(f, pairs, 0.0, size=1) == [1]
    assert L.greedy_codebook(np.zeros((3, 2), bool), pairs[:0], 4.0) == []


def test_farthest_points_by_hand():
    v = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0], [0.1, 0.0]])
    assert L.farthest_points(v, 0, 2) == [2, 1]
    assert L.farthest_points(v, 0, 10) == [2, 1, 3]           # stops once every point is chosen


def test_deployment_keeps_the_highest_gates_and_breaks_ties_by_codeword_order(monkeypatch):
    monkeypatch.setattr(L, "DEPLOYED", 2)
    net = {"W1": np.zeros((1, L.HIDDEN)), "b1": np.zeros(L.HIDDEN), "W2": np.zeros((L.HIDDEN, 4)),
           "b2": np.array([0.0, 1.0, 1.0, 5.0]), "gate": np.array([3.0, 3.0, 3.0, -9.0])}
    x = np.zeros((3, 1))
    feasible = np.array([[1, 1, 1, 1], [1, 0, 0, 1], [0, 0, 0, 1]], bool)
    kept, chosen = L.deploy(net, x, feasible)
    # gates 0, 1, 2 tie: the first two are kept; codeword 3 (the largest logit) is gated off
    assert kept.tolist() == [0, 1]
    assert chosen.tolist() == [1, 0, -1]


def test_endpoint_names_round_trip():
    assert len(L.LEARNED_ENDPOINTS) == 6 and len(set(L.LEARNED_ENDPOINTS)) == 6
    for ep in L.LEARNED_ENDPOINTS:
        assert L.learned_endpoint(*L.variant(ep)) == ep
    assert L.LEARNED_VARIANTS["0.2-paired"] == "wcpq learned 0.2 paired"
    with pytest.raises(ValueError):
        L.variant("wcpq")


def test_the_decoded_audit_learned_release_keeps_categories_within_budget(decoded_warehouse):
    """Replays the stored release: per frozen policy, the same selected category and a per-truth
    cost at most the budget (in review costs) above the native plan's; choice unchanged; the
    stored coverage is what the release shows."""
    from qlb.runs.decoding import decoding_frame
    from qlb.runs.policies import frozen_policies
    from qlb.tuple.recipients import candidate_ranks
    from qlb.tuple.workflows import argmax_public, run_task, truth_costs

    con = duckdb.connect(str(decoded_warehouse), read_only=True)
    try:
        run = con.execute("SELECT run_id FROM learned_wcpq LIMIT 1").fetchone()[0]
        info = con.execute("SELECT * FROM learned_wcpq WHERE run_id = ? ORDER BY domain", [run]).df()
        rel = con.execute("SELECT world_id, domain, probabilities, confidence, codeword FROM defense_releases "
                          "WHERE run_id = ? AND defense = ? ORDER BY world_id", [run, info["defense"].iloc[0]]).df()
        frame = decoding_frame(con, "simulated-reference", "sim-alder")
        policies = frozen_policies(con, run, "sim-alder")
        results = con.execute("SELECT coverage, fallbacks FROM defense_results WHERE run_id = ? AND defense = ?",
                              [run, info["defense"].iloc[0]]).fetchone()
    finally:
        con.close()
    assert len(info) == 3 and (info["budget"] == 0.2).all() and (info["js_weight"] == 2.0).all()
    assert (info["deployed"] <= 64).all() and (info["deployed"] <= info["pool"]).all()
    assert (info["max_cost_increase"] <= 0.2 + 1e-9).all()
    assert info["seed"].isin([19, 71]).all()
    assert np.isclose(results[0], info["covered"].sum() / info["available"].sum())
    import json
    changed = 0
    for domain, ps in policies.items():
        native = frame[frame["domain"] == domain].sort_values("world_id").reset_index(drop=True)
        got = rel[rel["domain"] == domain].set_index("world_id").loc[native["world_id"]].reset_index()
        released = native.copy()
        released["probabilities"] = [json.loads(p) if isinstance(p, str) else None for p in got["probabilities"]]
        released["confidence"] = got["confidence"].to_numpy()
        classes = ps[0].costs.classes
        rank = candidate_ranks(native, classes)
        avail = (native["status"] == "ok").to_numpy()
        zeros = np.zeros(len(native), int)
        for p in ps:
            qa, qb = p.recipient.q(native), p.recipient.q(released)
            assert (argmax_public(qa, rank) == argmax_public(qb, rank))[avail].all()
            up = truth_costs(run_task(p.task, qb, rank, avail, zeros, p.costs, p.factor), p.costs) \
                - truth_costs(run_task(p.task, qa, rank, avail, zeros, p.costs, p.factor), p.costs)
            assert up.max() <= 0.2 * p.costs.review + 1e-9
        coded = got["codeword"].to_numpy() >= 0
        changed += int(coded.sum())
        same = [a == b for a, b in zip(native["probabilities"], released["probabilities"])]
        assert all(np.array(same)[~coded])                      # the identity fallback keeps the response
    assert changed > 0


def test_the_command_line_and_the_options_choose_the_variants():
    from qlb.cli import build_parser
    from qlb.runs.audit import AuditOptions

    args = build_parser().parse_args(["audit", "--learned-wcpq", "0.5-paired", "0-no-pair"])
    chosen = [L.LEARNED_VARIANTS[v] for v in args.learned_wcpq]
    # the audit keeps its own endpoint order whatever the order asked for
    assert AuditOptions(learned_wcpq=chosen).learned_endpoints == ("wcpq learned 0 no pair", "wcpq learned 0.5 paired")
    assert build_parser().parse_args(["audit", "--learned-wcpq"]).learned_wcpq == []
    assert AuditOptions(learned_wcpq=[]).learned_endpoints == ()
    assert AuditOptions().learned_endpoints == L.LEARNED_ENDPOINTS
    assert AuditOptions().parameters()["learned_wcpq"] == list(L.LEARNED_ENDPOINTS)
    assert AuditOptions(defenses=False).parameters()["learned_wcpq"] is None
    with pytest.raises(ValueError, match="unknown learned WCPQ variant"):
        AuditOptions(learned_wcpq=["wcpq learned 0.3 paired"]).learned_endpoints
    with pytest.raises(SystemExit):
        build_parser().parse_args(["audit", "--learned-wcpq", "0.3-paired"])


def test_without_a_feasible_training_response_everything_is_released_unchanged():
    """No training response with the full vector: nothing to learn from, so the identity (the
    strict mapper's fallback), not a crash."""
    from qlb.tuple.recipients import Recipient
    from qlb.tuple.wcpq import Policy
    from tests.tuple.test_defenses import CLASSES, random_frame, random_policies

    rng = np.random.default_rng(4)
    frame = random_frame(rng, 40)
    frame["split"] = ["train"] * 20 + ["test"] * 20
    frame["mechanism"], frame["hypothesis_0"], frame["hypothesis_1"] = "m0", "m0", "m1"
    frame["probabilities"] = [None if i < 20 else p for i, p in enumerate(frame["probabilities"])]
    policies = [p if p.recipient.kind != "native" else
                Policy(p.task, p.profile, Recipient("prior", "prior", CLASSES, np.full(4, 0.25)), p.factor, p.costs)
                for p in random_policies(rng)]
    released = L.learned_releases(frame, policies, lambda mapping: (0.5, 0.69), ["wcpq learned 0.2 paired"])
    assert len(released) == 1 and (released[0].mapping.code_index == -1).all()
    assert released[0].deployed == 0 and released[0].guarded == 0
