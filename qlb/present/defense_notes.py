"""Notes the Defenses page puts under its tables, computed from a run's stored results (pure: frames in, text out)."""
from __future__ import annotations

import pandas as pd
from scipy.stats import binomtest

SYSTEMATIC = 0.05        # one-sided sign test: adapted temperature cheaper in more cells than chance gives the reason


def temperature_note(costs: pd.DataFrame) -> str:
    """Why adapted recipients pay less on the temperature release than the frozen native ones, counted over every
    model, task and cost profile of ``costs``: not by chance and not from more information (the release is
    invertible) but because recipients read the released scores as they are (paper H.3), and a logistic recipient
    fits the square-rooted scores better than the raw ones. That reason is given only when the cells are cheaper more
    often than chance (one-sided sign test, p < ``SYSTEMATIC``) and on average; else the count alone. Empty when
    ``costs`` has no adapted temperature row."""
    keys = ["model", "task", "profile"]
    native = costs[(costs["defense"] == "native") & (costs["recipient"] == "frozen")].set_index(keys)["mean_cost"]
    smooth = costs[(costs["defense"] == "temperature") & (costs["recipient"] == "adapted")].set_index(keys)["mean_cost"]
    both = native.to_frame("native").join(smooth.rename("temperature"), how="inner").dropna()
    if both.empty:
        return ""
    cheaper = int((both["temperature"] < both["native"]).sum())
    mean = both["temperature"].sub(both["native"]).mean()
    text = (f" Temperature τ = 2 carries the same information as the native release (it is invertible); its adapted "
            f"recipients pay less than the native ones in {cheaper:,} of {len(both):,} model–task–profile cells of the "
            f"models shown (mean {mean:+z.3f})")
    if mean >= 0 or binomtest(cheaper, len(both), 0.5, alternative="greater").pvalue >= SYSTEMATIC:
        return text + ", within what refitting and reselecting moves."
    return (text + ": recipients read the released scores as they are (paper H.3), and a logistic recipient fits "
            "square-rooted scores better than raw ones. The gain comes from how the scores are written, not from the "
            "release: read through its public inverse, the release gives exactly the native recipients' costs.")
