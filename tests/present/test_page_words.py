"""Words of the Data and Collection pages, tested without Streamlit (a privacy board's review): plain names for
the kinds of file and TUPLE said once, an own ontology's notes in an auditor's terms, singular counts, and the
replaced answers and invalid responses shaped to be read whole on a 1,024 px screen."""
import pandas as pd

from dashboard.quarantine import (KIND_HELP, invalid_by_source, lines, ontology_note, ontology_notes_title,
                                  tuple_sentence)
from dashboard.replaced_answers import replaced_by_reason, replaced_sentence
from qlb.records.ontology import load_ontology, parse_ontology
from tests.records.ontologies import LENDING_PATH, as_text


def test_the_kinds_of_file_are_named_in_plain_words_and_tuple_is_explained_where_a_dataset_uses_it():
    assert not any("TUPLE" in text for text in KIND_HELP.values())          # an own task reads no foreign name
    assert KIND_HELP["worlds"].startswith("Decision cases (worlds), one per line")
    said = tuple_sentence([d.title for d in load_ontology().domains.values()])
    assert said == ("TUPLE is qlb's built-in decision task, the one of the benchmark's paper: 3 domains (delivery "
                    "operations, equipment service and IT operations), each with the decision classes a model may "
                    "release and the protected causes (mechanisms) behind them")


def test_an_ontology_note_says_what_it_means_for_the_audit():
    """The Data page showed "cost_profiles.removal_errors_x3: class 'REMOVE' is not a class of domain 'ad_review';
    there the profile scales no asymmetric column" as an info box."""
    note = ("modroute_ontology.json: cost_profiles.removal_errors_x3: class 'REMOVE' is not a class of domain "
            "'ad_review'; there the profile scales no asymmetric column")
    said = ontology_note(note)
    assert said.startswith("The cost profile removal_errors_x3 scales the cost of mistakes whose true class is "
                           "REMOVE, but domain ad_review has no class REMOVE: ")
    assert "cost figures for ad_review match the authored costs" in said
    assert "cost_profiles." not in said and "asymmetric column" not in said and "modroute_ontology" not in said
    two = ontology_note("f.json: cost_profiles.p: class 'X' is not a class of domain 'a', 'b'; there the profile "
                        "scales no asymmetric column")
    assert "domains a, b have no class X" in two
    assert ontology_note("f.json: something else: kept") == "something else: kept"
    assert ontology_notes_title(1) == "Notes on your ontology (1 note): what they mean for your cost figures"


def test_the_notes_the_ontology_parser_writes_are_all_worded_for_an_auditor():
    """Every note form ``qlb.records.ontology`` writes today is reworded (none keeps its dotted path)."""
    import json
    onto = json.loads(LENDING_PATH.read_text("utf-8"))                   # two domains with classes of their own
    first, other = "small_business", "consumer_loans"
    cls = "COUNTER_OFFER"                                                  # a class of small_business only
    assert cls in onto["domains"][first]["classes"] and cls not in onto["domains"][other]["classes"]
    onto["cost_profiles"] = {"authored": {}, "mine_x3": {"asymmetric_column_class": cls, "asymmetric_column_x": 3.0},
                             "review_half": {"review_x": 0.25}}            # TUPLE's name, other multipliers
    notes = parse_ontology(as_text(onto), "mine.json").notes
    assert len(notes) == 2, notes
    worded = [ontology_note(n) for n in notes]
    assert not any("cost_profiles." in w or "mine.json" in w for w in worded), worded
    assert any(f"but domain {other} has no class {cls}" in w for w in worded), worded
    assert any("TUPLE's profiles" in w for w in worded)


def test_counts_of_lines_are_singular_for_one():
    assert lines(1, "rejected line") == "1 rejected line"
    assert lines(2000, "rejected line") == "2,000 rejected lines"
    assert lines(1) == "1 line" and lines(0) == "0 lines"


def test_invalid_responses_are_counted_per_model_and_source_with_whole_names():
    shown = pd.DataFrame({"model": ["modrouter-http", "modrouter-http-v2", "modrouter-http-v2", "m"],
                          "source": ["collected (col-1)", "collected (col-2)", "collected (col-2)",
                                     "line 3 of answers.jsonl"]})
    out = invalid_by_source(shown)
    assert out.values.tolist() == [["m", "answers.jsonl", 1], ["modrouter-http", "collected (col-1)", 1],
                                   ["modrouter-http-v2", "collected (col-2)", 2]]


def replaced(n_json: int, n_nrf: int) -> pd.DataFrame:
    rows = ([{"model": "router-json", "probe": "native", "world_id": f"w{i}", "outcome": "invalid", "choice": "",
              "reason": "the answer is not valid JSON", "replaced (UTC)": "", "replaced by run": "col-b"}
             for i in range(n_json)]
            + [{"model": "router-nrf", "probe": "native", "world_id": f"v{i}", "outcome": "unavailable", "choice": "",
                "reason": "HTTP 401 Unauthorized", "replaced (UTC)": "", "replaced by run": "col-a"}
               for i in range(n_nrf)])
    return pd.DataFrame(rows)


def test_replaced_answers_are_said_per_run_and_counted_per_reason():
    table = replaced(3, 1)
    assert replaced_sentence(table) == (
        "4 earlier answers of this dataset were replaced by qlb collect --replace-invalid, which asks again the "
        "worlds whose stored answer is not valid; the audits use the replacement: 3 of router-json by run col-b; 1 "
        "of router-nrf by run col-a.")
    by = replaced_by_reason(table)
    assert list(by.columns) == ["outcome", "reason", "answers"]
    assert by.values.tolist() == [["invalid", "the answer is not valid JSON", 3],
                                  ["unavailable", "HTTP 401 Unauthorized", 1]]
    assert replaced_sentence(replaced(0, 1)).startswith("1 earlier answer of this dataset was replaced")
    many = pd.concat([replaced(1, 0).assign(**{"replaced by run": f"col-{i}"}) for i in range(6)], ignore_index=True)
    assert replaced_sentence(many).endswith("; 2 more by 2 other runs.")
