"""The command line: help, exit codes, one-line errors, demo counts and idempotency."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import duckdb
import pytest

from qlb.cli import build_parser, main
from tests.conftest import ROOT, native, write_lines


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qlb", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=120)


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, its parser) for the parser and every subcommand below it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _commands(child, (*path, name))


def test_help_for_every_command(capsys):
    commands = dict(_commands(build_parser()))
    assert {" ".join(c) for c in commands} >= {"", "demo", "ingest", "audit", "refusal", "defend", "report",
                                               "quasileak", "quasileak score", "quasileak run", "collect"}
    for path, parser in commands.items():
        with pytest.raises(SystemExit) as exit_:
            main([*path, "--help"])
        out = capsys.readouterr().out
        assert exit_.value.code == 0, path
        assert out.startswith(f"usage: {' '.join(('qlb', *path))} "), path
        options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
        assert options and all(o in out for o in options), (path, [o for o in options if o not in out])
    p = run_cli("--help")                                # the installed entry point, once
    assert p.returncode == 0 and p.stdout.startswith("usage: qlb ")


def test_bad_usage_exits_2_with_one_line():
    p = run_cli("ingest", "nonsense", "x.jsonl", "--dataset", "d")
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "invalid choice" in p.stderr
    assert run_cli("frobnicate").returncode == 2


@pytest.mark.parametrize("command", [("report", "--out", "r.html"), ("quasileak", "score", "--corpus", "c",
                                                                     "--predictions", "p")])
def test_an_option_the_command_lacks_is_that_commands_error(command, capsys):
    """``qlb report --jsn`` is ``qlb report``'s mistake: its usage and its name, not the top level's."""
    with pytest.raises(SystemExit) as exc:
        main([*command, "--jsn"])
    err = capsys.readouterr().err.splitlines()
    name = "qlb " + " ".join(w for w in command if not w.startswith("-") and w not in ("r.html", "c", "p"))
    assert exc.value.code == 2
    assert err[0].startswith(f"usage: {name} ") and err[-1] == f"{name}: error: unrecognized arguments: --jsn"


def test_missing_file_exits_1_without_traceback(tmp_path):
    p = run_cli("ingest", "worlds", str(tmp_path / "nope.jsonl"), "--dataset", "d",
                "--warehouse", str(tmp_path / "w.duckdb"))
    assert p.returncode == 1
    assert "Traceback" not in p.stderr and "no such file" in p.stderr


def test_ingest_exit_codes_and_rejected_lines(tmp_path, worlds_file, capsys):
    wh = str(tmp_path / "w.duckdb")
    assert main(["ingest", "worlds", str(worlds_file), "--dataset", "d", "--warehouse", wh]) == 0
    resp = write_lines(tmp_path / "resp.jsonl", [native("m", "w1"), native("m", "nope"), native("m", "w2", status="?")])
    capsys.readouterr()
    assert main(["ingest", "responses", str(resp), "--dataset", "d", "--warehouse", wh, "--json"]) == 3
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["accepted"] == 1 and report["rejected"] == 2
    assert err.splitlines() == [
        "resp.jsonl:2: world_id: unknown world_id 'nope' (ingest its worlds first)",
        "resp.jsonl:3: status: Input should be 'ok' or 'unavailable' (got '?')",
    ]
    # dry run writes nothing
    resp2 = write_lines(tmp_path / "resp2.jsonl", [native("m", "w3")])
    assert main(["ingest", "responses", str(resp2), "--dataset", "d", "--warehouse", wh, "--dry-run"]) == 0
    con = duckdb.connect(wh, read_only=True)
    assert con.execute("SELECT count(*) FROM responses").fetchone()[0] == 1
    con.close()


def test_warehouse_env_var(tmp_path, worlds_file):
    wh = tmp_path / "env.duckdb"
    p = run_cli("ingest", "worlds", str(worlds_file), "--dataset", "d", env={"QLB_WAREHOUSE": str(wh)})
    assert p.returncode == 0, p.stderr
    assert wh.exists()


def test_demo_counts(demo_warehouse):
    con = duckdb.connect(str(demo_warehouse), read_only=True)
    try:
        q = lambda sql: con.execute(sql).fetchone()[0]  # noqa: E731
        assert q("SELECT count(*) FROM worlds") == 1440
        assert q("SELECT count(*) FROM responses") == 9 * 1440
        assert q("SELECT count(*) FROM refusal_responses") == 9 * 1440
        assert q("SELECT count(*) FROM ql_documents") == 5000
        assert q("SELECT count(*) FROM models WHERE simulated") == 9
        assert q("SELECT bool_and(simulated) FROM datasets") is True
        assert q("SELECT count(*) FROM responses WHERE NOT valid") > 0
        assert q("SELECT count(*) FROM rejects") == 7          # planted to exercise the quarantine
    finally:
        con.close()


def test_demo_twice_changes_nothing(demo_warehouse, capsys):
    assert main(["demo", "--warehouse", str(demo_warehouse), "--json", "--no-decoding"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert all(v["already_ingested"] for k, v in summary["ingests"].items() if v["rejected"] == 0)
    # a rerun carries the stored run's summary too (issue 15)
    assert summary["audit"]["reused_existing_run"] is True and summary["audit"]["run_id"] == summary["run_id"]
    assert "refusal" in summary["audit"] and summary["audit"]["test_used_for_selection"] is False
    con = duckdb.connect(str(demo_warehouse), read_only=True)
    assert con.execute("SELECT count(*) FROM responses").fetchone()[0] == 9 * 1440
    assert con.execute("SELECT count(*) FROM rejects").fetchone()[0] == 7
    assert con.execute("SELECT count(*) FROM ingests").fetchone()[0] == 4
    con.close()


def test_audit_on_a_tiny_dataset_says_what_it_skipped(tmp_path, worlds_file, capsys):
    wh = str(tmp_path / "w.duckdb")
    assert main(["ingest", "worlds", str(worlds_file), "--dataset", "tiny", "--warehouse", wh]) == 0
    resp = write_lines(tmp_path / "r.jsonl", [native("m", w) for w in ("w1", "w2", "w3", "w4")])
    assert main(["ingest", "responses", str(resp), "--dataset", "tiny", "--warehouse", wh]) == 0
    capsys.readouterr()
    assert main(["audit", "--dataset", "tiny", "--warehouse", wh, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["test_used_for_selection"] is False
    assert "no refusal responses" in doc["skipped"]["refusal"]
    assert "training pairs" in doc["skipped"]["decoding m/delivery"]
    assert "no QuasiLeak corpus" in doc["skipped"]["quasileak"]
    assert doc["recovery"] == {} and doc["defenses"] == {}     # CONTRACT.md's keys stay, empty; "skipped" says why


def test_audit_and_report_refuse_what_is_not_there(tmp_path, worlds_file, capsys):
    """An audit with nothing to audit, an unknown model or an unknown dataset stores nothing and
    says so in one line: exit 2 for a name that is not there, 1 for an empty dataset."""
    wh = str(tmp_path / "w.duckdb")
    assert main(["ingest", "worlds", str(worlds_file), "--dataset", "tiny", "--warehouse", wh]) == 0
    capsys.readouterr()
    assert main(["audit", "--dataset", "tiny", "--warehouse", wh]) == 1
    assert "nothing to audit in dataset 'tiny'" in capsys.readouterr().err
    resp = write_lines(tmp_path / "r.jsonl", [native("m", w) for w in ("w1", "w2", "w3", "w4")])
    assert main(["ingest", "responses", str(resp), "--dataset", "tiny", "--warehouse", wh]) == 0
    capsys.readouterr()
    assert main(["audit", "--dataset", "tiny", "--models", "mm", "--warehouse", wh]) == 2
    assert "no responses of model 'mm' in dataset 'tiny' (models with responses: m)" in capsys.readouterr().err
    for command in (["audit"], ["report", "--out", str(tmp_path / "r.html")]):
        assert main([*command, "--dataset", "tyni", "--warehouse", wh]) == 2
        assert "no dataset 'tyni' in the warehouse (have: tiny)" in capsys.readouterr().err
    with duckdb.connect(wh, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_defend_rewrites_a_response_file(tmp_path, worlds_file):
    from tests.conftest import native, write_lines
    resp = write_lines(tmp_path / "r.jsonl", [
        native("m", "w1", probabilities={"ADDRESS": 0.3, "DAMAGE": 0.3, "DELAY": 0.25, "DELIVERY_RECORD": 0.15},
               choice="ADDRESS"),
        native("m", "w2", status="unavailable", choice=None, probabilities=None, confidence=None),
        native("m", "w3"),
    ])
    with open(resp, "ab") as fh:
        fh.write(b'{"model": "m", "world_id": "w4", "status": "maybe"}\n')
    out = tmp_path / "top2.jsonl"
    p = run_cli("defend", "--method", "top2", "--in", str(resp), "--out", str(out), "--worlds", str(worlds_file),
                "--json")
    assert p.returncode == 3, p.stderr                                   # one rejected line
    assert f"{resp}:4: status" in p.stderr
    assert json.loads(p.stdout)["transformed"] == 2 and json.loads(p.stdout)["passed_through"] == 1
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 3
    # candidate order DELAY, ADDRESS, DAMAGE, DELIVERY_RECORD: ADDRESS and DAMAGE tie at 0.3 -> ADDRESS first
    assert lines[0]["probabilities"] == {"ADDRESS": 0.3, "DAMAGE": 0.3}            # absent, never 0
    assert lines[0]["choice"] == "ADDRESS" and lines[0]["confidence"] == 0.93       # unchanged
    assert lines[1]["status"] == "unavailable" and lines[1]["probabilities"] is None
    q = run_cli("defend", "--method", "quantize", "--in", str(resp), "--out", str(tmp_path / "q.jsonl"))
    assert q.returncode == 3
    first = json.loads((tmp_path / "q.jsonl").read_text().splitlines()[0])
    assert first["probabilities"] == {"ADDRESS": 0.3, "DAMAGE": 0.3, "DELAY": 0.3, "DELIVERY_RECORD": 0.1}
    w = run_cli("defend", "--method", "wcpq", "--in", str(resp), "--out", str(tmp_path / "w.jsonl"))
    assert w.returncode == 2 and "--worlds" in w.stderr and "Traceback" not in w.stderr


def test_refusal_with_an_own_ontology(tmp_path, capsys):
    """`qlb refusal --ontology FILE`: worlds and answers of an own task, labelled by it; a broken
    ontology file is rejected whole (exit 3, one line per problem)."""
    from qlb.cli import main
    from qlb.records.ontology import parse_ontology
    from qlb.simulate.tuple_sim import SIM_MODELS, simulate_refusal, simulate_worlds
    from tests.records.ontologies import as_text, three_by_three
    text = as_text(three_by_three())
    onto_file = tmp_path / "own.json"
    onto_file.write_text(text)
    onto = parse_ontology(text, "own.json")
    worlds = simulate_worlds(3, onto, pairs_per_class=4)
    answers = simulate_refusal(worlds, SIM_MODELS[0], 3, onto)
    w, r = write_lines(tmp_path / "w.jsonl", worlds), write_lines(tmp_path / "r.jsonl", answers)
    assert main(["refusal", "--worlds", str(w), "--responses", str(r), "--json"]) == 3     # TUPLE labels: rejected
    capsys.readouterr()
    assert main(["refusal", "--worlds", str(w), "--responses", str(r), "--ontology", str(onto_file), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    counted = sum(1 for a in answers if a["status"] == "ok")
    assert out["models"][SIM_MODELS[0].name]["all"]["n"] == counted
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"domains": {}}))
    assert main(["refusal", "--worlds", str(w), "--responses", str(r), "--ontology", str(broken)]) == 3
    assert "broken.json" in capsys.readouterr().err


def test_build_progress_weights_stages_by_their_tasks():
    from qlb.demo import BUILD_STAGES, STAGE_SECONDS, TASK_SECONDS, build_stage_seconds
    full = build_stage_seconds(9, 3, 3)
    assert list(full) == list(BUILD_STAGES)
    assert full["decoding"] == 27 * TASK_SECONDS["decoding"] and full["defenses"] == 9 * TASK_SECONDS["defenses"]
    audit = full["decoding"] + full["utility"] + full["defenses"]
    # the shares of the measured build (qlb/demo.py): decoding 38%, defenses 60%
    assert 0.33 < full["decoding"] / audit < 0.43 and 0.55 < full["defenses"] / audit < 0.65
    # a defense audit without the learned WCPQ variants: about 10 s a task
    assert build_stage_seconds(9, 3, 3, learned=0)["defenses"] == 9 * (TASK_SECONDS["defenses"] - 6 * 4.5)
    own = build_stage_seconds(9, 2, 3, corpus=False, decode=False)
    assert list(own) == ["generation", "ingest", "refusal", "utility", "storing"]
    assert own["utility"] == 18 * TASK_SECONDS["utility"] and own["storing"] == STAGE_SECONDS["storing"]


def test_build_progress_only_grows_and_ends_at_the_whole():
    from qlb.demo import BuildProgress, build_stage_seconds
    seconds = build_stage_seconds(9, 3, 3)
    plan = BuildProgress(seconds)
    reports = [("generation", 0, 4), ("generation", 3, 4), ("ingest", 0, 4), ("ingest", 3, 4),
               ("QuasiLeak", 0, 5), ("refusal", 0, 1)]
    reports += [("decoding", i, 24) for i in range(1, 25)]         # three domains skipped: fewer tasks
    reports += [("decoding", 10, 24)]                                # a late report
    reports += [("utility", i, 27) for i in range(1, 28)]
    # the defenses never report (skipped at run time), storing does
    reports += [("storing", 0, 1)]
    positions = [plan.report(*r) for r in reports]
    assert positions == sorted(positions) and positions[0] == 0
    before_utility = sum(seconds[s] for s in ("generation", "ingest", "QuasiLeak", "refusal", "decoding"))
    assert positions[reports.index(("decoding", 24, 24))] == int(1000 * before_utility / sum(seconds.values()))
    assert positions[-1] == int(1000 * (sum(seconds.values()) - seconds["storing"]) / sum(seconds.values()))
    assert positions[-1] < BuildProgress.UNITS == plan.finish() == plan.report("generation", 0, 4)


def _fake_build(skipped: dict[str, str]):
    """A stand-in for build_demo: the stage reports of a build, no data."""
    from pathlib import Path
    from types import SimpleNamespace

    from qlb.demo import BuildProgress, DemoResult, build_stage_seconds

    def build(path, seed, step, **_):
        plan = BuildProgress(build_stage_seconds(9, 3, 3))
        for stage, done, total in [("generation", 0, 4), ("generation", 2, 4), ("ingest", 0, 4), ("refusal", 0, 1),
                                   ("decoding", 1, 27), ("decoding", 27, 27), ("utility", 27, 27),
                                   ("defenses", 9, 9), ("storing", 0, 1)]:
            step(f"{stage}: {done}/{total}", plan.report(stage, done, total), plan.UNITS)
        step("done", plan.finish(), plan.UNITS)
        return DemoResult("simulated-reference", Path(path).parent / "exports",
                          run=SimpleNamespace(run_id="run-1", reused=False, skipped=skipped,
                                              to_json=lambda: {"run_id": "run-1", "skipped": skipped}))
    return build


def test_demo_progress_off_a_terminal_and_its_summary(tmp_path, monkeypatch, capsys):
    import qlb.demo
    monkeypatch.setattr(qlb.demo, "build_demo", _fake_build({}))
    assert main(["demo", "--warehouse", str(tmp_path / "w.duckdb")]) == 0
    out, err = capsys.readouterr()
    assert "\r" not in err                                              # stderr is not a terminal here
    assert [line.split()[2] for line in err.splitlines()] == ["generation", "ingest", "refusal", "recovery",
                                                              "utility", "defenses", "storing", "done"]
    assert err.splitlines()[-1] == "qlb demo: done (100%)"
    assert "audit run run-1 stored" in out and "skipped" not in out
    monkeypatch.setattr(qlb.demo, "build_demo", _fake_build({"decoding": "not requested (decode=False)"}))
    assert main(["demo", "--warehouse", str(tmp_path / "w.duckdb")]) == 0
    # the engine's parameter name is put as the flag the user knows
    assert capsys.readouterr().out.splitlines()[-1] == "skipped recovery: not requested (--no-decoding)"


def test_demo_with_an_ontology_says_where_the_worlds_are_and_how_to_load_them(tmp_path, monkeypatch, capsys):
    import qlb.demo
    from tests.records.ontologies import as_text, three_by_three
    onto = tmp_path / "support.json"
    onto.write_text(as_text(three_by_three()))
    monkeypatch.setattr(qlb.demo, "build_demo", _fake_build({}))
    wh = tmp_path / "w.duckdb"
    worlds = tmp_path / "exports" / "worlds.jsonl"
    assert main(["demo", "--warehouse", str(wh), "--ontology", str(onto)]) == 0
    out = capsys.readouterr().out
    assert f"SIMULATED worlds for your task: {worlds}" in out
    assert f"qlb ingest ontology {onto} --dataset NAME --warehouse {wh}" in out
    assert f"qlb ingest worlds {worlds} --dataset NAME --warehouse {wh}" in out
    assert "qlb collect native --dataset NAME" in out
    assert main(["demo", "--warehouse", str(wh), "--ontology", str(onto), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["worlds_file"] == str(worlds)
    assert main(["demo", "--warehouse", str(wh)]) == 0                        # the default demo: nothing to load
    assert "qlb ingest worlds" not in capsys.readouterr().out


def test_a_reader_that_goes_away_is_not_an_error():
    """`qlb ... | head`: a closed pipe ends the command quietly (exit 0), without a BrokenPipeError line."""
    code = ("import sys, qlb.cli as c\n"
            "def gone(args):\n    raise BrokenPipeError(32, 'Broken pipe')\n"
            "c._cmd_migrate = gone\nsys.exit(c.main(['migrate']))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert (out.returncode, out.stderr) == (0, "")


def test_responses_into_a_dataset_that_is_not_there_is_one_line(tmp_path, worlds_file, capsys):
    """A typo in --dataset used to create that dataset and quarantine every line as unknown world_id."""
    wh = str(tmp_path / "w.duckdb")
    assert main(["ingest", "worlds", str(worlds_file), "--dataset", "tiny", "--warehouse", wh]) == 0
    resp = write_lines(tmp_path / "r.jsonl", [native("m", w) for w in ("w1", "w2")])
    capsys.readouterr()
    for extra in ([], ["--dry-run"]):
        assert main(["ingest", "responses", str(resp), "--dataset", "tinny", "--warehouse", wh, *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "no dataset 'tinny' in the warehouse (have: tiny)" in err
        assert "qlb ingest worlds FILE --dataset tinny" in err
    with duckdb.connect(wh, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM datasets").fetchone() == (1,)
        assert con.execute("SELECT count(*) FROM rejects").fetchone() == (0,)


def _two_audited_datasets(tmp_path, worlds_file, capsys) -> tuple[str, dict[str, str]]:
    """A warehouse with datasets tiny and other, one audit run each (no decoding): (path, dataset -> run)."""
    wh = str(tmp_path / "w.duckdb")
    resp = write_lines(tmp_path / "r.jsonl", [native("m", w) for w in ("w1", "w2", "w3", "w4")])
    runs = {}
    for dataset in ("tiny", "other"):
        for kind, f in (("worlds", worlds_file), ("responses", resp)):
            assert main(["ingest", kind, str(f), "--dataset", dataset, "--warehouse", wh]) == 0
        capsys.readouterr()
        assert main(["audit", "--dataset", dataset, "--warehouse", wh, "--no-decoding", "--json"]) == 0
        runs[dataset] = json.loads(capsys.readouterr().out)["run_id"]
    return wh, runs


def test_report_names_its_run_and_dataset_and_refuses_a_run_of_another_dataset(tmp_path, worlds_file, capsys):
    wh, runs = _two_audited_datasets(tmp_path, worlds_file, capsys)
    out = str(tmp_path / "r.html")
    assert main(["report", "--dataset", "tiny", "--run", runs["other"], "--out", out, "--warehouse", wh]) == 2
    assert capsys.readouterr().err == (f"qlb report: error: run {runs['other']!r} belongs to dataset 'other', not to "
                                       f"--dataset 'tiny' (drop --dataset, or pick a run of 'tiny': {runs['tiny']})\n")
    assert not (tmp_path / "r.html").exists()
    assert main(["report", "--run", runs["other"], "--out", out, "--warehouse", wh]) == 0
    assert capsys.readouterr().out.startswith(f"report of run {runs['other']} of dataset 'other' written to {out} (")
    assert main(["report", "--dataset", "tiny", "--out", out, "--warehouse", wh]) == 0
    assert capsys.readouterr().out.endswith("; the newest, most complete run of the dataset (--run ID picks another)\n")
    assert main(["report", "--run", "run-xyz", "--out", out, "--warehouse", wh]) == 2
    assert capsys.readouterr().err == (f"qlb report: error: no run 'run-xyz' in the warehouse (newest audit runs: "
                                       f"{runs['other']} (dataset other), {runs['tiny']} (dataset tiny))\n")
    assert main(["report", "--run", "run-xyz", "--dataset", "tiny", "--out", out, "--warehouse", wh]) == 2
    assert f"no run 'run-xyz' in dataset 'tiny' (newest audit runs: {runs['tiny']})" in capsys.readouterr().err


def test_audit_says_skips_in_the_flags_words(tmp_path, worlds_file, capsys):
    wh = str(tmp_path / "w.duckdb")
    resp = write_lines(tmp_path / "r.jsonl", [native("m", w) for w in ("w1", "w2", "w3", "w4")])
    assert main(["ingest", "worlds", str(worlds_file), "--dataset", "tiny", "--warehouse", wh]) == 0
    assert main(["ingest", "responses", str(resp), "--dataset", "tiny", "--warehouse", wh]) == 0
    capsys.readouterr()
    assert main(["audit", "--dataset", "tiny", "--warehouse", wh, "--no-decoding", "--no-utility"]) == 0
    out = capsys.readouterr().out
    assert "skipped recovery: not requested (--no-decoding)" in out
    assert "skipped utility: not requested (--no-utility)" in out and "=False" not in out


def test_an_unknown_view_is_bad_usage_like_an_unknown_family(capsys):
    from qlb.tuple.release_views import VIEWS
    for option in ("--views", "--families"):
        with pytest.raises(SystemExit) as exit_:
            main(["audit", option, "full"])
        assert exit_.value.code == 2
        assert f"argument {option}: invalid choice: 'full'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    shown = " ".join(capsys.readouterr().out.split())             # help text wraps
    assert "release views the recovery audit attacks, of " + ", ".join(VIEWS) in shown


@pytest.mark.parametrize("argv", [["-v", "migrate"], ["migrate", "-v"], ["migrate", "--verbose"],
                                  ["-v", "quasileak", "score", "--corpus", "c", "--predictions", "p"],
                                  ["quasileak", "score", "--corpus", "c", "--predictions", "p", "-v"],
                                  ["collect", "native", "--dataset", "d", "--model", "m", "--transport", "python",
                                   "-v"]])
def test_verbose_before_or_after_the_command(argv):
    assert build_parser().parse_args(argv).verbose is True
    quiet = [a for a in argv if a not in ("-v", "--verbose")]
    assert build_parser().parse_args(quiet).verbose is False


def test_ingest_ontology_counts_in_singular_and_plural(tmp_path, capsys):
    from tests.records.ontologies import as_text, three_by_three
    onto = tmp_path / "support.json"
    onto.write_text(as_text(three_by_three()))
    assert main(["ingest", "ontology", str(onto), "--dataset", "own", "--warehouse", str(tmp_path / "w.duckdb")]) == 0
    assert "(1 domain, 3 classes, 9 mechanisms) -> dataset 'own'" in capsys.readouterr().out


def test_ctrl_c_while_the_commands_load_is_one_line(monkeypatch, capsys):
    """Ctrl+C in the second or two before a command runs (its parser loading) gives one line, no traceback."""
    import qlb.cli as cli

    def interrupted():
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["audit"]) == 1
    assert capsys.readouterr().err == "qlb: interrupted\n"


def test_a_rejected_world_line_names_its_field(tmp_path, capsys):
    """README: rejected lines read FILE:LINE: field: reason. A world whose mechanism is not one of its
    class's used to print without the field."""
    from tests.conftest import two_pairs
    rows = two_pairs()
    rows[1]["mechanism"] = "author_is_minor"
    worlds = write_lines(tmp_path / "worlds.jsonl", rows)
    assert main(["ingest", "worlds", str(worlds), "--dataset", "d", "--warehouse", str(tmp_path / "w.duckdb")]) == 3
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("worlds.jsonl:2: mechanism: 'author_is_minor' is not a mechanism of delivery/DELAY "
                             "(expected one of ")


def test_a_world_without_its_twin_is_stored_with_a_warning(tmp_path, capsys):
    from tests.conftest import two_pairs
    wh = str(tmp_path / "w.duckdb")
    half = write_lines(tmp_path / "half.jsonl", two_pairs()[:3])          # w4, the twin of w3, is missing
    assert main(["ingest", "worlds", str(half), "--dataset", "d", "--warehouse", wh]) == 0
    err = capsys.readouterr().err
    assert ("qlb ingest: warning: 1 world of dataset 'd' has no twin: w3 (pair p2). A pair is two worlds that share "
            "every public field and differ in the protected mechanism;") in err
    rest = write_lines(tmp_path / "rest.jsonl", two_pairs()[3:])
    assert main(["ingest", "worlds", str(rest), "--dataset", "d", "--warehouse", wh, "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["unpaired_worlds"] == 0 and "no twin" not in err
