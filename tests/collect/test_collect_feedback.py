"""What `qlb collect` tells its user (a new auditor's walk-through): why answers are invalid and
the exit code when none is valid, what "skipped" counts, how --target is written, where a
target's exception was raised, an answer filed under another question, --show-request without
an importable model, and a mistyped --dataset."""
from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys

import pytest

from qlb.collect.answers import AnswerError, typed_answer
from qlb.collect.transports import stop_causes
from qlb.cli import main
from tests.collect import targets
from tests.collect.stubs import StubServer, native_answer, ok, typed
from tests.collect.test_collect import collect, rows, stored, wh, world_ids  # noqa: F401 (wh: fixture)
from tests.conftest import ROOT

SUM_REASON = "probabilities sum to 1.5, outside 1 +- 0.001"


def python(path, target: str, *extra: str, model: str = "m1") -> int:
    """`qlb collect native` of ``model`` through a python target."""
    return collect(path, "native", "--model", model, "--transport", "python", "--target", target, *extra)


def line_of(function, text: str) -> int:
    """The line number of ``text`` inside ``function``'s source."""
    source, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(source) if text in line)


# ----------------------------------------------------------------------- invalid answers

def test_no_valid_answer_prints_the_reasons_and_warns_but_the_collection_is_done(wh, capsys):  # noqa: F811
    """COLLECT.md: a collection that ran to its end exits 0 (a pipeline goes on); a warning says none is valid."""
    first = world_ids()[:3]
    assert python(wh, "tests.collect.targets:sums_to_one_and_a_half", "--limit", "3") == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].startswith("native answers of 'm1' in dataset 'ds': 3 stored (0 valid, 3 invalid, 0 unavailable)")
    assert lines[1] == "  why 3 answers are not valid, most frequent first:"
    assert lines[2] == f"       3  invalid: {SUM_REASON} (e.g. world {first[0]})"
    assert "warning: none of the 3 answers stored is valid (3 invalid, 0 unavailable" in err
    assert "--replace-invalid" in err

    assert python(wh, "tests.collect.targets:sums_to_one_and_a_half", "--limit", "2", "--json", model="m2") == 0
    out, err = capsys.readouterr()
    summary = json.loads(out)                                   # stdout is the JSON document alone
    assert summary["reasons"] == [{"outcome": "invalid", "reason": SUM_REASON, "count": 2,
                                   "example_world": first[0]}]
    assert "warning: none of the 2 answers stored is valid" in err


def test_some_valid_answers_exit_0_with_the_reasons_most_frequent_first(wh, capsys):  # noqa: F811
    def respond(path, body, headers, n):
        if n in (1, 2, 3):
            return ok(native_answer(body, choice="APPROVE"))             # not a candidate
        if n == 4:
            return ok({"error": "gone"}, status=404)
        return typed(body)
    with StubServer(respond) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url, "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    ids = world_ids()
    assert [(r["outcome"], r["count"], r["example_world"]) for r in summary["reasons"]] == [
        ("invalid", 3, ids[0]), ("unavailable", 1, ids[3])]
    assert summary["reasons"][0]["reason"].startswith("choice 'APPROVE' is not a candidate")
    assert summary["reasons"][1]["reason"] == "HTTP 404 Not Found: gone"         # the server's own words


def test_the_text_summary_lists_five_reasons_and_counts_the_rest(wh, capsys):  # noqa: F811
    def respond(path, body, headers, n):
        return ok(native_answer(body, choice=f"NOT_{min(n, 7)}")) if n <= 8 else typed(body)   # 7 reasons
    with StubServer(respond) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "  why 8 answers are not valid, most frequent first:"
    assert lines[2].startswith("       2  invalid: choice 'NOT_7' is not a candidate")     # the most frequent first
    assert [line.split("'")[1] for line in lines[3:7]] == ["NOT_1", "NOT_2", "NOT_3", "NOT_4"]   # then as first seen
    assert lines[7:] == ["       2  with 2 other reasons (every reason: the Collection page)"]


# ------------------------------------------------------------------- what "skipped" counts

