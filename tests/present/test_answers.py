"""The answers an audit read, as the report and the Overview say them: where they came from, how many are valid,
and the finding when the answer's status alone reveals the mechanism."""
import json

import pandas as pd

from qlb.present.answers import (answer_source, answers_finding, answers_sentence, answers_table,
                                  missing_fields_sentence, status_sentence)

COLLECTED = dict(simulated=False, transport="openai", endpoint="http://host:8000/v1/chat/completions",
                 endpoint_model="router", settings=json.dumps({"answer": "letters"}), worlds=288)
FILE = dict(simulated=False, transport=None, endpoint=None, endpoint_model=None, settings=None,
            started_at=pd.NaT, finished_at=pd.NaT, worlds=10)


def rows(*items: dict) -> pd.DataFrame:
    return pd.DataFrame(list(items))


def test_collected_runs_of_one_setting_are_one_source_with_their_period():
    answers = rows(
        {"model": "m", "probe": "native", "file_name": "collect:col-1", **COLLECTED, "answers": 200, "valid": 150,
         "invalid": 40, "unavailable": 10, "started_at": pd.Timestamp("2026-12-04 19:52:10"),
         "finished_at": pd.Timestamp("2026-12-04 19:55:59")},
        {"model": "m", "probe": "native", "file_name": "collect:col-2", **COLLECTED, "answers": 88, "valid": 88,
         "invalid": 0, "unavailable": 0, "started_at": pd.Timestamp("2026-12-04 20:00:00"),
         "finished_at": pd.Timestamp("2026-12-04 20:01:30")},
        {"model": "m", "probe": "refusal", "file_name": "my_refusal.csv", **FILE, "answers": 288, "valid": 280,
         "invalid": 0, "unavailable": 8})
    table = answers_table(answers)
    assert table.to_dict("records") == [
        {"model": "m", "question": "decision", "answers": 288, "valid": 238, "invalid (kept)": 40, "unavailable": 10,
         "no answer": 0, "from": "qlb collect (openai, letter answers with log-probabilities) from http://host:8000/v1/chat/completions "
                 "as router; 2 runs, 2026-12-04 19:52 to 20:01 UTC"},
        {"model": "m", "question": "refusal probe", "answers": 288, "valid": 280, "invalid (kept)": 0,
         "unavailable": 8, "no answer": 0, "from": "qlb ingest of my_refusal.csv"}]
    # 238 of 288 = 82.6%; the 50 others are said with what the benchmark does with them
    assert answers_sentence(answers.assign(worlds=288)) == (
        "238 of the dataset's 288 worlds have a valid decision answer from m (82.6%); 40 invalid, 10 unavailable; "
        "the others enter every audit as unavailable (no prediction field released; an invalid answer is kept, never "
        "repaired), so every world stays in every figure's denominator.")
    # a share that is not all never reads 100.0%
    assert "(99.9%); 1 invalid" in answers_sentence(answers.assign(worlds=288, valid=[2499, 0, 280], answers=[
        2500, 0, 288], invalid=[1, 0, 0], unavailable=[0, 0, 8]).assign(worlds=2500))


def test_a_simulated_model_says_so_and_all_valid_models_say_it_once():
    sim = rows({"model": "sim-a", "probe": "native", "file_name": "native.jsonl", **(FILE | {"simulated": True}),
                "answers": 10, "valid": 10, "invalid": 0, "unavailable": 0},
               {"model": "sim-b", "probe": "native", "file_name": "native.jsonl", **(FILE | {"simulated": True}),
                "answers": 10, "valid": 10, "invalid": 0, "unavailable": 0})
    assert answer_source(sim[sim["model"] == "sim-a"]) == "simulated by qlb (qlb ingest of native.jsonl)"
    assert answers_sentence(sim) == "Every world of the dataset has a valid decision answer from each of the 2 models."
    sim.loc[1, ["valid", "invalid"]] = [9, 1]
    assert answers_sentence(sim).startswith("90.0% (sim-b) to 100.0% (sim-a) of the dataset's worlds have a valid "
                                            "decision answer from each model")
    sim.loc[0, ["valid", "invalid"]] = [9, 1]                  # the same share for both: said once, no model named
    assert answers_sentence(sim).startswith("90.0% of the dataset's worlds have a valid decision answer from each "
                                            "model; the others")
    assert answers_sentence(sim.iloc[:0]) is None


