"""Asking many request bodies with at most N requests in flight (COLLECT.md section 3).

Threads carry the requests; above one request in flight, HTTP transports spread the threads over
a few worker processes, because one Python process cannot keep eight connections busy (measured
on 2 cores: one process with eight threads is slower than one thread, two processes are twice as
fast). The caller gets every world's replies as they arrive and stores them; a ``stop`` reply
(408, 429, 5xx, a timeout, a connection error) ends dispatching: no new request is sent, the
ones in flight finish and are returned.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from qlb.collect.transports import Reply, Transport, call_with_retries

Item = tuple[str, str, dict[str, Any]]                  # (world_id, request sha256, body)
Result = tuple[str, str, list[Reply]]                   # (world_id, request sha256, every attempt)


@dataclass(frozen=True)
class DispatchPlan:
    """How to ask: requests in flight, pacing between dispatches, retries and their backoff."""

    probe: str
    concurrency: int = 1
    interval: float = 0.0
    retries: int = 0
    backoff: float = 1.0


class _Pacer:
    """At most one dispatch per ``interval`` seconds across every thread (and process)."""

    def __init__(self, interval: float, lock: Any, next_time: Any) -> None:
        self.interval, self.lock, self.next_time = interval, lock, next_time

    def wait(self, sleep: Callable[[float], None]) -> None:
        if self.interval <= 0:
            return
        with self.lock:
            delay = self.next_time.value - time.monotonic()
            if delay > 0:
                sleep(delay)
            self.next_time.value = max(time.monotonic(), self.next_time.value) + self.interval


class _Box:
    """A plain ``.value`` holder for the in-process pacer."""

    def __init__(self, value: float) -> None:
        self.value = value


def _ask(transport: Transport, plan: DispatchPlan, todo: Any, done: Any, stop: Any, pacer: _Pacer,
         sleep: Callable[[float], None], turn: threading.Semaphore | None = None) -> None:
    """One thread: take bodies until the end marker (None) or the collection stops. The get
    blocks: a process queue's ``get_nowait`` may find it empty while bodies are still on their way
    from the parent's feeder thread (a thread that gave up then would leave worlds unasked).
    ``turn`` (one request in flight): a request is sent only once the caller has read the reply
    before it, so a stop the caller decides from that reply sends nothing more."""
    while not stop.is_set():
        if turn is not None:
            turn.acquire()
            if stop.is_set():
                return
        item = todo.get()
        if item is None:
            return
        pacer.wait(sleep)
        if stop.is_set():
            return
        world_id, sha, body = item
        replies = call_with_retries(transport, body, plan.probe, plan.retries, plan.backoff, sleep)
        if replies[-1].outcome == "stop":
            stop.set()
        done.put((world_id, sha, replies))


def _process_main(make_transport: Callable[[], Transport], plan: DispatchPlan, threads: int, todo: Any, done: Any,
                  stop: Any, lock: Any, next_time: Any) -> None:
    """A worker process: ``threads`` asking threads over one transport of its own."""
    transport = make_transport()
    pacer = _Pacer(plan.interval, lock, next_time)
    try:
        workers = [threading.Thread(target=_ask, args=(transport, plan, todo, done, stop, pacer, time.sleep),
                                    daemon=True) for _ in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
    finally:
        transport.close()


def worker_processes(concurrency: int, cpus: int | None = None) -> int:
    """How many processes carry ``concurrency`` requests in flight: one for a single request,
    else one per core, each with concurrency / processes threads (measured on 2 cores at
    --concurrency 8 against a local stub, whole collection of 1,440 worlds: 2 processes x 4
    threads 520-670 answers/s, 4 x 2 460-580: the extra processes' start-up costs more than
    they gain)."""
    cpus = cpus or os.cpu_count() or 1
    return 1 if concurrency <= 1 else max(1, min(concurrency, cpus))


def _context() -> Any:
    """Worker processes start from a fork server that has imported the transports once (never a
    fork of this process, which may hold DuckDB and threads); spawn where there is none."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["qlb.collect.transports"])
    return ctx


