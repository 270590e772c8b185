"""Audits on a Dask cluster (issue 18): a real `dask scheduler` and two `dask worker` processes
on 127.0.0.1 (random ports, each in its own process group, killed at the end) run the
(model, domain) tasks; every stored number equals a local run's to 1e-12, also when one worker
is killed (SIGKILL) while it fits; only the process that runs the audit opens the warehouse.
What goes wrong is one line and stores nothing: a worker without qlb or with other code (also
one that joins halfway), an address that is no scheduler, a scheduler lost mid-run; and the
cluster is not connected to at all when the input is wrong or a run can be reused."""
from __future__ import annotations

import json
import logging
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

dask = pytest.importorskip("dask")
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

    def _start(self, name: str, *args: str, pythonpath: str = str(ROOT)) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "wb")
        env = {**os.environ, "PYTHONPATH": pythonpath,          # the workers may unpickle test helpers
               "DASK_CONFIG": str(ROOT / "qlb" / "data" / parallel.WORKER_CONFIG)}   # as README's cluster section
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
            self.start_worker()
        wait_for(f"{n} workers", lambda: len(self.live_workers()) >= n)

    def start_worker(self, pythonpath: str = str(ROOT)) -> str:
        """Start one worker (its Python finds qlb through ``pythonpath`` first); its name."""
        name = f"w{len(self.workers) + len(self.killed)}"
        self.workers[name] = self._start(name, "worker", self.address, "--name", name, "--nthreads", "1",
                                         "--nworkers", "1", "--host", "127.0.0.1", "--no-dashboard",
                                         "--local-directory", str(self.folder / name), pythonpath=pythonpath)
        return name

    def lose_scheduler(self) -> None:
        """SIGKILL the scheduler (its machine is gone); the test's own client is closed first."""
        self.client.close()
        os.killpg(self.scheduler.pid, signal.SIGKILL)
        self.scheduler.wait(timeout=WAIT)

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


@pytest.fixture
def bare_cluster(tmp_path):
    """A scheduler of the test's own, with no worker yet (as an adaptive cluster starts)."""
    cluster = DaskCluster(tmp_path)
    try:
        yield cluster
    finally:
        cluster.close()


def qlb_with_other_code(folder: Path) -> Path:
    """A copy of qlb whose engine has one function more: what a worker with another checkout runs."""
    shutil.copytree(ROOT / "qlb", folder / "qlb", ignore=shutil.ignore_patterns("__pycache__"))
    with open(folder / "qlb" / "tuple" / "utility.py", "a", encoding="utf-8") as fh:
        fh.write("\n\ndef _changed_on_that_worker() -> int:\n    return 1\n")
    return folder


def without_qlb(folder: Path) -> Path:
    """A sitecustomize that makes `import qlb` fail: a worker where qlb is not installed."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import sys\n\n\nclass NoQlb:\n    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'qlb' or name.startswith('qlb.'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}')\n\n\n"
        "sys.meta_path.insert(0, NoQlb())\n")
    return folder


class AuditInThread:
    """`qlb audit ...` run by ``main`` in a thread of this process, its stderr (captured by
    ``capsys``) gathered as it comes."""

    def __init__(self, argv: list[str], capsys) -> None:
        self.capsys, self.err, self.code = capsys, "", None
        self.thread = threading.Thread(target=lambda: setattr(self, "code", main(argv)), daemon=True)
        self.thread.start()

    def stderr(self) -> str:
        self.err += self.capsys.readouterr().err
        return self.err

    def finish(self, timeout: float = WAIT) -> tuple[int | None, list[str]]:
        self.thread.join(timeout=timeout)
        assert not self.thread.is_alive(), f"the audit did not finish within {timeout:g} s"
        return self.code, self.stderr().strip().splitlines()


@pytest.fixture
def distributed_errors():
    """The ERROR records of distributed's loggers (whatever handlers they print to)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.ERROR)
    handler.emit = records.append
    logger = logging.getLogger("distributed")
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)


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
    assert "Traceback" not in err and "INFO" not in err and "without qlb's Dask settings" not in err
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

    busy_keys: list[str] = []

    def busy_worker() -> str | None:
        """A worker running a task of the audit right now (the first stage: decoding)."""
        names = {address: name for name, address in cluster.live_workers().items()}
        for address, keys in cluster.client.processing().items():
            if keys and address in names:
                busy_keys.extend(keys)
                return names[address]
        return None

    victim = wait_for("a worker to start a task", busy_worker)
    # a task's key says its stage, model and domain (the dashboard and a KilledWorker name it so)
    assert busy_keys[0].startswith("recovery-") and busy_keys[0].split(" ", 1)[1] in (f"{MODEL}/support",
                                                                                        f"{MODEL}/claims")
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


