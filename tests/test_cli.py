"""The command line: help, exit codes, one-line errors, demo counts and idempotency."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import duckdb

from qlb.cli import main
from tests.conftest import ROOT, native, write_lines


def run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "qlb", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **(env or {})}, timeout=120)


def test_help_for_every_command():
    for args in ([], ["demo"], ["ingest"]):
        p = run_cli(*args, "--help")
        assert p.returncode == 0 and "usage: qlb" in p.stdout


def test_bad_usage_exits_2_with_one_line():
    p = run_cli("ingest", "nonsense", "x.jsonl", "--dataset", "d")
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "invalid choice" in p.stderr
    assert run_cli("frobnicate").returncode == 2


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
    assert "recovery" not in doc
