"""The robustness checks of the full-native attacker in words and tables (paper Tables 29 and 30),
as the recovery page and the report show them: computed sentences first, then one row per model
with each recovery as a percent and its 95% interval (``qlb.tuple.tracks`` computes them)."""
from __future__ import annotations

import pandas as pd

from qlb.present.names import TRACK_NAMES, how_many, listing, name, pct, pct_interval, text_range
from qlb.tuple.release_views import DECODER_FAMILIES
from qlb.tuple.tracks import TRACKS

# the paper's tracks (Table 30): the run's own selection and the saved single, equal-weight and learned-OOF ones
MAIN_TRACKS = ("selected", "best_configuration", "family_winners", "all_configurations", "stack")
FAMILY_TRACKS = tuple(t for t in TRACKS if t in DECODER_FAMILIES)       # each family's best configuration
SUBSET_COLUMN = "both answers correct [95% CI]"
ALL_COLUMN = "all test worlds [95% CI]"
TRACK_COLUMN = "recovery [95% CI]"


def _cell(row: pd.Series) -> str:
    return pct_interval(row["accuracy"], row["ci_low"], row["ci_high"])


def both_correct_sentence(both: pd.DataFrame, overall: pd.DataFrame | None = None) -> str | None:
    """Paper I.5 in one computed sentence: how much of the test set the both-worlds-correct subset
    keeps, the frozen attacker's lowest and highest recovery inside it (with intervals), for how
    many models the interval lies above 50%, and (``overall``: the stored pooled full-native
    recovery per model) the same range on all test worlds. None without a scored model."""
    rows = both.dropna(subset=["accuracy"]).sort_values(["accuracy", "model"])
    if rows.empty:
        return None
    lo, hi = rows.iloc[0], rows.iloc[-1]
    low_kept, high_kept = int(both["pairs_kept"].min()), int(both["pairs_kept"].max())
    kept = f"{low_kept:,} to {high_kept:,}" if low_kept != high_kept else f"{low_kept:,}"
    span = (f"{_cell(lo)} ({lo['model']})" if len(rows) == 1
            else f"{_cell(lo)} ({listing(list(rows['model']))})" if rows.apply(_cell, axis=1).nunique() == 1
            else f"{_cell(lo)} ({lo['model']}) to {_cell(hi)} ({hi['model']})")
    above = int((rows["ci_low"] > 0.5).sum())
    text = (f"Within the test pairs whose coarse answers are correct in both worlds ({kept} of "
            f"{int(both['pairs_total'].max()):,} pairs per model), the frozen full-native attacker recovers the "
            f"protected mechanism in {span}")
    if overall is not None and not overall.empty:
        text += f", against {text_range(pct(overall['accuracy'].min()), pct(overall['accuracy'].max()))} on all test worlds"
    text += f"; the 95% interval lies above 50% for {how_many(above, len(rows))}"
    if above == len(rows):
        return text + ", so coarse errors alone do not explain the recovery."
    return text + "."


def tracks_sentence(tracks: pd.DataFrame) -> str | None:
    """Paper I.6 in computed sentences: for how many models every main track (the selection, the best
    single configuration, the two equal-weight averages, the learned stack) recovers more than
    50% (and for how many every track's 95% interval lies above 50%, when that differs), the
    lowest such result, and the per-family bests' range (mean over models). None without
    tracks."""
    main = tracks[tracks["track"].isin(MAIN_TRACKS)]
    if main.empty:
        return None
    n = main["model"].nunique()
    every = int(main.groupby("model")["accuracy"].min().gt(0.5).sum())
    clear = int(main.groupby("model")["ci_low"].min().gt(0.5).sum())
    low = main.sort_values(["accuracy", "model"]).iloc[0]
    names = ", ".join(TRACK_NAMES[t] for t in MAIN_TRACKS if t in set(main["track"]))
    sure = ("" if clear == every else
            f" (with its 95% interval above 50% for {how_many(clear, n)})" if clear else
            " (no model with every 95% interval above 50%)")
    text = (f"On the same test worlds, every saved full-native attack track ({names}) recovers more than 50% for "
            f"{how_many(every, n)}{sure}; the lowest is {_cell(low)} ({TRACK_NAMES[low['track']]}, {low['model']}).")
    families = tracks[tracks["track"].isin(DECODER_FAMILIES) & (tracks["track"] != "prior")]
    if not families.empty:
        mean = families.groupby("track")["accuracy"].mean().sort_values()
        if len(mean) == 1:
            text += (f" The one attacker family's best configuration alone ({TRACK_NAMES[mean.index[0]]}) averages "
                     f"{pct(mean.iloc[0])} over the models.")
        else:
            text += (f" A family's best configuration alone averages {pct(mean.iloc[0])} ({TRACK_NAMES[mean.index[0]]}) "
                     f"to {pct(mean.iloc[-1])} ({TRACK_NAMES[mean.index[-1]]}) over the models.")
    prior = tracks[tracks["track"] == "prior"]
    if not prior.empty and (prior["accuracy"] == 0.5).all():
        text += " The base rate stays at exactly 50%: it gives both worlds of a pair the same answer."
    return text + (f" The {TRACK_NAMES['selected']} was chosen on validation, not by its test value; the differences "
                   "between tracks are descriptive.")


