"""Budget (issue #17, goal 2): the full paper-scale demo (`qlb demo`: every audit, the five-family
attacker library also for the defenses, defenses of the demo's defense models) in <= 120 s on 2 cores.

Builds the demo into a new warehouse exactly as `qlb demo --jobs 2` does and prints the seconds of
each stage of the build (its profile at stage level) and the total against the budget. With
``--profile``, also profiles one (model, domain) decoding (the largest stage's unit of work) in
this process with cProfile and prints its most expensive functions.

    .venv/bin/python benchmarks/bench_full_demo.py [--jobs 2] [--profile]
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

from qlb.demo import DEMO_DATASET, build_demo

BUDGET = 120.0


def stage_seconds(path: Path, **build: object) -> list[tuple[str, float]]:
    """(stage, seconds) of one demo build into ``path`` (``build``: build_demo's options), in build order."""
    out: list[tuple[str, float]] = []
    current = [None, time.perf_counter()]

    def step(label: str, share: float, units: int) -> None:
        stage, now = label.split(":")[0], time.perf_counter()
        if stage != current[0]:
            if current[0] is not None:
                out.append((current[0], now - current[1]))
            current[0], current[1] = stage, now

    build_demo(path, step=step, **build)
    if current[0] not in (None, "done"):
        out.append((current[0], time.perf_counter() - current[1]))
    return out


def profile_one_decoding(path: Path, top: int = 15) -> None:
    """cProfile of one (model, domain) decoding of the demo's first model, in this process."""
    from qlb.runs.decoding import decoding_frame
    from qlb.tuple.decoding import decode_domain
    from warehouse.db import reader
    with reader(path) as con:
        frame = decoding_frame(con, DEMO_DATASET, "sim-alder")
    domain = str(frame["domain"].iloc[0])
    t0 = time.perf_counter()
    profiler = cProfile.Profile()
    profiler.enable()
    decode_domain("sim-alder", domain, frame[frame["domain"] == domain])
    profiler.disable()
    print(f"\none (model, domain) decoding, sim-alder / {domain}, one process: {time.perf_counter() - t0:.1f} s "
          f"(under the profiler); its {top} most expensive functions by own time:")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(top)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="worker processes for the audits (default 2)")
    parser.add_argument("--profile", action="store_true", help="also profile one (model, domain) decoding")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "qlb.duckdb"
        t0 = time.perf_counter()
        stages = stage_seconds(path, jobs=args.jobs)
        total = time.perf_counter() - t0
        for stage, seconds in stages:
            print(f"  {stage:<12} {seconds:7.1f} s  {seconds / total:4.0%}")
        print(f"full demo (qlb demo --jobs {args.jobs}): {total:.1f} s; budget <= {BUDGET:.0f} s: "
              f"{'PASS' if total <= BUDGET else 'FAIL'} ({total / BUDGET:.2f} x the budget)")
        if args.profile:
            profile_one_decoding(path)
    return 0 if total <= BUDGET else 1


if __name__ == "__main__":
    sys.exit(main())
