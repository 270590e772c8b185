"""Who is on a front, in words: over models, or over one model's release views; and the counting
words every finding uses (how_many, count_of), which must read right for a single model."""
from __future__ import annotations

import pandas as pd

from qlb.present.fronts import front_of, stability_sentence, who_sentence
from qlb.present.names import count_of, how_many, listing
from qlb.tuple.fronts import front_points


def _points(costs: dict[tuple[str, str, str], float], recovery: dict[tuple[str, str], float]) -> pd.DataFrame:
    """Fronts computed by the engine from planted pooled recovery (model, view) and cost (model, view, task)."""
    rec = pd.DataFrame([{"scope": "pooled", "model": m, "view": v, "accuracy": a, "ci_low": a - 0.05,
                         "ci_high": a + 0.05} for (m, v), a in recovery.items()])
    util = pd.DataFrame([{"scope": "pooled", "model": m, "view": v, "task": t, "profile": "authored",
                          "mean_cost": c, "ci_low": c - 0.1, "ci_high": c + 0.1} for (m, v, t), c in costs.items()])
    return front_points(rec, util)


def test_one_model_front_is_over_its_release_views():
    # choice: private and as cheap as full native in selective; full native cheaper in clarification
    recovery = {("mine", "no_output"): 0.5, ("mine", "choice"): 0.5, ("mine", "full_native"): 0.7}
    costs = {("mine", "no_output", "selective"): 2.0, ("mine", "choice", "selective"): 0.3,
             ("mine", "full_native", "selective"): 0.3,
             ("mine", "no_output", "clarification"): 2.0, ("mine", "choice", "clarification"): 0.5,
             ("mine", "full_native", "clarification"): 0.2}
    front = front_of(_points(costs, recovery))
    assert (front.key, front.member) == ("view", "nondominated_all")
    assert front.members("selective", "authored") == ["choice"]
    assert front.members("clarification", "authored") == ["choice", "full_native"]
    said = who_sentence(front, ["selective", "clarification"], "authored")
    assert said.startswith("With one model audited (mine), the front compares its release views. Under the "
                           "authored costs, the front changes with the task (selective routing: choice; one-step "
                           "clarification: choice, full native). On it: choice (secret recovery 50.0% [45.0, 55.0]), "
                           "full native (secret recovery 70.0% [65.0, 75.0]).")
    assert stability_sentence(front, ["selective", "clarification"], ["authored"]) == (
        "Over all 2 task × cost-profile settings, a release view is on the front: choice in 2, full native in 1; "
        "the other release view never is.")


def test_several_models_front_is_over_their_full_native_releases():
    recovery = {("a", "full_native"): 0.6, ("b", "full_native"): 0.7, ("c", "full_native"): 0.8,
                ("a", "choice"): 0.5}
    costs = {("a", "full_native", "selective"): 0.3, ("b", "full_native", "selective"): 0.2,
             ("c", "full_native", "selective"): 0.4, ("a", "choice", "selective"): 0.1}
    front = front_of(_points(costs, recovery))
    assert (front.key, front.member) == ("model", "nondominated_models")
    assert front.members("selective", "authored") == ["a", "b"]          # c leaks more and costs more than a
    assert who_sentence(front, ["selective"], "authored") == (
        "Under the authored costs, the same 2 of 3 models are on the front in every task: a (secret recovery 60.0% "
        "[55.0, 65.0]), b (secret recovery 70.0% [65.0, 75.0]). Every other model's full native release is "
        "dominated: another model's leaks no more and costs no more.")


def test_counting_words_read_right_for_one_and_for_many():
    assert [how_many(k, 9) for k in (0, 3, 9)] == ["none of the 9 models", "3 of 9 models", "all 9 models"]
    assert [how_many(k, 1) for k in (0, 1)] == ["no model", "the model"]
    assert how_many(2, 5, "release view") == "2 of 5 release views"
    assert [count_of(1), count_of(2, "view")] == ["1 model", "2 views"]
    assert [listing(["a"]), listing(["a", "b", "c"])] == ["a", "a, b and c"]
