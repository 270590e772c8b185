"""Frozen recipients' costs on defended releases (issue 20, item 9b): only a native-distribution
policy facing a partial (top-two) vector goes without a cost, recorded with its reason; any
other failure of a frozen policy is an error, and no pooled cost disappears silently."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from qlb.tuple.costs import domain_costs
from qlb.tuple.defense_audit import DefenseDomain, EndpointCost, Unreadable, _frozen_costs, defended, pooled_costs
from qlb.tuple.recipients import Recipient
from qlb.tuple.wcpq import Policy
from tests.tuple.test_defenses import CLASSES, random_frame

COSTS = domain_costs("delivery", "authored")


def policy(task: str, recipient: Recipient) -> Policy:
    return Policy(task, "authored", recipient, 1.0, COSTS)


NATIVE = Recipient("native", "native", CLASSES)
PRIOR = Recipient("empirical_prior", "prior", CLASSES, np.array([0.4, 0.3, 0.2, 0.1]))


def frame(seed: int = 0):
    return random_frame(np.random.default_rng(seed), 40)


def test_a_native_policy_on_top_two_scores_is_recorded_not_costed():
    top2 = defended(frame(), "top2")
    costs, unreadable = _frozen_costs("top2", top2, "delivery", [policy("selective", NATIVE),
                                                                 policy("asymmetric", PRIOR)])
    assert [(c.task, c.recipient) for c in costs] == [("asymmetric", "frozen")]
    assert unreadable == [Unreadable("top2", "frozen", "selective", "authored")]
    # on the full vectors the same native policy has a cost
    costs, unreadable = _frozen_costs("native", frame(), "delivery", [policy("selective", NATIVE)])
    assert len(costs) == 1 and unreadable == []


def test_any_other_failure_of_a_frozen_policy_is_raised():
    broken = Recipient("logistic C=1", "logistic", CLASSES, None, ["p=DELAY", "confidence"], np.ones((4, 3)),
                       np.zeros(4))                                   # 3 weights for 2 features
    with pytest.raises(ValueError):
        _frozen_costs("quantize", defended(frame(), "quantize"), "delivery", [policy("selective", broken)])


def domain(name: str, costs: list[tuple[str, str]], unreadable: list[tuple[str, str]] = ()) -> DefenseDomain:
    pids = np.array([f"{name}-p{i // 2}" for i in range(4)])
    d = DefenseDomain("m", name)
    d.costs = [EndpointCost(ep, "frozen", task, "authored", pids, pids, np.full(4, 2.0)) for ep, task in costs]
    d.unreadable = [Unreadable(ep, "frozen", task, "authored") for ep, task in unreadable]
    return d


def test_a_pooled_cost_is_left_out_only_with_its_reason_named(caplog):
    # the native policy reads top-two scores nowhere in "it" but (say) everywhere in "delivery"
    domains = [domain("delivery", [("top2", "selective"), ("top2", "asymmetric")]),
               domain("it", [("top2", "asymmetric")], unreadable=[("top2", "selective")])]
    skipped: dict[str, str] = {}
    with caplog.at_level(logging.INFO, logger="qlb.tuple.defense_audit"):
        pooled = pooled_costs("m", domains, skipped)
    assert set(pooled) == {("top2", "frozen", "asymmetric", "authored")}
    assert len(pooled[("top2", "frozen", "asymmetric", "authored")]) == 2
    assert list(skipped) == ["defense costs m/top2/frozen"]
    assert "selective/authored (in it)" in skipped["defense costs m/top2/frozen"]
    assert "selective/authored (in it)" in caplog.text


def test_the_reason_names_the_first_few_when_many_domains_lack_a_cost(caplog):
    tasks = ["selective", "asymmetric", "clarification", "review"]
    names = [f"d{i}" for i in range(6)]
    domains = [domain("full", [("top2", t) for t in tasks])] + [
        domain(n, [], unreadable=[("top2", t) for t in tasks]) for n in names]
    skipped: dict[str, str] = {}
    with caplog.at_level(logging.INFO, logger="qlb.tuple.defense_audit"):
        assert pooled_costs("m", domains, skipped) == {}
    why = skipped["defense costs m/top2/frozen"]
    assert "(in d0, d1, d2 and 3 more)" in why and "; and 1 more task/profile pair:" in why
    assert why.count("/authored") == 3 and len(why) < 400
    assert "d5" in caplog.text and caplog.text.count("/authored") == 4      # the log keeps every name


def test_a_cost_missing_without_a_reason_is_an_error():
    domains = [domain("delivery", [("quantize", "selective")]), domain("it", [])]
    with pytest.raises(RuntimeError, match="no frozen cost for quantize selective/authored in domain"):
        pooled_costs("m", domains, {})
