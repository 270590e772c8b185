"""Wording a privacy-board reader can follow without the TUPLE paper: the simulated models described in plain words,
why a richer release can be non-inferior less often, what the most private end of a front pays, and what the Fronts
page's members table counts."""
from __future__ import annotations

import pandas as pd

from qlb.present.fronts import (MEMBERSHIP_NOTE, front_of, members_heading, members_note, price_of_privacy,
                                review_cost)
from qlb.present.sensitivity_text import richer_worse_sentence
from qlb.records.ontology import load_ontology
from qlb.simulate.tuple_sim import MODEL_DESCRIPTIONS, SIM_MODELS
from qlb.tuple.fronts import front_points

CODE_NOTATION = ("max p", "max_p", "argmax", "!=", "≠", "runner-up", "residual", "leak", "tinted", "binned", "_")


def test_simulated_models_are_described_in_plain_words():
    assert len(MODEL_DESCRIPTIONS) == len(SIM_MODELS) == 9
    for m in SIM_MODELS:
        assert MODEL_DESCRIPTIONS[m.name] == f"SIMULATED model: {m.summary}"
        assert not [w for w in CODE_NOTATION if w in m.summary], (m.name, m.summary)
    said = {m.name: m.summary for m in SIM_MODELS}
    assert said["sim-alder"].startswith("its stated confidence is just its top probability")
    assert said["sim-fir"] == "sometimes releases its second most likely class instead of its most likely one"


def _differences(rows: list[tuple[str, str, str, float, bool]]) -> pd.DataFrame:
    """utility_differences rows (model, view_a, task, upper end of the interval, non-inferior) under one profile."""
    return pd.DataFrame([{"model": m, "view_a": v, "view_b": "full_native", "task": t, "profile": "authored",
                          "difference": hi - 0.05, "ci_low": hi - 0.1, "ci_high": hi, "noninferior": ok, "n": 288}
                         for m, v, t, hi, ok in rows])


def test_a_richer_release_non_inferior_less_often_is_explained_with_its_numbers():
    diff = _differences([("a", "choice", "clarification", 0.089, True), ("a", "choice_confidence", "clarification",
                                                                          0.188, False),
                         ("b", "choice", "clarification", 0.076, True), ("b", "choice_confidence", "clarification",
                                                                          0.078, True),
                         ("a", "no_output", "clarification", 6.0, False), ("b", "no_output", "clarification", 6.1,
                                                                            False)])
    said = richer_worse_sentence(diff, ["no_output", "choice", "choice_confidence"], 0.1)
    assert said == (
        "Choice + confidence holds every field of choice yet is non-inferior less often (1 against 2 of 2): the "
        "recipient's policy is refitted and reselected on the validation worlds for each release, so a richer "
        "release can be selected worse; compare the upper ends of the two extra-cost intervals with the 0.1 margin "
        "where only choice passes: a in one-step clarification (choice 0.089, choice + confidence 0.188).")
    # the richer release counts at least as often: nothing to explain
    fine = diff.assign(noninferior=diff["view_a"].ne("no_output"))
    assert richer_worse_sentence(fine, ["no_output", "choice", "choice_confidence"], 0.1) is None
    # a poorer release counting higher than one that does not contain it is not backwards
    assert richer_worse_sentence(diff, ["no_output", "choice"], 0.1) is None


def test_many_flipped_comparisons_are_named_up_to_three_and_counted():
    rows = []
    for m in "abcde":
        rows += [(m, "choice", "selective", 0.05, True), (m, "choice_confidence", "selective", 0.2, False)]
    said = richer_worse_sentence(_differences(rows), ["choice", "choice_confidence"], 0.1)
    assert "(0 against 5 of 5)" in said and said.endswith("c in selective routing (choice 0.050, choice + confidence "
                                                          "0.200) and 2 more.")


def _points() -> pd.DataFrame:
    """Two models and two views in two tasks: no output is guessing and costs a review per case in selective routing."""
    recovery = {("a", "no_output"): 0.5, ("a", "full_native"): 0.7, ("b", "no_output"): 0.5, ("b", "full_native"): 0.6}
    costs = {("a", "no_output", "selective"): 2.0, ("b", "no_output", "selective"): 2.0,
             ("a", "full_native", "selective"): 0.2, ("b", "full_native", "selective"): 0.4,
             ("a", "no_output", "asymmetric"): 1.8333, ("b", "no_output", "asymmetric"): 1.8333,
             ("a", "full_native", "asymmetric"): 0.1, ("b", "full_native", "asymmetric"): 0.05}
    rec = pd.DataFrame([{"scope": "pooled", "model": m, "view": v, "accuracy": x, "ci_low": x - 0.05,
                         "ci_high": x + 0.05} for (m, v), x in recovery.items()])
    util = pd.DataFrame([{"scope": "pooled", "model": m, "view": v, "task": t, "profile": p, "mean_cost": c,
                          "ci_low": c - 0.1, "ci_high": c + 0.1}
                         for (m, v, t), c in costs.items() for p in ("authored", "review_half")])
    return front_points(rec, util)


def test_what_full_privacy_costs_says_when_it_is_trusted_review_for_every_case():
    onto = load_ontology()
    review = float(onto.authored_costs["review"])
    assert review_cost("authored", onto) == review and review_cost("review_half", onto) == review / 2
    assert review_cost("no such profile", onto) is None
    points = _points()
    said = price_of_privacy(points, ["selective", "asymmetric"], "authored", review_cost("authored", onto))
    assert said.startswith("Under the authored costs, counting every model × view release, the most private end of "
                           "each front (50.0% recovery: guessing) costs 2.000 per case in selective routing and 1.833 "
                           "in asymmetric-cost routing;")
    assert said.endswith(f" In selective routing, {review:.3f} per case is the price of sending every case to "
                         f"trusted review (one review costs {review:g}).")
    # without the review cost, or when no private end pays it, nothing is claimed about review
    assert "trusted review" not in price_of_privacy(points, ["selective", "asymmetric"], "authored")
    assert "trusted review" not in price_of_privacy(points, ["selective", "asymmetric"], "review_half",
                                                    review_cost("review_half", onto))


def test_the_members_table_is_titled_by_what_its_cells_count():
    front = front_of(_points())
    assert members_heading(front, ["authored", "review_half"]) == (
        "Across the 2 cost profiles: how often each model is on the front, per task")
    assert members_heading(front, ["authored"]) == "Under the authored costs: which models are on the front, per task"
    note = members_note(front, ["selective", "asymmetric"], ["authored", "review_half"], "authored")
    assert note.startswith("Under the authored costs, the front changes with the task. ")      # a and b, then b alone
    assert note.endswith("on the front under the authored costs (yes or no) and, in brackets, under how many of the "
                         "2 cost profiles it is.")
    assert "not a significance claim" in MEMBERSHIP_NOTE