def both_correct_table(both: pd.DataFrame, overall: pd.DataFrame | None = None) -> pd.DataFrame:
    """Paper Table 29 as shown (four columns: whole at 1,024 px): per model the pairs kept (the
    recovery counts both worlds of each), the subset recovery with its interval and, from ``overall``, the recovery on all
    test worlds."""
    out = pd.DataFrame({
        "model": both["model"].to_numpy(),
        "pairs kept": [f"{int(k):,} of {int(t):,}" for k, t in zip(both["pairs_kept"], both["pairs_total"])],
        SUBSET_COLUMN: [_cell(r) for _, r in both.iterrows()],
    })
    if overall is not None and not overall.empty:
        by_model = overall.set_index("model")
        out[ALL_COLUMN] = [_cell(by_model.loc[m]) if m in by_model.index else "N/A" for m in out["model"]]
    return out


def tracks_table(tracks: pd.DataFrame, which: tuple[str, ...] = TRACKS) -> pd.DataFrame:
    """Paper Table 30 as the report shows it: one row per model, one column per track of ``which``
    (display names, in ``TRACKS`` order), each cell the recovery with its 95% interval."""
    cells = tracks.assign(cell=[_cell(r) for _, r in tracks.iterrows()])
    wide = cells.pivot(index="model", columns="track", values="cell")
    wide = wide[[t for t in TRACKS if t in wide.columns and t in which]].rename(columns=TRACK_NAMES)
    wide.columns.name = None
    return wide.reset_index()


def model_tracks(tracks: pd.DataFrame, model: str) -> pd.DataFrame:
    """Paper Table 30 for one model, as the page shows it (narrow enough for 1,024 px): one row per
    track in ``TRACKS`` order, saying whether it is a saved track or one family's best, with its
    recovery and 95% interval."""
    rows = tracks[tracks["model"] == model].set_index("track")
    order = [t for t in TRACKS if t in rows.index]
    return pd.DataFrame({
        "attack track": [TRACK_NAMES[t] for t in order],
        "kind": ["one family's best" if t in FAMILY_TRACKS else "saved track" for t in order],
        TRACK_COLUMN: [_cell(rows.loc[t]) for t in order]})


NESTED = (("full_native", "full_probabilities"), ("full_native", "choice_confidence"),
          ("choice_confidence", "choice"), ("full_probabilities", "no_output"), ("choice", "no_output"))


def nesting_note(pooled: pd.DataFrame) -> str | None:
    """Where a release reads below one whose every field it also holds (full native below full probabilities, say):
    which models and views, and why that is selection noise, not less information. None when none does."""
    by = pooled.pivot_table(index="model", columns="view", values="accuracy").round(3)   # as shown: 50.0% = 50.0%
    low = pooled.pivot_table(index="model", columns="view", values="ci_low", dropna=False).reindex_like(by)
    high = pooled.pivot_table(index="model", columns="view", values="ci_high", dropna=False).reindex_like(by)
    found = [(m, rich, poor) for rich, poor in NESTED if rich in by and poor in by
             for m in by.index if by.at[m, rich] < by.at[m, poor]]
    if not found:
        return None
    cases = [f"{m} ({name('view', rich)} {pct(by.at[m, rich])} below {name('view', poor)} "
             f"{pct(by.at[m, poor])})" for m, rich, poor in found]
    overlap = all(low.at[m, rich] <= high.at[m, poor] and low.at[m, poor] <= high.at[m, rich] for m, rich, poor in found)
    return (f"A richer release reads below one it contains for {listing(cases)}. It holds every field of the "
            "poorer one, so an attacker could do at least as well; the difference comes from choosing the attacker "
            "on validation worlds and scoring it on test worlds"
            + (", and in each case the two 95% intervals overlap." if overlap else ": compare the intervals."))
