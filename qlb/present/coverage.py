"""Which documents each privacy detector answered (``ql_coverage``: per detector and split, the corpus's
documents, those with a prediction line, those whose line records a failure), said beside its scores.

A document without an answer counts as "reported nothing" in the scores (QUASILEAK.md), so a detector
whose endpoint failed on every document scores like one that ran and found nothing, and a truncated
predictions file like a detector that missed the rest: the leaderboard, its findings and the report say
how many documents each detector answered."""
from __future__ import annotations

import pandas as pd

from qlb.present.names import count_of, listing

COLUMN = "answered documents"
HELP = ("Answered documents: those of the split the detector returned a prediction for, not a failure; the "
        "others (an endpoint that failed, a document missing from a predictions file) count as reporting nothing.")


def coverage_on(coverage: pd.DataFrame, split: str) -> pd.DataFrame:
    """Per detector on ``split``: documents, answered (a prediction line without a failure), failed and
    missing (no prediction line); empty when the run's dataset has no coverage rows."""
    if coverage.empty:
        return pd.DataFrame(columns=["documents", "answered", "failed", "missing"])
    on = coverage[coverage["split"] == split].set_index("detector")
    return pd.DataFrame({"documents": on["documents"].astype(int), "failed": on["failed"].astype(int),
                         "answered": (on["predicted"] - on["failed"]).astype(int),
                         "missing": (on["documents"] - on["predicted"]).astype(int)})


def coverage_cell(row: pd.Series) -> str:
    """``100 of 100``; ``57 of 100 (43 failed)``; ``9 of 144 (135 not in the predictions)``."""
    said = f"{int(row['answered']):,} of {int(row['documents']):,}"
    why = [f"{int(row['failed']):,} failed"] if row["failed"] else []
    why += [f"{int(row['missing']):,} not in the predictions"] if row["missing"] else []
    return said + (f" ({'; '.join(why)})" if why else "")


def coverage_column(detectors: pd.Series, on: pd.DataFrame) -> pd.Series | None:
    """The leaderboard's ``COLUMN`` for ``detectors`` (in their order), or None when every detector
    answered every document (nothing to say)."""
    if on.empty or not ((on["failed"] > 0) | (on["missing"] > 0)).any():
        return None
    cells = on.apply(coverage_cell, axis=1)
    return detectors.map(cells).fillna("—")


def unanswered(on: pd.DataFrame) -> list[str]:
    """The detectors that answered no document of the split: their scores measure nothing."""
    return sorted(on.index[(on["answered"] == 0) & (on["documents"] > 0)]) if not on.empty else []


def coverage_sentence(on: pd.DataFrame, split: str) -> str | None:
    """The detectors that answered none, or only part, of the split's documents, and what their rows
    then measure; None when every detector answered every document."""
    if on.empty:
        return None
    none = unanswered(on)
    part = on[(on["answered"] > 0) & (on["answered"] < on["documents"])]
    if not none and part.empty:
        return None
    n = int(on["documents"].max())
    out = []
    if none:
        failed = all(on.loc[d, "failed"] == on.loc[d, "documents"] for d in none)
        out.append(f"{listing(none)} answered none of the {count_of(n, split + ' document')}"
                   + (" (every request failed)" if failed else "")
                   + f": {'its row measures' if len(none) == 1 else 'their rows measure'} nothing and "
                   f"{'is' if len(none) == 1 else 'are'} left out of the findings.")
    if not part.empty:
        said = [f"{d} {int(r['answered']):,} of {int(r['documents']):,}" for d, r in part.iterrows()]
        out.append(f"Answered only part of the {split} documents: {listing(said)}; the others count as "
                   "reporting nothing, which lowers recall.")
    return " ".join(out)
