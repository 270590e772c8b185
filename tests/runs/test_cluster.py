"""Audits on a Dask cluster (issue 18): a real `dask scheduler` and two `dask worker` processes
on 127.0.0.1 (random ports, each in its own process group, killed at the end) run the
(model, domain) tasks; every stored number equals a local run's to 1e-12, also when one worker
is killed (SIGKILL) while it fits; only the process that runs the audit opens the warehouse."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from qlb.cli import main
from qlb.records.ontology import parse_ontology
from qlb.runs.audit import AuditOptions, run_audits
from qlb.simulate.tuple_sim import SIM_MODELS, simulate_native, simulate_worlds
from qlb.stats import parallel
from qlb.tuple import defense_audit
from qlb.stats.parallel import SchedulerError, Workers, check_worker_code, code_fingerprint, dask_workers, run_tasks
from tests.conftest import ROOT, write_lines
from tests.records.ontologies import as_text, make_ontology
from warehouse.compare import compare_runs, newest_audit_run
from warehouse.db import reader, writer
from warehouse.ingest import IngestRequest, ingest_file
from warehouse.ontologies import store_ontology

distributed = pytest.importorskip("distributed")

DATASET = "small"
MODEL = SIM_MODELS[0].name
# one model, two domains: two tasks per stage; decoder families that fit in about a second here
OPTIONS = AuditOptions(models=[MODEL], families={"prior", "template", "shared_scorer"},
                       defense_families={"prior"}, learned_wcpq=[])
DASK = str(Path(sys.executable).with_name("dask"))
WAIT = 90.0                      # seconds, at most, for a process or an audit to get somewhere


def small_dataset(folder: Path) -> Path:
    """A warehouse with a two-domain own task (3 classes each), SIMULATED worlds and one model's
    native answers; no audit run yet."""
    text = as_text(make_ontology({
        "support": {"BILLING": ["card_expired", "double_charge", "refund_delay"],
                    "OUTAGE": ["dns_failure", "power_cut", "rate_limit"],
                    "ACCOUNT": ["locked_out", "sso_mismatch", "stale_email"]},
        "claims": {"DAMAGE": ["dropped", "water"], "LOSS": ["theft", "misroute"], "DELAY": ["weather", "backlog"]}}))
    onto = parse_ontology(text, "own.json")
    worlds = simulate_worlds(5, onto, pairs_per_class=10)
    native = [r for m in SIM_MODELS[:1] for r in simulate_native(worlds, m, 5, onto)]
    path = folder / "wh.duckdb"
    with writer(path) as con:
        store_ontology(con, DATASET, text, "own.json")
        for kind, rows in (("worlds", worlds), ("responses", native)):
            report = ingest_file(con, IngestRequest(kind, write_lines(folder / f"{kind}.jsonl", rows), DATASET)).report
            assert not report.rejects, report.messages()[:3]
    return path


def copy_of(source: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(source, folder / "wh.duckdb"))


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    return small_dataset(tmp_path_factory.mktemp("small"))


@pytest.fixture(scope="module")
def local_audit(small, tmp_path_factory) -> Path:
    """The reference: OPTIONS audited in this process."""
    path = copy_of(small, tmp_path_factory.mktemp("local"))
    with writer(path) as con:
        run_audits(con, DATASET, OPTIONS, jobs=1)
    return path


def same_numbers(a: Path, b: Path) -> dict[str, int]:
    """Assert the newest audit runs of two warehouses hold the same numbers (1e-12); the row
    count of every table that has rows."""
    with reader(a) as ca, reader(b) as cb:
        tables = compare_runs(ca, newest_audit_run(ca, DATASET), cb, newest_audit_run(cb, DATASET), 1e-12)
    assert {name: diff for name, (_, diff) in tables.items() if diff} == {}
    return {name: rows for name, (rows, _) in tables.items() if rows}


def audit_runs(path: Path) -> int:
    with reader(path) as con:
        return con.execute("SELECT count(*) FROM runs WHERE dataset_id = ? AND kind = 'audit'", [DATASET]).fetchone()[0]


# ---------------------------------------------------------------- a real scheduler and workers

def wait_for(what: str, check: Callable[[], object], timeout: float = WAIT, every: float = 0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = check()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


class DaskCluster:
    """`dask scheduler` and `dask worker` processes on 127.0.0.1, random ports, each in its own
    process group (so a kill takes a worker's nanny and its worker process together)."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.workers, self.killed = folder, {}, []
        info = folder / "scheduler.json"
        self.scheduler = self._start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0",
                                     "--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(info))
        self.address = wait_for("the scheduler file", lambda: info.exists() and info.stat().st_size
                                and json.loads(info.read_text())["address"])
        self.client = distributed.Client(self.address, timeout=WAIT)     # the test's own observer

    def _start(self, name: str, *args: str) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "wb")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}            # the workers may unpickle test helpers
        try:
            return subprocess.Popen([DASK, *args], cwd=self.folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()

    def live_workers(self) -> dict[str, str]:
        """Worker name -> address, as the scheduler sees them."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        return {str(w["name"]): address for address, w in info.items()}

    def ensure_workers(self, n: int) -> None:
        """Start workers until ``n`` live ones are registered with the scheduler."""
        live = [name for name, p in self.workers.items() if p.poll() is None]
        for _ in range(n - len(live)):
            name = f"w{len(self.workers) + len(self.killed)}"
            self.workers[name] = self._start(name, "worker", self.address, "--name", name, "--nthreads", "1",
                                             "--nworkers", "1", "--host", "127.0.0.1", "--no-dashboard",
                                             "--local-directory", str(self.folder / name))
        wait_for(f"{n} workers", lambda: len(self.live_workers()) >= n)

    def kill(self, name: str) -> None:
        """SIGKILL a worker's whole process group (nanny and worker): a lost machine."""
        proc = self.workers.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=WAIT)
        self.killed.append(name)

    def close(self) -> None:
        self.client.close()
        for proc in [*self.workers.values(), self.scheduler]:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in [*self.workers.values(), self.scheduler]:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    cluster = DaskCluster(tmp_path_factory.mktemp("dask"))
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def cluster(dask_cluster) -> DaskCluster:
    """The module's scheduler with two live workers (a test that killed one left one)."""
    dask_cluster.ensure_workers(2)
    return dask_cluster


