"""Recovery per decision class (qlb.tuple.recovery.recovery_by_class): a planted leak in one class
comes back in that class only, with the pair-clustered interval pair_bootstrap gives, widened to cover
Wilson's over the class's pairs (which alone has width where every resample gives the same share)."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from qlb.stats.bootstrap import pair_bootstrap
from qlb.tuple.recovery import recovery_by_class


def test_a_leak_planted_in_one_class_is_found_in_that_class_only():
    rng = np.random.default_rng(7)
    rows = []
    for cls, p_right in (("LABEL", 1.0), ("ALLOW", 0.5)):            # the model leaks only for LABEL
        for k in range(40):
            for side in (0, 1):
                right = True if p_right == 1.0 else bool(rng.random() < 0.5)
                rows.append({"model": "m", "domain": "posts", "class": cls, "pair_id": f"{cls}-{k}",
                             "world_id": f"{cls}-{k}-{side}", "correct": right})
    frame = pd.DataFrame(rows)
    out = recovery_by_class(frame, n_boot=500, seed=3).set_index("class")
    assert list(out.index) == ["ALLOW", "LABEL"] and (out["n"] == 80).all()
    # all 40 pairs right: the bootstrap cannot move it, so Wilson's interval over the 40 pairs (scipy's)
    wilson = stats.binomtest(40, 40).proportion_ci(0.95, method="wilson")
    assert out.loc["LABEL", "accuracy"] == 1.0
    assert np.allclose(out.loc["LABEL", ["ci_low", "ci_high"]].tolist(), [wilson.low, wilson.high])
    assert 0.9 < out.loc["LABEL", "ci_low"] < 0.95
    allow = frame[frame["class"] == "ALLOW"]
    ref = pair_bootstrap(allow["correct"].to_numpy(float), pd.factorize(allow["pair_id"])[0], 500, 3)
    cover = stats.binomtest(round(40 * ref.estimate), 40).proportion_ci(0.95, method="wilson")   # k whole here
    assert np.isclose(out.loc["ALLOW", "accuracy"], ref.estimate)
    assert np.allclose(out.loc["ALLOW", ["ci_low", "ci_high"]].tolist(),
                       [min(ref.ci_low, cover.low), max(ref.ci_high, cover.high)])
    assert out.loc["ALLOW", "ci_low"] < 0.5 < out.loc["ALLOW", "ci_high"]
    assert np.isclose(out.loc["ALLOW", "accuracy"], allow["correct"].mean())


def test_the_class_sentence_says_where_the_leak_sits():
    from qlb.present.recovery_text import class_sentence
    cells = pd.DataFrame([("a", "posts", "LABEL", 0.95, 0.9, 1.0), ("a", "posts", "ALLOW", 0.5, 0.4, 0.6),
                          ("b", "posts", "LABEL", 0.52, 0.45, 0.6), ("b", "posts", "ALLOW", 0.49, 0.4, 0.58)],
                         columns=["model", "domain", "class", "accuracy", "ci_low", "ci_high"])
    assert class_sentence(cells, "full native") == (
        "In the full native view, the attacker beats guessing (95% interval above 50%) in 1 of 4 cells of model and "
        "decision class; highest 95.0% [90.0, 100.0] (a, posts / LABEL), lowest 49.0% [40.0, 58.0] (b, posts / "
        "ALLOW). Clear of guessing, highest first: posts / LABEL (a); the other cells' intervals include 50%. Each class holds fewer "
        "test worlds than its domain, so its interval is wider: a leak too small to clear 50% in one class can still "
        "add up over its domain.")
    assert class_sentence(cells.iloc[0:0], "choice") is None


def test_a_small_class_all_right_or_all_wrong_gets_an_interval_with_width():
    rows = [{"model": "m", "domain": "d", "class": cls, "pair_id": f"{cls}-{k}", "correct": right}
            for cls, right in (("REJECT", True), ("ALLOW", False)) for k in range(4) for _ in (0, 1)]
    out = recovery_by_class(pd.DataFrame(rows), n_boot=200, seed=1).set_index("class")
    for cls, k in (("REJECT", 4), ("ALLOW", 0)):
        ref = stats.binomtest(k, 4).proportion_ci(0.95, method="wilson")
        assert np.allclose(out.loc[cls, ["ci_low", "ci_high"]].tolist(), [ref.low, ref.high])
    assert out.loc["REJECT", "ci_low"] < 0.6 and out.loc["ALLOW", "ci_high"] > 0.4      # 4 pairs prove little


def test_intervals_stay_in_order_a_perfect_class_never_above_a_near_perfect_one():
    """A re-read found 4 pairs at 100% reading [51.0, 100] and 7 of 8 worlds right reading [62.5, 100]."""
    rows = [{"model": "m", "domain": "d", "class": cls, "pair_id": f"{cls}-{k}", "correct": right}
            for cls, rights in (("ALL", [True] * 8), ("MOST", [True] * 7 + [False]))
            for k, right in enumerate(rights)]
    for r in rows:                       # two worlds a pair: pair k of 4 holds worlds 2k and 2k+1
        r["pair_id"] = f"{r['class']}-{int(r['pair_id'].split('-')[1]) // 2}"
    out = recovery_by_class(pd.DataFrame(rows), n_boot=500, seed=2).set_index("class")
    assert out.loc["ALL", "ci_low"] <= out.loc["MOST", "ci_high"]
    assert out.loc["MOST", "ci_low"] <= out.loc["ALL", "ci_low"] + 1e-12
