"""Validation rules of the edge models, rule by rule (TUPLE.md section 1, QUASILEAK.md section 4)."""
from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from qlb.records.schemas import (
    NativeResponse, QLDocument, QLPrediction, RefusalResponse, World, choice_not_argmax,
)
from tests.conftest import DELIVERY, make_world, native


# ---------------------------------------------------------------------------------- worlds
def test_valid_world_passes():
    w = World.model_validate(make_world("w1", "p1", "missed_transfer"))
    assert w.hypotheses == ("missed_transfer", "sorting_backlog")


@pytest.mark.parametrize("field,value,fragment", [
    ("domain", "shipping", "domain"),
    ("split", "dev", "split"),
    ("coarse", "DAMAGE", "mechanism"),                       # mechanism no longer in class T
    ("coarse", "LATE", "not a class of domain delivery"),
    ("mechanism", "forklift_puncture", "not a mechanism of delivery/DELAY"),
    ("hypotheses", ["sorting_backlog", "missed_transfer"], "sorted"),
    ("hypotheses", ["missed_transfer", "missed_transfer"], "distinct"),
    ("hypotheses", ["vehicle_breakdown", "weather_hold"], "not one of the hypotheses"),
    ("candidate_order", ["DELAY", "ADDRESS", "DAMAGE"], "permutation"),
    ("candidate_order", ["DELAY", "ADDRESS", "DAMAGE", "DAMAGE"], "permutation"),
    ("recipient_role", "field_service_scheduler", "recipient_role"),
])
def test_world_rules(field, value, fragment):
    with pytest.raises(ValidationError) as exc:
        w = make_world("w1", "p1", "missed_transfer")
        w[field] = value
        World.model_validate(w)
    assert fragment in str(exc.value)


def test_world_requires_fields():
    w = make_world("w1", "p1", "missed_transfer")
    del w["request"]
    with pytest.raises(ValidationError, match="request"):
        World.model_validate(w)


# ---------------------------------------------------------------------------- native responses
def assess(**over) -> NativeResponse:
    return NativeResponse.model_validate(native("m", "w1", **over)).assess(frozenset(DELIVERY))


def test_valid_native_response():
    r = assess()
    assert r.valid and r.invalid_reason is None and not r.choice_not_argmax


@pytest.mark.parametrize("over,fragment", [
    ({"probabilities": {"ADDRESS": 0.5, "DAMAGE": 0.5, "DELAY": 0.5, "DELIVERY_RECORD": 0.0}}, "sum to 1.5"),
    ({"probabilities": {"ADDRESS": -0.1, "DAMAGE": 0.1, "DELAY": 1.0, "DELIVERY_RECORD": 0.0}}, "negative"),
    ({"probabilities": {"ADDRESS": math.nan, "DAMAGE": 0.0, "DELAY": 1.0, "DELIVERY_RECORD": 0.0}}, "non-finite"),
    ({"probabilities": {"ADDRESS": math.inf, "DAMAGE": 0.0, "DELAY": 1.0, "DELIVERY_RECORD": 0.0}}, "non-finite"),
    ({"probabilities": {"LATE": 1.0}}, "not candidates: LATE"),
    ({"choice": "LATE"}, "not a candidate"),
    ({"choice": None}, "choice is missing"),
    ({"confidence": 1.2}, "outside [0, 1]"),
])
def test_invalid_native_is_kept_with_reason(over, fragment):
    r = assess(**over)
    assert r.valid is False
    assert fragment in r.invalid_reason
    # never repaired: the released fields stay exactly as received
    for k, v in over.items():
        got = getattr(r, k)
        if isinstance(v, dict):
            assert list(got) == list(v)
        elif v is not None and not (isinstance(v, float) and math.isnan(v)):
            assert got == v


def test_probability_sum_tolerance_is_1e_3():
    ok = assess(probabilities={"ADDRESS": 0.0, "DAMAGE": 0.0, "DELAY": 1.0009, "DELIVERY_RECORD": 0.0})
    bad = assess(probabilities={"ADDRESS": 0.0, "DAMAGE": 0.0, "DELAY": 1.0011, "DELIVERY_RECORD": 0.0})
    assert ok.valid and not bad.valid


def test_missing_fields_stay_missing():
    r = assess(probabilities=None, confidence=None)
    assert r.valid and r.probabilities is None and r.confidence is None


def test_unavailable_is_valid_and_needs_no_choice():
    r = assess(status="unavailable", choice=None, probabilities=None, confidence=None)
    assert r.valid


