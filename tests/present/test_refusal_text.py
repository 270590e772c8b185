"""The Refusal page's sentences (qlb.present.refusal_text) on planted rates."""
from __future__ import annotations

import pandas as pd

from qlb.present.refusal_text import extremes, span, withholding_sentence


def _rates(rows) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "overall_recovery": r, "overall_recovery_lo": lo, "overall_recovery_hi": hi,
                          "withhold_rate": 0.6, "withhold_rate_lo": 0.55, "withhold_rate_hi": 0.65, "withheld": w,
                          "conditional_residual_recovery": 0.9, "conditional_residual_recovery_lo": 0.85,
                          "conditional_residual_recovery_hi": 0.95} for m, r, lo, hi, w in rows])


def test_extremes_in_the_bracket_style_and_one_figure_when_models_read_the_same():
    two = _rates([("a", 0.927, 0.912, 0.939, 5), ("b", 0.971, 0.961, 0.978, 5)])
    assert extremes(two, "overall_recovery") == ("Lowest: a, 92.7% [91.2, 93.9]; highest: b, 97.1% [96.1, 97.8] "
                                                 "(Wilson 95% intervals).")
    same = _rates([("a", 1.0, 0.987, 1.0, 5), ("b", 1.0, 0.987, 1.0, 5)])       # a walk's two perfect models
    assert extremes(same, "overall_recovery") == "Both models: 100.0% [98.7, 100.0] (Wilson 95% interval)."
    assert span(same, "overall_recovery") == "100.0% [98.7, 100.0] (both models)"
    assert extremes(same.iloc[:1], "overall_recovery") == "With its Wilson 95% interval: 100.0% [98.7, 100.0]."
    assert span(two, "overall_recovery") == "92.7% [91.2, 93.9] (a) to 97.1% [96.1, 97.8] (b)"


def test_withholding_names_the_models_that_never_withheld():
    text = withholding_sentence(_rates([("a", 0.9, 0.8, 0.95, 0), ("b", 0.9, 0.8, 0.95, 4)]))
    assert text.startswith("Models answer WITHHOLD on 60.0% [55.0, 65.0] (both models) of refusal probes")
    assert text.endswith("(a never withheld).")
