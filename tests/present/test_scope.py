"""The run's scope and the release options its numbers support (qlb.present.scope), on planted
tables whose answers are known."""
from __future__ import annotations

import json

import pandas as pd

from qlb.present.rundata import RunData
from qlb.present.scope import change_phrases, options, options_note, scope_sentence, stale_warning

EMPTY = pd.DataFrame()


def _recovery(rows: dict[tuple[str, str], tuple[float, float, float]], n: int = 288) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "view": v, "scope": "pooled", "accuracy": a, "ci_low": lo, "ci_high": hi, "n": n}
                         for (m, v), (a, lo, hi) in rows.items()])


def _utility(noninferior: dict[tuple[str, str], bool], unclear: tuple[tuple[str, str], ...] = ()) -> pd.DataFrame:
    """Choice minus full native per (model, task): non-inferior (+0.05 [-0.02, +0.09]), clearly above the margin
    (+0.4 [+0.25, +0.55]) or, for ``unclear``, not shown either way (+0.2 [-0.1, +0.5])."""
    rows = []
    for (m, t), ok in noninferior.items():
        d, lo, hi = (0.05, -0.02, 0.09) if ok else (0.2, -0.1, 0.5) if (m, t) in unclear else (0.4, 0.25, 0.55)
        rows.append({"model": m, "view_a": "choice", "view_b": "full_native", "task": t, "profile": "authored",
                     "difference": d, "ci_low": lo, "ci_high": hi, "noninferior": ok})
    return pd.DataFrame(rows)


def _run(params: dict, recovery: pd.DataFrame, utility: pd.DataFrame = EMPTY, defenses: pd.DataFrame = EMPTY,
         models: tuple[str, ...] = ("a", "b")) -> RunData:
    run = pd.Series({"run_id": "run-x", "parameters": json.dumps(params)})
    return RunData(run, pd.Series({"dataset_id": "d", "simulated": False}), refusal=EMPTY, recovery=recovery,
                   recovery_diff=EMPTY, utility=utility if not utility.empty else EMPTY, utility_diff=utility,
                   fronts=EMPTY, defenses=defenses, defense_costs=EMPTY, ql=EMPTY, models=list(models))


REC = _recovery({("a", "full_native"): (0.80, 0.75, 0.85), ("a", "choice"): (0.50, 0.47, 0.53),
                 ("a", "no_output"): (0.50, 0.50, 0.50),
                 ("b", "full_native"): (0.70, 0.65, 0.75), ("b", "choice"): (0.58, 0.54, 0.62),
                 ("b", "no_output"): (0.50, 0.50, 0.50)})


def test_scope_names_what_a_restricted_run_left_out():
    d = _run({"models": ["a"], "families": ["prior", "logistic"], "audits": ["refusal", "decoding", "quasileak"]},
             REC[REC["model"] == "a"].assign(n=60, ci_low=lambda f: f["accuracy"] - 0.08,
                                             ci_high=lambda f: f["accuracy"] + 0.08),
             models=("a", "b", "c"))
    assert scope_sentence(d) == (
        "This run audited 1 of the dataset's 3 models (a) on 60 test worlds (the 95% intervals of its full-output "
        "recovery about ±8 points), with 2 of the five attacker families (base rate and logistic regression): a "
        "stronger attacker could recover more than it reports. Not run: refusal, utility, defenses and QuasiLeak "
        "(no QuasiLeak corpus).")
    whole = _run({}, REC, _utility({("a", "selective"): True, ("b", "selective"): False}))
    assert scope_sentence(whole).startswith("This run audited both models on 288 test worlds each, with all five "
                                            "attacker families.")
    wcpq = pd.DataFrame([{"model": "a", "defense": "wcpq", "diff_vs_native": -0.1}])
    attacked = _run({"defense_families": ["prior", "template"]}, REC, defenses=wcpq)
    assert ("The defenses were tried on 1 of them (a). The defended releases were attacked with 2 of the five "
            "attacker families (base rate and Gaussian templates): their recovery too could be higher.") \
        in scope_sentence(attacked)
    nothing = _run({"audits": ["quasileak"]}, REC.iloc[0:0], models=())           # a QuasiLeak-only dataset
    assert scope_sentence(nothing).startswith("This run audited no decision model.")
    assert "run-x" in stale_warning("run-x") and "again before relying on them" in stale_warning("run-x")