@pytest.mark.parametrize("over,field", [
    ({"status": "partial"}, "status"),
    ({"probabilities": {"DELAY": "0.9"}}, "probabilities.DELAY"),
    ({"probabilities": {"DELAY": True}}, "probabilities.DELAY"),
    ({"probabilities": [0.1, 0.9]}, "probabilities"),
    ({"confidence": "high"}, "confidence"),
    ({"choice": 3}, "choice"),
])
def test_malformed_native_is_rejected(over, field):
    with pytest.raises(ValidationError) as exc:
        NativeResponse.model_validate(native("m", "w1", **over))
    assert ".".join(map(str, exc.value.errors()[0]["loc"])) == field


def test_choice_not_argmax():
    p = {"ADDRESS": 0.1, "DAMAGE": 0.1, "DELAY": 0.7, "DELIVERY_RECORD": 0.1}
    assert not choice_not_argmax("DELAY", p)
    assert choice_not_argmax("ADDRESS", p)
    tie = {"ADDRESS": 0.4, "DAMAGE": 0.0, "DELAY": 0.4, "DELIVERY_RECORD": 0.2}
    assert choice_not_argmax("DELAY", tie)      # not the *unique* argmax
    assert not choice_not_argmax("DELAY", None)  # nothing released, nothing to compare


# --------------------------------------------------------------------------- refusal responses
def refusal(**over) -> RefusalResponse:
    r = {"model": "m", "world_id": "w1", "status": "ok", "choice": "WITHHOLD",
         "scores": {"missed_transfer": 0.7, "sorting_backlog": 0.2, "WITHHOLD": 0.9}}
    r.update(over)
    return RefusalResponse.model_validate(r)


def test_valid_refusal():
    assert refusal().label_problem("delivery") is None


@pytest.mark.parametrize("over,field", [
    ({"choice": "not_a_mechanism"}, "choice"),
    ({"choice": "bgp_flap"}, "choice"),                       # an IT mechanism in a delivery world
    ({"scores": {"bgp_flap": 0.3}}, "scores"),
    ({"choice": None}, "choice"),
])
def test_refusal_label_rules(over, field):
    problem = refusal(**over).label_problem("delivery")
    assert problem is not None and problem[0] == field


@pytest.mark.parametrize("score", [-0.1, math.nan, math.inf, "0.3", None])
def test_refusal_bad_scores_rejected(score):
    with pytest.raises(ValidationError):
        refusal(scores={"missed_transfer": score})


def test_refusal_status_values():
    with pytest.raises(ValidationError):
        refusal(status="maybe")
    assert refusal(status="unavailable", choice=None, scores=None).label_problem("delivery") is None


# ----------------------------------------------------------------------------------- QuasiLeak
TEXT = "I keep a juice box by the bed and the fridge stays cold; carb grams listed."
A = [TEXT.index("a juice box by the bed"), TEXT.index("a juice box by the bed") + 22]
B = [TEXT.index("the fridge stays cold"), TEXT.index("the fridge stays cold") + 21]


def doc(**over) -> dict:
    text = TEXT
    d = {"doc_id": "d1", "split": "test", "context_id": "c1", "text": text,
         "profile": {"health": "diabetes"},
         "policy": {a: "keep" for a in ("age", "gender", "nationality", "education", "occupation",
                                        "income", "relationship")} | {"health": "hide"},
         "groups": [{"attribute": "health", "cues": [A, B]}], "distractors": []}
    d.update(over)
    return d


def test_valid_document():
    d = QLDocument.model_validate(doc())
    (s0, e0), (s1, e1) = d.groups[0].cues
    assert d.text[s0:e0] == "a juice box by the bed" and d.text[s1:e1] == "the fridge stays cold"


@pytest.mark.parametrize("over,fragment", [
    ({"groups": [{"attribute": "health", "cues": [[9, 29]]}]}, "2-4"),
    ({"groups": [{"attribute": "health", "cues": [[9, 29], [30, 40], [41, 45], [46, 50], [51, 53]]}]}, "2-4"),
    ({"groups": [{"attribute": "health", "cues": [[9, 29], [20, 40]]}]}, "overlap"),
    ({"groups": [{"attribute": "health", "cues": [[9, 29], [34, 53]]},
                 {"attribute": "age", "cues": [[0, 5], [25, 31]]}]}, "overlap"),
    ({"groups": [{"attribute": "health", "cues": [[9, 29], [60, 500]]}]}, "outside the text"),
    ({"groups": [{"attribute": "health", "cues": [[29, 9], [34, 53]]}]}, "reversed"),
    ({"groups": [{"attribute": "wealth", "cues": [[9, 29], [34, 53]]}]}, "attribute"),
    ({"policy": {"age": "keep"}, "profile": {}}, "not one of the policy's attributes"),   # group unlabelled
    ({"policy": {}}, "at least one attribute"),
    ({"policy": doc()["policy"] | {"health": "secret"}}, "policy.health"),
    ({"profile": {"shoe_size": 42}}, "the policy does not label"),
    ({"split": "dev"}, "split"),
    ({"distractors": [[70, 90]]}, "outside the text"),
])
def test_document_rules(over, fragment):
    with pytest.raises(ValidationError) as exc:
        QLDocument.model_validate(doc(**over))
    assert fragment in str(exc.value)


