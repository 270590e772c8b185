"""The shared vocabulary: display names, column labels and interval cells."""
import pandas as pd

from qlb.present.names import (COLUMNS, attacker_words, cost_interval, family_words, pct_interval, points_interval,
                               readable, run_label)


def test_readable_names_values_and_labels_columns():
    df = pd.DataFrame({"model": pd.array(["sim-a", None], dtype="str"), "view": ["full_native", "choice_confidence"],
                       "profile": ["review_half", "authored"], "withhold_rate": [0.5, 0.25], "n": [10, 4],
                       "my label": ["x", None]})
    shown, specs = readable(df)
    assert list(shown.columns) == ["model", "release view", "cost profile", "withheld (share)", "cases", "my label"]
    assert shown["release view"].tolist() == ["full native", "choice + confidence"]
    assert shown["cost profile"].tolist() == ["review at half cost", "authored costs"]
    assert shown["model"].tolist() == ["sim-a", ""] and shown["my label"].tolist() == ["x", ""]   # never "None"
    assert specs["withheld (share)"].kind == "share" and specs["cases"].kind == "count"
    assert specs["my label"].kind == "text" and df["view"].iloc[0] == "full_native"               # input unchanged


def test_interval_cells():
    assert pct_interval(0.634, 0.6091, 0.6578) == "63.4% [60.9, 65.8]"
    assert pct_interval(0.5) == "50.0%" and pct_interval(None) == "N/A"
    assert points_interval(0.059, 0.026, 0.094) == "+5.9 [+2.6, +9.4]"
    assert points_interval(-0.128, -0.181, -0.08) == "-12.8 [-18.1, -8.0]"
    assert cost_interval(1.6161, 1.2706, 2.0009) == "1.616 [1.271, 2.001]"
    assert cost_interval(0.07, -0.031, 0.17, signed=True) == "+0.070 [-0.031, +0.170]"


def test_every_column_has_a_known_kind():
    assert {c.kind for c in COLUMNS.values()} <= {"text", "rate", "share", "count", "points", "cost", "number", "flag"}


def test_a_run_is_labelled_by_its_start_audits_models_and_id_end():
    params = '{"audits": ["quasileak", "decoding", "refusal"], "models": ["sim-alder", "sim-birch"]}'
    assert (run_label("run-20261204-abcdef123456", pd.Timestamp("2026-12-04 19:05:59"), params)
            == "2026-12-04 19:05 UTC · refusal, recovery, QuasiLeak · 2 models · run-…123456")
    assert run_label("r1", "2026-01-02 03:04", {"audits": []}) == "2026-01-02 03:04 UTC · no audit · run-…r1"
    every = {"audits": ["refusal", "quasileak", "decoding", "utility", "defenses"], "models": None,
             "families": ["prior", "logistic"]}
    assert run_label("run-x-0123456", "2026-01-02 03:04", every) == (
        "2026-01-02 03:04 UTC · every audit · 2 attacker families · run-…123456")


def test_how_many_reads_as_words_for_one_and_two():
    from qlb.present.names import how_many
    assert [how_many(k, 1) for k in (0, 1)] == ["no model", "the model"]
    assert [how_many(k, 2) for k in (0, 1, 2)] == ["neither model", "1 of 2 models", "both models"]
    assert [how_many(k, 9) for k in (0, 4, 9)] == ["none of the 9 models", "4 of 9 models", "all 9 models"]


def test_a_run_label_leaves_out_an_audit_that_stored_nothing():
    """A run that asked for QuasiLeak without a corpus was labelled with it while its Scope said it did not run."""
    from qlb.present.names import run_label
    params = {"audits": ["refusal", "decoding", "utility", "quasileak"], "models": ["a", "b"]}
    asked = run_label("run-x-abcdef", "2026-12-04 20:00", params)
    assert asked == "2026-12-04 20:00 UTC · refusal, recovery, utility, QuasiLeak · 2 models · run-…abcdef"
    ran = run_label("run-x-abcdef", "2026-12-04 20:00", params, {"refusal", "decoding", "utility"})
    assert ran == "2026-12-04 20:00 UTC · refusal, recovery, utility · 2 models · run-…abcdef"


def test_attacker_words_reads_every_stored_candidate_form():
    """An attacker candidate as a run stores it, in words: a base configuration, a combination (named as its attack
    track), a nested subview named only when it is not the view attacked, and the public inverse."""
    assert attacker_words("template logratio full shrink=2", "full_native") == \
        "Gaussian templates on probability log-ratios (correlated features, shrunk means)"
    assert attacker_words("ensemble of family winners [full_probabilities]", "full_native") == \
        "average of family bests, using only the full probabilities view"
    assert attacker_words("ensemble of family winners [full_probabilities]", "full_probabilities") == \
        "average of family bests"
    assert attacker_words("ensemble of all configurations [choice]", "choice") == "average of all configurations"
    assert attacker_words("logistic C=0.1 quadratic [choice]", "choice") == \
        "logistic regression, with pairwise terms (regularization C = 0.1)"
    assert attacker_words("forest depth=None leaf=5") == "random forest (any depth, at least 5 worlds per leaf)"
    assert attacker_words("forest depth=8 leaf=1") == "random forest (depth ≤ 8, at least 1 world per leaf)"
    assert attacker_words("shared scorer residual C=10.0") == \
        "shared mechanism scorer on residual shares (regularization C = 10)"
    assert attacker_words("template raw diag shrink=0") == "Gaussian templates (independent features, unshrunk means)"
    assert attacker_words("prior [no_output]", "choice") == "base rate of the hypothesis pair, using no released field"
    assert attacker_words("stack [full_native] on the public inverse", "full_native") == \
        "learned stack, after undoing the temperature"
    assert attacker_words("a new attacker [choice]", "choice") == "a new attacker"


def test_family_words_names_each_family_as_the_pages_do_in_the_librarys_order():
    from qlb.present.names import FAMILY_NAMES
    from qlb.tuple.release_views import DECODER_FAMILIES
    assert list(FAMILY_NAMES) == list(DECODER_FAMILIES)
    assert family_words(["template", "prior", "shared_scorer"]) == \
        "base rate, shared mechanism scorer, Gaussian templates"           # a run stores them sorted by id
    assert family_words(["new_family", "prior"]) == "base rate, new_family"


def test_a_cost_profile_of_a_class_some_domains_lack_says_where_nothing_changes():
    """A walk-through's profile named REJECT, which its claims domain has not: the help said only the change."""
    from qlb.present.names import profile_descriptions
    from qlb.records.ontology import parse_ontology
    from tests.records.ontologies import as_text, make_ontology

    onto = make_ontology({"tenancy": {"ACCEPT": ["a1", "a2"], "REJECT": ["r1", "r2"]},
                          "claims": {"PAY": ["p1", "p2"], "DENY": ["d1", "d2"]}},
                         cost_profiles={"authored": {},
                                        "reject_x3": {"asymmetric_column_class": "REJECT", "asymmetric_column_x": 3},
                                        "nowhere_x3": {"asymmetric_column_class": "GONE", "asymmetric_column_x": 3}})
    said = profile_descriptions(parse_ontology(as_text(onto), "own.json"))
    assert said["reject_x3"].endswith("multiplied by 3 (nothing changes in Claims, which has no such class).")
    assert said["nowhere_x3"].endswith("(no domain has that class, so nothing changes).")
