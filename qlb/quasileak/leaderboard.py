"""The detector leaderboard of a corpus: every detector's metrics on one split, with
document-clustered bootstrap intervals and the arity / attribute / distance / context breakdowns
(the ``ql_scores`` rows)."""
from __future__ import annotations

import pandas as pd

from qlb.quasileak import scoring as quasileak


def score_tables(corpus: dict[str, dict], predictions: dict[str, dict[str, list]], split: str | None,
                 n_boot: int = 2000, seed: int = 20261011) -> pd.DataFrame:
    """Long-format scores of every detector on one split (the ``ql_scores`` rows)."""
    ids = [d for d, doc in corpus.items() if split is None or doc["split"] == split]
    rows = []
    for det, preds in sorted(predictions.items()):
        scores = quasileak.score_detector(corpus, preds, ids)
        ci = quasileak.document_bootstrap(scores, n_boot, seed)
        for metric, value in quasileak.corpus_metrics(scores).items():
            iv = ci.get(metric)
            rows.append((det, split or "all", "all", "all", metric, value,
                         iv.ci_low if iv else None, iv.ci_high if iv else None))
        for kind, slices in quasileak.breakdowns(scores).items():
            for name, metrics in slices.items():
                rows += [(det, split or "all", kind, name, m, v, None, None) for m, v in metrics.items()]
    return pd.DataFrame(rows, columns=["detector", "split", "slice_kind", "slice", "metric", "value", "ci_low", "ci_high"])


COVERAGE = "coverage"        # slice_kind of the rows that count the documents each detector answered
COVERAGE_COUNTS = ("documents", "answered", "failed", "missing")


def coverage_rows(coverage: pd.DataFrame, split: str | None, detectors: list[str]) -> pd.DataFrame:
    """``ql_scores`` rows (slice_kind ``COVERAGE``) that keep, with a run's scores, which documents of
    the scored split (None: every document) each of ``detectors`` answered when the run scored it:
    from ``coverage`` (the ``coverage_frame`` counts per detector and split: documents, predicted, failed),
    the split's documents, those answered (a prediction that is not a failure), failed and missing (no
    prediction: it counts as reporting nothing). A detector's predictions change in place, so a later
    reading would describe other data than the scores."""
    on = coverage if split is None else coverage[coverage["split"] == split]
    sums = on.groupby("detector")[["documents", "predicted", "failed"]].sum().reindex(detectors, fill_value=0)
    counts = {"documents": sums["documents"], "answered": sums["predicted"] - sums["failed"],
              "failed": sums["failed"], "missing": sums["documents"] - sums["predicted"]}
    rows = [(det, split or "all", COVERAGE, "all", name, float(counts[name][det]), None, None)
            for det in detectors for name in COVERAGE_COUNTS]
    return pd.DataFrame(rows, columns=["detector", "split", "slice_kind", "slice", "metric", "value", "ci_low",
                                       "ci_high"])


def scoring_split(corpus: dict[str, dict], wanted: str | None = "test") -> str | None:
    """The split to score: ``wanted`` when the corpus has it, else every document."""
    return wanted if wanted and any(doc["split"] == wanted for doc in corpus.values()) else None