def test_the_stale_warning_says_what_was_loaded_or_collected_after_the_run():
    at = pd.Timestamp("2026-12-04 20:00:59")
    rows = [("responses", "collect:col-1", "collect", "router-a", at), ("worlds", "late.jsonl", "jsonl", None, at),
            ("responses", "collect:col-2", "collect", "router-b", at + pd.Timedelta(minutes=2)),
            ("responses", "collect:col-3", "collect", "router-a", at + pd.Timedelta(minutes=3)),
            ("refusal", "refusals.jsonl", "jsonl", "router-a", at)]
    changes = pd.DataFrame(rows, columns=["kind", "file_name", "file_format", "model", "finished_at"])
    assert change_phrases(changes) == [
        "native responses of router-a and router-b collected (last 2026-12-04 20:03 UTC)",
        "worlds loaded from late.jsonl (2026-12-04 20:00 UTC)",
        "refusal responses of router-a loaded from refusals.jsonl (2026-12-04 20:00 UTC)"]
    many = pd.concat([changes, changes.assign(file_name="more.jsonl", file_format="jsonl")])
    warned = stale_warning("run-x", many)
    assert warned.startswith("The dataset changed after run run-x since it started: native responses of router-a "
                             "and router-b collected") and warned.count("loaded from") == 2
    assert "and 3 more changes. Its numbers describe the data as it was then." in warned
    assert change_phrases(changes.iloc[0:0]) == [] and "were added or replaced" in stale_warning("run-x", changes.iloc[0:0])


def test_options_follow_noninferiority_and_name_the_models_left_out():
    ni = {("a", "selective"): True, ("b", "selective"): False, ("a", "clarification"): True,
          ("b", "clarification"): False, ("a", "asymmetric"): False, ("b", "asymmetric"): False}
    said = options(_run({}, REC, _utility(ni)))
    assert said[0] == ("In selective routing and one-step clarification, releasing the choice alone costs the "
                       "recipient at most 0.1 cost units a case more than the full output (the margin; measured: +0.050 "
                       "a case) for a (not for b), and it lowers what an attacker recovers (full output: 80.0% [75.0, 85.0] "
                       "of test worlds; choice alone: 50.0% [47.0, 53.0]).")
    assert said[1] == ("In asymmetric-cost routing, withholding the probabilities and the confidence costs the "
                       "recipient +0.400 a case more for both models (the paired 95% interval above the 0.1 margin): "
                       "there the full output is what the recipient uses, and a defense that keeps its decisions is "
                       "the option.")
    # recovery lowered only where the paired interval of full output minus choice clears 0
    diff = pd.DataFrame([{"model": "a", "view_a": "full_native", "view_b": "choice", "difference": 0.3,
                          "ci_low": -0.02, "ci_high": 0.6}])
    run = _run({}, REC, _utility(ni))
    run.recovery_diff = diff
    assert options(run)[0].endswith("for a (not for b), with no clear change in what an attacker recovers (the paired "
                                    "95% intervals include no change).")
    # b's choice alone is above chance (its interval clears 50%): said; a's is not
    assert said[2] == ("Even the choice alone lets an attacker recover the protected mechanism above chance for b "
                       "(58.0% [54.0, 62.0]): any release of its decisions leaks somewhat.")


