"""The Refusal page's sentences (paper section 5.1, Table 2), computed from a run's per-model rates
with their Wilson 95% intervals (``qlb.tuple.refusal.rate_intervals``): the extremes of a rate
across the models, and how often the models withhold."""
from __future__ import annotations

import pandas as pd

from qlb.present import names


def span(frame: pd.DataFrame, rate: str) -> str:
    """The lowest and highest ``rate`` of the models in ``frame`` with their intervals and model names:
    ``63.4% [60.9, 65.8] (model-a) to 97.1% [96.1, 97.8] (model-b)``; one value when there is one model,
    or when every model reads the same."""
    ordered = frame.dropna(subset=[rate]).sort_values([rate, "model"])
    ends = [ordered.iloc[0], ordered.iloc[-1]]
    cells = [names.pct_interval(r[rate], r[f"{rate}_lo"], r[f"{rate}_hi"]) for r in ends]
    if len(ordered) == 1:
        return f"{cells[0]} ({ends[0]['model']})"
    if cells[0] == cells[1]:
        return f"{cells[0]} ({'both models' if len(ordered) == 2 else 'every model'})"
    return f"{cells[0]} ({ends[0]['model']}) to {cells[1]} ({ends[1]['model']})"


def extremes(frame: pd.DataFrame, rate: str) -> str:
    """Which models have the lowest and highest ``rate``, with their Wilson 95% intervals (the rates themselves
    are in the sentence before), in the bracket style of every other interval."""
    ordered = frame.sort_values([rate, "model"])
    lo, hi = ordered.iloc[0], ordered.iloc[-1]
    cells = [names.pct_interval(r[rate], r[f"{rate}_lo"], r[f"{rate}_hi"]) for r in (lo, hi)]
    if len(ordered) == 1:
        return f"With its Wilson 95% interval: {cells[0]}."
    if cells[0] == cells[1]:
        return f"{'Both models' if len(ordered) == 2 else 'Every model'}: {cells[0]} (Wilson 95% interval)."
    return f"Lowest: {lo['model']}, {cells[0]}; highest: {hi['model']}, {cells[1]} (Wilson 95% intervals)."


def withholding_sentence(overall: pd.DataFrame) -> str:
    """How often the models withhold, and how often a withheld response still gives the mechanism away."""
    text = f"Models answer WITHHOLD on {span(overall, 'withhold_rate')} of refusal probes"
    withholding = overall[overall["withheld"] > 0]
    if withholding.empty:
        return text + "; no model withheld a single response, so every recovery above is a direct answer."
    text += (f". When they withhold, the residual scores still rank the true mechanism uniquely first in "
             f"{span(withholding, 'conditional_residual_recovery')} of withheld responses")
    never = overall.loc[overall["withheld"] == 0, "model"].tolist()
    if never:
        text += f" ({', '.join(never)} never withheld)"
    return text + "."