def test_replace_invalid_with_a_limit_skips_only_the_answered_worlds(wh, capsys):  # noqa: F811
    """A model with 3 invalid answers and nothing else: --replace-invalid --limit 2 asks 2 of the 3;
    the worlds it never answered are not "already answered", nor is the one --limit left."""
    n = len(world_ids())
    assert python(wh, "tests.collect.targets:sums_to_one_and_a_half", "--limit", "3") == 0
    capsys.readouterr()
    assert python(wh, "tests.collect.targets:answer", "--limit", "2", "--replace-invalid", "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["stored"], summary["valid"]) == (2, 2)
    assert summary["skipped_existing"] == 0
    assert summary["skipped_unanswered"] == n - 3 and summary["left_for_later"] == 1
    # the Collection page's "skipped" column shows the stored count
    assert rows(wh, "SELECT skipped_existing FROM collections WHERE collection_id = ?",
                [summary["collection_id"]]) == [(0,)]

    assert python(wh, "tests.collect.targets:answer", "--replace-invalid") == 0    # the last invalid one
    out = capsys.readouterr().out
    assert f"; 2 worlds skipped (already answered); {n - 3} worlds without a stored answer not asked " in out
    assert "left for a later run" not in out

    assert python(wh, "tests.collect.targets:answer", "--limit", "4", "--json") == 0    # no --replace-invalid
    summary = json.loads(capsys.readouterr().out)
    assert (summary["skipped_existing"], summary["skipped_unanswered"], summary["left_for_later"]) == (3, 0, n - 7)


# --------------------------------------------------------------------------------- --target

def test_a_target_given_as_a_file_path_works_and_a_missing_one_says_the_module_form(  # noqa: F811
        wh, tmp_path, monkeypatch, capsys):
    folder = tmp_path / "mine"
    (folder / "models").mkdir(parents=True)
    (folder / "file_form_model.py").write_text("from tests.collect.targets import answer as decide\n")
    (folder / "models" / "nested_file_model.py").write_text("from tests.collect.targets import answer as decide\n")
    monkeypatch.chdir(folder)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(folder))] + [str(ROOT)])
    assert python(wh, "./file_form_model.py:decide", "--limit", "2") == 0
    assert python(wh, "file_form_model.py:decide", "--limit", "2", model="m2") == 0
    assert python(wh, "models/nested_file_model.py:decide", "--limit", "2", model="m3") == 0
    assert python(wh, str(folder / "file_form_model.py") + ":decide", "--limit", "2", model="m4") == 0
    assert all(len(stored(wh, model=m)) == 2 for m in ("m1", "m2", "m3", "m4"))
    capsys.readouterr()
    for target, module_form in (("./missing_model.py:decide", "`missing_model:decide`"),
                                ("missing_model.py:decide", "`missing_model:decide`"),
                                ("models/missing_model.py:decide", "`models.missing_model:decide`")):
        assert python(wh, target, model="m5") == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Error:" not in err and "relative import" not in err
        assert f"use a module name importable from the current folder (here {module_form})" in err


def test_a_raising_target_names_the_file_line_and_function_of_the_users_code(wh, capsys):  # noqa: F811
    here = os.path.relpath(inspect.getsourcefile(targets))
    assert python(wh, "tests.collect.targets:raises_in_a_helper") == 4
    err = capsys.readouterr().err
    at = line_of(targets._load_weights, "raise FileNotFoundError")
    assert (f"stopped: the target raised FileNotFoundError: no weights at /nowhere/weights.bin, at {here}:{at}, "
            f"in _load_weights (world {world_ids()[0]})") in err
    assert "; fix the model, then resume with: qlb collect native" in err
    # raised inside the standard library: the frame named is the target's own line, not json's
    assert python(wh, "tests.collect.targets:raises_in_the_standard_library", model="m2") == 4
    err = capsys.readouterr().err
    at = line_of(targets.raises_in_the_standard_library, "return json.loads")
    assert f"the target raised JSONDecodeError: Expecting value: line 1 column 1 (char 0), at {here}:{at}, " \
           "in raises_in_the_standard_library" in err
    # an HTTP stop is not the model's fault: only the resume command
    with StubServer(lambda p, b, h, n: ok({}, status=503)) as stub:
        assert collect(wh, "native", "--model", "m3", "--transport", "typed", "--base-url", stub.url) == 4
    err = capsys.readouterr().err
    assert "HTTP 503" in err and "; resume with: qlb collect" in err and "fix the model" not in err
    # the Collection page says what a stop is per transport
    assert "raised an exception" in stop_causes("python") and "HTTP" not in stop_causes("python")
    assert stop_causes("typed") == stop_causes("openai") == "an HTTP 408/429/5xx, a timeout or a connection error"


