"""Invariants of the simulated TUPLE data (TUPLE.md section 1 design)."""
from __future__ import annotations

from collections import Counter

import pytest

from qlb.records.ontology import load_ontology
from qlb.records.schemas import PAIR_SHARED_FIELDS, NativeResponse, RefusalResponse, World
from qlb.simulate.tuple_sim import SIM_MODELS, simulate_native, simulate_refusal, simulate_worlds


@pytest.fixture(scope="module")
def worlds():
    return simulate_worlds(123)


def test_sizes_and_splits(worlds):
    assert len(worlds) == 1440
    pairs = Counter(w["pair_id"] for w in worlds)
    assert len(pairs) == 720 and set(pairs.values()) == {2}
    per_domain = Counter((w["domain"], w["split"]) for w in worlds)
    for d in ("delivery", "equipment", "it"):
        assert (per_domain[(d, "train")], per_domain[(d, "validation")], per_domain[(d, "test")]) == (288, 96, 96)
    per_mech = Counter((w["mechanism"], w["split"]) for w in worlds)
    assert {per_mech[(m, s)] for m in {w["mechanism"] for w in worlds}
            for s in ("train",)} == {18}
    assert {per_mech[(m, s)] for m in {w["mechanism"] for w in worlds} for s in ("validation", "test")} == {6}
    assert len({w["mechanism"] for w in worlds}) == 48


def test_pairs_share_public_fields_and_differ_in_s(worlds):
    by_pair: dict[str, list[dict]] = {}
    for w in worlds:
        by_pair.setdefault(w["pair_id"], []).append(w)
    for a, b in by_pair.values():
        for f in PAIR_SHARED_FIELDS:
            assert a[f] == b[f], f
        assert a["mechanism"] != b["mechanism"]
        assert sorted([a["mechanism"], b["mechanism"]]) == a["hypotheses"]
        assert a["diagnostic_note"] != b["diagnostic_note"]


def test_worlds_validate_and_mechanism_pairs_cycle(worlds):
    for w in worlds:
        World.model_validate(w)
    onto = load_ontology()
    counts = Counter((w["domain"], w["coarse"], tuple(w["hypotheses"])) for w in worlds)
    assert set(counts.values()) == {20}          # 10 pairs (20 worlds) per mechanism pair
    assert len(counts) == 3 * 4 * 6
    assert all(w["recipient_role"] == onto.domain(w["domain"]).recipient_role for w in worlds)


def test_deterministic_from_seed(worlds):
    assert simulate_worlds(123) == worlds
    assert simulate_worlds(124) != worlds
    m = SIM_MODELS[0]
    assert simulate_native(worlds, m, 123) == simulate_native(worlds, m, 123)


def test_models_are_distinct_and_labelled(worlds):
    names = [m.name for m in SIM_MODELS]
    assert len(names) == 9 and len(set(names)) == 9 and all(n.startswith("sim-") for n in names)
    assert sum(m.confidence == "max_p" for m in SIM_MODELS) >= 1
    assert any(m.withhold == 0 for m in SIM_MODELS)       # a model that never withholds


def test_responses_cover_every_world_and_follow_the_rules(worlds):
    cand = {w["world_id"]: frozenset(w["candidate_order"]) for w in worlds}
    domain = {w["world_id"]: w["domain"] for w in worlds}
    total_invalid = 0
    for m in SIM_MODELS:
        native = simulate_native(worlds, m, 123)
        refusal = simulate_refusal(worlds, m, 123)
        assert [r["world_id"] for r in native] == [w["world_id"] for w in worlds]
        assert [r["world_id"] for r in refusal] == [w["world_id"] for w in worlds]
        invalid = 0
        for r in native:
            resp = NativeResponse.model_validate(r).assess(cand[r["world_id"]])
            invalid += not resp.valid
            if m.confidence == "max_p" and resp.valid and resp.status == "ok":
                assert resp.confidence == max(resp.probabilities.values())
        assert invalid == m.invalid
        total_invalid += invalid
        for r in refusal:
            assert RefusalResponse.model_validate(r).label_problem(domain[r["world_id"]]) is None
    assert total_invalid > 0


def test_withhold_rates_follow_the_model(worlds):
    for m in SIM_MODELS:
        refusal = simulate_refusal(worlds, m, 123)
        ok = [r for r in refusal if r["status"] == "ok"]
        rate = sum(r["choice"] == "WITHHOLD" for r in ok) / len(ok)
        assert abs(rate - m.withhold) < 0.05, m.name
