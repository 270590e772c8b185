"""Running one engine function over every (model, domain) of a dataset: the tasks the data
allows (the others named in ``skipped``), in parallel, with progress.

Where the tasks run is a ``Workers``: ``jobs`` local processes (joblib's loky), or the workers of
a Dask scheduler (``dask_workers``: an address, or ``local:N`` for a LocalCluster on this
machine). Either way every task gets its inputs as arguments and returns its result to this
process; a task never opens the warehouse, and its seeds come from its arguments, so the numbers
do not depend on where it ran. Every task runs with one BLAS (and OpenMP) thread wherever it
runs: the engine's matrices are small, so more threads buy nothing, and processes that each start
a thread per core on a shared machine spin against each other (two audits side by side took 118 s
instead of 32 s).

On a Dask scheduler every task carries this process's ``code_fingerprint`` and compares it with
its worker's before it computes, so a worker that joins halfway (an adaptive cluster starts with
none) is checked like the ones there at the start. A worker that runs other code returns no
result but the difference, which fails the run naming that worker: returned, not raised, because
Dask reruns a task that raised, possibly on another worker, and the run would go on.
"""
from __future__ import annotations

import asyncio
import dataclasses
import enum
import hashlib
import importlib
import importlib.resources
import os
import pkgutil
import re
import socket
import sys
import time
import types
import uuid
from concurrent.futures import CancelledError
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator
from urllib.parse import urlsplit

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

SCHEDULER_ENV_VAR = "QLB_SCHEDULER"
CONNECT_TIMEOUT = 10.0           # seconds to reach a scheduler before giving up
HANDSHAKE_TIMEOUT = 3.0          # seconds more for what answers there to answer as a Dask scheduler
SCHEDULER_PORT = 8786            # `dask scheduler`'s default port (its dashboard's: 8787)
TASK_RETRIES = 2                 # Dask reruns of a task that raised (a lost worker's tasks are rescheduled anyway)
# the code the tasks run: the pure rooms a task imports (qlb.tuple's audits, qlb.stats, qlb.records'
# ontology); not qlb.present, qlb.cli, qlb.runs, qlb.simulate or qlb.quasileak, which only this process runs
ENGINE_PACKAGES = ("qlb.records", "qlb.stats", "qlb.tuple")
# what else must be the same on every worker for its numbers to equal this process's: distribution
# name -> module
NUMERIC_PACKAGES = {"numpy": "numpy", "pandas": "pandas", "scipy": "scipy", "scikit-learn": "sklearn"}
# the stage a task function's module belongs to, in the words of `qlb audit`'s progress (task keys, errors)
TASK_STAGES = {"qlb.tuple.recovery": "recovery", "qlb.tuple.utility": "utility", "qlb.tuple.defense_audit": "defenses"}
# the Dask settings of a qlb worker (why: in the file), which `local:N` starts its workers with and
# README's cluster section asks a real cluster's workers to start with (DASK_CONFIG=...)
WORKER_CONFIG = "dask-worker.yaml"
_LOCAL = re.compile(r"local:(\d+)")
_ADDRESS = re.compile(r"(?:(tcp|tls)://)?(\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]+):(\d+)")   # [tcp:// | tls://]host:port
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
ACCEPTED_ADDRESSES = (f"HOST:PORT or tcp://HOST:PORT (a Dask scheduler, port {SCHEDULER_PORT} by default), "
                      "tls://HOST:PORT (with Dask's TLS settings, distributed.comm.tls in its configuration) or "
                      "local:N (N worker processes on this machine, N >= 1)")


class SchedulerError(ValueError):
    """A Dask scheduler that cannot be used: a malformed address, one that does not answer (or
    not as a scheduler), workers that cannot run qlb or run other code than this process, a
    scheduler lost mid-run."""


class SchedulerLost(SchedulerError):
    """The connection to the scheduler was lost while a stage's tasks ran (its results with it)."""

    def __init__(self, address: str, stage: str) -> None:
        super().__init__(f"the Dask scheduler at {address} was lost during the {stage} stage")
        self.address, self.stage = address, stage


