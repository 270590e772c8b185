"""The QuasiLeak page's first finding (qlb.present.report.best_detector_sentence): a simulated
detector, derived from the answer key, never reads as the best detector."""
from __future__ import annotations

import pandas as pd

from qlb.present.report import best_detector_sentence


def _board(rows) -> pd.DataFrame:
    return pd.DataFrame([{"detector": det, "simulated": sim, "complete_f1": f1, "complete_f1_ci_low": f1 - 0.03,
                          "complete_f1_ci_high": f1 + 0.03, "complete_recall": f1 - 0.01,
                          "complete_recall_ci_low": f1 - 0.04, "complete_recall_ci_high": f1 + 0.02, "targets": 1200}
                         for det, sim, f1 in rows])


def test_the_best_real_detector_leads_and_the_simulated_ones_are_an_upper_reference():
    said = best_detector_sentence(_board([("sim-det-strong", True, 0.757), ("sim-det-weak", True, 0.40),
                                          ("lexicon-cues", False, 0.291), ("regex", False, 0.12)]))
    assert said == ("lexicon-cues is the best real detector: complete-group F1 29.1% [26.1, 32.1], recovering 28.1% "
                    "[25.1, 31.1] of the 1,200 target groups whole and bound to the right attribute. The simulated "
                    "detectors, derived from the answer key (the gold groups), reach up to 75.7% [72.7, 78.7] "
                    "(sim-det-strong): an upper reference, not a detector one could run.")
    real_best = best_detector_sentence(_board([("sim-det-weak", True, 0.20), ("lexicon-cues", False, 0.291)]))
    assert real_best.startswith("lexicon-cues finds the most complete groups: complete-group F1 29.1%")
    only_simulated = best_detector_sentence(_board([("sim-det-strong", True, 0.757)]))
    assert only_simulated.startswith("sim-det-strong finds the most complete groups")
