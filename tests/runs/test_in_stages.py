"""Issue #17 goal 1: an audit in stages (`qlb audit --in-stages`, what `qlb demo --background`
starts) stores each audit as it finishes, opening the warehouse only to read and to store; the
numbers equal a one-transaction run; a reader gets in between stages; a build stopped midway is
resumed, keeping the stages it stored; a finished one is reused; the status file says where it
stands."""
from __future__ import annotations

import json
import os
import shlex

import pytest

from qlb.cli import main
from qlb.demo import StagedAuditStatus
from qlb.runs.audit import AuditOptions, AuditRun, run_audits, run_audits_in_stages
from tests.runs.test_cluster import DATASET, OPTIONS, copy_of, small_dataset
from warehouse import build_status, queries
from warehouse.compare import compare_runs, newest_audit_run
from warehouse.db import reader, writer
from warehouse.results import drop_unfinished_runs


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    return small_dataset(tmp_path_factory.mktemp("small"))


@pytest.fixture(scope="module")
def whole(small, tmp_path_factory):
    """The run of one transaction that a resumed audit must equal."""
    path = copy_of(small, tmp_path_factory.mktemp("whole"))
    with writer(path) as con:
        run_audits(con, DATASET, OPTIONS)
    return path


def test_in_stages_equals_one_transaction_and_readers_get_in_between(small, whole, tmp_path):
    staged = copy_of(small, tmp_path / "staged")
    seen = []

    def stored(stage, run):
        with reader(staged) as con:            # the file is free between stages
            finished = con.execute("SELECT finished_at IS NOT NULL FROM runs WHERE run_id = ?",
                                   [run.run_id]).fetchone()[0]
            seen.append((stage, finished))

    run = run_audits_in_stages(staged, DATASET, OPTIONS, stored=stored)
    assert seen == [("refusal", False), ("decoding", False), ("utility", False), ("defenses", True)]
    with reader(whole) as a, reader(staged) as b:
        differences = compare_runs(a, newest_audit_run(a, DATASET), b, run.run_id)
    assert {name: diff for name, (_, diff) in differences.items() if diff} == {}
    assert sum(n for n, _ in differences.values()) > 0
    again = run_audits_in_stages(staged, DATASET, OPTIONS)
    assert again.reused and again.run_id == run.run_id      # a second start never recomputes


def stop_after(stage_to_stop):
    def stored(stage, run):
        if stage == stage_to_stop:
            raise KeyboardInterrupt
    return stored


# stopped after the utility stage: the resume keeps refusal, decoding and utility, computes the utility audit
# again for the defenses' policies without storing it twice (a stop after decoding, whose resume stores the
# utility stage, is test_qlb_audit_in_stages_resumes_on_the_command_line's)
@pytest.mark.parametrize("stopped, kept", [("utility", ("refusal", "decoding", "utility"))])
def test_a_build_stopped_midway_resumes_keeping_its_stored_stages(stopped, kept, small, whole, tmp_path):
    path = copy_of(small, tmp_path / "stopped")
    first = {}

    def remember(stage, run):
        first["run_id"] = run.run_id
        stop_after(stopped)(stage, run)

    with pytest.raises(KeyboardInterrupt):
        run_audits_in_stages(path, DATASET, OPTIONS, stored=remember)
    with reader(path) as con:
        assert con.execute("SELECT count(*) FROM runs WHERE finished_at IS NULL").fetchone()[0] == 1
    computed, reported = set(), []
    run = run_audits_in_stages(path, DATASET, OPTIONS, lambda stage, done, total: computed.add(stage),
                               lambda stage, run: reported.append(stage))
    assert not run.reused and run.run_id == first["run_id"] and run.resumed == kept
    assert "decoding" not in computed and "defenses" in computed      # the decoding is never fitted again
    assert "utility" in computed                                        # its frozen policies feed the defenses
    assert reported == ["refusal", "decoding", "utility", "defenses"]   # the kept stages first, each once
    with reader(whole) as a, reader(path) as b:
        assert con_runs(b) == (1, 1)
        differences = compare_runs(a, newest_audit_run(a, DATASET), b, run.run_id)
    assert {name: diff for name, (_, diff) in differences.items() if diff} == {}    # no stage stored twice
    assert run_audits_in_stages(path, DATASET, OPTIONS).reused


def con_runs(con):
    """(runs, finished runs) in the warehouse."""
    return con.execute("SELECT count(*), count(finished_at) FROM runs").fetchone()


def test_an_unfinished_run_of_other_parameters_is_dropped(small, tmp_path):
    path = copy_of(small, tmp_path / "other")
    with pytest.raises(KeyboardInterrupt):
        run_audits_in_stages(path, DATASET, OPTIONS, stored=stop_after("decoding"))
    computed = set()
    run = run_audits_in_stages(path, DATASET, OPTIONS, lambda stage, done, total: computed.add(stage),
                               defenses=False)
    assert run.resumed == () and "decoding" in computed
    with writer(path) as con:
        assert con_runs(con) == (1, 1)
        assert con.execute("SELECT count(DISTINCT run_id) FROM recovery_results").fetchone()[0] == 1
        assert drop_unfinished_runs(con, DATASET) == []