def assert_qlb_worker_settings(client) -> None:
    """Every worker of ``client`` runs with qlb/data/dask-worker.yaml's settings: no statistical
    profiler, and glibc's own memory thresholds (Dask's MALLOC_TRIM_THRESHOLD_ unset), which made
    a fit about 25% slower together."""
    profiling = client.run(dask.config.get, "distributed.worker.profile.enabled")
    trim = client.run(os.getenv, "MALLOC_TRIM_THRESHOLD_")
    assert profiling and set(profiling.values()) == {False} and set(trim.values()) == {None}, (profiling, trim)


def test_a_real_clusters_workers_started_as_readme_says_run_with_qlbs_settings(cluster):
    cluster.ensure_workers(1)
    assert_qlb_worker_settings(cluster.client)
    assert parallel.slow_workers(cluster.client) == []


def test_workers_without_qlbs_settings_are_named_with_the_absolute_config_path(capsys):
    """A worker started without DASK_CONFIG (or from another folder, where a relative DASK_CONFIG names no file,
    which Dask ignores) runs with the profiler and Dask's MALLOC_TRIM_THRESHOLD_: the audit says so once
    connected, with the settings file's absolute path."""
    class Client:
        def run(self, fn, on_error):
            assert fn is parallel._speed_settings and on_error == "return"
            return {"tcp://a:1": (False, None), "tcp://b:1": (True, None), "tcp://c:1": (False, "65536"),
                    "tcp://d:1": RuntimeError("gone")}

        def scheduler_info(self, n_workers=5):
            return {"workers": dict.fromkeys("abcd"), "address": "tcp://s:8786"}

    assert parallel.slow_workers(Client()) == ["tcp://b:1", "tcp://c:1"]
    with dask.config.set({"distributed.worker.profile.enabled": True}):
        assert parallel._speed_settings()[0] is True
    path = Path(parallel.worker_config_path())
    assert path.is_absolute() and path.read_text() == (ROOT / "qlb" / "data" / "dask-worker.yaml").read_text()
    workers = Workers(client=Client())
    workers.slow = ["tcp://b:1", "tcp://c:1"]
    from qlb.cli import _say_connected
    _say_connected(workers)
    err = capsys.readouterr().err
    assert (f"qlb audit: warning: 2 of 4 workers run without qlb's Dask settings (Dask's profiler on, or its "
            f"MALLOC_TRIM_THRESHOLD_): the numbers are the same, the fits about 25% slower; start the workers with "
            f"DASK_CONFIG={path} (tcp://b:1, tcp://c:1)") in err