def test_the_status_finding_appears_only_when_no_output_is_above_50_percent():
    pooled = pd.DataFrame({"model": ["a", "b", "a"], "view": ["no_output", "no_output", "choice"],
                           "accuracy": [0.5, 0.717, 0.8], "ci_low": [0.5, 0.633, 0.7], "ci_high": [0.5, 0.817, 0.9]})
    text = status_sentence(pooled)
    assert text.startswith("Whether a model answers at all reveals the mechanism: releasing nothing but the answer's "
                           "status (a valid answer or none), an attacker recovers it in 71.7% [63.3, 81.7] (b) of test "
                           "worlds, above 50% for 1 of 2 models.")
    assert status_sentence(pooled.assign(ci_low=[0.5, 0.49, 0.7])) is None        # an interval reaching 50%: no finding
    assert status_sentence(pooled[pooled["view"] == "choice"]) is None


def test_models_whose_answers_never_carry_a_field_are_named_with_what_that_does_to_their_views():
    answers = rows(
        {"model": "letters", "probe": "native", "file_name": "a", **FILE, "answers": 10, "valid": 10, "invalid": 0,
         "unavailable": 0, "with_probabilities": 10, "with_confidence": 0},
        {"model": "nolp", "probe": "native", "file_name": "b", **FILE, "answers": 10, "valid": 10, "invalid": 0,
         "unavailable": 0, "with_probabilities": 0, "with_confidence": 0},
        {"model": "full", "probe": "native", "file_name": "c", **FILE, "answers": 10, "valid": 10, "invalid": 0,
         "unavailable": 0, "with_probabilities": 1, "with_confidence": 1})
    assert missing_fields_sentence(answers) == (
        "no valid answer of letters or nolp carries a confidence, so for them choice + confidence releases what the "
        "choice does; no valid answer of nolp carries class probabilities, so for it full probabilities releases what "
        "the choice does.")
    assert answers_finding(answers).startswith("Every world of the dataset has a valid decision answer from each of "
                                               "the 3 models. No valid answer of letters or nolp carries a "
                                               "confidence, so for them")
    assert missing_fields_sentence(answers[answers["model"] == "full"]) is None


def test_the_collection_summary_names_a_few_models_and_sums_many_per_probe():
    from qlb.present.answers import collection_summary
    one = pd.DataFrame([{"probe": "native", "model": "m1", "runs": 1, "stored": 1, "valid": 0, "invalid": 0,
                         "unavailable": 1, "stopped_runs": 0}])
    assert collection_summary(1, one, "44 ms", 1) == (
        "1 collection run for this dataset: 1 native answer from m1 (0 valid, 0 invalid, 1 unavailable), median "
        "latency 44 ms. Counted: every answer stored across all collection runs, including 1 earlier answer "
        "replaced by a later run (--replace-invalid).")
    many = pd.DataFrame([{"probe": p, "model": f"m{i}", "runs": 1, "stored": 10, "valid": 8, "invalid": 1,
                          "unavailable": 1, "stopped_runs": i % 2} for i in range(5) for p in ("native", "refusal")
                         if p == "native" or i < 2])
    assert collection_summary(9, many) == (
        "9 collection runs for this dataset: 50 native answers from 5 models (40 valid, 5 invalid, 5 unavailable); "
        "20 refusal answers from 2 models (16 valid, 2 invalid, 2 unavailable); 3 runs stopped early. Counted: every "
        "answer stored across all collection runs. Each model's runs are in the table below.")


