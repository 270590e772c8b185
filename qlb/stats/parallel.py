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
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import re
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import pandas as pd
from threadpoolctl import threadpool_limits

SCHEDULER_ENV_VAR = "QLB_SCHEDULER"
CONNECT_TIMEOUT = 10.0           # seconds to reach a scheduler before giving up
TASK_RETRIES = 2                 # Dask reruns of a task that raised (a lost worker's tasks are rescheduled anyway)
# what must be the same on every worker for its numbers to equal this process's
NUMERIC_PACKAGES = ("numpy", "pandas", "scipy", "scikit-learn")
_LOCAL = re.compile(r"local:(\d+)")
_ADDRESS = re.compile(r"([a-z][a-z0-9+]*://)?(\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]+):\d+")   # [protocol://]host:port


class SchedulerError(ValueError):
    """A Dask scheduler that cannot be used: a malformed address, one that does not answer, or
    workers that run other code than this process."""


@dataclass(frozen=True)
class Workers:
    """Where independent tasks run: ``jobs`` local processes (joblib's loky; 1 runs them in
    this process), or, with ``client`` (a ``distributed.Client``, opened and closed by
    ``dask_workers``), the workers of that Dask scheduler. ``retries``: how often Dask reruns a
    task that raised; a task whose worker died is rescheduled on another worker by the scheduler
    itself (up to its ``distributed.scheduler.allowed-failures``)."""

    jobs: int = 1
    client: Any = None
    retries: int = TASK_RETRIES

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
    if progress and total:
        progress(0, total)
    workers = jobs if isinstance(jobs, Workers) else Workers(jobs)
    fn = partial(_one_blas_thread, fn)
    if workers.client is not None:
        return _on_dask(workers, fn, list(calls), total, progress)
    from joblib import Parallel, delayed     # imported here: pages that never fit stay light
    n = workers.jobs
    runner = Parallel(n_jobs=n, return_as="generator", backend="loky" if n != 1 else "sequential")
    out = []
    for i, res in enumerate(runner(delayed(fn)(*args) for args in calls), start=1):
        out.append(res)
        if progress:
            progress(i, total)
    return out


def _one_blas_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` with one BLAS and OpenMP thread in this process (see the module docstring)."""
    with threadpool_limits(limits=1):
        return fn(*args)


def _on_dask(workers: Workers, fn: Callable[..., Any], calls: list[tuple], total: int,
             progress: Callable[[int, int], None] | None) -> list:
    """Every call as one Dask task. The arguments travel inside the tasks (never scattered:
    scattered data dies with its worker, a task's arguments stay with the scheduler and so
    survive it); ``pure=False`` keeps two calls with equal arguments two tasks."""
    if not calls:
        return []
    from distributed import as_completed
    client = workers.client
    futures = client.map(fn, *zip(*calls), pure=False, retries=workers.retries)
    position = {f.key: i for i, f in enumerate(futures)}
    out: list[Any] = [None] * len(futures)
    try:
        for done, future in enumerate(as_completed(futures), start=1):
            out[position[future.key]] = future.result()
            if progress:
                progress(done, total)
    except BaseException:
        client.cancel(futures)      # after a failure (or Ctrl+C) nothing of this stage keeps running
        raise
    return out


def missing_splits(frame: pd.DataFrame) -> str | None:
    """Why a domain cannot be fitted, selected and scored: a split without worlds, or None."""
    missing = [s for s in ("train", "validation", "test") if not (frame["split"] == s).any()]
    return f"no {' or '.join(missing)} worlds" if missing else None


# ---------------------------------------------------------------- Dask

def check_scheduler(spec: str) -> str:
    """``spec`` stripped when it is ``local:N`` (N >= 1) or a scheduler address
    (``[protocol://]host:port``); SchedulerError naming what was expected otherwise."""
    text = spec.strip()
    local = _LOCAL.fullmatch(text)
    if (local and int(local.group(1)) >= 1) or (not local and _ADDRESS.fullmatch(text)):
        return text
    raise SchedulerError("expected local:N (N worker processes on this machine, N >= 1) or a Dask scheduler "
                         f"address such as tcp://10.0.0.5:8786, not {spec!r}")


@contextmanager
def dask_workers(spec: str, timeout: float | None = None) -> Iterator[Workers]:
    """The workers of a Dask scheduler for the duration of the block: ``spec`` is its address
    (``tcp://host:port``), or ``local:N`` to start a LocalCluster of N single-threaded worker
    processes on this machine (stopped on exit). SchedulerError when the scheduler does not
    answer within ``timeout`` seconds (default ``CONNECT_TIMEOUT``) or its workers run other
    code than this process."""
    spec = check_scheduler(spec)
    timeout = CONNECT_TIMEOUT if timeout is None else timeout
    local = _LOCAL.fullmatch(spec)
    from distributed import Client, LocalCluster       # imported here: only a cluster run pays for it
    cluster = None
    try:
        if local:
            cluster = LocalCluster(n_workers=int(local.group(1)), threads_per_worker=1, processes=True,
                                   host="127.0.0.1", dashboard_address="127.0.0.1:0")
            client = Client(cluster, timeout=timeout)
        else:
            client = Client(spec, timeout=timeout)
    except OSError as exc:
        if cluster is not None:
            cluster.close()
        raise SchedulerError(f"cannot reach the Dask scheduler at {spec}: no answer within {timeout:g} s "
                             f"({type(exc).__name__}; is a `dask scheduler` running there?)") from None
    try:
        check_worker_code(client)
        yield Workers(client=client)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def code_fingerprint() -> dict[str, str]:
    """What this process computes with: a digest of qlb's source files and the versions of the
    numeric packages (equal on two machines: the same numbers from the same inputs)."""
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    versions = {name: importlib.metadata.version(name) for name in NUMERIC_PACKAGES}
    return {"qlb": digest.hexdigest()[:16], **versions}


def check_worker_code(client: Any, expected: dict[str, str] | None = None) -> None:
    """SchedulerError when a connected worker cannot import qlb or runs other code or numeric
    packages than ``expected`` (default: this process's ``code_fingerprint``): its results would
    silently differ."""
    here = expected or code_fingerprint()
    try:
        there = client.run(code_fingerprint)
    except ImportError as exc:
        raise SchedulerError(f"the scheduler's workers cannot import qlb ({exc}); install the same qlb "
                             "(pip install -e .) and requirements.txt on every worker") from None
    for address, theirs in sorted(there.items()):
        differ = [k for k in here if theirs.get(k) != here[k]]
        if differ:
            raise SchedulerError(f"worker {address} runs other code than this process ({', '.join(differ)}: "
                                 f"{', '.join(f'{theirs.get(k)} vs {here[k]}' for k in differ)}); install the "
                                 "same qlb and requirements.txt on every worker")
