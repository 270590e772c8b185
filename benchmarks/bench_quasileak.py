"""Budget (issue 7): scoring 5,000 documents x 5 detectors <= 10 s.

Generates the simulated corpus and the five built-in detectors' predictions on every document
(not timed), then times the scorer alone: per-document scoring and the corpus metrics for all
five detectors, and separately the breakdowns and the 2,000-resample bootstrap."""
from __future__ import annotations

import sys
import time

from qlb.quasileak.detectors import builtin_detectors
from qlb.quasileak.scoring import breakdowns, corpus_metrics, document_bootstrap, score_detector
from qlb.simulate.quasileak_sim import simulate_corpus


def main() -> int:
    docs = simulate_corpus(20261011)
    corpus = {d["doc_id"]: {"context_id": d["context_id"], "policy": d["policy"], "text": d["text"],
                            "groups": [(g["attribute"], tuple(map(tuple, g["cues"]))) for g in d["groups"]]}
              for d in docs}
    preds = {name: {i: det.detect(doc["text"], {}, doc["policy"], doc["groups"]).groups for i, doc in corpus.items()}
             for name, det in builtin_detectors().items()}
    t0 = time.perf_counter()
    scored = {name: score_detector(corpus, p) for name, p in preds.items()}
    metrics = {name: corpus_metrics(s) for name, s in scored.items()}
    core = time.perf_counter() - t0
    t1 = time.perf_counter()
    for s in scored.values():
        breakdowns(s)
        document_bootstrap(s)
    extra = time.perf_counter() - t1
    print(f"scoring {len(corpus):,} documents x {len(preds)} detectors: {core:.2f} s "
          f"(+ breakdowns and 2,000-resample bootstrap: {extra:.2f} s; total {core + extra:.2f} s)")
    for name, m in metrics.items():
        print(f"  {name:<16} complete F1 {m['complete_f1']:.3f}  graded F1 {m['graded_f1']:.3f}")
    ok = core + extra <= 10
    print(f"budget <= 10 s (scoring with breakdowns and intervals): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
