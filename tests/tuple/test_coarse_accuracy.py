"""Test coarse accuracy (issue 15; paper Tables 22, 24) against a hand count, and the audit's
JSON additions (coarse_accuracy, noninferior, fronts, the native control in defenses)."""
from __future__ import annotations

import pandas as pd

from qlb.tuple.defense_audit import defenses_json
from qlb.tuple.fronts import fronts_json
from qlb.tuple.recovery import coarse_accuracy, coarse_json
from qlb.tuple.utility import noninferior_json


def test_coarse_accuracy_counts_the_choice_against_the_true_class():
    # 6 test worlds in 3 pairs over two domains; w2 chose wrong, w5 is unavailable (counts as wrong)
    worlds = [f"w{i}" for i in range(1, 7)]
    frame = pd.DataFrame({"world_id": worlds, "coarse": ["A", "A", "B", "B", "C", "C"],
                          "choice": ["A", "B", "B", "B", None, "C"],
                          "status": ["ok", "ok", "ok", "ok", "unavailable", "ok"]})
    preds = pd.DataFrame({"model": "m", "view": "full_native", "world_id": worlds,
                          "pair_id": ["p1", "p1", "p2", "p2", "p3", "p3"],
                          "domain": ["d1", "d1", "d1", "d1", "d2", "d2"], "correct": True, "log_loss": 0.5})
    out = coarse_accuracy({"m": frame}, preds, n_boot=200, seed=1).set_index("scope")
    assert out.at["pooled", "accuracy"] == 4 / 6 and out.at["pooled", "n"] == 6
    assert out.at["d1", "accuracy"] == 3 / 4 and out.at["d2", "accuracy"] == 1 / 2
    assert out.at["macro", "accuracy"] == (3 / 4 + 1 / 2) / 2
    assert 0 <= out.at["pooled", "ci_low"] <= 4 / 6 <= out.at["pooled", "ci_high"] <= 1
    assert coarse_json(out.reset_index())["m"] == {"accuracy": 4 / 6, "ci_low": out.at["pooled", "ci_low"],
                                                   "ci_high": out.at["pooled", "ci_high"], "n": 6}


def test_the_json_additions():
    diff = pd.DataFrame({"model": ["m", "m"], "view_a": ["choice", "choice"], "view_b": "full_native",
                         "task": ["clarification", "selective"], "profile": "authored",
                         "noninferior": [True, False]})
    assert noninferior_json(diff) == {"m": {"choice": {"clarification": {"authored": True},
                                                       "selective": {"authored": False}}}}
    fronts = pd.DataFrame({"task": "selective", "profile": "authored", "model": ["a", "b", "c", "a"],
                           "view": ["full_native"] * 3 + ["choice"], "nondominated_models": [True, False, True, True]})
    assert fronts_json(fronts) == {"selective": {"authored": ["a", "c"]}}
    res = pd.DataFrame({"model": "m", "defense": ["native", "noise seed 1", "noise", "wcpq"],
                        "accuracy": [0.7, 0.6, 0.61, 0.55], "ci_low": 0.5, "ci_high": 0.8,
                        "coverage": [None, None, None, 0.99], "plan_agreement": [None, None, None, 5184],
                        "plan_comparisons": [None, None, None, 5184], "max_abs_cost_diff": [None, None, None, 0.0]})
    out = defenses_json(res)["m"]
    assert list(out) == ["native", "noise", "wcpq"] and out["native"]["accuracy"] == 0.7
    assert out["wcpq"]["plan_agreement"] == 1.0
