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


def scoring_split(corpus: dict[str, dict], wanted: str | None = "test") -> str | None:
    """The split to score: ``wanted`` when the corpus has it, else every document."""
    return wanted if wanted and any(doc["split"] == wanted for doc in corpus.values()) else None
