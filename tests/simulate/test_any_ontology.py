"""The simulator for any ontology (issue #14 item 3; OWN_TASK.md): the TUPLE reference data is
unchanged, and an auditor's own task gets the same design scaled to its size."""
from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from itertools import combinations

import numpy as np
import pytest

from qlb.records.ontology import OntologyError, load_ontology, parse_ontology
from qlb.records.schemas import PAIR_SHARED_FIELDS, NativeResponse, RefusalResponse, World
from qlb.simulate.tuple_sim import (CUSTOM_PAIRS_PER_CLASS, SIM_MODELS, _mechanism_traits, _residual_directions,
                                    custom_split_counts, round_robin_pairs, simulate_native, simulate_refusal,
                                    simulate_worlds)
from tests.records.ontologies import five_by_two, make_ontology, three_by_three, write_ontology

# sha256 of json.dumps(simulate_worlds(20261011)) + json.dumps(native) + json.dumps(refusal) of
# the first model: the embedded demo's data, as recalibrated to the paper's regime (issue 15: the
# look-alike design with a hard class, its look-alike and two easy classes per domain, the other
# residual classes noise only); a change to the simulator that is not meant to change the demo
# must keep it.
TUPLE_DIGEST = "01f0c64213d3670cd64628b69b3da85a2f7304e084080edb4719fda104846d37"
SEED = 20261011
SPLITS = ("train", "validation", "test")


def _digest(worlds, native, refusal) -> str:
    text = json.dumps(worlds) + json.dumps(native) + json.dumps(refusal)
    return hashlib.sha256(text.encode()).hexdigest()


def test_tuple_outputs_are_unchanged():
    worlds = simulate_worlds(SEED)
    m = SIM_MODELS[0]
    assert _digest(worlds, simulate_native(worlds, m, SEED), simulate_refusal(worlds, m, SEED)) == TUPLE_DIGEST


def test_the_tuple_ontology_given_explicitly_takes_the_reference_path():
    onto = load_ontology()
    worlds = simulate_worlds(SEED, onto)
    m = SIM_MODELS[0]
    assert _digest(worlds, simulate_native(worlds, m, SEED, onto), simulate_refusal(worlds, m, SEED, onto)) \
        == TUPLE_DIGEST
    assert _mechanism_traits(SEED, onto) == _mechanism_traits(SEED)
    with pytest.raises(ValueError):
        simulate_worlds(SEED, onto, pairs_per_class=24)


def test_residual_directions_generalise_the_tuple_base():
    tuple_base = np.array([[1.0, -0.5, -0.5], [-0.5, 1.0, -0.5], [-0.5, -0.5, 1.0], [0.6, 0.6, -1.2]])
    assert np.allclose(_residual_directions(3, 4), tuple_base)
    for d in range(1, 8):
        for m in range(2, 13):
            dirs = _residual_directions(d, m)
            assert dirs.shape == (m, d)
            assert len({tuple(np.round(v, 6)) for v in dirs}) == m, (d, m)   # distinct


@pytest.mark.parametrize("m", range(2, 13))
def test_round_robin_covers_every_pair_once_and_balances_mechanisms(m):
    mechs = [f"m{i:02d}" for i in range(m)]
    pairs = round_robin_pairs(mechs)
    assert sorted(pairs) == sorted(combinations(mechs, 2))
    used = Counter(x for p in (pairs * 30)[:CUSTOM_PAIRS_PER_CLASS] for x in p)
    assert set(used) == set(mechs) and max(used.values()) - min(used.values()) <= 2


def test_split_counts():
    assert custom_split_counts(24) == {"train": 14, "validation": 5, "test": 5}
    assert custom_split_counts(3) == {"train": 1, "validation": 1, "test": 1}


# ------------------------------------------------------------------- own ontologies, 3x3 and 5x2
@pytest.fixture(scope="module", params=["3x3", "5x2"])
def case(request):
    doc = three_by_three() if request.param == "3x3" else five_by_two()
    onto = parse_ontology(json.dumps(doc), request.param)
    worlds = simulate_worlds(SEED, onto)
    native = {m.name: simulate_native(worlds, m, SEED, onto) for m in SIM_MODELS}
    refusal = {m.name: simulate_refusal(worlds, m, SEED, onto) for m in SIM_MODELS}
    return onto, worlds, native, refusal


