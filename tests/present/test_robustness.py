"""The robustness checks in words and tables (qlb.present.robustness): the sentences claim only what
the numbers show, and the tables use display names."""
from __future__ import annotations

import pandas as pd

from qlb.present.robustness import (ALL_COLUMN, MAIN_TRACKS, SUBSET_COLUMN, both_correct_sentence,
                                    both_correct_table, model_tracks, tracks_sentence, tracks_table)


def _both(lows: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"model": ["a", "b"], "accuracy": [0.70, 0.62], "ci_low": lows, "ci_high": [0.76, 0.68],
                         "log_loss": 0.6, "n": [200, 180], "pairs_kept": [100, 90], "pairs_total": 144})


def test_both_correct_sentence_claims_only_what_the_intervals_show():
    overall = pd.DataFrame({"model": ["a", "b"], "accuracy": [0.73, 0.66], "ci_low": 0.6, "ci_high": 0.8})
    clear = both_correct_sentence(_both([0.64, 0.56]), overall)
    assert clear == ("Within the test pairs whose coarse answers are correct in both worlds (90 to 100 of 144 pairs "
                     "per model), the frozen full-native attacker recovers the protected mechanism in 62.0% [56.0, 68.0] "
                     "(b) to 70.0% [64.0, 76.0] (a), against 66.0% to 73.0% on all test worlds; the 95% interval lies "
                     "above 50% for both models, so coarse errors alone do not explain the recovery.")
    unclear = both_correct_sentence(_both([0.64, 0.48]))
    assert unclear.endswith("the 95% interval lies above 50% for 1 of 2 models.") and "coarse errors" not in unclear
    assert both_correct_sentence(_both([0.6, 0.5]).assign(accuracy=float("nan"))) is None
    same = both_correct_sentence(_both([0.6, 0.6]).assign(accuracy=0.66, ci_high=0.72))   # read "X (a) to X (b)"
    assert "recovers the protected mechanism in 66.0% [60.0, 72.0] (a and b); " in same


def _tracks(stack_b: float) -> pd.DataFrame:
    rows = [(m, t, acc, acc - 0.05, acc + 0.05) for m, base in (("a", 0.7), ("b", 0.65)) for t, acc in (
        ("selected", base), ("best_configuration", base - 0.01), ("prior", 0.5), ("logistic", base - 0.05),
        ("template", base), ("family_winners", base), ("all_configurations", base - 0.02),
        ("stack", stack_b if m == "b" else base))]
    return pd.DataFrame(rows, columns=["model", "track", "accuracy", "ci_low", "ci_high"]).assign(log_loss=0.6, n=288)


def test_tracks_sentence_counts_models_whose_every_main_track_beats_guessing():
    text = tracks_sentence(_tracks(0.66))
    assert "recovers more than 50% for both models; the lowest is 63.0% [58.0, 68.0] (average of all " \
           "configurations, b)." in text
    assert "averages 62.5% (best logistic regression) to 67.5% (best Gaussian templates)" in text
    assert "The base rate stays at exactly 50%" in text and "descriptive" in text
    assert "for 1 of 2 models; the lowest is 48.0% [43.0, 53.0] (learned stack, b)." in tracks_sentence(_tracks(0.48))
    assert tracks_sentence(_tracks(0.66).iloc[0:0]) is None
    # a point above 50% whose interval is not: the sentence says how many are clear (it had claimed all)
    unsure = _tracks(0.53).assign(ci_low=lambda f: f["accuracy"] - 0.07)
    assert ("recovers more than 50% for both models (with its 95% interval above 50% for 1 of 2 models); the "
            "lowest is 53.0% [46.0, 58.0] (learned stack, b).") in tracks_sentence(unsure)


def test_tables_use_display_names_and_intervals():
    tracks = tracks_table(_tracks(0.66))
    assert list(tracks.columns) == ["model", "selected attacker", "best single configuration", "base rate",
                                    "best logistic regression", "best Gaussian templates", "average of family bests",
                                    "average of all configurations", "learned stack"]
    assert tracks.loc[0, "selected attacker"] == "70.0% [65.0, 75.0]"
    overall = pd.DataFrame({"model": ["a"], "accuracy": [0.73], "ci_low": [0.68], "ci_high": [0.78]})
    both = both_correct_table(_both([0.64, 0.56]), overall)
    assert both[["pairs kept", SUBSET_COLUMN, ALL_COLUMN]].values.tolist() == [
        ["100 of 144", "70.0% [64.0, 76.0]", "73.0% [68.0, 78.0]"], ["90 of 144", "62.0% [56.0, 68.0]", "N/A"]]
    assert list(tracks_table(_tracks(0.66), MAIN_TRACKS).columns) == [
        "model", "selected attacker", "best single configuration", "average of family bests",
        "average of all configurations", "learned stack"]
    one = model_tracks(_tracks(0.66), "a")
    assert list(one.columns) == ["attack track", "kind", "recovery [95% CI]"]
    assert one["attack track"].tolist() == list(tracks.columns[1:])            # the same tracks, in the same order
    assert one.set_index("attack track").loc["base rate", "kind"] == "one family's best"
