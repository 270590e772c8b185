"""The Compare runs page's words (qlb.present.compare_text) on small hand-made runs with known answers."""
from __future__ import annotations

import json

import pandas as pd

from qlb.present.compare_text import (default_runs, largest_cell, largest_change, outside_interval, picker_label,
                                      settings, setup_note, stated_change)

EVERY = ["refusal", "quasileak", "decoding", "utility", "defenses"]


def _runs(*rows) -> pd.DataFrame:
    """``all_runs``-shaped runs, newest first: (run id, start)."""
    return pd.DataFrame([{"run_id": r, "started_at": pd.Timestamp(t)} for r, t in rows])


def _run(params: dict, fingerprint: str = "f" * 16, code: str = "0.1.0+abc") -> dict:
    base = {"audits": EVERY, "models": ["m1", "m2"], "families": ["logistic", "prior", "template"],
            "defense_models": ["m1"], "defense_families": ["logistic", "prior", "template"], "learned_wcpq": [],
            "views": ["choice", "full_native"], "n_boot": 2000, "seed": 7, "quasileak_split": "test",
            "ontology_sha256": "ab" * 32}
    return {"parameters": json.dumps(base | params), "dataset_fingerprint": fingerprint, "code_version": code}


# ----------------------------------------------------------------------------- picking the runs
def test_the_picker_label_starts_with_the_end_of_the_run_id_and_names_only_audits_that_stored_results():
    params = {"audits": EVERY, "models": None, "families": None}
    label = picker_label("run-20261204-214523-b0e4ed", "2026-12-04 21:45:23", params,
                         ran={"refusal", "decoding", "utility", "defenses"})
    assert label == "run-…b0e4ed · 2026-12-04 21:45 UTC · refusal, recovery, utility, defenses"
    assert picker_label("run-x-abcdef", "2026-12-04 21:45:23", params) == "run-…abcdef · 2026-12-04 21:45 UTC · every audit"


def test_run_b_opens_on_the_overviews_run_and_run_a_on_the_newest_earlier_run_of_the_same_audits():
    """The demo warehouse's shape: two newer partial runs (refusal and QuasiLeak) after two complete ones."""
    runs = _runs(("p2", "2026-12-04 19:52:30"), ("p1", "2026-12-04 19:52:26"), ("full2", "2026-12-04 11:34"),
                 ("full1", "2026-12-04 11:23"))
    ran = {"p2": {"refusal", "quasileak"}, "p1": {"refusal", "quasileak"}, "full2": set(EVERY), "full1": set(EVERY)}
    chosen = default_runs(runs, ran, headline="full2")
    assert (chosen.a, chosen.b) == ("full1", "full2")
    assert chosen.why == ("Run B opens on run-…full2, the run the Overview and the report show; run A on run-…full1, "
                          "the newest earlier run with results of the same audits (refusal, recovery, utility, "
                          "defenses and QuasiLeak). 2 newer runs hold results of refusal and QuasiLeak: pick one as "
                          "run B to see what it changed.")


def test_without_an_earlier_run_of_the_same_audits_run_a_is_the_closest_and_a_link_names_run_b():
    runs = _runs(("new", "2026-12-05"), ("full", "2026-12-04"), ("partial", "2026-12-03"), ("some", "2026-12-02"))
    ran = {"new": {"refusal"}, "full": set(EVERY), "partial": {"refusal", "quasileak"},
           "some": {"refusal", "quasileak", "decoding"}}
    chosen = default_runs(runs, ran, headline="full")
    assert (chosen.a, chosen.b) == ("some", "full")          # shares 3 of run B's audits; "partial" only 2
    assert "the newest earlier run holding most of its audits" in chosen.why
    linked = default_runs(runs, ran, headline="full", linked="partial")
    assert (linked.a, linked.b) == ("some", "partial") and "the run the link names" in linked.why
    oldest = default_runs(runs, ran, headline="some")          # nothing before it: the closest after it
    assert (oldest.a, oldest.b) == ("full", "some") and "no run started before it" in oldest.why
    assert default_runs(runs.iloc[:1], ran, headline="new") is None


# ------------------------------------------------------------------------------ their settings
def test_a_stronger_attacker_in_run_b_is_said_before_anything_else():
    items = settings(_run({}), _run({"families": ["forest", "logistic", "prior", "template"]}))
    lead, text = setup_note(items)
    assert lead == "Not like for like."
    assert text == ("The two runs read the same data (same dataset fingerprint), with the same code version, but their "
                    "settings differ. Run B's recovery attacker tried 4 families, run A's 3 (run B adds random forest): "
                    "a change in recovery may come from the stronger attacker, not the model.")
    differ = [s for s in items if s.differs]
    assert [s.label for s in differ] == ["recovery attacker families"]
    assert differ[0].a == "base rate, logistic regression and Gaussian templates"