def test_worlds_are_valid_under_the_ontology(case):
    onto, worlds, _, _ = case
    n_classes = sum(len(d.classes) for d in onto.domains.values())
    assert len(worlds) == 2 * CUSTOM_PAIRS_PER_CLASS * n_classes
    assert [w["world_id"] for w in worlds] == [f"w_{i:04d}" for i in range(1, len(worlds) + 1)]
    for w in worlds:
        World.model_validate(w, context={"ontology": onto})
    with pytest.raises(Exception):       # and not under TUPLE's
        World.model_validate(worlds[0])


def test_pairs_are_whole_and_never_straddle_splits(case):
    _, worlds, _, _ = case
    by_pair = defaultdict(list)
    for w in worlds:
        by_pair[w["pair_id"]].append(w)
    assert set(map(len, by_pair.values())) == {2}
    for a, b in by_pair.values():
        for f in PAIR_SHARED_FIELDS:          # split included
            assert a[f] == b[f], f
        assert sorted([a["mechanism"], b["mechanism"]]) == list(a["hypotheses"])
        assert a["diagnostic_note"] != b["diagnostic_note"]


def test_every_split_present_per_class_in_the_60_20_20_pattern(case):
    onto, worlds, _, _ = case
    pairs = Counter((w["domain"], w["coarse"], w["split"]) for w in worlds if w["mechanism"] == w["hypotheses"][0])
    want = custom_split_counts(CUSTOM_PAIRS_PER_CLASS)
    for name, dom in onto.domains.items():
        for cls in dom.classes:
            assert {s: pairs[(name, cls, s)] for s in SPLITS} == want


def test_pairs_cycle_through_the_mechanism_pairs(case):
    onto, worlds, _, _ = case
    for name, dom in onto.domains.items():
        for cls in dom.classes:
            mechs = dom.mechanisms_by_class[cls]
            used = Counter(tuple(w["hypotheses"]) for w in worlds
                           if w["domain"] == name and w["coarse"] == cls and w["mechanism"] == w["hypotheses"][0])
            assert set(used) == set(combinations(mechs, 2))
            assert max(used.values()) - min(used.values()) <= 1
            # each mechanism pair is trained on, and validation/test cover them before repeating one
            for split in ("train", "validation", "test"):
                got = {tuple(w["hypotheses"]) for w in worlds
                       if w["domain"] == name and w["coarse"] == cls and w["split"] == split}
                assert len(got) == min(len(used), custom_split_counts(CUSTOM_PAIRS_PER_CLASS)[split])


def test_texts_come_from_the_ontology_and_keep_the_secret_private(case):
    onto, worlds, _, _ = case
    for w in worlds:
        dom = onto.domain(w["domain"])
        assert dom.describe(w["coarse"]).rstrip(".") in w["request"]      # the request depends on T
        assert w["intake_channel"] in dom.intake_channels and w["operating_window"] in dom.operating_windows
        assert w["diagnostic_note"].startswith("SIMULATED internal report. ")
        assert dom.describe(w["mechanism"]).rstrip(".") in w["diagnostic_note"]
        public = " ".join(str(w[f]) for f in ("request", "case_context", "intake_channel", "operating_window"))
        for mech in dom.mechanisms:
            assert mech not in public and dom.describe(mech).rstrip(".") not in public


def test_responses_follow_the_rules(case):
    onto, worlds, native, refusal = case
    cand = {w["world_id"]: frozenset(w["candidate_order"]) for w in worlds}
    domain = {w["world_id"]: w["domain"] for w in worlds}
    labels = {d: frozenset(onto.domain(d).refusal_labels) for d in onto.domains}
    for m in SIM_MODELS:
        assert [r["world_id"] for r in native[m.name]] == list(cand)
        assert [r["world_id"] for r in refusal[m.name]] == list(cand)
        invalid = 0
        for r in native[m.name]:
            resp = NativeResponse.model_validate(r).assess(cand[r["world_id"]])
            invalid += not resp.valid
            if resp.valid and resp.status == "ok" and resp.probabilities is not None:
                assert set(resp.probabilities) == cand[r["world_id"]]
        assert invalid == m.invalid
        for r in refusal[m.name]:
            d = domain[r["world_id"]]
            assert RefusalResponse.model_validate(r).label_problem(d, labels[d]) is None


