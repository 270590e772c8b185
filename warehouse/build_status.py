"""Where a background audit stands, for the dashboard (issue #17 goal 1).

An audit run in stages (``qlb audit --in-stages``, started in the background by ``qlb demo
--background``) stores each stage in its own short transaction, so the dashboard can read in
between. Between those commits it writes its progress to a small JSON file next to the
warehouse (``<warehouse>.build.json``, replaced atomically): the stage it is in, how far, the
stages already stored, and an ETA. Pages read it to say what they are waiting for. The file
never holds results: those are only in the warehouse.
"""
from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

# the stages of an audit in stages, in order, and the pages' words for them
STAGES = ("refusal", "decoding", "utility", "defenses")
STAGE_NAMES = {"refusal": "refusal and QuasiLeak", "decoding": "secret recovery",
               "utility": "downstream utility and fronts", "defenses": "defenses and WCPQ"}


@dataclass
class BuildStatus:
    """One audit in stages: ``state`` running / done / failed; ``stage`` the one being computed;
    ``fraction`` of the whole audit done (0..1, from its stage weights); ``eta_seconds`` left."""

    dataset_id: str
    run_id: str
    state: str = "running"
    stage: str = STAGES[0]
    stage_done: int = 0
    stage_total: int = 1
    fraction: float = 0.0
    eta_seconds: float | None = None
    stored: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    updated: float = field(default_factory=time.time)
    pid: int = field(default_factory=os.getpid)
    error: str | None = None
    command: str = ""            # the command that started it (what resumes it: the same options)

    @property
    def alive(self) -> bool:
        """Running and its process still exists (a killed build leaves a stale file)."""
        if self.state != "running":
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def describe(self) -> str:
        """One line: the stage, how far, the ETA."""
        eta = "" if self.eta_seconds is None else f", about {_minutes(self.eta_seconds)} left"
        return f"{STAGE_NAMES.get(self.stage, self.stage)}: {self.fraction:.0%} of the audit done{eta}"


def _minutes(seconds: float) -> str:
    return f"{max(1, round(seconds / 60))} min" if seconds >= 90 else f"{max(5, round(seconds / 5) * 5)} s"


def status_path(warehouse: str | Path) -> Path:
    """The status file of a warehouse: next to it, ``<name>.build.json``."""
    warehouse = Path(warehouse)
    return warehouse.with_name(warehouse.name + ".build.json")


def write_status(warehouse: str | Path, status: BuildStatus) -> None:
    """Replace the status file atomically (a reader never sees half of it)."""
    path = status_path(warehouse)
    status.updated = time.time()
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(asdict(status)), encoding="utf-8")
    os.replace(tmp, path)


def read_status(warehouse: str | Path) -> BuildStatus | None:
    """The warehouse's last audit in stages, or None when there is none (or the file is unreadable)."""
    try:
        raw = json.loads(status_path(warehouse).read_text(encoding="utf-8"))
        return BuildStatus(**raw)
    except (OSError, ValueError, TypeError):
        return None


def running_build(warehouse: str | Path, dataset_id: str | None = None) -> BuildStatus | None:
    """The audit in stages still running on this warehouse (for ``dataset_id`` when given), or None."""
    status = read_status(warehouse)
    if status is None or not status.alive or (dataset_id is not None and status.dataset_id != dataset_id):
        return None
    return status


class BuildRunning(RuntimeError):
    """Another process runs an audit in stages on this warehouse (it holds ``build_lock``)."""


_held: dict[str, int] = {}          # lock paths this process holds, and how deep (the lock is re-entrant here)
_held_guard = threading.Lock()


def lock_path(warehouse: str | Path) -> Path:
    """The lock file of a warehouse's audits in stages: next to it, ``<name>.build.lock``."""
    warehouse = Path(warehouse)
    return warehouse.with_name(warehouse.name + ".build.lock")


@contextmanager
def build_lock(warehouse: str | Path) -> Iterator[None]:
    """Held by the one audit in stages of a warehouse for as long as it runs: an OS lock on
    ``<warehouse>.build.lock`` (``fcntl.flock``), which the system releases when the process ends,
    however it ends, so a killed build never blocks the next one and a reused pid never counts.
    ``BuildRunning`` at once when another process holds it. Re-entrant within a process. Where
    the system has no ``flock`` (Windows), nothing is locked."""
    try:
        import fcntl
    except ImportError:          # pragma: no cover - not on the systems qlb runs its audits on
        yield
        return
    key = str(lock_path(warehouse).resolve())
    with _held_guard:
        if key in _held:
            _held[key] += 1
            handle = None
        else:
            handle = open(key, "a+")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                raise BuildRunning(f"another audit in stages is running on {warehouse}") from None
            _held[key] = 1
    try:
        yield
    finally:
        with _held_guard:
            _held[key] -= 1
            if _held[key] == 0:
                del _held[key]
                if handle is not None:
                    handle.close()           # closing the file releases the lock
