"""`scripts/same_run.py` and ``warehouse.compare.newest_audit_run`` compare finished runs: an audit
in stages that is still storing (or was stopped midway) is passed over, and the script says so."""
from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

from qlb.runs.audit import AuditOptions, run_audits
from tests.conftest import ROOT
from tests.runs.test_cluster import DATASET, MODEL, small_dataset
from warehouse.compare import newest_audit_run, unfinished_audit_runs
from warehouse.db import reader, writer
from warehouse.results import now, store_run


def test_the_newest_finished_run_is_compared_and_an_unfinished_one_named(tmp_path):
    path = small_dataset(tmp_path)
    with writer(path) as con:
        finished = run_audits(con, DATASET, AuditOptions(models=[MODEL], decode=False, utility=False)).run_id
        # what `qlb audit --in-stages` leaves while it computes: a later run with its first stage only
        store_run(con, run_id="run-still-storing", dataset_id=DATASET, kind="audit", parameters={},
                  fingerprint="-", started=now() + timedelta(seconds=5), tables={}, finished=False)
    with reader(path) as con:
        assert newest_audit_run(con, DATASET) == finished
        assert unfinished_audit_runs(con, DATASET) == ["run-still-storing"]
        assert newest_audit_run(con, "no-such-dataset") is None and unfinished_audit_runs(con, "no-such-dataset") == []
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "same_run.py"), str(path), str(path),
                           "--dataset", DATASET], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == f"{finished} vs {finished}: equal to 1e-12"
    assert done.stderr.strip().splitlines() == [
        f"{path}: the newest audit run of {DATASET!r}, run-still-storing, has not finished (an audit in stages still "
        f"running, or stopped midway); comparing the newest finished one, {finished}"] * 2


def test_a_reused_run_says_what_it_skipped_as_the_fresh_run_did(tmp_path):
    """`qlb audit` run twice over the same data and settings reuses the first run: its text output named
    other skips (QuasiLeak "with detector predictions"; decoding, utility, fronts and defenses not at all)."""
    path = small_dataset(tmp_path)
    opts = AuditOptions(models=[MODEL], decode=False, utility=False)
    with writer(path) as con:
        fresh = run_audits(con, DATASET, opts)
        again = run_audits(con, DATASET, opts)
    assert again.run_id == fresh.run_id and again.reused
    assert again.skipped == fresh.skipped
    assert {"quasileak", "decoding", "utility", "fronts", "defenses"} <= set(fresh.skipped)
