"""Budget (issue #17, goal 4): the audit's cost grows linearly, in models and in worlds.

Times the audit at 1, 3, 9 and 27 models (at the base number of worlds) and at 1x, 2x and 4x
the worlds (at 3 models), prints each point's seconds and peak memory, and the growth exponent of
each series: the least-squares slope of log(seconds) on log(size). Budget: every exponent <= 1.1.

Each point is simulated with ``benchmarks/five_class_ontology.json`` (3 domains x 5 classes, the
custom-ontology path, which takes any number of pairs): ``--pairs`` pairs per class at 1x (default
24: 720 worlds, so 2x is the papers' 1,440), and models beyond the nine simulated behaviours are copies of them with another
seed and name. Each point runs in its own process (peak RSS from ``os.wait4``) and audits as
``qlb audit`` does with ``--jobs 2``: refusal, decoding, utility and fronts, with the decoder
families ``--families`` (default prior, logistic, template, to keep the 27-model point to minutes;
the defense audit is left out: it runs on a fixed subset of models).

    .venv/bin/python benchmarks/bench_scaling.py [--pairs 24] [--families prior logistic template]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ONTOLOGY = Path(__file__).with_name("five_class_ontology.json")
MODEL_COUNTS = (1, 3, 9, 27)
WORLD_FACTORS = (1, 2, 4)
BUDGET = 1.1


def point(n_models: int, pairs: int, families: list[str]) -> dict:
    """Simulate, ingest and audit one point in this process; seconds of the audit and its size."""
    from qlb.records.ontology import parse_ontology
    from qlb.runs.audit import run_audits
    from qlb.simulate import DEFAULT_SEED
    from qlb.simulate.tuple_sim import SIM_MODELS, simulate_native, simulate_refusal, simulate_worlds, write_jsonl
    from warehouse.db import writer
    from warehouse.ingest import IngestRequest, ingest_file
    from warehouse.ontologies import store_ontology

    text = ONTOLOGY.read_text()
    onto = parse_ontology(text, ONTOLOGY.name)
    worlds = simulate_worlds(DEFAULT_SEED, onto, pairs_per_class=pairs)
    native, refusal = [], []
    for i in range(n_models):
        behaviour, copy = SIM_MODELS[i % len(SIM_MODELS)], i // len(SIM_MODELS)
        name = behaviour.name if copy == 0 else f"{behaviour.name}~{copy}"
        for rows, out in ((simulate_native(worlds, behaviour, DEFAULT_SEED + copy, onto), native),
                          (simulate_refusal(worlds, behaviour, DEFAULT_SEED + copy, onto), refusal)):
            out += [{**r, "model": name} for r in rows]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        files = {"worlds": worlds, "responses": native, "refusal": refusal}
        with writer(tmp / "wh.duckdb") as con:
            store_ontology(con, "scaling", text, ONTOLOGY.name)
            for kind, rows in files.items():
                write_jsonl(tmp / f"{kind}.jsonl", rows)
                ingest_file(con, IngestRequest(kind, tmp / f"{kind}.jsonl", "scaling"))
            t0 = time.perf_counter()
            run_audits(con, "scaling", jobs=2, families=set(families), defenses=False)
            seconds = time.perf_counter() - t0
    return {"models": n_models, "worlds": len(worlds), "seconds": seconds}


def run_point(n_models: int, pairs: int, families: list[str]) -> dict:
    """``point`` in a child process, with the child's peak RSS."""
    proc = subprocess.Popen([sys.executable, __file__, "--point", str(n_models), str(pairs), "--families", *families],
                            stdout=subprocess.PIPE, cwd=Path(__file__).resolve().parents[1])
    out = proc.stdout.read().decode()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"point {n_models} models x {pairs} pairs failed")
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_mb"] = usage.ru_maxrss / 1024
    return result


def exponent(sizes: list[float], seconds: list[float]) -> float:
    """Least-squares slope of log(seconds) on log(size)."""
    return float(np.polyfit(np.log(sizes), np.log(seconds), 1)[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=24, help="pairs per class at 1x worlds (default 24: 720 worlds)")
    parser.add_argument("--families", nargs="+", default=["prior", "logistic", "template"])
    parser.add_argument("--point", nargs=2, type=int, metavar=("MODELS", "PAIRS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.point:
        print(json.dumps(point(args.point[0], args.point[1], args.families)))
        return 0
    by_models = [run_point(m, args.pairs, args.families) for m in MODEL_COUNTS]
    by_worlds = [run_point(3, args.pairs * f, args.families) for f in WORLD_FACTORS]
    for r in by_models + by_worlds:
        print(f"{r['models']:>3} models x {r['worlds']:>5} worlds: {r['seconds']:7.1f} s audit, "
              f"peak {r['peak_mb']:,.0f} MB")
    e_models = exponent([r["models"] for r in by_models], [r["seconds"] for r in by_models])
    e_worlds = exponent([r["worlds"] for r in by_worlds], [r["seconds"] for r in by_worlds])
    print(f"growth exponent in models (1, 3, 9, 27): {e_models:.2f}")
    print(f"growth exponent in worlds (1x, 2x, 4x, 3 models): {e_worlds:.2f}")
    ok = e_models <= BUDGET and e_worlds <= BUDGET
    print(f"budget both exponents <= {BUDGET}: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