def test_the_nine_models_differ(case):
    _, worlds, native, refusal = case
    probs = {name: json.dumps([r["probabilities"] for r in rows]) for name, rows in native.items()}
    assert len(set(probs.values())) == 9
    answers = {name: json.dumps(rows) for name, rows in refusal.items()}
    assert len(set(answers.values())) == 9
    rate = {}
    for m in SIM_MODELS:
        ok = [r for r in refusal[m.name] if r["status"] == "ok"]
        rate[m.name] = sum(r["choice"] == "WITHHOLD" for r in ok) / len(ok)
    assert rate["sim-juniper"] == 0 and rate["sim-hazel"] > 0.85
    # the accurate models are accurate on the coarse class
    acc = {}
    truth = {w["world_id"]: w["coarse"] for w in worlds}
    for name, rows in native.items():
        ok = [r for r in rows if r["status"] == "ok"]
        acc[name] = sum(r["choice"] == truth[r["world_id"]] for r in ok) / len(ok)
    assert acc["sim-dogwood"] > acc["sim-cedar"]


def test_mechanism_signatures_are_distinct_within_a_class(case):
    onto, _, _, _ = case
    signature, difficulty, tint = _mechanism_traits(SEED, onto)
    for name, dom in onto.domains.items():
        for cls in dom.classes:
            others = [c for c in dom.classes if c != cls]
            vecs = [np.array([signature[name, m][c] for c in others]) for m in dom.mechanisms_by_class[cls]]
            assert all(set(signature[name, m]) == set(others) for m in dom.mechanisms_by_class[cls])
            for a, b in combinations(vecs, 2):
                assert np.linalg.norm(a - b) > 0.3
    assert set(difficulty) == set(tint) == {(n, m) for n, d in onto.domains.items() for m in d.mechanisms}


def test_deterministic_from_the_seed(case):
    onto, worlds, native, _ = case
    assert simulate_worlds(SEED, onto) == worlds
    assert simulate_worlds(SEED + 1, onto) != worlds
    m = SIM_MODELS[1]
    assert simulate_native(worlds, m, SEED, onto) == native[m.name]


def test_large_classes_and_small_designs():
    onto = parse_ontology(json.dumps(make_ontology({
        "big": {"WIDE": [f"w{i:02d}" for i in range(12)], "NARROW": ["n0", "n1"]},
        "two": {"A": ["a0", "a1"], "B": ["b0", "b1", "b2"]},
    })), "big")
    worlds = simulate_worlds(3, onto)
    for w in worlds:
        World.model_validate(w, context={"ontology": onto})
    wide = Counter(w["mechanism"] for w in worlds if w["coarse"] == "WIDE")
    assert set(wide) == {f"w{i:02d}" for i in range(12)}          # 24 pairs of 66: every mechanism
    small = simulate_worlds(3, onto, pairs_per_class=3)
    assert Counter(w["split"] for w in small if w["coarse"] == "A") == {"train": 2, "validation": 2, "test": 2}
    for m in SIM_MODELS:
        simulate_native(small, m, 3, onto)
        simulate_refusal(small, m, 3, onto)
    with pytest.raises(ValueError):
        simulate_worlds(3, onto, pairs_per_class=2)


