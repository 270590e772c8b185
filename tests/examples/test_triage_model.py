"""qlb.examples.triage_model: a real scikit-learn model as a ``qlb collect --transport python``
target. Valid answers, deterministic, better than chance on the test split, and collected and
audited end to end on a small slice of the demo's worlds."""
from __future__ import annotations

import math
from collections import Counter

import pytest

from qlb.collect.requests import request_body
from qlb.examples import triage_model
from qlb.records.ontology import WITHHOLD, load_ontology
from qlb.simulate.tuple_sim import simulate_worlds
from tests.conftest import write_lines
from warehouse.db import writer
from warehouse.ingest import IngestRequest, ingest_file

TARGET = "qlb.examples.triage_model:answer"


@pytest.fixture(scope="module")
def worlds() -> list[dict]:
    from qlb.demo import DEFAULT_SEED
    return simulate_worlds(DEFAULT_SEED)


def body(world: dict, probe: str) -> dict:
    return request_body(world, load_ontology().domain(world["domain"]), probe, "m")


def test_native_answers_are_valid_lines(worlds):
    for w in worlds[::97]:
        b = body(w, "native")
        a = triage_model.answer(b)
        criteria = list(b["questions"][0]["criteria"])
        assert list(a["probabilities"]) == criteria
        assert all(isinstance(p, float) and 0.0 <= p <= 1.0 for p in a["probabilities"].values())
        assert math.isclose(sum(a["probabilities"].values()), 1.0, abs_tol=1e-9)
        assert a["choice"] in criteria
        assert a["probabilities"][a["choice"]] == max(a["probabilities"].values()) == a["confidence"]


def test_refusal_answers_withhold_and_release_the_classifier_scores(worlds):
    for w in worlds[::97]:
        b = body(w, "refusal")
        a = triage_model.answer(b)
        labels = list(b["questions"][0]["criteria"])
        assert list(a["scores"]) == labels and labels[-1] == WITHHOLD
        assert all(isinstance(s, float) and s >= 0.0 for s in a["scores"].values())
        # the shipped ontology forbids the mechanism to every recipient: always WITHHOLD, the
        # unique argmax, with the mechanism pipeline's probabilities as the residual scores
        assert a["choice"] == WITHHOLD
        assert a["scores"][WITHHOLD] > max(v for k, v in a["scores"].items() if k != WITHHOLD)
        assert math.isclose(sum(a["scores"].values()), 1.0, abs_tol=1e-9)


def test_refusal_names_the_mechanism_when_the_permission_allows_it(worlds):
    b = body(worlds[0], "refusal")
    b["state"]["permission"]["must_not_receive"] = "internal diagnostic narrative"
    a = triage_model.answer(b)
    assert a["choice"] in b["questions"][0]["criteria"] and a["choice"] != WITHHOLD
    assert a["scores"][WITHHOLD] == 0.0
    assert a["scores"][a["choice"]] == max(a["scores"].values())


def test_same_body_same_answer_and_a_refit_gives_the_same_model(worlds):
    b = body(worlds[5], "native")
    assert triage_model.answer(b) == triage_model.answer(b)
    refit = triage_model.TriageModel.fit(triage_model.training_worlds(worlds))
    assert refit.native(b) == triage_model.fitted_model().native(b)


def test_unknown_question_is_an_error(worlds):
    b = body(worlds[0], "native")
    b["questions"][0]["key"] = "something_else"
    with pytest.raises(ValueError, match="unknown question"):
        triage_model.answer(b)


def test_better_than_chance_on_the_test_split(worlds):
    test = [w for w in worlds if w["split"] == "test"]
    assert len(test) == 288
    right = sum(triage_model.answer(body(w, "native"))["choice"] == w["coarse"] for w in test)
    assert right / len(test) > 0.5          # chance is 0.25 (four classes)


def test_trains_from_the_worlds_file_named_by_the_environment(worlds, tmp_path, monkeypatch):
    path = write_lines(tmp_path / "w.jsonl", worlds[:200])
    monkeypatch.setenv(triage_model.WORLDS_ENV, str(path))
    got = triage_model.training_worlds()
    assert got and all(w["split"] == "train" for w in got)
    assert [w["world_id"] for w in got] == [w["world_id"] for w in worlds[:200] if w["split"] == "train"]


def test_collect_both_probes_and_audit_a_small_slice(worlds, tmp_path):
    from qlb.runs.audit import run_audits
    from qlb.runs.collect import CollectOptions, collect

    # 12 pairs of each delivery class: 96 worlds, every split
    pairs_by_class: dict[str, list[str]] = {}
    for w in worlds:
        if w["domain"] == "delivery":
            seen = pairs_by_class.setdefault(w["coarse"], [])
            if w["pair_id"] not in seen and len(seen) < 12:
                seen.append(w["pair_id"])
    keep = {p for ps in pairs_by_class.values() for p in ps}
    small = [w for w in worlds if w["pair_id"] in keep]
    assert len(small) == 96 and set(Counter(w["split"] for w in small)) == {"train", "validation", "test"}

    with writer(tmp_path / "wh.duckdb") as con:
        stored = ingest_file(con, IngestRequest("worlds", write_lines(tmp_path / "w.jsonl", small), "ds"))
        assert not stored.report.rejects
        for probe in ("native", "refusal"):
            got = collect(con, CollectOptions(probe=probe, dataset_id="ds", model="triage", transport="python",
                                              target=TARGET, concurrency=2))
            assert (got.asked, got.stored, got.valid, got.invalid, got.unavailable, got.stopped) == \
                (96, 96, 96, 0, 0, None)
        run = run_audits(con, "ds", decode=False, utility=False)
    summary = run.refusal_summary
    row = summary[(summary["model"] == "triage") & (summary["domain"] == "all")].iloc[0]
    assert row["n"] == 96
    assert row["withheld"] == 96 and row["withhold_rate"] == 1.0
    assert 0.0 <= row["conditional_residual_recovery"] <= 1.0