def test_local_n_starts_and_stops_a_local_cluster():
    here = dask.config.get("distributed.worker.profile.enabled")
    with dask_workers("local:1") as workers:
        assert isinstance(workers, Workers) and workers.dashboard.startswith("http://127.0.0.1:")
        assert len(workers.client.scheduler_info(n_workers=-1)["workers"]) == 1
        assert run_tasks(divmod, [(7, 2), (8, 3)], 2, workers) == [(3, 1), (2, 2)]
        assert_qlb_worker_settings(workers.client)
        assert workers.slow == []
        assert dask.config.get("distributed.worker.profile.enabled") == here      # this process's: as it was
        assert os.getenv("MALLOC_TRIM_THRESHOLD_") is None                          # nor set here by the nanny
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
    assert time.monotonic() - started < 5                # refused at once: no waiting for Dask's connect timeout
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"qlb audit: error: cannot reach the Dask scheduler at {address}: nothing listens there "
                   "(connection refused; is a `dask scheduler` running there, on that port?)"]

    for bad in ("local:0", "local:two", "my-laptop", "http://127.0.0.1:8787", "inproc://x:1", "ucx://host:8786"):
        assert main(["audit", "--warehouse", str(path), "--scheduler", bad]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "expected HOST:PORT or tcp://HOST:PORT" in err[0] and "local:N" in err[0], err
    assert "the scheduler itself listens on tcp://HOST:8786" in (
        main(["audit", "--warehouse", str(path), "--scheduler", "http://127.0.0.1:8787"]) and capsys.readouterr().err)
    # the forms it accepts: host:port as tcp://host:port; tls:// with Dask's TLS settings, which are not set here
    assert main(["audit", "--warehouse", str(path), "--scheduler", address.removeprefix("tcp://")]) == 1
    assert "cannot reach the Dask scheduler at 127.0.0.1:" in capsys.readouterr().err
    assert main(["audit", "--warehouse", str(path), "--scheduler", address.replace("tcp://", "tls://")]) == 1
    assert "needs Dask's TLS settings" in capsys.readouterr().err
    assert main(["audit", "--warehouse", str(path), "--scheduler", "local:1", "--jobs", "2"]) == 2
    assert audit_runs(path) == 0


class NoScheduler:
    """A port on 127.0.0.1 that accepts connections (the kernel does, for a listening socket)
    and then either never answers (``hang_up=False``: the dashboard's port, say) or closes them."""

    def __init__(self, hang_up: bool) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen()
        self.address = f"tcp://127.0.0.1:{self.socket.getsockname()[1]}"
        if hang_up:
            threading.Thread(target=self._hang_up, daemon=True).start()

    def _hang_up(self) -> None:
        try:
            while True:
                self.socket.accept()[0].close()
        except OSError:                        # the socket was closed: the test is over
            pass

    def close(self) -> None:
        self.socket.close()


@pytest.mark.parametrize("hang_up, why", [(False, "no Dask handshake within 3 s"),
                                          (True, "it hung up at once")])
def test_an_address_that_is_no_scheduler_fails_within_the_deadline(hang_up, why, small, tmp_path, monkeypatch,
                                                                   capsys):
    """A port that accepts the connection but never speaks Dask's protocol used to leave `qlb
    audit` waiting forever for the first handshake."""
    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT", 2.0)      # a socket on loopback that accepts connects at once even
    monkeypatch.setattr(parallel, "HANDSHAKE_TIMEOUT", 1.0)    # on a loaded machine; the handshake's deadline is tested
    path = copy_of(small, tmp_path)
    server = NoScheduler(hang_up)
    try:
        started = time.monotonic()
        audit = AuditInThread(["audit", "--warehouse", str(path), "--models", MODEL, "--no-decoding",
                               "--scheduler", server.address], capsys)
        code, err = audit.finish(timeout=30)
    finally:
        server.close()
    assert time.monotonic() - started < 12                     # 2 + 1 s of deadlines, and the audit's own start
    assert code == 1 and err == [f"qlb audit: error: {server.address} answers, but not as a Dask scheduler ({why}): "
                                 "is it the scheduler's port? `dask scheduler` listens on 8786 by default (8787 is "
                                 "its dashboard)"]
    assert audit_runs(path) == 0


def test_the_cluster_is_not_connected_to_for_bad_input_or_a_reused_run(small, tmp_path, capsys):
    """Input is checked, and a run to reuse found, before the scheduler is asked: an address
    where nothing answers would cost its 10 s timeout."""
    path = copy_of(small, tmp_path)
    nowhere = ["--scheduler", f"tcp://127.0.0.1:{free_port()}"]
    args = ["audit", "--warehouse", str(path), "--dataset", DATASET, "--models", MODEL, "--no-decoding"]
    started = time.monotonic()
    assert main([*args[:-3], "--models", "nosuch", *nowhere]) == 2
    assert "no responses of model 'nosuch'" in capsys.readouterr().err
    assert main([*args, "--jobs", "1"]) == 0                  # a local run, then the same on the cluster: reused
    capsys.readouterr()
    assert main([*args, *nowhere, "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["reused_existing_run"] is True and "Dask" not in err
    # no (model, domain) task at all: nothing to send, nothing to connect to
    assert main([*args, "--no-utility", "--force", *nowhere]) == 0
    assert "Dask" not in capsys.readouterr().err
    assert time.monotonic() - started < 8
    assert audit_runs(path) == 2


def test_a_worker_without_qlb_is_named(bare_cluster, tmp_path):
    name = bare_cluster.start_worker(pythonpath=str(without_qlb(tmp_path / "no-qlb")))
    wait_for("the worker", lambda: name in bare_cluster.live_workers())
    address = bare_cluster.live_workers()[name]
    with pytest.raises(SchedulerError) as error:
        with dask_workers(bare_cluster.address):
            pass
    assert str(error.value) == (f"worker {address} cannot run qlb (ModuleNotFoundError(\"No module named 'qlb'\")); "
                                "install the same qlb and requirements.txt there (the same container image, or "
                                "`pip install -e .` of the same checkout)")


def test_a_worker_that_joins_later_with_other_code_fails_the_run(bare_cluster, small, tmp_path, capsys):
    """Checked by every task, not only when the audit connects: the scheduler has no worker
    then (the audit warns, once, and waits); the one that joins runs other code."""
    path = copy_of(small, tmp_path / "wh")
    audit = AuditInThread(["audit", "--warehouse", str(path), "--models", MODEL, "--no-decoding",
                           "--scheduler", bare_cluster.address], capsys)
    wait_for("the audit to send its first tasks", lambda: "utility 0/" in audit.stderr())
    name = bare_cluster.start_worker(pythonpath=f"{qlb_with_other_code(tmp_path / 'other')}{os.pathsep}{ROOT}")
    code, err = audit.finish()
    address = bare_cluster.live_workers().get(name)
    assert code == 1 and address
    assert err[0] == f"qlb audit: Dask scheduler {bare_cluster.address} (0 workers); dashboard: http://127.0.0.1:" + \
        err[0].split("dashboard: http://127.0.0.1:")[1]
    assert [line for line in err if "no workers" in line] == [
        f"qlb audit: warning: the Dask scheduler at {bare_cluster.address} has no workers yet; the audit waits for "
        f"them (start one with `dask worker {bare_cluster.address} --nthreads 1`)"]
    assert err[-1].startswith(f"qlb audit: error: worker {address} runs other code than this process (qlb: ")
    assert err[-1].endswith("; install the same qlb and requirements.txt there (the same container image, or "
                            "`pip install -e .` of the same checkout) and restart it")
    assert audit_runs(path) == 0                               # its results were not stored


@pytest.mark.parametrize("in_stages", [False, True])
def test_a_scheduler_lost_mid_run_is_one_line(in_stages, bare_cluster, small, tmp_path, capsys, distributed_errors):
    bare_cluster.ensure_workers(1)
    path = copy_of(small, tmp_path)
    stage = "utility" if in_stages else "recovery"      # in stages: lost after the recovery was stored
    audit = AuditInThread(["audit", "--warehouse", str(path), "--models", MODEL, "--families", "prior",
                           "--scheduler", bare_cluster.address] + (["--in-stages"] if in_stages else []), capsys)
    wait_for(f"a {stage} task to run", lambda: any(
        k.startswith(f"{stage}-") for keys in bare_cluster.client.processing().values() for k in keys))
    bare_cluster.lose_scheduler()
    code, err = audit.finish()
    assert code == 1
    if in_stages:
        with reader(path) as con:
            run_id = con.execute("SELECT run_id FROM runs WHERE dataset_id = ? AND finished_at IS NULL",
                                 [DATASET]).fetchone()[0]
        assert err[-1] == (f"qlb audit: error: the Dask scheduler at {bare_cluster.address} was lost during the "
                           f"utility stage; stored so far: refusal and QuasiLeak, recovery (unfinished run {run_id}); "
                           "rerun the same command once the scheduler is back: it keeps the stages stored and "
                           "computes the rest")
    else:
        assert err[-1] == (f"qlb audit: error: the Dask scheduler at {bare_cluster.address} was lost during the "
                           "recovery stage; nothing was stored; rerun the same command once the scheduler is back")
        assert audit_runs(path) == 0
    # the lines before are the scheduler's and the progress's; distributed's client said nothing
    assert all(line.startswith(("qlb audit: Dask scheduler", "qlb audit: recovery", "qlb audit: utility"))
               for line in err[:-1]), err
    assert [r.getMessage() for r in distributed_errors] == []
