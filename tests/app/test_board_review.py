"""What a privacy-board reader of the pages found misleading (a review of every page and the report),
each pinned: findings that agree with the tables under them and with each other, controls never
reported as a defense, simulated detectors said to be simulated, the restricted defense-aware
attacker said plainly."""
from __future__ import annotations

import re

import pandas as pd

from qlb.present.report import quasileak_sentence
from tests.app.test_pages import opened, texts


def _finding(at, lead: str) -> str:
    return next(m.value for m in at.markdown if "qlb-finding" in m.value and f"<b>{lead}</b>" in m.value)


def test_defense_findings_never_name_a_control_and_say_the_attacker_is_restricted(decoded_warehouse, monkeypatch):
    with opened(decoded_warehouse, "pages/defenses.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        lower = _finding(at, "Which defenses lower recovery.")
        assert "(control)" not in lower and "grid only" not in lower and "noise seed" not in lower
        assert "The largest fall:" in lower or "for no model under any defense" in lower
        # the decoded warehouse: recovery with base rate, logistic regression and Gaussian templates; the
        # defense-aware attacker with base rate and Gaussian templates only
        assert "restricted to base rate and Gaussian templates" in texts(at)
        assert "the recovery audit's other families (logistic regression) do not attack" in texts(at)


def test_the_confidence_finding_counts_point_estimates_and_names_every_clear_model(decoded_warehouse, monkeypatch):
    with opened(decoded_warehouse, "pages/recovery.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        said = _finding(at, "The stated confidence.")
        assert "it is higher for" in said and "paired 95% interval is above 0 for" in said
        assert not re.search(r"and \d+ more", said)


def test_the_closest_call_is_the_comparison_nearest_the_margin(demo_warehouse, monkeypatch):
    with opened(demo_warehouse, "pages/sensitivity.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        said = _finding(at, "Closest call.")
        assert "nearest the 0.1 margin" in said and re.search(r"its interval \d\.\d{3} (below|above) the margin", said)


def test_the_detector_finding_says_which_detectors_are_simulated():
    scores = pd.DataFrame({"detector": ["sim-det-strong", "lexicon-cues", "pattern"],
                           "value": [0.757, 0.301, 0.112], "ci_low": [0.71, 0.25, 0.08],
                           "ci_high": [0.80, 0.35, 0.15], "simulated": [True, False, False]})
    assert quasileak_sentence(scores) == (
        "Among 3 privacy detectors on the QuasiLeak corpus, the best real detector finds complete groups with F1 "
        "30.1% [25.0, 35.0] (lexicon-cues); the simulated ones, derived from the answer key, reach up to 75.7% "
        "[71.0, 80.0] (sim-det-strong): an upper reference (95% intervals in brackets).")
    only = scores[scores["simulated"]]
    assert quasileak_sentence(only).endswith("is 75.7% [71.0, 80.0] (sim-det-strong), simulated from the gold "
                                             "groups (95% intervals in brackets).")
    real = scores.assign(simulated=False)
    assert quasileak_sentence(real).endswith("is 75.7% [71.0, 80.0] (sim-det-strong) (95% intervals in brackets).")


def test_the_findings_that_fail_the_paper_are_named_beside_the_headline():
    from qlb.present.paper import Check, comparison_sentence
    checks = [Check("a", "Refusal leaks.", "92-99%", ">90%", "95%", True),
              Check("b", "WCPQ lowers recovery at no cost.", "10-25 points", "every model lower",
                    "8 of 9 models lower", False),
              Check("c", "Learned WCPQ.", "x", "y", "no audit", None)]
    assert comparison_sentence(checks) == (
        "1 of 2 of the TUPLE paper's findings hold on this run; this one does not: WCPQ lowers recovery at no cost "
        "(this run: 8 of 9 models lower; the paper's story needs every model lower).")
    assert comparison_sentence(checks[:1]) == "1 of 1 of the TUPLE paper's findings hold on this run."
    assert comparison_sentence(checks[2:]) is None


def test_the_overview_says_how_the_run_compares_with_the_paper_before_its_chart(decoded_warehouse, monkeypatch):
    with opened(decoded_warehouse, "pages/overview.py", monkeypatch, 120) as at:
        assert not at.exception, [e.value for e in at.exception]
        said = _finding(at, "Does the simulation reproduce the paper?")     # the demo: a check of the simulator
        assert "of the TUPLE paper&#x27;s findings hold on this run" in said or "of the TUPLE paper's" in said
        assert "not any model" in said
        fold = next(e for e in at.expander if e.label.startswith("Compared with the TUPLE paper"))
        lines = next(m.value for m in fold.markdown if m.value.startswith("- **")).split("\n")
        assert all(x.startswith(("- **Holds**: ", "- **Does NOT hold**: ")) for x in lines)   # verdict first, never cut
        bad = sum(x.startswith("- **Does NOT hold**") for x in lines)
        assert (f"{bad} do not" in fold.label or "1 does not" in fold.label) if bad else "not" not in fold.label


def test_a_richer_release_reading_below_a_poorer_one_is_explained_from_the_numbers():
    from qlb.present.robustness import nesting_note
    pooled = pd.DataFrame([{"model": m, "view": v, "accuracy": a, "ci_low": a - 0.03, "ci_high": a + 0.03}
                           for m, v, a in (("a", "full_native", 0.635), ("a", "full_probabilities", 0.663),
                                           ("a", "choice", 0.52), ("a", "choice_confidence", 0.55),
                                           ("b", "full_native", 0.70), ("b", "full_probabilities", 0.60))])
    note = nesting_note(pooled)
    assert note.startswith("A richer release reads below one it contains for a (full native 63.5% below full "
                           "probabilities 66.3%).")
    assert note.endswith("in each case the two 95% intervals overlap.")
    assert nesting_note(pooled[pooled["model"] == "b"]) is None
    far = pooled.assign(ci_low=pooled["accuracy"] - 0.001, ci_high=pooled["accuracy"] + 0.001)
    assert nesting_note(far).endswith(": compare the intervals.")


def test_the_cost_table_says_why_adapted_temperature_reads_cheaper_and_counts_it():
    """Adapted recipients on the (invertible) temperature release paid less than the frozen native ones in 152 of 162
    cells of a nine-model run, which the caption had called chance: the note counts it and names the reason when a
    sign test says it is more often than chance, and gives the count alone when it is not (2 of 3 is a coin flip)."""
    from qlb.present.defense_notes import temperature_note

    def frame(pairs):
        rows = []
        for i, (native, smooth) in enumerate(pairs):
            rows += [{"model": f"m{i}", "defense": "native", "recipient": "frozen", "task": "selective",
                      "profile": "authored", "mean_cost": native},
                     {"model": f"m{i}", "defense": "temperature", "recipient": "adapted", "task": "selective",
                      "profile": "authored", "mean_cost": smooth},
                     {"model": f"m{i}", "defense": "temperature", "recipient": "frozen", "task": "selective",
                      "profile": "authored", "mean_cost": 9.0}]
        return pd.DataFrame(rows)

    systematic = temperature_note(frame([(0.45, 0.35)] * 9 + [(0.30, 0.32)]))      # 9 of 10: p = 0.011
    assert "pay less than the native ones in 9 of 10 model–task–profile cells of the models shown (mean -0.088)" \
        in systematic
    assert "public inverse" in systematic
    coin = temperature_note(frame([(0.45, 0.44), (0.35, 0.349), (0.30, 0.31)]))       # 2 of 3: p = 0.5
    assert coin.endswith("in 2 of 3 model–task–profile cells of the models shown (mean +0.000), within what "
                         "refitting and reselecting moves.")
    assert temperature_note(frame([(0.45, 0.35)]).query("defense != 'temperature'")) == ""