def test_verbose_after_the_command_logs_the_targets_whole_traceback(wh):  # noqa: F811
    """`-v` after the command (it used to be refused there) shows the full traceback of a target
    that raised."""
    done = subprocess.run([sys.executable, "-m", "qlb", "collect", "native", "--dataset", "ds", "--model", "m1",
                           "--transport", "python", "--target", "tests.collect.targets:raises_in_a_helper",
                           "--warehouse", str(wh), "-v"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 4, done.stderr
    tb = done.stderr[done.stderr.index("Traceback (most recent call last)"):]
    assert 'in raises_in_a_helper\n    _load_weights("/nowhere/weights.bin")' in tb
    assert "in _load_weights" in tb and "FileNotFoundError: no weights at /nowhere/weights.bin" in tb
    assert "stopped: the target raised FileNotFoundError" in done.stderr


# ------------------------------------------------------------------ an answer misfiled

def test_an_answer_under_another_question_key_is_invalid_saying_which_key(wh, capsys):  # noqa: F811
    assert python(wh, "tests.collect.targets:under_another_question", "--limit", "2") == 0
    reasons = {v[3] for v in stored(wh).values()}
    assert reasons == {"no answer for question 'coarse_cause' under answers (got 'coarse'; expected "
                       "answers.coarse_cause, or choice at the top level)"}


def test_typed_answer_reads_the_question_key_or_the_top_level():
    body = {"choice": "A", "probabilities": {"A": 1.0}, "confidence": 1.0}
    assert typed_answer({"answers": {"coarse_cause": body}}, "coarse_cause", "native")["choice"] == "A"
    assert typed_answer(body, "coarse_cause", "native")["choice"] == "A"
    # the top-level answer is read when answers holds other questions only (COLLECT.md: "if absent")
    assert typed_answer({**body, "answers": {"other": {}}}, "coarse_cause", "native")["choice"] == "A"
    with pytest.raises(AnswerError, match=r"no answer for question 'coarse_cause' under answers \(got 'a', 'b';"):
        typed_answer({"answers": {"a": body, "b": body}}, "coarse_cause", "native")
    with pytest.raises(AnswerError, match=r"got a list, not an object keyed by question"):
        typed_answer({"answers": [body]}, "coarse_cause", "native")


# -------------------------------------------------------------------------- --show-request

def test_show_request_needs_no_importable_target_nor_the_key(wh, capsys, monkeypatch):  # noqa: F811
    monkeypatch.delenv("QLB_UNSET_KEY_FOR_TEST", raising=False)
    for extra in (["--target", "not_written_yet_model:decide"], [], ["--api-key-env", "QLB_UNSET_KEY_FOR_TEST"]):
        assert collect(wh, "native", "--model", "m1", "--transport", "python", *extra, "--show-request") == 0
        body = json.loads(capsys.readouterr().out)
        assert body["questions"][0]["key"] == "coarse_cause" and body["model"] == "m1"
    assert stored(wh) == {}
    assert python(wh, "not_written_yet_model:decide") == 2                  # asking still needs it
    assert "cannot import 'not_written_yet_model'" in capsys.readouterr().err


# ------------------------------------------------------------------------------- --dataset

def test_an_unknown_dataset_lists_the_datasets_there(wh, capsys):  # noqa: F811
    code = main(["collect", "native", "--dataset", "dss", "--model", "m1", "--transport", "python",
                 "--target", "tests.collect.targets:answer", "--warehouse", str(wh)])
    err = capsys.readouterr().err
    assert code == 2
    assert err == "qlb collect: error: no dataset 'dss' in the warehouse (have: ds); did you mean 'ds'?\n"


def test_a_rerun_with_replace_invalid_that_is_still_invalid_does_not_suggest_the_flag_again(wh, capsys):  # noqa: F811
    assert python(wh, "tests.collect.targets:sums_to_one_and_a_half", "--limit", "2") == 0
    capsys.readouterr()
    assert python(wh, "tests.collect.targets:sums_to_one_and_a_half", "--limit", "2", "--replace-invalid") == 0
    err = capsys.readouterr().err
    assert "warning: none of the 2 answers stored is valid" in err
    assert "ask these worlds again with the same command" in err and "by adding --replace-invalid" not in err


# ------------------------------------------------------ a refused key or URL on the first worlds

def test_a_wrong_key_on_the_first_five_worlds_stops_with_exit_4_and_keeps_those_answers(wh, capsys, monkeypatch):  # noqa: F811
    """Walk-through: a wrong key had every world asked and stored unavailable, exit 0. The first five
    answers all HTTP 401 stop the collection (exit 4); those asked stay stored unavailable (COLLECT.md),
    the summary still says what to do, and the stop says to ask them again with --replace-invalid."""
    monkeypatch.setenv("QLB_TEST_KEY", "wrong")
    with StubServer(lambda p, b, h, n: ok({"error": {"message": "invalid api key"}}, status=401)) as stub:
        code = collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url,
                       "--api-key-env", "QLB_TEST_KEY", "--json")
        asked = len(stub.requests)
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert code == 4
    assert 5 <= asked <= 6 < len(world_ids())               # the request in flight when it stopped, at most
    assert summary["stored"] == summary["unavailable"] == asked and summary["valid"] == 0
    assert summary["stopped"] == ("HTTP 401 on each of the first 5 worlds: the server refuses the key "
                                  "(check --api-key-env)")
    assert all(v[0] == "unavailable" for v in stored(wh).values()) and len(stored(wh)) == asked
    assert rows(wh, "SELECT stopped FROM collections") == [(summary["stopped"],)]
    stop_line = [line for line in err.splitlines() if "stopped:" in line]
    assert len(stop_line) == 1 and "--replace-invalid" in stop_line[0] and "resume with: qlb collect" in stop_line[0]
    assert "none of the" not in err                           # the stop line says it, once

    with StubServer(lambda p, b, h, n: ok({}, status=404)) as stub:      # the text summary keeps its advice
        assert collect(wh, "native", "--model", "m2", "--transport", "openai", "--endpoint-model", "e",
                       "--base-url", stub.url + "/v1") == 4
    out, err = capsys.readouterr()
    assert "what to do: check --base-url" in out
    assert f"stopped: HTTP 404 on each of the first 5 worlds: the server has nothing at {stub.url}/v1/chat/completions" \
        in err


@pytest.mark.parametrize("statuses", [[200, 401, 401, 401, 401, 401], [401, 401, 403, 401, 401, 401],
                                      [401, 401, 401, 401, 400, 401]])
def test_a_server_that_answered_anything_else_first_is_never_stopped_for_4xx(wh, capsys, statuses):  # noqa: F811
    """Once one of the first five answers is not the same 401/403/404, later refusals are the worlds' own."""
    def respond(path, body, headers, n):
        status = statuses[min(n, len(statuses)) - 1]
        return typed(body) if status == 200 else ok({"error": "no"}, status=status)
    with StubServer(respond) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url, "--json") == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["stopped"] is None and summary["stored"] == len(world_ids())


