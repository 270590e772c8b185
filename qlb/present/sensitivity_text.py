"""Cost-profile sensitivity in words, for the page's findings: why a release that holds every field of another
can be non-inferior to full native less often than it."""
from __future__ import annotations

import pandas as pd

from qlb.present.names import listing, name
from qlb.present.robustness import NESTED

SHOWN_CASES = 3          # the flipped comparisons named in the sentence; the rest are counted


def richer_worse_sentence(at_ref: pd.DataFrame, lower: list[str], delta: float) -> str | None:
    """When a release that holds every field of a poorer one (``NESTED``: choice + confidence holds the choice) is
    non-inferior to full native in fewer of ``at_ref``'s comparisons (one cost profile's ``utility_differences``),
    one sentence per such pair saying why: the recipient's policy is refitted and reselected on the validation worlds
    for each release, so the richer release can be selected worse; with the comparisons only the poorer release
    passes and both upper bounds against the margin ``delta``. None when no richer release counts lower."""
    count = {v: int(at_ref.loc[at_ref["view_a"] == v, "noninferior"].sum()) for v in lower}
    total = {v: int((at_ref["view_a"] == v).sum()) for v in lower}
    sentences = []
    for rich, poor in NESTED:
        if rich not in count or poor not in count or count[rich] >= count[poor]:
            continue
        r, p = name("view", rich), name("view", poor)
        both = at_ref[at_ref["view_a"] == poor].merge(at_ref[at_ref["view_a"] == rich], on=["model", "task"],
                                                      suffixes=("_poor", "_rich"))
        flipped = both[both["noninferior_poor"].astype(bool) & ~both["noninferior_rich"].astype(bool)]
        flipped = flipped.sort_values(["task", "model"])
        cases = [f"{row['model']} in {name('task', row['task'])} ({p} {row['ci_high_poor']:.3f}, {r} "
                 f"{row['ci_high_rich']:.3f})" for _, row in flipped.head(SHOWN_CASES).iterrows()]
        more = len(flipped) - len(cases)
        if more:
            cases.append(f"{more} more")
        where = (f"compare the upper ends of the two extra-cost intervals with the {delta} margin where only {p} "
                 f"passes: {listing(cases)}" if cases else
                 "compare the intervals in the non-inferiority table below")
        of = f"{total[poor]}" if total[poor] == total[rich] else f"{total[poor]} and {total[rich]}"
        sentences.append(
            f"{r.capitalize()} holds every field of {p} yet is non-inferior less often ({count[rich]} against "
            f"{count[poor]} of {of}): the recipient's policy is refitted and reselected on the validation worlds "
            f"for each release, so a richer release can be selected worse; {where}.")
    return " ".join(sentences) or None
