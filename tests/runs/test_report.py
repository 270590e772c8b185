"""The stakeholder report: self-contained, computed from the run, escaped, within budget."""
from __future__ import annotations

import html
import re

import duckdb
import numpy as np
import pandas as pd

from qlb.cli import main
from qlb.present.report import RunData, _table, findings
from qlb.runs.report import build_report


def test_report_of_the_decoded_demo(decoded_warehouse, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "--warehouse", str(decoded_warehouse), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert out.stat().st_size < 15e6
    assert "SIMULATED data" in text and "Headline findings" in text
    assert '&quot;test_used_for_selection&quot;: false' in text
    assert not re.search(r"<script[^>]+src=|<link[^>]+href=|<img |@import", text)   # nothing fetched
    assert text.count("<script") >= 5                                                # figures inline
    con = duckdb.connect(str(decoded_warehouse), read_only=True)
    try:   # the reference: each model's share of correct test worlds, straight from the stored predictions
        acc = [a for (a,) in con.execute("SELECT avg(correct::DOUBLE) FROM decoder_predictions WHERE view = 'choice' "
                                         "AND defense = 'none' GROUP BY model").fetchall()]
        # each decoded model's share of the dataset's worlds with a valid decision answer, from the stored rows
        valid = con.execute("SELECT model, count(*) FILTER (WHERE valid AND status = 'ok') / "
                            "(SELECT count(*) FROM worlds)::DOUBLE FROM responses WHERE model IN "
                            "(SELECT DISTINCT model FROM decoder_predictions) GROUP BY model ORDER BY 2, 1").fetchall()
    finally:
        con.close()
    (lo_model, lo), (hi_model, hi) = valid[0], valid[-1]
    said = html.unescape(text)
    span = (f"{100 * lo:.1f}%" if f"{lo:.3f}" == f"{hi:.3f}" else
            f"{100 * lo:.1f}% ({lo_model}) to {100 * hi:.1f}% ({hi_model})")
    assert f"{span} of the dataset's worlds have a valid decision answer from each model" in said
    answers = said[said.index("<h2>The answers audited</h2>"):said.index("<h2>Does withholding")]
    assert "simulated by qlb (qlb ingest of " in answers and answers.count("refusal probe") == 2
    assert len(acc) == 2
    low, high = re.search(r"seeing only the coarse choice, in (\d+\.\d)% \[[^]]+\] \([^)]+\) "
                          r"to (\d+\.\d)% \[[^]]+\] \([^)]+\) of test worlds", text).groups()
    assert (low, high) == (f"{100 * min(acc):.1f}", f"{100 * max(acc):.1f}")
    assert "The workflow-constrained quantizer " in text and " recovery by " in text


def _run_data(wcpq_agreement: tuple[int, int]) -> RunData:
    """A hand-made run: two models' pooled recovery, their full-native-minus-choice differences
    and WCPQ verification (nothing else)."""
    none = pd.DataFrame()
    recovery = pd.DataFrame({"scope": "pooled", "model": ["a", "a", "b", "b"],
                             "view": ["choice", "full_native"] * 2, "accuracy": [0.5104, 0.6281, 0.5764, 0.7538],
                             "ci_low": [0.4802, 0.5913, 0.5431, 0.7212], "ci_high": [0.5399, 0.6622, 0.6088, 0.7841]})
    diff = pd.DataFrame({"model": ["a", "b"], "view_a": "full_native", "view_b": "choice",
                         "difference": [0.1146, 0.2361],
                         "ci_low": [0.0733, 0.1935], "ci_high": [0.1562, 0.2788]})
    agree, comparisons = wcpq_agreement
    defenses = pd.DataFrame({"model": ["a", "b"], "defense": "wcpq", "diff_vs_native": [-0.2462, -0.1007],
                             "diff_ci_low": [-0.2891, -0.1377], "diff_ci_high": [-0.2049, -0.0651],
                             "plan_agreement": [5184, agree], "plan_comparisons": [5184, comparisons],
                             "max_abs_cost_diff": [0.0, 0.0], "coverage": [286 / 288, 1.0]})
    return RunData(pd.Series({"run_id": "run-x"}), pd.Series({"dataset_id": "d"}), none, recovery, diff, none, none,
                   none, defenses, none, none, ["a", "b"])


def test_findings_say_what_the_run_holds():
    assert findings(_run_data((5184, 5184))) == [
        "An attacker who must tell which of a case's two candidate mechanisms is the true one (guessing: 50%) gets it "
        "right seeing only the coarse choice, in 51.0% [48.0, 54.0] (a) to 57.6% [54.3, 60.9] (b) of test worlds; "
        "seeing the full native output, in 62.8% [59.1, 66.2] (a) to 75.4% [72.1, 78.4] (b) (95% intervals in "
        "brackets).",
        "Releasing the probabilities and confidence on top of the choice adds +11.5 [+7.3, +15.6] (a) to +23.6 "
        "[+19.4, +27.9] (b) points of recovery (paired 95% intervals).",
        "The workflow-constrained quantizer lowers recovery by 10.1 to 24.6 points on 2 models (coverage 99.3% to "
        "100.0%) while every one of "
        "the 18 frozen recipient policies keeps its exact plan and cost in every test world.",
    ]
    assert findings(_run_data((5183, 5184)))[-1] == (
        "The workflow-constrained quantizer lowers recovery by 10.1 to 24.6 points on 2 models (coverage 99.3% to "
        "100.0%) while NOT "
        "preserving every recipient plan (see the verification table).")


def test_findings_of_a_one_model_run_read_as_one_model():
    """A run of one model: one figure, not '17.0 to 17.0', and 'model', not '1 models' (seen on the
    Overview of an audit restricted to one model)."""
    from qlb.present.report import refusal_sentence
    d = _run_data((5184, 5184))
    one = RunData(d.run, d.dataset, d.refusal, d.recovery[d.recovery["model"] == "a"], d.recovery_diff.iloc[:1],
                  d.utility, d.utility_diff, d.fronts, d.defenses.iloc[:1], d.defense_costs, d.ql, ["a"])
    assert findings(one) == [
        "An attacker who must tell which of a case's two candidate mechanisms is the true one (guessing: 50%) gets it "
        "right seeing only the coarse choice, in 51.0% [48.0, 54.0] of test worlds; seeing the full native output, in "
        "62.8% [59.1, 66.2] (95% intervals in brackets).",
        "Releasing the probabilities and confidence on top of the choice adds +11.5 [+7.3, +15.6] points of recovery "
        "(paired 95% intervals).",
        "The workflow-constrained quantizer lowers recovery by 24.6 points (95% interval 20.5 to 28.9) on 1 model "
        "(coverage 99.3%) while every one of the 18 frozen recipient policies keeps its exact plan and cost in every "
        "test world.",
    ]
    assert refusal_sentence(pd.Series([0.97]), 1 / 16).startswith(
        "Refusal does not stop the leak: for the one model audited, the exact protected mechanism is named by "
        "refusal responses in 97.0% of cases")


def test_report_run_selection_and_errors(decoded_warehouse, tmp_path, capsys):
    assert main(["report", "--warehouse", str(decoded_warehouse), "--run", "nope", "--out",
                 str(tmp_path / "x.html")]) == 2                  # an unknown --run is bad usage
    assert "no run 'nope'" in capsys.readouterr().err
    assert main(["report", "--warehouse", str(decoded_warehouse), "--out", str(tmp_path / "x.docx")]) == 2
    con = duckdb.connect(str(decoded_warehouse), read_only=True)
    try:
        runs = con.execute("SELECT run_id FROM runs ORDER BY started_at").fetchall()
        html = build_report(con, runs[0][0])              # an older, less complete run still reports
    finally:
        con.close()
    assert runs[0][0] in html and "Privacy–utility fronts" not in html


def test_a_change_that_rounds_to_zero_reads_as_none():
    """Noise that moves recovery by less than the digits shown is said to leave it unchanged, and a
    tiny negative change is never written "-0.0" (a run on a 96-world task said "-0.0 to +0.0")."""
    from qlb.present.names import as_shown, points_interval
    from qlb.present.report import recovery_change

    def with_noise(diffs):
        base = _run_data((5184, 5184))
        noise = pd.DataFrame({"model": ["a", "b"][:len(diffs)], "defense": "noise", "diff_vs_native": diffs})
        return RunData(base.run, base.dataset, base.refusal, base.recovery, base.recovery_diff, base.utility,
                       base.utility_diff, base.fronts, pd.concat([base.defenses, noise]), base.defense_costs,
                       base.ql, base.models)
    assert findings(with_noise([-0.0001, 0.0002]))[-1] == (
        "Gaussian noise (three seeds) leaves recovery unchanged (within 0.05 points), model by model.")
    assert findings(with_noise([-0.0001]))[-1] == "Gaussian noise (three seeds) leaves recovery unchanged (within 0.05 points)."
    assert findings(with_noise([-0.0731, -0.0004]))[-1] == (
        "Gaussian noise (three seeds) changes recovery by -7.3 to +0.0 points, model by model.")
    assert points_interval(-0.0001, -0.0004, 0.0003) == "+0.0 [+0.0, +0.0]"
    assert recovery_change(pd.Series([-12.04, -2.96])) == "lowers recovery by 3.0 to 12.0 points"
    assert recovery_change(pd.Series([-12.04, -2.96]), say_lowers=False) == "changes recovery by -12.0 to -3.0 points"
    assert recovery_change(pd.Series([-0.04, 0.01])) == "leaves recovery unchanged (within 0.05 points)"
    shown = as_shown(pd.Series([-0.04, -0.0, 0.26, -0.06, float("nan")]), 1)
    assert shown.map("{:+.1f}".format).tolist() == ["+0.0", "+0.0", "+0.3", "-0.1", "+nan"]
    assert shown[2] == 0.26 and shown[3] == -0.06                   # only what would read -0.0 changes
    assert as_shown(np.array([-0.0004, 0.0125]), 3).tolist() == [0.0, 0.0125]
    assert as_shown(pd.Series([-0.01, None, 2.5], dtype=object), 1).tolist()[::2] == [0.0, 2.5]


def test_report_escapes_text_from_data():
    cell = _table(pd.DataFrame({"model": ["<script>alert(1)</script>"], "x": [0.5]}))
    assert "<script>" not in cell and "&lt;script&gt;" in cell


def test_the_refusal_finding_follows_the_numbers():
    """The refusal sentence is computed: 'does not stop' only when every model recovers the
    mechanism well above a uniform guess (issue 15: it used to be written whatever the numbers)."""
    from qlb.present.report import refusal_sentence
    uniform = 1 / 16
    leak = refusal_sentence(pd.Series([0.9188, 0.9993]), uniform)
    assert leak.startswith("Refusal does not stop the leak: across 2 models,") and "91.9% to 99.9%" in leak
    assert "naming one of the domain's mechanisms at random is right 6.25% of the time" in leak
    assert "one of its domain's 16 mechanisms at random" in refusal_sentence(pd.Series([0.9188, 0.9993]), uniform, [16])
    hidden = refusal_sentence(pd.Series([0.05, 0.07]), uniform)
    assert hidden.startswith("Refusal stops the leak: across 2 models,")
    mixed = refusal_sentence(pd.Series([0.06, 0.95, 0.97]), uniform)
    assert mixed.startswith("Refusal stops the leak for 1 of 3 models only:") and "2 models stay above twice" in mixed
    named = refusal_sentence(pd.Series([0.06, 0.95, 0.97], index=["a", "b", "c"]), uniform)
    assert named.endswith("; b and c (95.0% to 97.0%) stay above twice a uniform guess.")


def test_the_fronts_finding_says_whether_the_set_changes():
    """'change with the task' only when the non-dominated sets differ (the review saw it written
    above a table where the same models won every task)."""
    def fronts(sets):
        return pd.DataFrame([{"task": t, "profile": "authored", "view": "full_native", "model": m,
                              "nondominated_models": m in sets[t]}
                             for t in ("selective", "clarification", "asymmetric") for m in ("a", "b", "c")])
    base = _run_data((5184, 5184))
    same = RunData(base.run, base.dataset, base.refusal, base.recovery, base.recovery_diff, base.utility,
                   base.utility_diff, fronts({t: {"a", "b"} for t in ("selective", "clarification", "asymmetric")}),
                   base.defenses, base.defense_costs, base.ql, base.models)
    assert [s for s in findings(same) if "non-dominated" in s] == [
        "The same models are non-dominated (no other model both leaks less and costs less) in every task under the "
        "authored costs: a, b."]
    same.fronts = fronts({"selective": {"a"}, "clarification": {"a", "c"}, "asymmetric": {"a"}})
    assert any(s.endswith("change with the task: selective routing: a; one-step clarification: a, c; "
                          "asymmetric-cost routing: a.") for s in findings(same))
    same.fronts = fronts({t: {"a", "b", "c"} for t in ("selective", "clarification", "asymmetric")})   # none dominated
    assert [s for s in findings(same) if "dominates" in s] == [
        "No model dominates another in any task under the authored costs: each of a, b and c either leaks less or "
        "costs less than the others, so the choice between them is a trade-off."]


def test_the_utility_finding_says_when_the_scores_add_nothing_the_recipient_uses():
    base = _run_data((5184, 5184))
    diff = pd.DataFrame([{"model": m, "view_a": "choice", "view_b": "full_native", "task": t, "profile": "authored",
                          "difference": 0.0, "ci_low": 0.0, "ci_high": 0.0, "noninferior": True}
                         for m in ("a", "b") for t in ("selective", "clarification", "asymmetric")])
    base.utility_diff = diff
    said = next(s for s in findings(base) if s.startswith("The legitimate recipient pays clearly less"))
    assert said.endswith("in 0 of 6 across the 1 cost profile: the probabilities and the confidence add nothing the "
                         "recipient uses, only what leaks.")


def test_report_of_a_one_model_run_draws_the_front_of_its_release_views(one_model_warehouse):
    """An auditor's own single model: the fronts section plots its release views per task (one point alone is no
    front), the headline says which views are on it, and no sentence counts "1 models"."""
    import re
    con = duckdb.connect(str(one_model_warehouse), read_only=True)
    try:
        html = build_report(con, None, "simulated-reference")
    finally:
        con.close()
    fronts = html[html.index("<h2>Privacy–utility fronts</h2>"):html.index("<h2>Defenses and WCPQ verification")]
    assert fronts.count("each release view of sim-alder, the one model audited") == 3
    assert "With one model audited (sim-alder), the front compares its release views." in html
    assert "sim-alder in " in html                       # the non-inferiority finding names the tasks
    assert not re.search(r"\b1 models\b|all 1 models|1 of 1 models", html)


def test_report_tables_print_counts_as_counts_and_scroll_inside_the_page():
    """Issue 16: '1029.0000' for a count, and a QuasiLeak table wider than the page."""
    html_table = _table(pd.DataFrame({"detector": ["a", "b"], "predicted_groups": [988.0, 1029.0],
                                      "complete_f1": [0.7566, 1.0]}))
    assert ">988<" in html_table and ">1,029<" in html_table and "1029.0000" not in html_table
    assert ">75.7%<" in html_table and ">100.0%<" in html_table         # a rate as a percent (one vocabulary)
    assert "complete-group F1" in html_table and "predicted groups" in html_table
    assert html_table.startswith("<div class='wide'>")


def test_the_cost_finding_counts_the_cases_where_full_native_is_cheaper():
    """Hand-made differences (choice minus full native) for 2 models x 3 tasks x 2 profiles: the
    sentence counts the authored cases and all of them, and says 'what leaks is also what the
    recipient uses' only when full native is cheaper in every case."""
    base = _run_data((5184, 5184))
    rows = [{"model": m, "view_a": "choice", "view_b": "full_native", "task": t, "profile": p,
             "difference": 0.1 * (i + 1), "ci_low": 0.1 * (i + 1) - 0.05, "ci_high": 0.1 * (i + 1) + 0.05,
             "noninferior": False}
            for i, (m, t, p) in enumerate((m, t, p) for m in ("a", "b") for t in ("selective", "clarification", "asymmetric")
                                          for p in ("authored", "review_double"))]
    diff = pd.DataFrame(rows)
    d = RunData(base.run, base.dataset, base.refusal, base.recovery, base.recovery_diff, base.utility, diff,
                base.fronts, base.defenses, base.defense_costs, base.ql, base.models)
    expected = ("The legitimate recipient pays clearly less with the full native output than with the choice alone "
                "(the paired 95% interval above 0) in 6 of 6 model-task cases under the authored costs (choice minus "
                "full native: +0.100 to +1.100 cost units a case) and in 12 of 12 across the 2 cost profiles: what "
                "leaks is also what the recipient uses.")
    assert expected in findings(d)
    other = diff["profile"] != "authored"
    d.utility_diff = diff.assign(difference=diff["difference"].mask(other, -0.05),
                                 ci_low=diff["ci_low"].mask(other, -0.1), ci_high=diff["ci_high"].mask(other, 0.0))
    assert [s for s in findings(d) if s.startswith("The legitimate recipient")] == [
        "The legitimate recipient pays clearly less with the full native output than with the choice alone (the "
        "paired 95% interval above 0) in 6 of 6 model-task cases under the authored costs (choice minus full native: "
        "+0.100 to +1.100 cost units a case) and in 6 of 12 across the 2 cost profiles; in the other 6 cases the run "
        "cannot tell the two apart (the interval includes 0)."]
    # a walk-through's +0.052 [-0.271, +0.417] everywhere: no case is clear, and the sentence says so
    d.utility_diff = diff.assign(difference=0.052, ci_low=-0.271, ci_high=0.417)
    said = [s for s in findings(d) if s.startswith("The legitimate recipient")][0]
    assert "in 0 of 6 model-task cases" in said and said.endswith(
        "in 0 of 12 across the 2 cost profiles; in the other 12 cases the run cannot tell the two apart (the interval "
        "includes 0).")


def test_the_wcpq_finding_counts_the_policies_of_the_runs_own_ontology():
    """An own task with four cost profiles has 3 x 4 = 12 frozen recipient policies per domain, not TUPLE's 18:
    the report's finding counts them from the ontology (the Defenses page's: tests/runs/test_own_task.py)."""
    from dataclasses import replace

    from qlb.records.ontology import parse_ontology
    from tests.records.ontologies import as_text, five_by_two

    own = replace(_run_data((5184, 5184)), ontology=parse_ontology(as_text(five_by_two())))
    assert findings(own)[-1].endswith("while every one of the 12 frozen recipient policies keeps its exact plan and "
                                      "cost in every test world.")
    assert findings(_run_data((5184, 5184)))[-1].endswith("the 18 frozen recipient policies keeps its exact plan and "
                                                          "cost in every test world.")


def test_real_answers_on_worlds_qlb_generated_say_so():
    """A dataset of collected (real) answers on worlds from `qlb demo --ontology` was labelled plain user data, and
    its report said nothing of the worlds being simulated: the report and the pages now say which worlds are (both
    on a whole own-task dataset in tests/runs/test_own_task.py)."""
    from qlb.present.report import worlds_sentence
    assert worlds_sentence(0, 144) is None and worlds_sentence(3, 0) is None
    assert worlds_sentence(144, 144).startswith("Every world of this dataset was generated by qlb")
    assert worlds_sentence(12, 144).startswith("12 of the 144 worlds of this dataset were generated by qlb")


def test_the_simulated_worlds_count_looks_for_the_simulators_own_note():
    """The warehouse counts generated worlds by their private note's opening: the same text the simulator writes."""
    from qlb.simulate.tuple_sim import SIMULATED_NOTE
    from warehouse.queries import sql
    assert f"LIKE '{SIMULATED_NOTE.strip()}%'" in sql("datasets")


def test_the_answers_finding_comes_last_unless_answers_are_missing_and_points_at_the_collection_page():
    """Every world answered validly: the finding is housekeeping, after the findings on the leak. A model
    with fewer than 95% of the worlds answered validly: it leads, since it changes what the others mean."""
    from qlb.present.report import headline
    d = _run_data((10, 10))
    one = dict(model="a", probe="native", file_name="a.jsonl", simulated=False, transport=None, endpoint=None,
               endpoint_model=None, settings=None, started_at=pd.NaT, finished_at=pd.NaT, answers=4, valid=4,
               invalid=0, unavailable=0, with_probabilities=4, with_confidence=4, worlds=4)
    d.answers = pd.DataFrame([one])
    found = headline(d)
    assert found[-1] == ("answers", "4 of the dataset's 4 worlds have a valid decision answer from a (100.0%).")
    assert len(found) > 1 and found[0][0] != "answers"
    d.answers = pd.DataFrame([one | {"valid": 3, "invalid": 1}])                     # 75% valid: it leads
    assert headline(d)[0][0] == "answers"
    d.answers = pd.DataFrame([one | {"transport": "openai", "file_name": "collect:col-1", "with_confidence": 0}])
    assert headline(d)[0][0] == "collection"                                        # no confidence ever: it leads
