"""Which models the findings speak for (qlb.present.left_out): a model with a valid decision answer for
fewer than half of the dataset's worlds is left out of the headline findings and the release options,
which say so; its rows stay in the tables. A walk-through found such a model (5 of 192 answers) setting
the ends of every range and deciding the release advice."""
from __future__ import annotations

import pandas as pd

from qlb.present.left_out import findings_run, left_out_sentence, thin_models
from qlb.present.report import headline, noise_cost
from qlb.present.scope import options_note
from qlb.tuple.fronts import front_points
from tests.present.test_scope import EMPTY, _recovery, _run, _utility

ANSWERS = pd.DataFrame([{"model": m, "probe": "native", "source": "collect", "answers": a, "valid": v,
                         "invalid": a - v, "unavailable": 0, "worlds": 192}
                        for m, a, v in (("a", 192, 190), ("b", 192, 188), ("thin", 5, 5))])
REC = _recovery({(m, v): acc for m, accs in (("a", ((0.80, 0.75, 0.85), (0.52, 0.47, 0.57))),
                                             ("b", ((0.70, 0.65, 0.75), (0.55, 0.50, 0.60))),
                                             ("thin", ((0.50, 0.50, 0.50), (0.50, 0.50, 0.50))))
                 for v, acc in zip(("full_native", "choice"), accs)})


def _utility_pooled(costs: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "view": v, "task": "selective", "profile": "authored", "scope": "pooled",
                          "mean_cost": c + (0.1 if v == "choice" else 0), "ci_low": c - 0.1, "ci_high": c + 0.2}
                         for m, c in costs.items() for v in ("choice", "full_native")])


def _with_answers(**over) -> object:
    d = _run({}, REC, _utility({(m, "selective"): False for m in ("a", "b", "thin")}), models=("a", "b", "thin"))
    d.answers = ANSWERS
    d.utility = _utility_pooled({"a": 0.9, "b": 1.0, "thin": 0.3})     # thin: the fallback looks cheapest
    d.fronts = front_points(d.recovery, d.utility)
    for k, v in over.items():
        setattr(d, k, v)
    return d


def test_a_model_with_too_few_valid_answers_is_left_out_of_the_findings_only():
    d = _with_answers()
    assert list(thin_models(ANSWERS, ["a", "b", "thin"]).index) == ["thin"]
    spoken = findings_run(d)
    assert set(spoken.recovery["model"]) == {"a", "b"} and set(spoken.utility_diff["model"]) == {"a", "b"}
    assert spoken.models == ["a", "b"] and list(spoken.left_out.index) == ["thin"]
    assert set(d.recovery["model"]) == {"a", "b", "thin"}                 # the tables keep it
    # the fronts without it, recomputed by the engine: thin no longer dominates a and b
    assert set(spoken.fronts["model"]) == {"a", "b"}
    assert spoken.fronts.equals(front_points(spoken.recovery, spoken.utility))
    said = dict(headline(spoken))
    assert "thin" not in said["recovery"] and "50.0%" not in said["recovery"].split("full native")[1]
    assert said["answers"].endswith(
        "The findings below on recovery, cost, fronts and defenses leave out thin (2.6% of the worlds): with a valid "
        "decision answer for fewer than half of the dataset's worlds, its figures measure what the recipient does "
        "without an answer, not what its outputs reveal. Its rows stay in every table and chart.")
    assert options_note(spoken).endswith('The options leave out thin (a valid decision answer for fewer than half of '
                                         'the worlds): "every model" means every model but it.')
    assert "leave out" not in options_note(d)


def test_a_thin_model_whose_failures_leak_is_kept_and_a_stale_or_refusal_only_run_leaves_out_none():
    """A re-read found a thin model whose refusals depend on the mechanism (no output recovers it, 88%) dropped
    from the findings with its leak; and the left-out sentence above a refusal finding that still counted it."""
    leaky = REC.copy()
    leaky = pd.concat([leaky, _recovery({("thin", "no_output"): (0.88, 0.83, 0.93), ("a", "no_output"): (0.5, 0.5, 0.5),
                                         ("b", "no_output"): (0.5, 0.5, 0.5)})], ignore_index=True)
    d = _with_answers(recovery=leaky)
    assert findings_run(d) is d
    assert "thin" in dict(headline(findings_run(d)))["recovery"]          # the failures leak: said, with thin
    stale = _with_answers(data_changed=True, changes=pd.DataFrame({"kind": ["worlds"]}))
    assert findings_run(stale) is stale                                  # thin by today's answers, not the run's
    refusal_only = _with_answers(recovery=EMPTY, utility=EMPTY, utility_diff=EMPTY, fronts=EMPTY)
    assert findings_run(refusal_only) is refusal_only


def test_one_model_left_says_so_in_the_fronts_finding():
    d = _with_answers(answers=ANSWERS.assign(valid=lambda f: f["valid"].where(f["model"] != "b", 5)))
    spoken = findings_run(d)
    assert spoken.models == ["a"]
    assert dict(headline(spoken))["fronts"].startswith("With one model left once b and thin are left out (a), the "
                                                       "front compares its release views.")


def test_nothing_is_left_out_when_every_model_answered_or_when_every_model_is_thin():
    whole = ANSWERS.assign(valid=lambda f: f["worlds"] * 0.6, answers=lambda f: f["worlds"])
    d = _with_answers(answers=whole)
    assert findings_run(d) is d and left_out_sentence(findings_run(d).left_out) is None
    every = _with_answers(answers=ANSWERS.assign(valid=5))
    assert findings_run(every) is every and every.left_out.empty               # no one else to speak for


def test_the_noise_finding_says_what_noise_costs_the_recipient():
    costs = pd.DataFrame([{"model": "a", "defense": d, "recipient": r, "task": t, "profile": "authored",
                           "mean_cost": c, "ci_low": c - 0.2, "ci_high": c + 0.3}
                          for d, r, c in (("native", "frozen", 0.698), ("noise", "adapted", 0.823),
                                          ("noise", "frozen", 0.75))
                          for t in ("selective", "clarification")])
    assert noise_cost(costs) == (", while a recipient refitted to it pays 0.823 [0.623, 1.123] cost units a case in "
                                 "selective routing against 0.698 [0.498, 0.998] on the native output (authored "
                                 "costs)")
    two = pd.concat([costs, costs.assign(model="b", mean_cost=costs["mean_cost"] + 0.1)])
    assert "pays 0.823 to 0.923 cost units a case in selective routing against 0.698 to 0.798" in noise_cost(two)
    assert noise_cost(EMPTY) == "" and noise_cost(costs[costs["defense"] != "noise"]) == ""


def test_the_paper_comparison_speaks_for_the_same_models_as_the_findings():
    """The comparison with the paper under the findings had counted the left-out model: its 50.0% full-native
    recovery (the fallback of its unanswered worlds) set the low end and failed the paper's band."""
    from qlb.present.paper import paper_checks
    d = _with_answers()
    every = {c.key: c for c in paper_checks(d)}
    spoken = {c.key: c for c in paper_checks(findings_run(d))}
    assert every["full_native"].run.startswith("50.0%") and every["full_native"].holds is False
    assert spoken["full_native"].run == "70.0% to 80.0%" and spoken["full_native"].holds is True
