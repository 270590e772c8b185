"""Which documents each privacy detector answered (``coverage_frame``: per detector and split, the corpus's
documents, those with a prediction line, those whose line records a failure), said beside its scores.

A document without an answer counts as "reported nothing" in the scores (QUASILEAK.md), so a detector
whose endpoint failed on every document scores like one that ran and found nothing, and a truncated
predictions file like a detector that missed the rest: the leaderboard, its findings and the report say
how many documents each detector answered."""
from __future__ import annotations

import pandas as pd

from qlb.present.names import count_of, listing
from qlb.quasileak.leaderboard import COVERAGE, coverage_rows

COLUMN = "answered documents"
HELP = ("Answered documents: those of the split the detector returned a prediction for, not a failure; the "
        "others (an endpoint that failed, a document missing from a predictions file) count as reporting nothing.")


def split_words(split: str) -> str:
    """The scored split in words: ``the test split``; ``every document`` (``all``: a corpus without a test split)."""
    return "every document" if split == "all" else f"the {split} split"


def coverage_on(scores: pd.DataFrame, live: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per detector, on the split the run scored: documents, answered (a prediction that is not a
    failure), failed and missing (no prediction). Read from the run's own coverage rows (stored when it
    scored: predictions change in place, so today's would describe other data than the scores); for a
    run stored before those rows existed, from ``live`` (``coverage_frame``, today's predictions) on the
    run's split (``all``: every split). Empty when neither is there."""
    empty = pd.DataFrame(columns=["documents", "answered", "failed", "missing"])
    if scores.empty:
        return empty
    split = str(scores["split"].iloc[0])
    stored = scores[scores["slice_kind"] == COVERAGE]
    if not stored.empty:
        wide = stored.pivot_table(index="detector", columns="metric", values="value", aggfunc="first")
        return wide[["documents", "answered", "failed", "missing"]].astype(int)
    if live is None or live.empty:
        return empty
    rows = coverage_rows(live, None if split == "all" else split, sorted(set(scores["detector"])))
    return coverage_on(rows)


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
    of_split = "" if split == "all" else f"{split} "          # "all": every document was scored
    out = []
    if none:
        failed = all(on.loc[d, "failed"] == on.loc[d, "documents"] for d in none)
        out.append(f"{listing(none)} answered none of the {count_of(n, of_split + 'document')}"
                   + (" (every request failed)" if failed else "")
                   + f": {'its row measures' if len(none) == 1 else 'their rows measure'} nothing and "
                   f"{'is' if len(none) == 1 else 'are'} left out of the findings.")
    if not part.empty:
        said = [f"{d} {int(r['answered']):,} of {int(r['documents']):,}" for d, r in part.iterrows()]
        out.append(f"Answered only part of the {of_split}documents: {listing(said)}; the others count as "
                   "reporting nothing, which lowers recall.")
    return " ".join(out)