class Workers:
    """Where independent tasks run: ``jobs`` local processes (joblib's loky; 1 runs them in
    this process), or the workers of a Dask scheduler: ``client`` (a ``distributed.Client``), or
    ``connect``, called when the first task is sent to open that client (``dask_workers(...,
    lazy=True)``), then ``connected(self)``; ``address`` is then the scheduler's own (its
    ``scheduler_info()``). ``retries``: how often Dask reruns a task that
    raised; a task whose worker died is rescheduled on another worker by the scheduler itself
    (up to its ``distributed.scheduler.allowed-failures``)."""

    def __init__(self, jobs: int = 1, client: Any = None, retries: int = TASK_RETRIES,
                 connect: Callable[[], Any] | None = None,
                 connected: Callable[[Workers], None] | None = None) -> None:
        self.jobs, self.retries = jobs, retries
        self._client, self._connect, self._connected = client, connect, connected
        self._address: str | None = None
        self.slow: list[str] = []             # workers without qlb's Dask settings (``slow_workers``)

    @property
    def on_dask(self) -> bool:
        """Whether the tasks go to a Dask scheduler (connected or not yet)."""
        return self._client is not None or self._connect is not None

    @property
    def client(self) -> Any:
        """The ``distributed.Client`` (opened now if this is the first use), or None locally."""
        if self._client is None and self._connect is not None:
            self._client = self._connect()
            if self._connected is not None:
                self._connected(self)
        return self._client

    @property
    def address(self) -> str | None:
        """The scheduler's address as it gives it (None locally)."""
        if self._address is None and self.client is not None:
            self._address = self.client.scheduler_info()["address"]
        return self._address

    @property
    def dashboard(self) -> str | None:
        """The scheduler's dashboard URL (None locally, or when the scheduler serves none)."""
        if self.client is None:
            return None
        try:
            return self.client.dashboard_link
        except (KeyError, AttributeError):     # a scheduler started without bokeh has no dashboard
            return None


def domain_tasks(frames: dict[str, pd.DataFrame], check: Callable[[pd.DataFrame], str | None], label: str,
                 skipped: dict[str, str] | None = None) -> list[tuple[str, str, pd.DataFrame]]:
    """(model, domain, that domain's worlds) for every model's frame; a domain ``check`` rejects
    (it returns why) is left out and named in ``skipped`` as ``"<label> <model>/<domain>"``."""
    tasks = []
    for m, f in frames.items():
        for d in sorted(f["domain"].unique()):
            sub = f[f["domain"] == d]
            why = check(sub)
            if why is None:
                tasks.append((m, d, sub))
            elif skipped is not None:
                skipped[f"{label} {m}/{d}"] = why
    return tasks


def run_tasks(fn: Callable[..., Any], calls: Iterable[tuple], total: int, jobs: int | Workers = 1,
              progress: Callable[[int, int], None] | None = None) -> list:
    """``fn(*args)`` for every argument tuple, in order, reporting ``progress(done, total)`` as
    tasks finish, and ``progress(0, total)`` before the first starts (so that a progress bar
    shows the stage from its start, not from its first finished task). ``jobs``: a number of
    local processes (joblib's loky; one runs in this process) or a ``Workers``."""
    workers = jobs if isinstance(jobs, Workers) else Workers(jobs)
    if workers.on_dask and total:
        workers.client           # connects now if these are the first tasks: before their stage is announced
    if progress and total:
        progress(0, total)
    if workers.on_dask:
        return _on_dask(workers, fn, list(calls), total, progress)
    from joblib import Parallel, delayed     # imported here: pages that never fit stay light
    n = workers.jobs
    runner = Parallel(n_jobs=n, return_as="generator", backend="loky" if n != 1 else "sequential")
    out = []
    for i, res in enumerate(runner(delayed(partial(_one_blas_thread, fn))(*args) for args in calls), start=1):
        out.append(res)
        if progress:
            progress(i, total)
    return out


