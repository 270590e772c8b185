"""Which models the headline findings and the release options speak for.

A model that gave a valid decision answer for fewer than half of the dataset's worlds is left out
of them: its unanswered worlds enter every audit as unavailable (no field released, the recipient
falling back to its default action), so its recovery sits near guessing and its cost near the
fallback's, which says what the recipient does without an answer, not what the model's outputs
reveal or are worth. Left in, such a model looks the most private and sets the ends of every
range, and the release options end up being about it. Its rows stay in every table and chart;
the findings say it was left out and why. The fronts are recomputed without it by the engine's
own ``front_points`` (a model can only be dominated by models that are still there).
"""
from __future__ import annotations

from dataclasses import replace

import pandas as pd

from qlb.present.answers import native_totals, share
from qlb.present.names import listing
from qlb.present.rundata import RunData
from qlb.present.scope import stale_matters
from qlb.tuple.fronts import front_points

FINDINGS_NEED = 0.5     # a model with a valid decision answer for fewer of the dataset's worlds is left out


def thin_models(answers: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """The ``models`` whose valid decision answers cover fewer than ``FINDINGS_NEED`` of the dataset's
    worlds (index model; columns valid, worlds), fewest first."""
    per = native_totals(answers)
    if per.empty:
        return per
    per = per[per.index.isin(models) & (per["worlds"] > 0)]
    thin = per[per["valid"] < FINDINGS_NEED * per["worlds"]]
    return thin.assign(rate=thin["valid"] / thin["worlds"]).sort_values(["rate"])[["valid", "worlds"]]


def findings_run(d: RunData) -> RunData:
    """``d`` without its thin models (``thin_models``) in the tables the findings on recovery, cost,
    fronts and defenses read, with ``left_out`` naming them. ``d`` itself when none is thin; when every
    audited model is (the findings then have no one else to speak for, and the answers finding says
    why); when the run has no recovery or utility results (the refusal findings keep every model);
    and when the run is stale for its own models (thinness is judged on today's answers, which are not
    the ones it audited). A thin model whose failures give the mechanism away (its no-output recovery
    interval above 50%: which cases it fails to answer depends on the mechanism) is kept: there its
    figures do say what it reveals."""
    if (d.recovery.empty and d.utility.empty) or (d.data_changed and stale_matters(d.changes, d.audited)):
        return d
    audited = set(d.recovery["model"]) | set(d.utility["model"])
    thin = thin_models(d.answers, sorted(audited))
    if not d.recovery.empty:
        none = d.recovery[(d.recovery["scope"] == "pooled") & (d.recovery["view"] == "no_output")]
        thin = thin[~thin.index.isin(set(none.loc[none["ci_low"] > 0.5, "model"]))]
    if thin.empty or set(thin.index) >= audited:
        return d
    gone = set(thin.index)

    def keep(frame: pd.DataFrame) -> pd.DataFrame:
        return frame if frame.empty or "model" not in frame else frame[~frame["model"].isin(gone)]

    recovery, utility = keep(d.recovery), keep(d.utility)
    fronts = d.fronts if d.fronts.empty else front_points(recovery, utility)
    return replace(d, recovery=recovery, recovery_diff=keep(d.recovery_diff), utility=utility,
                   utility_diff=keep(d.utility_diff), fronts=fronts, defenses=keep(d.defenses),
                   defense_costs=keep(d.defense_costs), coarse=keep(d.coarse), learned=keep(d.learned),
                   models=[m for m in d.models if m not in gone], left_out=thin)


def left_out_sentence(thin: pd.DataFrame) -> str | None:
    """Which models the findings leave out and why; None when none."""
    if thin is None or thin.empty:
        return None
    named = listing([f"{m} ({share(int(r['valid']), int(r['worlds']))} of the worlds)" for m, r in thin.iterrows()])
    one = len(thin) == 1
    return (f"The findings below on recovery, cost, fronts and defenses leave out {named}: with a valid decision "
            f"answer for fewer than half of the "
            f"dataset's worlds, {'its' if one else 'their'} figures measure what the recipient does without an "
            f"answer, not what {'its' if one else 'their'} outputs reveal. {'Its' if one else 'Their'} rows stay "
            "in every table and chart.")