def test_an_extra_cost_whose_interval_includes_the_margin_is_no_advice():
    """A walk-through read "there the full output is what the recipient uses" beside +0.052 [-0.271, +0.417]."""
    ni = {("a", "selective"): False, ("b", "selective"): False, ("a", "asymmetric"): False,
          ("b", "asymmetric"): False}
    said = options(_run({}, REC, _utility(ni, unclear=(("a", "selective"), ("b", "selective"), ("b", "asymmetric")))))
    assert said[0] == ("In selective routing, the run cannot tell whether the choice alone costs more than the 0.1 "
                       "margin for both models (measured +0.200 a case; no paired 95% interval lies wholly above "
                       "the margin): more test worlds would decide it.")
    assert said[1] == ("In asymmetric-cost routing, withholding the probabilities and the confidence costs the "
                       "recipient +0.400 a case more for a (the paired 95% interval above the 0.1 margin): there the "
                       "full output is what the recipient uses, and a defense that keeps its decisions is the option; "
                       "for b, the run cannot tell whether the choice alone costs more than the 0.1 margin (measured "
                       "+0.200 [-0.100, +0.500] a case): more test worlds would decide it.")


def test_options_on_wcpq_and_a_leak_through_failures():
    wcpq = pd.DataFrame([{"model": m, "defense": "wcpq", "diff_vs_native": dv, "plan_agreement": 5184,
                          "plan_comparisons": 5184, "max_abs_cost_diff": 0.0, "coverage": cov, "diff_ci_low": lo,
                          "diff_ci_high": hi}       # b's paired interval includes no change
                         for m, dv, cov, lo, hi in (("a", -0.12, 1.0, -0.17, -0.07), ("b", -0.06, 0.969, -0.13, 0.01))])
    failing = REC.copy()
    failing.loc[(failing["model"] == "b") & (failing["view"].isin(["no_output", "choice"])),
                ["accuracy", "ci_low", "ci_high"]] = (0.72, 0.63, 0.81)
    said = options(_run({}, failing, defenses=wcpq))
    assert said[0] == ("Where the full output must be released, the workflow-constrained quantizer (WCPQ) keeps every "
                       "recipient decision and cost exactly (it covers 96.9% to 100.0% of the responses; the responses "
                       "it cannot cover go out unchanged), and lowers recovery by 12.0 points (95% interval 7.0 to 17.0) "
                       "for a; recovery shows no clear change for b (the paired 95% interval includes no change).")
    # b leaks through whether it answers: said once, as that (not again as a leak of its choice)
    assert said[1:] == ["Which cases b fails to answer gives the mechanism away (72.0% [63.0, 81.0] from whether an answer came at "
                        "all, and so from every release): the failures need fixing before any release of its decisions "
                        "is private."]
    broken = wcpq.assign(plan_agreement=5000)
    assert "did not keep every recipient decision" in options(_run({}, REC, defenses=broken))[0]
    assert options(_run({}, REC.iloc[0:0])) == []
    assert options_note(_run({}, REC)).endswith("Costs are in the task's cost units: a wrong route 10, trusted review "
                                                "2, one check 0.4.")


def test_a_recovery_of_exactly_half_in_every_resample_is_explained_not_bracketed():
    """A board review read "50.0% [50.0, 50.0]" in the report's headline: an interval of zero width needs its reason."""
    from qlb.present.report import headline
    half = REC.copy()
    half.loc[half["view"] == "choice", ["accuracy", "ci_low", "ci_high"]] = (0.5, 0.5, 0.5)
    said = dict(headline(_run({}, half)))["recovery"]
    assert ("seeing only the coarse choice, in exactly 50.0% of test worlds (one world of every pair right, in every "
            "resample: what it sees is the same for a pair's two worlds); seeing the full native output, in 70.0% "
            "[65.0, 75.0] (b) to 80.0% [75.0, 85.0] (a)") in said and "[50.0, 50.0]" not in said
    near = dict(headline(_run({}, REC)))["recovery"]               # 50.0% [47.0, 53.0]: an interval, said as such
    assert "exactly" not in near and "50.0% [47.0, 53.0] (a)" in near
    ni = _utility({("a", "selective"): True, ("b", "selective"): False})
    diff = pd.DataFrame([{"model": "a", "view_a": "full_native", "view_b": "choice", "ci_low": 0.2}])
    run = _run({}, half, ni)
    run.recovery_diff = diff
    assert "(full output: 80.0% [75.0, 85.0] of test worlds; choice alone: exactly 50.0%)" in options(run)[0]
    wcpq = pd.DataFrame([{"model": "a", "defense": "wcpq", "diff_vs_native": -0.05, "plan_agreement": 9,
                          "plan_comparisons": 9, "max_abs_cost_diff": 0.0, "coverage": 1.0, "diff_ci_low": -0.14,
                          "diff_ci_high": 0.02}])
    assert options(_run({}, REC, defenses=wcpq))[0].endswith(
        "(it covers 100.0% of the responses), but recovery shows no clear change for a (the paired 95% interval "
        "includes no change).")