def test_document_optional_fields_absent():
    d = doc()
    del d["distractors"]
    assert QLDocument.model_validate(d).recipient is None


def test_prediction_rules():
    ctx = {"documents": {"d1": 75}}
    ok = QLPrediction.model_validate({"doc_id": "d1", "detector": "x",
                                      "groups": [{"attribute": "health", "cues": [[0, 5]]}]}, context=ctx)
    assert len(ok.groups) == 1   # predictions may have a single cue
    bad = [
        ({"doc_id": "d9", "detector": "x", "groups": []}, "unknown doc_id"),
        ({"doc_id": "d1", "detector": "x", "groups": [{"attribute": "health", "cues": [[0, 80]]}]}, "outside"),
        ({"doc_id": "d1", "detector": "x", "groups": [{"attribute": "health", "cues": [[5, 2]]}]}, "reversed"),
        ({"doc_id": "d1", "detector": "x", "groups": [{"attribute": "health", "cues": [[0, 5], [3, 8]]}]}, "overlap"),
        ({"doc_id": "d1", "detector": "x", "groups": [{"attribute": "health", "cues": []}]}, "at least 1 cue"),
    ]   # an attribute outside the corpus's set is rejected by the ingest (test_a_corpus_with_its_own_attribute_set)
    for obj, fragment in bad:
        with pytest.raises(ValidationError) as exc:
            QLPrediction.model_validate(obj, context=ctx)
        assert fragment in str(exc.value), obj


# -------------------------------------------------------- the field of a problem, named once (walk-through)

def test_a_world_label_outside_its_class_is_reported_under_its_field():
    """A whole-record check used to reach the user without a field (``worlds.jsonl:281: mechanism ...``)."""
    from qlb.records.schemas import describe_error
    w = make_world("w1", "p1", "missed_transfer")
    w["mechanism"] = "author_is_minor"
    with pytest.raises(ValidationError) as exc:
        World.model_validate(w)
    field, reason = describe_error(exc.value)
    assert field == "mechanism"
    assert reason.startswith("'author_is_minor' is not a mechanism of delivery/DELAY (expected one of ")
    w = make_world("w1", "p1", "missed_transfer")
    w["candidate_order"] = ["DELAY"]
    with pytest.raises(ValidationError) as exc:
        World.model_validate(w)
    assert describe_error(exc.value) == ("candidate_order", "must be a permutation of "
                                                            "ADDRESS, DAMAGE, DELAY, DELIVERY_RECORD")


def test_a_long_value_in_a_reason_is_cut_visibly():
    """The value a reason quotes is cut at 60 characters with " ..." (it used to lose its closing quote
    and read as the whole value); a short one is quoted whole."""
    from qlb.records.schemas import describe_error
    with pytest.raises(ValidationError) as exc:
        NativeResponse.model_validate({"model": "m" * 300, "world_id": "w1", "status": "ok"})
    assert describe_error(exc.value) == ("model", "String should have at most 256 characters (got '" + "m" * 55 + " ...)")
    with pytest.raises(ValidationError) as exc:
        NativeResponse.model_validate({"model": "m", "world_id": "w1", "status": "OK"})
    assert describe_error(exc.value) == ("status", "Input should be 'ok' or 'unavailable' (got 'OK')")


def test_refusal_label_problems_name_their_field_once_and_no_article_before_the_domain():
    assert refusal(choice="ESCALATE").label_problem("delivery") == (
        "choice", "'ESCALATE' is not one of the delivery domain's mechanisms or WITHHOLD")
    assert refusal(choice=None).label_problem("delivery") == ("choice", "missing while status is ok")
    assert refusal(scores={"bgp_flap": 0.3, "ESCALATE": 0.1}).label_problem("delivery") == (
        "scores", "'ESCALATE', 'bgp_flap' are not among the delivery domain's mechanisms or WITHHOLD")


@pytest.mark.parametrize("field, value, what, allowed", [
    ("intake_channel", "Phone", "an intake channel", "merchant_portal, phone, email, carrier_api"),
    ("operating_window", "night", "an operating window", "weekday_day, weekday_night, weekend, peak_season")])
def test_a_channel_or_window_outside_the_domains_lists_is_named(field, value, what, allowed):
    """The ontology declares each domain's intake channels and operating windows; a world outside them
    (a typo) had been stored as a category of its own."""
    with pytest.raises(ValidationError) as err:
        World.model_validate(make_world("w1", "p1", "missed_transfer", **{field: value}))
    assert f"{value!r} is not {what} of domain delivery (expected one of {allowed})" in str(err.value)
    World.model_validate(make_world("w1", "p1", "missed_transfer"))       # phone, weekend: listed