def _one_blas_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` with one BLAS and OpenMP thread in this process (see the module docstring)."""
    with threadpool_limits(limits=1):
        return fn(*args)


@dataclass(frozen=True)
class _OtherCode:
    """What a task returns instead of its result on a worker that runs other code."""

    worker: str
    fingerprint: dict[str, str]


def _same_code_task(expected: dict[str, str], fn: Callable[..., Any], *args: Any) -> Any:
    """On a Dask worker: ``fn(*args)`` with one BLAS thread, or an ``_OtherCode`` when this
    worker's ``code_fingerprint`` is not ``expected`` (the audit's)."""
    here = code_fingerprint()
    if here != expected:
        from distributed import get_worker
        return _OtherCode(get_worker().address, here)
    return _one_blas_thread(fn, *args)


def task_stage(fn: Callable[..., Any]) -> str:
    """The audit stage a task function belongs to (``TASK_STAGES``), else the function's name."""
    inner = fn.func if isinstance(fn, partial) else fn
    return TASK_STAGES.get(getattr(inner, "__module__", ""), getattr(inner, "__name__", "task"))


def task_keys(stage: str, calls: list[tuple]) -> list[str]:
    """A Dask key per call, unique to this batch: ``<stage>-<batch>-<i> <its text arguments>``,
    say ``recovery-3f9a2c1d-0 sim-alder/it`` (model and domain, and for the defenses the
    endpoint), so that the dashboard groups a stage's tasks under its name and a message that
    names a task says which one it is."""
    batch = uuid.uuid4().hex[:8]
    return [f"{stage}-{batch}-{i} {'/'.join(a for a in args if isinstance(a, str))}".rstrip()
            for i, args in enumerate(calls)]


def _on_dask(workers: Workers, fn: Callable[..., Any], calls: list[tuple], total: int,
             progress: Callable[[int, int], None] | None) -> list:
    """Every call as one Dask task (connecting first if the workers connect on first use). The
    arguments travel inside the tasks (never scattered: scattered data dies with its worker, a
    task's arguments stay with the scheduler and so survive it); each task has a key of its own,
    so two calls with equal arguments are two tasks. SchedulerError naming the worker when one
    runs other code; SchedulerLost when the scheduler goes away."""
    if not calls:
        return []
    from distributed import as_completed
    client, address, stage = workers.client, workers.address, task_stage(fn)
    if client.status in ("closing", "closed"):    # lost before this stage, and given up reconnecting
        raise SchedulerLost(address, stage)
    expected = code_fingerprint()
    futures = client.map(partial(_same_code_task, expected, fn), *zip(*calls), key=task_keys(stage, calls),
                         retries=workers.retries)
    position = {f.key: i for i, f in enumerate(futures)}
    out: list[Any] = [None] * len(futures)
    try:
        for done, future in enumerate(as_completed(futures), start=1):
            result = future.result()
            if isinstance(result, _OtherCode):
                raise SchedulerError(_other_code(result.worker, result.fingerprint, expected))
            out[position[future.key]] = result
            if progress:
                progress(done, total)
    except CancelledError:           # not by us: the scheduler went away and took the tasks with it
        raise SchedulerLost(address, stage) from None
    except BaseException:
        if client.status == "running":
            client.cancel(futures)   # after a failure (or Ctrl+C) nothing of this stage keeps running
        raise
    return out


def missing_splits(frame: pd.DataFrame) -> str | None:
    """Why a domain cannot be fitted, selected and scored: a split without worlds, or None."""
    missing = [s for s in ("train", "validation", "test") if not (frame["split"] == s).any()]
    return f"no {' or '.join(missing)} worlds" if missing else None


# ---------------------------------------------------------------- Dask

def check_scheduler(spec: str) -> str:
    """``spec`` stripped when it is ``local:N`` (N >= 1) or a scheduler address
    (``host:port``, ``tcp://host:port`` or ``tls://host:port``); SchedulerError naming the
    accepted forms otherwise."""
    text = spec.strip()
    local = _LOCAL.fullmatch(text)
    if (local and int(local.group(1)) >= 1) or (not local and _ADDRESS.fullmatch(text)):
        return text
    scheme = _SCHEME.match(text)
    hint = ""
    if scheme and scheme.group(1).lower() in ("http", "https"):
        hint = (f" ({scheme.group(1)}:// is a web address, such as the scheduler's dashboard; the scheduler "
                f"itself listens on tcp://HOST:{SCHEDULER_PORT} by default)")
    elif scheme and scheme.group(1).lower() not in ("tcp", "tls"):
        hint = f" (qlb does not use Dask's {scheme.group(1)}:// transport)"
    raise SchedulerError(f"expected {ACCEPTED_ADDRESSES}, not {spec!r}{hint}")


@contextmanager
def dask_workers(spec: str, timeout: float | None = None, lazy: bool = False,
                 connected: Callable[[Workers], None] | None = None) -> Iterator[Workers]:
    """The workers of a Dask scheduler for the duration of the block: ``spec`` is its address
    (``tcp://host:port``), or ``local:N`` to start a LocalCluster of N single-threaded worker
    processes on this machine (stopped on exit). ``lazy``: connect (or start the LocalCluster)
    only when the first task is sent, so that a block that sends none never connects; then
    ``connected(workers)``. SchedulerError when the scheduler does not answer within ``timeout``
    seconds (default ``CONNECT_TIMEOUT``, plus ``HANDSHAKE_TIMEOUT`` for what answers there to
    answer as a scheduler), or a worker cannot run qlb or runs other code than this process."""
    spec = check_scheduler(spec)
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    opened: list[tuple[Any, Any]] = []          # (client, LocalCluster or None)

    def connect() -> Any:
        client, cluster = _open_client(spec, timeout)
        opened.append((client, cluster))
        check_worker_code(client)
        workers.slow = slow_workers(client)
        return client

    workers = Workers(connect=connect, connected=connected)
    try:
        if not lazy:
            workers.client
        yield workers
    finally:
        for client, cluster in opened:
            client.close()
            if cluster is not None:
                cluster.close()


def _open_client(spec: str, timeout: float) -> tuple[Any, Any]:
    """A ``distributed.Client`` of ``spec`` and the LocalCluster it started (None for an address)."""
    import dask                                       # imported here: only a cluster run pays for them
    from distributed import Client, LocalCluster

    local = _LOCAL.fullmatch(spec)
    if local:
        # set after distributed is imported (its defaults are in Dask's configuration then, and
        # leaving the block restores them); each nanny takes the configuration as it starts
        with dask.config.set(worker_config()):
            cluster = LocalCluster(n_workers=int(local.group(1)), threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address="127.0.0.1:0")
        try:
            return Client(cluster, timeout=timeout), cluster
        except BaseException:
            cluster.close()
            raise
    if spec.startswith("tls://") and _connection_args()["ssl_context"] is None:
        raise SchedulerError(f"{spec}: a tls:// address needs Dask's TLS settings, and there are none (set "
                             "distributed.comm.tls.ca-file, distributed.comm.tls.client.cert and "
                             "distributed.comm.tls.client.key in Dask's configuration, see "
                             "https://distributed.dask.org/en/stable/tls.html)")
    probe = _probe(spec, timeout)
    if probe == "refused":
        raise SchedulerError(f"cannot reach the Dask scheduler at {spec}: nothing listens there (connection "
                             "refused; is a `dask scheduler` running there, on that port?)")
    try:
        if probe == "hung up":
            raise _NotAScheduler("it hung up at once")
        _handshake(spec, timeout)
        return Client(spec, timeout=timeout), None
    except _NotAScheduler as exc:
        raise SchedulerError(f"{spec} answers, but not as a Dask scheduler ({exc}): is it the scheduler's port? "
                             f"`dask scheduler` listens on {SCHEDULER_PORT} by default (8787 is its dashboard)"
                             + ("; for tls://, check Dask's TLS settings too" if spec.startswith("tls://") else "")
                             ) from None
    except OSError as exc:
        raise SchedulerError(f"cannot reach the Dask scheduler at {spec}: no answer within {timeout:g} s "
                             f"({type(exc).__name__}; is a `dask scheduler` running there?)") from None


def worker_config_path() -> str:
    """The absolute path of ``qlb/data/dask-worker.yaml``, for ``DASK_CONFIG`` (a relative path is
    read from the worker's own folder, and Dask ignores a file that is not there)."""
    return str(Path(str(importlib.resources.files("qlb.data").joinpath(WORKER_CONFIG))).resolve())


def _speed_settings() -> tuple[bool, str | None]:
    """Run on a worker: whether Dask's profiler is on, and its MALLOC_TRIM_THRESHOLD_."""
    import dask
    return bool(dask.config.get("distributed.worker.profile.enabled", True)), os.environ.get("MALLOC_TRIM_THRESHOLD_")


def slow_workers(client: Any) -> list[str]:
    """The connected workers started without qlb's Dask settings (``worker_config_path``): Dask's
    profiler on, or a MALLOC_TRIM_THRESHOLD_ in their environment. Their numbers are the same; a
    fit runs about 25% slower there."""
    there = client.run(_speed_settings, on_error="return")
    return sorted(a for a, s in there.items() if not isinstance(s, BaseException) and (s[0] or s[1] is not None))


def worker_config() -> dict[str, Any]:
    """The settings of ``qlb/data/dask-worker.yaml`` as dotted keys for ``dask.config.set``
    (``{"distributed.worker.profile.enabled": False, ...}``): each setting replaces its own key,
    not a whole section of Dask's configuration."""
    import yaml                      # Dask's own dependency, as it reads its configuration files

    def leaves(tree: dict[str, Any], prefix: str) -> Iterator[tuple[str, Any]]:
        for key, value in tree.items():
            if isinstance(value, dict):
                yield from leaves(value, f"{prefix}{key}.")
            else:
                yield f"{prefix}{key}", value

    text = importlib.resources.files("qlb.data").joinpath(WORKER_CONFIG).read_text(encoding="utf-8")
    return dict(leaves(yaml.safe_load(text), ""))


def _connection_args() -> dict[str, Any]:
    """How this process connects to a scheduler: Dask's security settings (TLS), from its configuration."""
    from distributed.security import Security
    return Security().get_connection_args("client")


class _NotAScheduler(Exception):
    """Something accepts connections at the address, but does not answer as a Dask scheduler."""


PROBE_LISTEN = 0.5      # seconds a probe waits to see whether what accepted its connection hangs up at once


def _probe(spec: str, timeout: float) -> str | None:
    """What a plain connection to a ``tcp://`` or ``tls://`` address shows at once: "refused" when
    its host refuses the connection (nothing listens there), "hung up" when what accepts it closes it
    straight away (no Dask scheduler does: it greets), None otherwise, for Dask's own handshake to
    tell. Dask's connect would retry a refused connection until its timeout, and under load could
    take a hang-up for no answer."""
    url = urlsplit(spec if "://" in spec else f"tcp://{spec}")
    try:
        host, port = url.hostname, url.port
    except ValueError:
        return None
    if url.scheme not in ("tcp", "tls") or host is None or port is None:
        return None
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(PROBE_LISTEN)
            try:
                return "hung up" if sock.recv(1) == b"" else None
            except TimeoutError:                 # it waits for us to speak first: the handshake will tell
                return None
            except ConnectionResetError:
                return "hung up"
    except ConnectionRefusedError:
        return "refused"
    except OSError:               # no answer, or no route: Dask's connect says so after its timeout
        return None


def _handshake(address: str, timeout: float) -> None:
    """Connect to ``address`` and exchange Dask's handshake, then hang up: OSError when nothing
    accepts the connection within ``timeout`` s; _NotAScheduler when something does but hangs
    up on the handshake, or does not answer it within ``HANDSHAKE_TIMEOUT`` more (``Client``
    would wait for that answer forever)."""
    from distributed.comm import connect

    async def exchange() -> None:
        started = time.monotonic()
        try:
            comm = await connect(address, timeout=timeout, **_connection_args())
        except OSError as exc:
            # connect retries until the timeout while nothing accepts the connection: an error before
            # it comes from what accepted the connection and then hung up
            if time.monotonic() - started < timeout:
                raise _NotAScheduler(f"it hung up: {type(exc).__name__}") from None
            raise
        await comm.close()

    async def bounded() -> None:
        try:
            await asyncio.wait_for(exchange(), timeout + HANDSHAKE_TIMEOUT)
        except asyncio.TimeoutError:
            raise _NotAScheduler(f"no Dask handshake within {timeout + HANDSHAKE_TIMEOUT:g} s") from None

    asyncio.run(bounded())


def check_worker_code(client: Any, expected: dict[str, str] | None = None) -> None:
    """SchedulerError when a connected worker cannot run qlb or runs other code or numeric
    packages than ``expected`` (default: this process's ``code_fingerprint``): its results would
    silently differ. (Workers that join later are checked by every task they run.)"""
    here = expected or code_fingerprint()
    there = client.run(code_fingerprint, on_error="return")
    broken = sorted(a for a, theirs in there.items() if isinstance(theirs, BaseException))
    if broken:
        named = ", ".join(broken[:3]) + (f" and {len(broken) - 3} more" if len(broken) > 3 else "")
        raise SchedulerError(f"worker{'s' * (len(broken) > 1)} {named} cannot run qlb ({there[broken[0]]}); install "
                             "the same qlb and requirements.txt there (the same container image, or `pip install -e .` "
                             "of the same checkout)")
    for address, theirs in sorted(there.items()):
        if theirs != here:
            raise SchedulerError(_other_code(address, theirs, here))


def _other_code(worker: str, theirs: dict[str, str], here: dict[str, str]) -> str:
    differ = [k for k in here if theirs.get(k) != here[k]] or sorted(set(theirs) - set(here))
    return (f"worker {worker} runs other code than this process ({', '.join(differ)}: "
            f"{', '.join(f'{theirs.get(k)} vs {here.get(k)}' for k in differ)}); install the same qlb and "
            "requirements.txt there (the same container image, or `pip install -e .` of the same checkout) "
            "and restart it")


# ---------------------------------------------------------------- the code fingerprint

def code_fingerprint() -> dict[str, str]:
    """What this process computes with, as loaded: ``qlb``, a digest of the engine code the
    tasks run (every module of ``ENGINE_PACKAGES``, as imported into this process: the code of
    its functions and classes and its plain constants, never the files on disk, so a module
    edited after its import still counts as what runs; UI code such as qlb.present and qlb.cli
    is not part of it), and the Python version (major.minor) and the versions of the numeric
    packages as imported. Equal in two processes: the same numbers from the same inputs.
    Computed once per process."""
    return dict(_fingerprint())


@cache
def _fingerprint() -> tuple[tuple[str, str], ...]:
    digest = hashlib.sha256()
    for module in _engine_modules():
        digest.update(f"module {module.__name__}\0".encode())
        for name, value in sorted(vars(module).items()):      # by name: a package gains its submodules as imported
            if not (name.startswith("__") and name.endswith("__")):
                digest.update("".join([name, "=", *_parts(value, module.__name__, set()), "\0"]).encode())
    # the packaged ontology, which an engine function falls back to without one of the dataset's
    digest.update(importlib.resources.files("qlb.data").joinpath("ontology.json").read_bytes())
    versions = [(name, str(importlib.import_module(module).__version__)) for name, module in NUMERIC_PACKAGES.items()]
    return (("qlb", digest.hexdigest()[:16]), ("python", f"{sys.version_info.major}.{sys.version_info.minor}"),
            *versions)


def _engine_modules() -> list[types.ModuleType]:
    """Every module of ``ENGINE_PACKAGES``, imported (a task may need any of them), by name."""
    names = set(ENGINE_PACKAGES)
    for package in ENGINE_PACKAGES:
        path = importlib.import_module(package).__path__
        names.update(info.name for info in pkgutil.walk_packages(path, package + "."))
    return [importlib.import_module(name) for name in sorted(names)]


_PLAIN = (type(None), bool, int, float, complex, str, bytes)
_CODE_DUNDERS = (types.FunctionType, staticmethod, classmethod, property)


def _parts(value: Any, home: str, inside: set[int]) -> Iterator[str]:
    """Text that is equal for equal code and data in any process: no addresses, file paths, line
    numbers, docstrings or hash orders. ``home``: the module being read (what it defines is read
    in full, what it imports only named); ``inside``: the objects being read (a cycle is cut)."""
    if isinstance(value, _PLAIN):
        yield f"{type(value).__name__}:{value!r}"
        return
    if isinstance(value, enum.Enum):
        yield f"enum:{_name(type(value))}.{value.name}"
        return
    if isinstance(value, types.ModuleType):
        yield f"module:{value.__name__}"
        return
    if id(value) in inside:
        yield "cycle"
        return
    inside.add(id(value))
    try:
        yield from _compound(value, home, inside)
    finally:
        inside.discard(id(value))


def _compound(value: Any, home: str, inside: set[int]) -> Iterator[str]:
    if isinstance(value, (tuple, list)):
        yield type(value).__name__ + "("
        for item in value:
            yield from _parts(item, home, inside)
            yield ","
        yield ")"
    elif isinstance(value, (set, frozenset)):
        yield type(value).__name__ + "{" + ",".join(sorted("".join(_parts(v, home, set(inside))) for v in value)) + "}"
    elif isinstance(value, dict):
        yield "dict{"
        for k, v in value.items():
            yield from _parts(k, home, inside)
            yield ":"
            yield from _parts(v, home, inside)
            yield ","
        yield "}"
    elif isinstance(value, types.CodeType):
        yield from _code(value, home, inside)
    elif isinstance(value, types.FunctionType):
        if value.__module__ != home:
            yield f"ref:{_name(value)}"
            return
        yield f"function:{value.__qualname__}"
        yield from _code(value.__code__, home, inside, value.__doc__)
        yield from _parts((value.__defaults__, value.__kwdefaults__,
                           tuple(c.cell_contents for c in value.__closure__ or () if _filled(c))), home, inside)
    elif isinstance(value, (staticmethod, classmethod)):
        yield type(value).__name__ + ":"
        yield from _parts(value.__func__, home, inside)
    elif isinstance(value, property):
        yield "property:"
        yield from _parts((value.fget, value.fset, value.fdel), home, inside)
    elif isinstance(value, partial):
        yield "partial:"
        yield from _parts((value.func, value.args, value.keywords), home, inside)
    elif isinstance(value, type):
        yield from _class(value, home, inside)
    elif isinstance(value, re.Pattern):
        yield f"pattern:{value.pattern!r}/{value.flags}"
    elif isinstance(value, np.ndarray):
        yield f"array:{value.dtype.str}{value.shape}:{hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()}"
    elif dataclasses.is_dataclass(value):
        yield f"{_name(type(value))}("
        yield from _parts(tuple(getattr(value, f.name) for f in dataclasses.fields(value)), home, inside)
        yield ")"
    elif hasattr(value, "__wrapped__"):          # functools.cache, lru_cache, wraps
        yield f"{_name(type(value))}:"
        yield from _parts(value.__wrapped__, home, inside)
    else:                                        # an object of another kind: its type only
        yield f"object:{_name(type(value))}"


def _class(cls: type, home: str, inside: set[int]) -> Iterator[str]:
    if cls.__module__ != home:
        yield f"ref:{_name(cls)}"
        return
    yield f"class:{cls.__qualname__}({','.join(_name(b) for b in cls.__bases__)})"
    for name, member in sorted(vars(cls).items()):
        # of the names Python and the libraries set on a class, the methods and the annotations
        if name.startswith("__") and name.endswith("__") and not (
                isinstance(member, _CODE_DUNDERS) or name == "__annotations__"):
            continue
        yield name + "="
        yield from _parts(member, home, inside)
        yield ";"


def _code(code: types.CodeType, home: str, inside: set[int], doc: str | None = None) -> Iterator[str]:
    yield (f"code:{code.co_name}:{code.co_argcount},{code.co_posonlyargcount},{code.co_kwonlyargcount},"
           f"{code.co_flags}:{code.co_code.hex()}:{getattr(code, 'co_exceptiontable', b'').hex()}:"
           f"{code.co_names}{code.co_varnames}{code.co_freevars}{code.co_cellvars}")
    consts = code.co_consts
    if doc is not None and consts and consts[0] == doc:       # a docstring says, it does not compute
        consts = consts[1:]
    yield from _parts(consts, home, inside)


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents
    except ValueError:                           # a cell not yet bound
        return False
    return True


def _name(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', type(obj).__qualname__)}"
