"""Budget (issue 3): scoring 9 models x 1,440 refusal responses <= 1 s.

Times the engine alone (score_responses + summarize) on the demo's 12,960 responses read from
the warehouse, best of 5, and, in the same run, a plain-Python per-response loop computing the
same overall recovery for comparison."""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from qlb.demo import build_demo
from qlb.tuple.refusal import score_responses, summarize
from warehouse import queries


def plain_loop(frame) -> dict[str, float]:
    out: dict[str, list[int]] = {}
    for model, status, choice, scores, gold in zip(frame["model"], frame["status"], frame["choice"],
                                                   frame["scores"], frame["mechanism"]):
        if status != "ok":
            continue
        c = out.setdefault(model, [0, 0])
        c[0] += 1
        if choice == gold:
            c[1] += 1
        elif choice == "WITHHOLD" and scores:
            s = {k: v for k, v in json.loads(scores).items() if k != "WITHHOLD"}
            if sum(s.values()) > 0:
                top = max(s.values())
                if [k for k, v in s.items() if v == top] == [gold]:
                    c[1] += 1
    return {m: hit / n for m, (n, hit) in out.items()}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "qlb.duckdb"
        build_demo(path, decode=False)
        con = duckdb.connect(str(path), read_only=True)
        frame = queries.fetch_df(con, "refusal_audit_input", ["simulated-reference"])
        con.close()
    times, loop_times = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        summary = summarize(score_responses(frame))
        times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        reference = plain_loop(frame)
        loop_times.append(time.perf_counter() - t0)
    best = min(times)
    a = summary[summary["domain"] == "all"].set_index("model")["overall_recovery"]
    assert all(abs(a[m] - reference[m]) < 1e-12 for m in reference), "engine and loop disagree"
    print(f"refusal audit, {len(frame):,} responses x {frame['model'].nunique()} models: best {best:.3f} s "
          f"(worst {max(times):.3f} s); plain loop of the overall recovery alone: {min(loop_times):.3f} s")
    ok = best <= 1.0
    print(f"budget <= 1 s: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