def dispatch(items: Sequence[Item], plan: DispatchPlan, transport: Transport,
             make_transport: Callable[[], Transport] | None = None,
             sleep: Callable[[float], None] = time.sleep, cancel: threading.Event | None = None,
             halt: threading.Event | None = None) -> Iterator[Result]:
    """Yield every world's replies as they arrive. ``make_transport`` (a picklable factory)
    lets requests be spread over worker processes; without it, or for one request in flight,
    everything runs in threads of this process over ``transport``. Closing the generator early
    stops dispatching; so does setting ``cancel`` (from another thread: the generator then ends
    within a tenth of a second, its worker processes shut down, without waiting for the next reply).
    Setting ``halt`` (the caller decided to stop from the replies it read, say five refused keys)
    ends dispatching as a ``stop`` reply does: no new request is sent, and the replies of those in
    flight are still yielded, so every request sent is archived."""
    processes = worker_processes(plan.concurrency) if make_transport is not None else 1
    if processes <= 1:
        yield from _in_threads(items, plan, transport, sleep, cancel, halt)
    else:
        yield from _in_processes(items, plan, make_transport, processes, cancel, halt)


def _cancelled(cancel: threading.Event | None) -> bool:
    return cancel is not None and cancel.is_set()


def _in_threads(items: Sequence[Item], plan: DispatchPlan, transport: Transport,
                sleep: Callable[[float], None], cancel: threading.Event | None = None,
                halt: threading.Event | None = None) -> Iterator[Result]:
    todo: queue.SimpleQueue = queue.SimpleQueue()
    for item in items:
        todo.put(item)
    n_threads = max(1, min(plan.concurrency, len(items)))
    for _ in range(n_threads):
        todo.put(None)
    done: queue.SimpleQueue = queue.SimpleQueue()
    stop = threading.Event()
    pacer = _Pacer(plan.interval, threading.Lock(), _Box(time.monotonic()))
    # one request in flight and a caller that may halt: in turns, so that its stop (say, after the
    # fifth refused key) comes before the next request, not after it
    turn = threading.Semaphore(1) if n_threads == 1 and halt is not None else None
    threads = [threading.Thread(target=_ask, args=(transport, plan, todo, done, stop, pacer, sleep, turn),
                                daemon=True) for _ in range(n_threads)]
    for t in threads:
        t.start()
    try:
        while (any(t.is_alive() for t in threads) or not done.empty()) and not _cancelled(cancel):
            if _cancelled(halt):
                stop.set()                         # the threads finish the request they are on, then end
            try:
                result = done.get(timeout=0.05)
            except queue.Empty:
                continue
            yield result
            if turn is not None:                   # the caller has read that reply: the next request may go
                if _cancelled(halt):
                    stop.set()
                turn.release()
    finally:
        stop.set()                                 # a consumer that stops early ends dispatching
        if turn is not None:
            turn.release()                         # a thread waiting for its turn sees the stop and ends


def _in_processes(items: Sequence[Item], plan: DispatchPlan, make_transport: Callable[[], Transport],
                  processes: int, cancel: threading.Event | None = None,
                  halt: threading.Event | None = None) -> Iterator[Result]:
    ctx = _context()
    todo, done = ctx.Queue(), ctx.Queue()
    for item in items:
        todo.put(item)
    per_process = -(-plan.concurrency // processes)
    for _ in range(processes * per_process):
        todo.put(None)
    stop = ctx.Event()
    lock, next_time = ctx.Lock(), ctx.Value("d", time.monotonic())
    workers = [ctx.Process(target=_process_main, args=(make_transport, plan, per_process, todo, done, stop, lock,
                                                       next_time), daemon=True) for _ in range(processes)]
    for w in workers:
        w.start()
    received = 0
    try:
        while received < len(items):
            if _cancelled(cancel):
                return
            if _cancelled(halt):
                stop.set()                         # the workers finish the requests they are on, then end
            try:
                result = done.get(timeout=0.1)
            except queue.Empty:
                if not any(w.is_alive() for w in workers):
                    break
                continue
            received += 1
            yield result
        stop.set()
        for w in workers:
            w.join(timeout=30)
        while received < len(items):               # answers that arrived while the workers stopped
            try:
                result = done.get(timeout=0.2)
            except queue.Empty:
                break
            received += 1
            yield result
    finally:
        # also on an exception raised here (Ctrl+C, or SIGTERM turned into one by the command line): the
        # workers never outlive the collection, whatever request they were waiting on
        stop.set()
        for w in workers:
            if w.is_alive():
                w.terminate()
        for w in workers:
            w.join(timeout=5)
        # bodies (and end markers) nobody will take any more: do not wait to flush them at exit
        todo.cancel_join_thread()
        todo.close()