def test_the_collection_summary_counts_only_models_with_answers_and_reconciles_with_the_current_answers():
    """Privacy-board review: "2,210 native answers from 20 models (..., 198 invalid, ...)" where the Data page said
    82 invalid responses: the sum held 126 answers later replaced and a model whose runs stored nothing."""
    from qlb.present.answers import collection_summary, current_collected
    totals = pd.DataFrame([
        {"probe": "native", "model": "a", "runs": 3, "stored": 404, "valid": 288, "invalid": 116, "unavailable": 0,
         "stopped_runs": 1},
        {"probe": "native", "model": "b", "runs": 1, "stored": 288, "valid": 216, "invalid": 72, "unavailable": 0,
         "stopped_runs": 0},
        {"probe": "native", "model": "c", "runs": 3, "stored": 30, "valid": 20, "invalid": 0, "unavailable": 10,
         "stopped_runs": 0},
        {"probe": "native", "model": "d", "runs": 1, "stored": 60, "valid": 50, "invalid": 10, "unavailable": 0,
         "stopped_runs": 2},
        {"probe": "native", "model": "silent", "runs": 2, "stored": 0, "valid": 0, "invalid": 0, "unavailable": 0,
         "stopped_runs": 2}])
    current = rows(   # answer_sources: a's 116 invalid and c's 10 unavailable were replaced; one file is not collected
        {"model": "a", "probe": "native", **COLLECTED, "answers": 288, "valid": 288, "invalid": 0, "unavailable": 0},
        {"model": "b", "probe": "native", **COLLECTED, "answers": 288, "valid": 216, "invalid": 72, "unavailable": 0},
        {"model": "c", "probe": "native", **COLLECTED, "answers": 20, "valid": 20, "invalid": 0, "unavailable": 0},
        {"model": "d", "probe": "native", **COLLECTED, "answers": 60, "valid": 50, "invalid": 10, "unavailable": 0},
        {"model": "e", "probe": "native", "file_name": "e.jsonl", **FILE, "answers": 10, "valid": 1, "invalid": 9,
         "unavailable": 0})
    assert current_collected(current).loc["native"].tolist() == [656, 574, 82, 0]
    text = collection_summary(10, totals, "44 ms", 126, current)
    assert text.startswith("10 collection runs for this dataset: 782 native answers from 4 models (574 valid, "
                           "198 invalid, 10 unavailable), median latency 44 ms; 5 runs stopped early. 2 runs of "
                           "silent stored no answer, so that model is not counted. ")
    assert ("Counted: every answer stored across all collection runs, including 126 earlier answers replaced by a "
            "later run (--replace-invalid). The current answers, which the audits read and the Data page lists: "
            "656 native (574 valid, 82 invalid, 0 unavailable).") in text
    assert "5 models" not in text and "from 5" not in text


def test_the_runs_note_says_how_many_stopped_early():
    from qlb.present.answers import runs_note
    assert runs_note(37, 11) == ("37 runs, newest first; the table scrolls. 11 of them stopped early (yes under "
                                 "stopped early); the picker below opens on the newest of them, and the switch "
                                 "lists only them.")
    assert runs_note(2, 0) == "2 runs, newest first. None stopped early."
    assert "the newest of it," in runs_note(1, 1) and "1 run," in runs_note(1, 1)


def test_a_shell_command_keeps_each_option_with_its_value_and_pastes_as_the_same_command():
    """At 1,024 px the code blocks broke "--" from "warehouse" and an option from its value."""
    import shlex
    from qlb.present.answers import shell_command
    args = ["qlb", "collect", "native", "--dataset", "my audit", "--warehouse", "/tmp/a b/qlb.duckdb", "--limit",
            "5", "--show-request"]
    text = shell_command(args)
    assert text.splitlines() == ["qlb collect native \\", "  --dataset 'my audit' \\",
                                 "  --warehouse '/tmp/a b/qlb.duckdb' \\", "  --limit 5 \\", "  --show-request"]
    assert shlex.split(text.replace("\\\n", " ")) == args