def test_a_resumed_audit_times_only_what_it_computes(tmp_path, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr("qlb.demo.time.time", lambda: clock[0])
    status = StagedAuditStatus(tmp_path / "w.duckdb", DATASET, n_models=1, n_domains=2, n_defense_models=1)
    run = AuditRun("run-x", DATASET, False, resumed=("refusal", "decoding", "utility"))
    clock[0] += 600                          # the dashboard started long after the stopped attempt
    for stage in run.resumed:
        status.stored(stage, run)
    kept = status.status.fraction
    assert 0 < kept < 1 and status.status.eta_seconds is None and status.status.stage == "defenses"
    clock[0] += 30                           # the kept utility audit computed again: no progress, no pace
    status.progress("utility", 1, 2)
    assert status.status.stage == "defenses" and status.status.fraction == kept
    clock[0] += 10
    status.progress("defenses", 0, 2)
    clock[0] += 10
    status.progress("defenses", 1, 2)
    done = status.status.fraction - kept
    assert status.status.eta_seconds == pytest.approx(10 * (1 - status.status.fraction) / done)


def test_the_status_file_follows_the_stages(small, tmp_path):
    path = copy_of(small, tmp_path / "status")
    status = StagedAuditStatus(path, DATASET, n_models=1, n_domains=2, n_defense_models=1)
    fractions = []

    def progress(stage, done, total):
        status.progress(stage, done, total)
        fractions.append(build_status.read_status(path).fraction)

    run_audits_in_stages(path, DATASET, OPTIONS, progress, status.stored)
    final = build_status.read_status(path)
    assert final.state == "done" and final.stored == ["refusal", "decoding", "utility", "defenses"]
    assert final.run_id and final.fraction == 1.0 and fractions == sorted(fractions)   # never backwards
    assert build_status.running_build(path) is None


def test_a_dead_build_is_not_running(tmp_path):
    status = build_status.BuildStatus(dataset_id="d", run_id="r", pid=os.getpid())
    build_status.write_status(tmp_path / "w.duckdb", status)
    assert build_status.running_build(tmp_path / "w.duckdb", "d").run_id == "r"
    assert build_status.running_build(tmp_path / "w.duckdb", "other") is None
    status.pid = 2 ** 22 + 12345                                  # no such process
    build_status.write_status(tmp_path / "w.duckdb", status)
    assert build_status.running_build(tmp_path / "w.duckdb") is None


def test_qlb_audit_in_stages_on_the_command_line(small, tmp_path, capsys):
    path = copy_of(small, tmp_path / "cli")
    args = ["audit", "--in-stages", "--dataset", DATASET, "--warehouse", str(path), "--models", OPTIONS.models[0],
            "--families", *sorted(OPTIONS.families), "--no-defenses"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "stored" in out
    assert out.splitlines()[-1] == "skipped defenses: not requested (--no-defenses)"      # a fresh run says it so
    lines = [line for line in err.splitlines() if line.startswith("qlb audit: recovery ")]
    assert lines and lines[-1].endswith(" tasks") and len(lines) <= 5     # a log line per quarter, not per task
    done, total = lines[-1].split()[-2].split("/")
    assert done == total
    status = build_status.read_status(path)
    assert status.state == "done" and status.stored == ["refusal", "decoding", "utility", "defenses"]
    assert status.command == shlex.join(["qlb", *args])          # what resumes it, shown if it stops
    assert main(args) == 0
    again = capsys.readouterr().out
    assert "reused" in again and again.splitlines()[-1] == "skipped defenses: not requested (--no-defenses)"
    with reader(path) as con:      # the run records the decoder families it was asked for
        runs = queries.fetch_df(con, "all_runs", [])
    assert json.loads(runs["parameters"].iloc[-1])["families"] == sorted(OPTIONS.families)


def test_qlb_audit_in_stages_resumes_on_the_command_line(small, tmp_path, capsys):
    path = copy_of(small, tmp_path / "cli-resume")
    options = AuditOptions(models=OPTIONS.models, families=OPTIONS.families, defenses=False)
    with pytest.raises(KeyboardInterrupt):
        run_audits_in_stages(path, DATASET, options, stored=stop_after("decoding"))
    capsys.readouterr()
    assert main(["audit", "--in-stages", "--dataset", DATASET, "--warehouse", str(path), "--models",
                 OPTIONS.models[0], "--families", *sorted(OPTIONS.families), "--no-defenses"]) == 0
    out, err = capsys.readouterr()
    assert "stored, resuming an audit that stopped midway (kept: refusal and QuasiLeak, recovery)" in out
    assert "qlb audit: recovery" not in err and "qlb audit: utility" in err
    assert build_status.read_status(path).stored == ["refusal", "decoding", "utility", "defenses"]


def test_a_second_audit_in_stages_on_the_same_warehouse_stops_before_reading(small, tmp_path, capsys):
    """Another process holds the warehouse's build lock (an audit in stages running there): this one stops at once,
    naming it from its status file, and writes nothing (the lock is the OS's: it goes with its process)."""
    import subprocess
    import sys
    path = copy_of(small, tmp_path / "two")
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a+'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)",
                               str(build_status.lock_path(path))], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        other = build_status.BuildStatus(dataset_id=DATASET, run_id="run-x", stage="decoding", pid=holder.pid)
        build_status.write_status(path, other)
        assert main(["audit", "--in-stages", "--dataset", DATASET, "--warehouse", str(path), "--models",
                     OPTIONS.models[0], "--families", "prior", "--no-defenses"]) == 1
        err = capsys.readouterr().err
        assert (f"another audit in stages is running on this warehouse (dataset 'small', process {holder.pid}, "
                "secret recovery); wait for it") in err
        assert build_status.read_status(path).pid == holder.pid           # its status file is left alone
        with pytest.raises(build_status.BuildRunning):                    # the library refuses too
            run_audits_in_stages(path, DATASET, OPTIONS)
    finally:
        holder.kill()
        holder.wait()
    with reader(path) as con:
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    with build_status.build_lock(path):                # gone with its process
        pass