def test_the_first_five_refusals_received_stop_several_requests_in_flight(wh, capsys):  # noqa: F811
    """--concurrency: the first five answers received decide; the requests in flight are stored too."""
    with StubServer(lambda p, b, h, n: ok({"error": "no"}, status=403)) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url,
                       "--concurrency", "2", "--json") == 4
        asked = len(stub.requests)
    summary = json.loads(capsys.readouterr().out)
    assert summary["stopped"].startswith("HTTP 403 on each of the first 5 worlds: the server wants a key")
    assert 5 <= summary["stored"] == asked < len(world_ids())


def test_a_refused_model_stops_alone_among_several(wh, capsys):  # noqa: F811
    def respond(path, body, headers, n):
        return ok({"error": "no"}, status=401) if body["model"] == "m1" else typed(body)
    with StubServer(respond) as stub:
        assert collect(wh, "native", "--model", "m1", "m2", "--transport", "typed", "--base-url", stub.url,
                       "--json") == 4
    m1, m2 = json.loads(capsys.readouterr().out)
    assert m1["stopped"].startswith("HTTP 401 on each of the first 5 worlds") and m1["stored"] < len(world_ids())
    assert m2["stopped"] is None and m2["valid"] == len(world_ids())


# ------------------------------------------------------------- the Collection page's replaced answers