def test_every_stored_setting_is_compared_and_only_settings_of_audits_both_runs_hold_are_said_to_matter():
    a = _run({"families": None, "n_boot": 1000, "seed": 1, "defense_models": None, "extra_knob": 3},
             fingerprint="0" * 16, code="0.1.0+old")
    b = _run({"models": None, "defense_families": ["prior", "template"], "learned_wcpq": ["wcpq learned 0 paired"]})
    items = settings(a, b, ran_a=set(EVERY), ran_b={"refusal", "decoding", "utility", "defenses"})
    differs = {s.label: s.differs for s in items if s.differs}
    assert set(differs) == {"data fingerprint", "code version", "audits with results", "models",
                            "recovery attacker families", "defended models", "defense-aware attacker families",
                            "learned WCPQ variants", "bootstrap resamples", "seed", "extra knob"}
    assert differs["recovery attacker families"].startswith("run B's recovery attacker tried 3 families, run A's 5 "
                                                            "(run A adds random forest and shared mechanism scorer)")
    assert "weaker attacker" in differs["recovery attacker families"]
    assert differs["audits with results"] == "only run A holds results of QuasiLeak: those are not compared"
    assert "1,000 bootstrap resamples and run B's from 2,000" in differs["bootstrap resamples"]
    lead, text = setup_note(items)
    assert lead == "Not like for like." and text.startswith(
        "The two runs read different data (the dataset fingerprints differ), with code 0.1.0+old in run A and "
        "0.1.0+abc in run B, but their settings differ. Only run A holds results of QuasiLeak")
    # the same families in only one run's recovery audit: not compared, so not said to matter
    one = settings(_run({"families": None}), _run({}), ran_a={"refusal"}, ran_b=set(EVERY))
    fam = next(s for s in one if s.label == "recovery attacker families")
    assert fam.a == "—" and fam.differs is None


def test_same_settings_say_where_a_change_comes_from():
    assert setup_note(settings(_run({}), _run({}))) == (
        "Like for like.", "The two runs read the same data (same dataset fingerprint), with the same code version, "
        "and the same settings (models, release views, recovery attacker families, defended models, "
        "defense-aware attacker families, learned WCPQ variants, QuasiLeak split, decision task, bootstrap "
        "resamples and seed).")
    lead, text = setup_note(settings(_run({}), _run({}, fingerprint="1" * 16)))
    assert lead == "Same settings." and text.endswith(": a change comes from the data.")


# ---------------------------------------------------------------------------------- findings
def test_a_stated_change_from_unrounded_rates_says_so_when_the_shown_figures_differ_by_another_amount():
    assert stated_change(0.5356, 0.5894) == "+5.4 points, from the unrounded rates"     # 53.6% and 58.9%: 5.3 apart
    assert stated_change(0.50, 0.55) == "+5.0 points"
    assert stated_change(0.683, 0.5) == "-18.3 points"
    assert stated_change(0.5454, 0.0, scale=1.0, digits=3, unit="cost units", of="costs") == "-0.545 cost units"
    assert stated_change(0.5458, 0.0004, scale=1.0, digits=3, unit="cost units", of="costs") == (
        "-0.545 cost units, from the unrounded costs")                                  # shown 0.546 and 0.000


def _figs(rows) -> pd.DataFrame:
    return pd.DataFrame([{"audit": audit, "subject": subject, "a": a, "a_lo": a - 0.05, "a_hi": a + 0.05, "b": b,
                          "b_lo": b - 0.05, "b_hi": b + 0.05, "change": b - a} for audit, subject, a, b in rows])


def test_the_largest_change_states_the_change_as_from_the_unrounded_rates():
    figs = _figs([("secret recovery", "full native secret recovery of m1", 0.5356, 0.5894),
                  ("refusal probes", "refusal-probe recovery of m1", 0.9, 0.9)])
    lead, text = largest_change(figs)
    assert lead == "Largest change."
    assert text == ("Full native secret recovery of m1 went from 53.6% [48.6, 58.6] in run A to 58.9% [53.9, 63.9] in "
                    "run B (+5.4 points, from the unrounded rates). 1 of the 2 rates both runs hold moved by 1 point or "
                    "more.")


def test_rates_outside_run_as_interval_are_counted_by_name_and_not_called_a_test():
    figs = _figs([("secret recovery", "x", 0.68, 0.50), ("secret recovery", "y", 0.70, 0.80),
                  ("refusal probes", "z", 0.90, 0.91), ("recovery under defenses", "w", 0.5, 0.6)])
    text = outside_interval(figs)
    assert text.startswith("In run B, 3 of the 4 rates lie outside their 95% interval in run A: 2 protected-mechanism "
                           "recovery rates from a release view and 1 protected-mechanism recovery rate under a "
                           "defense. This counts values; it is not a test of change")
    assert "(secret recovery" not in text
    none = outside_interval(figs.iloc[2:3])
    assert none.startswith("In run B, none of the 1 rates") and "not a test of change" in none


def test_the_tables_open_on_the_cell_of_the_largest_change():
    pairs = pd.DataFrame({"model": ["m1", "m2", "m1"], "view": ["full_native", "choice", "choice"],
                          "task": ["selective", "clarification", "selective"], "change": [0.01, -0.183, 0.0]})
    assert largest_cell(pairs, ["view", "task"]) == {"view": "choice", "task": "clarification"}
    assert largest_cell(pairs.assign(change=0.0), ["view"]) is None
