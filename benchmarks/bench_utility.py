"""Budgets (issue 5): the whole utility audit of the demo (9 models x 5 views x 3 tasks x 6
profiles, fit, select, replay, per-world actions, intervals, differences) <= 2 minutes; one
what-if replay (every model, choice and full native, edited costs, on the run's frozen fits)
<= 5 s.

Builds the demo without decoding (which stores the utility audit), then times, in one run:
the utility audit alone with --jobs 2 (as `qlb audit` and `qlb demo` run it), and the what-if
replay exactly as the Cost-profile sensitivity page runs it (load the frozen candidates, q on
validation and test, re-select, replay, tables), best of 3 and the first (cold) one."""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import duckdb

from qlb.runs.decoding import decoding_frame
from qlb.demo import DEMO_DATASET, build_demo
from qlb.tuple.utility import (action_rows, policy_rows, prepare_domain, result_tables, run_utility, stored_candidates,
                         whatif)
from warehouse import queries


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "qlb.duckdb"
        build_demo(path, decode=False)
        con = duckdb.connect(str(path), read_only=True)
        models = queries.fetch_df(con, "models_with_responses", [DEMO_DATASET])["model"].tolist()
        t0 = time.perf_counter()
        frames = {m: decoding_frame(con, DEMO_DATASET, m) for m in models}
        results = run_utility(frames, jobs=2)
        actions = action_rows(results)
        res, diff = result_tables(actions)
        policy_rows(results)
        full = time.perf_counter() - t0
        run_id = queries.fetch_df(con, "utility_runs", [DEMO_DATASET])["run_id"][0]
        stored = {m: stored_candidates(queries.fetch_df(con, "recipient_models_for", [run_id, m])) for m in models}
        con.close()

        def replay_once() -> float:
            t = time.perf_counter()
            prepared = []
            for m in models:
                for (model, domain), by_view in sorted(stored[m].items()):
                    fitted = {v: by_view[v] for v in ("choice", "full_native")}
                    f = frames[m]
                    prepared.append(prepare_domain(model, domain, f[f["domain"] == domain], tuple(fitted), fitted))
            whatif(prepared, review=3.0, check=0.2, columns={"it": {"APPLICATION": [0, 6, 6, 6, 2.5]}})
            return time.perf_counter() - t

        times = [replay_once() for _ in range(3)]
    print(f"utility audit: {len(models)} models x 5 views x 3 tasks x 6 profiles, {len(actions):,} per-world actions, "
          f"{len(res):,} result rows: {full:.1f} s (budget 120 s: {'PASS' if full <= 120 else 'FAIL'})")
    print(f"what-if replay, {len(models)} models x 2 views x 3 tasks: first {times[0]:.2f} s, best {min(times):.2f} s "
          f"(budget 5 s: {'PASS' if max(times) <= 5 else 'FAIL'})")
    return 0 if full <= 120 and max(times) <= 5 else 1


if __name__ == "__main__":
    sys.exit(main())
