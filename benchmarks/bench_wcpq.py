"""Budget (issue 6): the WCPQ strict mapping of 1,440 worlds (one model, every split and domain)
against the 286-vector static grid under the model's 18 frozen full-native policies <= 30 s.

Builds the demo without decoding (its utility audit freezes the policies), then times
map_domain over the three domains of one model (best and worst of 3). In the same run it times
the plain path (each world x codeword through the recipients' ordinary feature code) on a
sample of worlds and reports the per-world speed ratio."""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np

from qlb.runs.decoding import decoding_frame
from qlb.tuple.defenses import static_grid
from qlb.demo import DEMO_DATASET, build_demo
from qlb.records.ontology import load_ontology
from qlb.tuple.recipients import candidate_ranks
from qlb.runs.policies import frozen_policies
from qlb.tuple.wcpq import map_domain, signature
from warehouse import queries

MODEL = "sim-alder"


def plain(frame, domain, policies, n_worlds: int) -> float:
    """Seconds per world for the unvectorized search (every codeword, every policy)."""
    classes = load_ontology().domain(domain).classes
    code = static_grid()
    sub = frame[frame["status"] == "ok"].head(n_worlds).reset_index(drop=True)
    t0 = time.perf_counter()
    for i in range(len(sub)):
        one = sub.iloc[[i]]
        rank = candidate_ranks(one, classes)
        native = [signature(p, p.recipient.q(one), rank) for p in policies]
        for j in range(len(code)):
            c = one.copy()
            c["probabilities"] = [{k: float(v) for k, v in zip(classes, code[j])}]
            if not np.isnan(c["confidence"].iloc[0]):
                c["confidence"] = float(code[j].max())
            if all((signature(p, p.recipient.q(c), rank) == s).all() for p, s in zip(policies, native)):
                break
    return (time.perf_counter() - t0) / len(sub)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "qlb.duckdb"
        build_demo(path, decode=False)
        con = duckdb.connect(str(path), read_only=True)
        run_id = queries.fetch_df(con, "utility_runs", [DEMO_DATASET])["run_id"][0]
        policies = frozen_policies(con, run_id, MODEL)
        frame = decoding_frame(con, DEMO_DATASET, MODEL)
        con.close()
    times, covered = [], 0
    for _ in range(3):
        t0 = time.perf_counter()
        covered = 0
        for domain, ps in policies.items():
            m = map_domain(frame[frame["domain"] == domain], domain, ps)
            covered += int((m.code_index >= 0).sum())
        times.append(time.perf_counter() - t0)
    per_world_fast = min(times) / len(frame)
    per_world_plain = plain(frame[frame["domain"] == "delivery"], "delivery", policies["delivery"], 3)
    print(f"WCPQ mapping, {MODEL}: {len(frame):,} worlds x 286 codewords x "
          f"{len(next(iter(policies.values())))} policies: best {min(times):.2f} s, worst {max(times):.2f} s; "
          f"{covered:,} mapped to a codeword")
    print(f"plain per-(world, codeword) search: {per_world_plain:.2f} s per world vs {per_world_fast * 1000:.1f} ms "
          f"vectorized ({per_world_plain / per_world_fast:,.0f}x)")
    ok = max(times) <= 30
    print(f"budget <= 30 s: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