# ---------------------------------------------------------------- tests

def test_qlb_audit_through_QLB_SCHEDULER_stores_the_numbers_of_a_local_run(cluster, small, tmp_path, monkeypatch,
                                                                            capsys):
    monkeypatch.setenv("QLB_SCHEDULER", cluster.address)
    args = ["audit", "--dataset", DATASET, "--models", MODEL, "--no-decoding"]
    here, there = copy_of(small, tmp_path / "here"), copy_of(small, tmp_path / "there")
    assert main([*args, "--warehouse", str(here), "--jobs", "1"]) == 0      # --jobs beats the variable
    assert "Dask" not in capsys.readouterr().err
    assert main([*args, "--warehouse", str(there)]) == 0
    err = capsys.readouterr().err
    assert f"Dask scheduler {cluster.address} (2 workers); dashboard: http://127.0.0.1:" in err
    assert "Traceback" not in err and "INFO" not in err
    assert same_numbers(here, there)["utility_results"] > 0
    assert audit_runs(there) == 1
    # where a run was computed is no parameter of it: a local audit reuses the cluster's run
    assert main([*args, "--warehouse", str(there), "--jobs", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["reused_existing_run"] is True


def test_a_worker_killed_mid_audit_is_replaced_and_the_numbers_stay_the_same(cluster, small, local_audit, tmp_path):
    path = copy_of(small, tmp_path)
    seen: list[tuple[str, int, int]] = []
    outcome: dict[str, object] = {}

    def audit() -> None:
        try:
            with dask_workers(cluster.address) as workers, writer(path) as con:
                run_audits(con, DATASET, OPTIONS, progress=lambda *p: seen.append(p), jobs=workers)
        except BaseException as exc:                       # handed to the test's thread
            outcome["error"] = exc

    runner = threading.Thread(target=audit, daemon=True)
    runner.start()

    def busy_worker() -> str | None:
        """A worker running a task of the audit right now (the first stage: decoding)."""
        names = {address: name for name, address in cluster.live_workers().items()}
        return next((names[a] for a, keys in cluster.client.processing().items() if keys and a in names), None)

    victim = wait_for("a worker to start a task", busy_worker)
    cluster.kill(victim)
    runner.join(timeout=4 * WAIT)
    assert not runner.is_alive(), "the audit did not finish after a worker was killed"
    assert "error" not in outcome, outcome.get("error")
    assert victim not in cluster.live_workers()
    rows = same_numbers(local_audit, path)
    assert {"decoder_predictions", "recovery_results", "utility_results", "defense_results"} <= set(rows)
    assert audit_runs(path) == 1                            # stored once
    # progress counted finished tasks, one by one, for each stage
    for stage in ("decoding", "utility"):
        assert [(d, t) for s, d, t in seen if s == stage] == [(0, 2), (1, 2), (2, 2)]
    endpoints = len(defense_audit.ENDPOINTS)          # the defenses: a task per domain and endpoint
    assert [(d, t) for s, d, t in seen if s == "defenses"] == [(k, 2 * endpoints) for k in range(2 * endpoints + 1)]
    # the workers computed without the warehouse: DuckDB was never imported there
    assert not any(cluster.client.run(lambda: "duckdb" in sys.modules).values())


def test_results_come_back_in_input_order_and_progress_counts_finished_tasks(cluster):
    with dask_workers(cluster.address) as workers:
        seen = []
        calls = [(17, 5), (9, 4), (9, 4), (1, 1)]           # equal arguments stay two tasks
        assert run_tasks(divmod, calls, len(calls), workers, lambda d, t: seen.append((d, t))) == \
            [divmod(*c) for c in calls]
        assert seen == [(0, 4), (1, 4), (2, 4), (3, 4), (4, 4)]
        assert run_tasks(divmod, [], 0, workers) == []
    assert workers.client.status == "closed"


def test_workers_with_other_code_are_refused(cluster):
    check_worker_code(cluster.client)                         # the same qlb and packages: fine
    with pytest.raises(SchedulerError, match="runs other code than this process.*qlb"):
        check_worker_code(cluster.client, {**code_fingerprint(), "qlb": "0123456789abcdef"})


def test_local_n_starts_and_stops_a_local_cluster():
    with dask_workers("local:1") as workers:
        assert isinstance(workers, Workers) and workers.dashboard.startswith("http://127.0.0.1:")
        assert len(workers.client.scheduler_info(n_workers=-1)["workers"]) == 1
        assert run_tasks(divmod, [(7, 2), (8, 3)], 2, workers) == [(3, 1), (2, 2)]
    assert workers.client.status == "closed"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_or_malformed_scheduler_is_one_line(small, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT", 1.0)
    path = copy_of(small, tmp_path)
    address = f"tcp://127.0.0.1:{free_port()}"
    started = time.monotonic()
    assert main(["audit", "--warehouse", str(path), "--scheduler", address]) == 1
    assert time.monotonic() - started < 15
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"qlb audit: error: cannot reach the Dask scheduler at {address}: no answer within 1 s "
                   "(OSError; is a `dask scheduler` running there?)"]
    for bad in ("local:0", "local:two", "my-laptop"):
        assert main(["audit", "--warehouse", str(path), "--scheduler", bad]) == 2
        assert "expected local:N" in capsys.readouterr().err
    assert main(["audit", "--warehouse", str(path), "--scheduler", "local:1", "--jobs", "2"]) == 2
    assert audit_runs(path) == 0