def test_ids_shared_by_two_domains_are_simulated_per_domain():
    """OWN_TASK.md makes ids unique within a domain only: two domains may both have APPROVE and a
    mechanism ``m0`` (here with three and two classes). Each domain's mechanism gets traits over
    its own domain's classes (the simulator once keyed them by mechanism alone, and the larger
    domain's answers failed on a class the other lacks), and every model's answers are valid."""
    onto = parse_ontology(json.dumps(make_ontology({
        "alpha": {"APPROVE": ["m0", "m1"], "DENY": ["m2", "m3"], "REFER": ["m4", "m5"]},
        "beta": {"APPROVE": ["m0", "m1"], "DENY": ["m2", "m3"]},
    })), "shared ids")
    signature, _, _ = _mechanism_traits(SEED, onto)
    assert set(signature["alpha", "m0"]) == {"DENY", "REFER"} and set(signature["beta", "m0"]) == {"DENY"}
    worlds = simulate_worlds(SEED, onto, pairs_per_class=3)
    cand = {w["world_id"]: frozenset(w["candidate_order"]) for w in worlds}
    for m in SIM_MODELS:
        native = simulate_native(worlds, m, SEED, onto)
        assert sum(not NativeResponse.model_validate(r).assess(cand[r["world_id"]]).valid for r in native) == m.invalid


# ------------------------------------------------------------------------------ end to end
def test_build_demo_for_an_own_ontology(tmp_path):
    """`qlb demo --ontology FILE --dataset NAME` without the decoding audit (about 20 s here;
    with it, about 160 s with one job, too slow for the suite)."""
    from qlb.demo import build_demo
    from warehouse import queries
    from warehouse.db import reader
    from warehouse.ontologies import dataset_ontology_sha256

    doc = three_by_three()
    path = write_ontology(tmp_path / "own_task.json", doc)
    onto = parse_ontology(json.dumps(doc), "x")
    wh = tmp_path / "wh.duckdb"
    steps = []
    result = build_demo(wh, ontology_path=path, dataset="own-3x3", decode=False, jobs=1,
                        step=lambda label, *_: steps.append(label))
    assert result.dataset_id == "own-3x3" and "corpus" not in result.ingests
    assert any("QuasiLeak" in s for s in steps)                       # says the corpus is skipped
    assert result.ingests["worlds"].report.accepted and not result.ingests["worlds"].report.rejects
    with reader(wh) as con:
        ds = queries.fetch_df(con, "dataset_by_id", ["own-3x3"])
        assert bool(ds["simulated"].iloc[0])
        assert "SIMULATED" in ds["description"].iloc[0] and "own_task.json" in ds["description"].iloc[0]
        assert dataset_ontology_sha256(con, "own-3x3") == onto.sha256
        runs = con.execute("SELECT run_id, parameters FROM runs WHERE dataset_id = ?", ["own-3x3"]).fetchall()
        assert [r[0] for r in runs] == [result.run.run_id]
        assert json.loads(runs[0][1])["ontology_sha256"] == onto.sha256
        refusal = queries.fetch_df(con, "refusal_results", [result.run.run_id])
        assert set(refusal["model"]) == {m.name for m in SIM_MODELS}
        assert set(refusal["domain"]) - {"all"} == {"support"}
    again = build_demo(wh, ontology_path=path, dataset="own-3x3", decode=False, jobs=1)
    assert again.ingests["worlds"].duplicate and again.run.reused and again.run.run_id == result.run.run_id
    assert all(not r.report.accepted for r in again.ingests.values())           # nothing new stored


def test_build_demo_rejects_a_broken_ontology_before_writing(tmp_path):
    from qlb.demo import build_demo
    doc = three_by_three()
    doc["domains"]["support"]["classes"]["BILLING"] = ["card_expired"]
    path = write_ontology(tmp_path / "broken.json", doc)
    with pytest.raises(OntologyError) as exc:
        build_demo(tmp_path / "wh.duckdb", ontology_path=path, decode=False)
    assert any("1 mechanism, need at least 2" in p for p in exc.value.problems)
    assert not (tmp_path / "wh.duckdb").exists()


def test_build_demo_never_adds_simulated_answers_to_real_data(tmp_path):
    from qlb.demo import build_demo
    from warehouse.db import writer
    from warehouse.ontologies import store_ontology
    from tests.records.ontologies import as_text

    path = write_ontology(tmp_path / "own.json", three_by_three())
    wh = tmp_path / "wh.duckdb"
    with writer(wh) as con:                 # an auditor's real dataset, created by `qlb ingest ontology`
        store_ontology(con, "real", as_text(three_by_three()), "own.json")
    with pytest.raises(ValueError, match="not simulated"):
        build_demo(wh, ontology_path=path, dataset="real", decode=False)