def test_answers_of_models_a_run_did_not_audit_leave_its_numbers_standing():
    """An auditor who collects a new model's answers after auditing two others: the older run's numbers still describe
    those two (a yellow note naming what is new), where worlds or an audited model's answers make them stale (red)."""
    from qlb.present.scope import audited_models, stale_matters
    t0 = pd.Timestamp("2026-12-04 20:00")
    ingests = pd.DataFrame([("worlds", "w.jsonl", "jsonl", None, t0 - pd.Timedelta(hours=1)),
                            ("responses", "collect:c1", "collect", "a", t0 - pd.Timedelta(minutes=30)),
                            ("responses", "collect:c2", "collect", "b", t0 - pd.Timedelta(minutes=20)),
                            ("responses", "collect:c3", "collect", "c", t0 + pd.Timedelta(minutes=5))],
                           columns=["kind", "file_name", "file_format", "model", "finished_at"])
    read, new = ingests.iloc[:3], ingests.iloc[3:]                 # as warehouse.results.run_ingests splits them
    audited = audited_models({}, read)                               # every model whose answers the run read
    assert audited == {"a", "b"} and audited_models({"models": ["a"]}, read) == {"a"}
    assert list(new["model"]) == ["c"] and not stale_matters(new, audited)
    assert stale_warning("run-x", new, audited).endswith(
        "None of these are answers of the models this run audited, so its numbers still describe them; run qlb audit "
        "again to include the new ones.")
    assert stale_matters(new, frozenset({"c"})) and stale_matters(new.assign(model=None), audited)   # worlds: stale
    assert "before relying on them" in stale_warning("run-x", new, frozenset({"c"}))


def test_a_run_of_all_models_then_says_how_many_it_audited_after_a_new_model_came():
    """A walk-through's run of 'all' models read 'audited all 5 models' once a fifth was collected after it."""
    d = _run({}, REC, models=("a", "b", "late"))
    assert scope_sentence(d).startswith("This run audited 2 of the dataset's 3 models (a and b) on 288 test worlds")


def test_a_corpus_only_run_is_scoped_as_detectors_scored_not_as_no_model_audited():
    """A detector team's dataset (a QuasiLeak corpus, no worlds) read "This run audited no decision model. Not
    run: refusal, recovery, utility and defenses."."""
    ql = pd.DataFrame([{"detector": det, "split": "test", "slice_kind": "all", "slice": "all", "metric": metric,
                        "value": value, "ci_low": value, "ci_high": value, "simulated": det.startswith("sim-")}
                       for det in ("acme", "pattern-pii", "sim-det-strong")
                       for metric, value in (("complete_f1", 0.4), ("targets", 100.0))])
    d = _run({"audits": ["quasileak"]}, EMPTY, models=())
    d.ql = ql
    d.dataset = pd.Series({"dataset_id": "court", "simulated": False, "worlds": 0, "documents": 144})
    assert scope_sentence(d) == (
        "This run scored 3 privacy detectors on the QuasiLeak corpus's test split (100 target groups: sets of weak "
        "cues that together reveal an attribute the policy hides); sim-det-strong is simulated from the answer key: "
        "an upper reference, not a detector one could run. The dataset holds no decision task (no worlds), so the "
        "audits of a model's decision outputs (refusal, recovery, utility, defenses) do not apply to it.")
