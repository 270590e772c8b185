"""Budget (issue #17, goal 2): the full paper-scale demo (`qlb demo`: every audit, the five-family
attacker library also for the defenses, defenses of the demo's defense models) in <= 120 s on 2 cores.

Builds the demo into a new warehouse exactly as `qlb demo --jobs 2` does and prints the seconds of
each stage of the build (its profile at stage level) and the total against the budget. With
``--profile``, also profiles one (model, domain) decoding (the largest stage's unit of work) in
this process with cProfile and prints its most expensive functions. With ``--floor``, also prints
what the goal's configuration (the five families also for the defenses, defenses on all nine
models) needs for its random forests alone: how many forests, one forest's time on the demo's
own features, and the seconds on two cores, a lower bound for any schedule that keeps the spec's
forests (scikit-learn's trees, the same numbers).

    .venv/bin/python benchmarks/bench_full_demo.py [--jobs 2] [--profile] [--floor]
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


def forests_per_view() -> tuple[dict[str, int], dict[str, int]]:
    """Random forests fitted per view for one (model, domain): by the decoding audit (every view),
    and by a defense audit whose attacker has every family (the native control's views; each other
    endpoint refits the views its release changes, see ``attack_endpoint``; WCPQ needs the domain's
    frozen policies, which every demo domain has; the learned WCPQ variants count as endpoints)."""
    from qlb.tuple.decoders import base_library
    from qlb.tuple.decoding import FOLDS, with_subviews
    from qlb.tuple.defense_audit import ALL_ENDPOINTS, VIEW, reused_views
    from qlb.tuple.release_views import VIEWS

    def forests(view: str) -> int:
        return sum(fam == "forest" for fam, _, _ in base_library(view, ("A", "B"), ("a", "b"))) * (FOLDS + 1)

    decoding = {v: forests(v) for v in with_subviews(VIEWS)}
    defenses: dict[str, int] = {}
    for ep in ALL_ENDPOINTS:
        for v in with_subviews((VIEW,)):
            if v not in reused_views(ep):
                defenses[v] = defenses.get(v, 0) + forests(v)
    return decoding, defenses


def forest_floor(path: Path, jobs: int, rounds: int = 3) -> float:
    """The forests' share of the goal's configuration, timed on the demo's own features (see the
    module docstring): for each view and forest configuration, its forest on a fold's training
    worlds of one (model, domain) (the median of ``rounds``; four of a configuration's five fits are
    on a fold, the fifth on more worlds), times the number of such forests; returns the seconds on
    ``jobs`` cores."""
    from qlb.records.ontology import load_ontology
    from qlb.runs.decoding import decoding_frame
    from qlb.simulate.tuple_sim import SIM_MODELS
    from qlb.tuple.decoders import base_library
    from qlb.tuple.decoding import grouped_folds, labels, split_frames
    from qlb.tuple.forest import grow_forest
    from qlb.tuple.release_views import apply_view, with_public_features
    from warehouse.db import reader

    with reader(path) as con:
        frame = decoding_frame(con, DEMO_DATASET, SIM_MODELS[0].name)
    domains = sorted(frame["domain"].unique())
    dom = load_ontology().domain(domains[0])
    train, _, _ = split_frames(with_public_features(frame[frame["domain"] == domains[0]]))
    rows, _ = grouped_folds(train)[0]
    decoding, defenses = forests_per_view()
    per_domain, count = 0.0, 0
    for view in decoding:
        fold = apply_view(train, view).iloc[rows]
        y = labels(fold)
        configs = [est for fam, _, est in base_library(view, dom.classes, dom.mechanisms) if fam == "forest"]
        Z = configs[0]._fit_features(fold)            # the view's features, built once: only the trees are timed
        for est in configs:
            times = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                grow_forest(Z, y, est.n_estimators, est.max_depth, est.min_samples_leaf, est.random_state)
                times.append(time.perf_counter() - t0)
            n = (decoding[view] + defenses.get(view, 0)) // len(configs)
            per_domain += n * sorted(times)[len(times) // 2]
            count += n
    tasks = len(SIM_MODELS) * len(domains)
    seconds = per_domain * tasks / jobs
    print(f"\nthe goal's configuration grows {count * tasks:,} random forests: {sum(decoding.values())} per (model, "
          f"domain) for the decoding audit and {sum(defenses.values())} for a five-family defense audit, over {tasks} "
          f"(model, domain) pairs; on the demo's features (a fold: {len(rows)} training worlds) they take "
          f"{per_domain:.1f} s per (model, domain). The forests alone: {seconds:.0f} s on {jobs} cores, "
          f"{seconds / BUDGET:.1f} x the budget.")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="worker processes for the audits (default 2)")
    parser.add_argument("--profile", action="store_true", help="also profile one (model, domain) decoding")
    parser.add_argument("--floor", action="store_true",
                        help="also time the random forests the goal's configuration needs (a lower bound)")
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
        if args.floor:
            forest_floor(path, args.jobs)
    return 0 if total <= BUDGET else 1


if __name__ == "__main__":
    sys.exit(main())
