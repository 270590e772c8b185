"""Budgets (issue 4):
- the whole decoding audit of the demo (9 models x 3 domains x 5 views) <= 5 minutes with --jobs 2;
- one (model, view) recompute from the page <= 15 s (the page reuses the run's stored
  base-configuration scores by default; its "Refit from scratch" switch fits again);
- all bootstrap intervals and paired differences for the demo <= 2 s.

Builds the demo without decoding, then times `run_audits(decode=True, jobs=2)` (decoding only:
utility and defenses off) into the
warehouse, the intervals alone on its stored predictions, and page-style recomputes of one
(model, view): the page's default path (the heaviest view, full_native with all five families,
from the run's stored configuration scores: read, candidates, selection, test scoring, 2,000
resamples) and, for reference, refits of the 'choice' view with three and with five families."""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from qlb.runs.audit import run_audits
from qlb.tuple.recovery import (
    prediction_rows, recovery_tables, reselect_from_scores, run_decoding,
)
from qlb.tuple.decoding import with_subviews
from qlb.runs.decoding import decoding_frame
from warehouse import queries
from qlb.demo import DEMO_DATASET, build_demo
from warehouse.db import writer


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "qlb.duckdb"
        build_demo(path, decode=False)
        with writer(path) as con:
            t0 = time.perf_counter()
            run = run_audits(con, DEMO_DATASET, force=True, jobs=2, utility=False, defenses=False,
                             progress=lambda label, done, total: print(f"  {label} {done}/{total} "
                                                                       f"({time.perf_counter() - t0:.0f} s)", flush=True))
            audit_s = time.perf_counter() - t0
            all_preds = con.execute("SELECT model, view, defense, world_id, domain, pair_id, p_s1, correct, log_loss, "
                                    "candidate FROM decoder_predictions WHERE run_id = ?", [run.run_id]).df()
            frame = decoding_frame(con, DEMO_DATASET, "sim-alder")
            t4 = time.perf_counter()
            scores = queries.fetch_df(con, "decoder_config_scores_for",
                                      [run.run_id, "sim-alder", with_subviews(("full_native",))])
            configs = queries.fetch_df(con, "decoder_configs_for", [run.run_id])
            again = reselect_from_scores(scores, configs, frame, "sim-alder", "full_native")
            rec_again, _ = recovery_tables(prediction_rows(again))
            rc_stored = time.perf_counter() - t4
        t1 = time.perf_counter()
        recovery_tables(all_preds)
        boot_s = time.perf_counter() - t1
        t2 = time.perf_counter()
        run_decoding({"sim-alder": frame}, views=["choice"], families={"prior", "logistic", "template"})
        rc_fast = time.perf_counter() - t2
        t3 = time.perf_counter()
        run_decoding({"sim-alder": frame}, views=["choice"])
        rc_full = time.perf_counter() - t3
    pooled = run.recovery[run.recovery["scope"] == "pooled"].pivot(index="model", columns="view", values="accuracy")
    print((100 * pooled).round(1).to_string())
    print(f"decoding audit, {pooled.shape[0]} models x 3 domains x {pooled.shape[1]} views, --jobs 2: "
          f"{audit_s:.0f} s (budget 300 s: {'PASS' if audit_s <= 300 else 'FAIL'})")
    print(f"bootstrap intervals and paired differences ({len(all_preds):,} predictions, 2,000 resamples): "
          f"{boot_s:.2f} s (budget 2 s: {'PASS' if boot_s <= 2 else 'FAIL'})")
    same = rec_again.set_index(["view", "scope"])["accuracy"].equals(
        run.recovery[(run.recovery["model"] == "sim-alder") & (run.recovery["view"] == "full_native")]
        .set_index(["view", "scope"])["accuracy"])
    print(f"one (model, view) recompute from the page (default: the run's stored configuration scores), "
          f"full_native with its 3 subviews, all five families, 3 domains, 2,000 resamples: {rc_stored:.2f} s "
          f"(budget 15 s: {'PASS' if rc_stored <= 15 else 'FAIL'}; equals the stored run: {same})")
    print(f"  for reference, refit from scratch, view 'choice' (+ no_output), 3 domains: prior/logistic/template "
          f"{rc_fast:.1f} s, all five families {rc_full:.1f} s")
    return 0 if (audit_s <= 300 and boot_s <= 2 and rc_stored <= 15 and same) else 1


if __name__ == "__main__":
    sys.exit(main())
