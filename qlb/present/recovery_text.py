"""The Release-view recovery page's sentence on which decisions leak (recovery per decision class,
``qlb.tuple.recovery.recovery_by_class``): where a domain's leak sits, which an average over the
domain's classes hides."""
from __future__ import annotations

import pandas as pd

from qlb.present.names import pct_interval


def class_label(frame: pd.DataFrame) -> pd.Series:
    """A decision class as a reader finds it: ``domain / CLASS``."""
    return frame["domain"].astype(str) + " / " + frame["class"].astype(str)


def class_sentence(by_class: pd.DataFrame, view: str) -> str | None:
    """In how many model-class cells of one view the attacker beats guessing (95% interval above
    50%), and the highest and lowest cells with their intervals; None without cells."""
    cells = by_class.dropna(subset=["accuracy"])
    if cells.empty:
        return None
    above = cells[cells["ci_low"] > 0.5]
    ordered = cells.assign(label=class_label(cells)).sort_values(["accuracy", "model", "label"])

    def said(r: pd.Series) -> str:
        return f"{pct_interval(r['accuracy'], r['ci_low'], r['ci_high'])} ({r['model']}, {r['label']})"

    several = cells["model"].nunique() > 1
    where = "model and decision class" if several else "decision class"
    text = (f"In the {view} view, the attacker beats guessing (95% interval above 50%) in {len(above)} of "
            f"{len(cells)} cells of {where}")
    if len(cells) > 1:
        text += f"; highest {said(ordered.iloc[-1])}, lowest {said(ordered.iloc[0])}"
    if not above.empty and len(above) < len(cells):
        shown = above.assign(label=class_label(above)).sort_values(["accuracy", "model"], ascending=[False, True])
        named = [f"{r['label']} ({r['model']})" if several else r["label"] for _, r in shown.head(4).iterrows()]
        more = f" and {len(shown) - 4} more" if len(shown) > 4 else ""
        text += f". Clear of guessing, highest first: {', '.join(named)}{more}; the other cells' intervals include 50%"
    return text + (". Each class holds fewer test worlds than its domain, so its interval is wider: a leak too small "
                   "to clear 50% in one class can still add up over its domain.")