def test_replaced_answers_show_their_outcome_and_an_unavailable_answers_reason(wh, capsys):  # noqa: F811
    """Walk-through: the Replaced answers table ticked "valid" for an HTTP 401 answer (an unavailable
    answer is stored valid = true) and its reason was empty (an unavailable answer's reason is in the
    archived call, not in invalid_reason). The table now says unavailable, and why."""
    from dashboard.replaced_answers import NO_REASON, earlier_reasons, replaced_answers_table
    from warehouse import queries
    from warehouse.db import reader

    def first(path, body, headers, n):
        if n <= 2:
            return ok({"error": {"message": "invalid api key"}}, status=401)
        return ok(native_answer(body, confidence=7.0)) if n == 3 else typed(body)
    with StubServer(first) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url) == 0
    with StubServer(lambda p, b, h, n: typed(b)) as stub:
        assert collect(wh, "native", "--model", "m1", "--transport", "typed", "--base-url", stub.url,
                       "--replace-invalid") == 0
    with reader(wh) as con:
        history = queries.fetch_df(con, "response_history", ["ds"])
        runs = queries.fetch_df(con, "collections", ["ds"])
        calls = [queries.fetch_df(con, "collection_calls_of", [cid]).assign(collection_id=cid)
                 for cid in runs["collection_id"]]
    import pandas as pd
    shown = replaced_answers_table(history, earlier_reasons(history, runs, pd.concat(calls)))
    assert list(shown.columns) == ["model", "probe", "world_id", "outcome", "choice", "reason", "replaced (UTC)",
                                   "replaced by run"]
    by_world = shown.set_index("world_id")
    ids = world_ids()
    assert by_world.loc[ids[0], "outcome"] == by_world.loc[ids[1], "outcome"] == "unavailable"
    assert by_world.loc[ids[0], "reason"] == "HTTP 401 Unauthorized: invalid api key"
    assert by_world.loc[ids[2], "outcome"] == "invalid" and "confidence" in by_world.loc[ids[2], "reason"]
    assert NO_REASON not in set(shown["reason"])
    # an answer loaded from a file has no call to read a reason from
    loaded = history.head(1).assign(invalid_reason=None, replaced_by="elsewhere")
    assert earlier_reasons(loaded, runs.head(0), pd.concat(calls).head(0)) == [NO_REASON]


def test_a_refusal_answer_outside_the_domain_is_invalid_in_clean_words(wh, capsys):  # noqa: F811
    """Walk-through: the reason read "choice: choice 'ESCALATE' is not a delivery mechanism or WITHHOLD"."""
    with StubServer(lambda p, b, h, n: ok({"choice": "ESCALATE", "scores": {"ESCALATE": 1.0}})) as stub:
        assert collect(wh, "refusal", "--model", "m1", "--transport", "typed", "--base-url", stub.url,
                       "--limit", "1") == 0
    (status, choice, valid, reason), = stored(wh, "refusal_responses").values()
    domain = rows(wh, "SELECT domain FROM worlds WHERE world_id = ?", [world_ids()[0]])[0][0]
    assert (status, valid) == ("ok", False)
    assert reason == f"choice: 'ESCALATE' is not one of the {domain} domain's mechanisms or WITHHOLD"


def test_the_instructions_speak_of_any_decision_task_not_only_tuples():
    """An auditor's tenancy screening was asked to 'decide the coarse cause of the case' (instruction version 1)."""
    from qlb.collect.requests import INSTRUCTIONS, LETTER_INSTRUCTIONS, instruction_version
    for text in (*INSTRUCTIONS.values(), *LETTER_INSTRUCTIONS.values()):
        assert "coarse cause" not in text and "fine internal" not in text
    assert instruction_version("typed") == "qlb-collect-2"
    assert instruction_version("openai", "letters") == "qlb-collect-2-letters-1"
