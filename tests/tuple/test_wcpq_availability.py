"""WCPQ and field availability (issue 20, item 9a; TUPLE.md section 7): the signature records
which fields a response releases, so a response without the full probability vector has no
codeword and is released unchanged (identity fallback); verification counts a comparison as
agreeing only when the release keeps the status, the choice and every field's availability."""
from __future__ import annotations

import numpy as np
import pytest

from qlb.tuple.costs import PROFILES, domain_costs
from qlb.tuple.recipients import Recipient
from qlb.tuple.wcpq import Policy, field_availability, map_domain, released_frame, verify
from qlb.tuple.workflows import TASKS
from tests.tuple.test_defenses import CLASSES, random_frame, random_policies


def without_scores(frame, rows, keep_confidence=True):
    """The frame with the probabilities of ``rows`` withheld (status ok, choice kept)."""
    out = frame.copy()
    probs = list(out["probabilities"])
    for i in rows:
        probs[i] = None
        if not keep_confidence:
            out.loc[i, "confidence"] = np.nan
    out["probabilities"] = probs
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_a_choice_without_probabilities_is_released_unchanged(seed):
    rng = np.random.default_rng(seed)
    frame = random_frame(rng, 60)
    policies = random_policies(rng)
    ok = np.flatnonzero((frame["status"] == "ok").to_numpy())
    bare = list(ok[:8])                                      # choice (and maybe confidence), no probabilities
    partial = list(ok[8:12])                                 # two scores only (a top-two release)
    frame = without_scores(frame, bare[:4]).pipe(without_scores, bare[4:], keep_confidence=False)
    for i in partial:
        p = frame.at[i, "probabilities"]
        frame.at[i, "probabilities"] = {c: p[c] for c in sorted(p, key=p.get, reverse=True)[:2]}
    assert any(p.recipient.kind == "native" for p in policies)
    with_natives = map_domain(frame, "delivery", policies)      # natives never read the incomplete rows
    assert (with_natives.code_index[bare + partial] == -1).all()
    # verification replays every policy on every world: a native-distribution policy exists only
    # where every available response has the full vector, so here the natives become priors
    policies = [p if p.recipient.kind != "native" else
                Policy(p.task, p.profile, Recipient("empirical_prior", "prior", CLASSES, np.full(4, 0.25)), p.factor,
                       p.costs) for p in policies]
    mapping = map_domain(frame, "delivery", policies)
    released = released_frame(frame, mapping)
    for i in bare + partial:
        assert mapping.code_index[i] == -1                   # identity fallback, no codeword
        assert released.at[i, "probabilities"] == frame.at[i, "probabilities"]
        assert released.at[i, "choice"] == frame.at[i, "choice"]
        assert np.isnan(released.at[i, "confidence"]) == np.isnan(frame.at[i, "confidence"])
        if not np.isnan(frame.at[i, "confidence"]):
            assert released.at[i, "confidence"] == frame.at[i, "confidence"]
    full = [i for i in ok if i not in bare + partial]
    assert (mapping.code_index[full] >= 0).any()             # complete vectors are still mapped
    v = verify(frame, released, "delivery", policies)
    assert v.plan_agreement == v.comparisons == 60 * 18 and v.max_abs_cost_diff == 0.0


def prior_policies() -> list[Policy]:
    """18 policies that never read the release: every release has the same plans."""
    rec = Recipient("empirical_prior", "prior", CLASSES, np.array([0.4, 0.3, 0.2, 0.1]))
    return [Policy(t, p, rec, 1.0, domain_costs("delivery", p)) for t in TASKS for p in PROFILES]


def test_verification_checks_field_availability_and_the_choice():
    rng = np.random.default_rng(7)
    frame = random_frame(rng, 20)
    ok = np.flatnonzero((frame["status"] == "ok").to_numpy())
    native = without_scores(frame, [ok[0]])
    policies = prior_policies()
    assert verify(native, native, "delivery", policies).plan_agreement == 20 * 18
    # a release that adds a vector the response did not have (same plans: the policies are priors)
    added = native.copy()
    added.at[ok[0], "probabilities"] = {"ADDRESS": 0.7, "DAMAGE": 0.1, "DELAY": 0.1, "DELIVERY_RECORD": 0.1}
    v = verify(native, added, "delivery", policies)
    assert (v.comparisons, v.plan_agreement, v.max_abs_cost_diff) == (20 * 18, 19 * 18, 0.0)
    # a release that drops a score, or changes the choice, or the confidence's presence
    dropped = native.copy()
    dropped.at[ok[1], "probabilities"] = {k: v for k, v in native.at[ok[1], "probabilities"].items() if k != "DAMAGE"}
    assert verify(native, dropped, "delivery", policies).plan_agreement == 19 * 18
    moved = native.copy()
    moved.at[ok[2], "choice"] = next(c for c in CLASSES if c != native.at[ok[2], "choice"])
    assert verify(native, moved, "delivery", policies).plan_agreement == 19 * 18
    conf = native.copy()
    conf.at[ok[3], "confidence"] = np.nan if not np.isnan(native.at[ok[3], "confidence"]) else 0.5
    assert verify(native, conf, "delivery", policies).plan_agreement == 19 * 18


def test_field_availability_by_hand():
    frame = random_frame(np.random.default_rng(8), 3)
    frame["status"] = ["ok", "ok", "unavailable"]
    frame["choice"] = ["DELAY", "DELAY", None]
    frame["confidence"] = [0.9, np.nan, np.nan]
    frame["probabilities"] = [{"ADDRESS": 0.1, "DAMAGE": 0.1, "DELAY": 0.7, "DELIVERY_RECORD": 0.1},
                              {"DELAY": 0.7, "ADDRESS": 0.2}, None]
    assert field_availability(frame, CLASSES).tolist() == [[1, 1, 1, 1, 1, 1, 1], [1, 1, 0, 1, 0, 1, 0],
                                                           [0, 0, 0, 0, 0, 0, 0]]
