"""Privacy-utility fronts (TUPLE.md section 6): per task and profile, points (recovery, mean cost)
per model (its full native release) and per model x view; a point is non-dominated when no
other point has weakly lower recovery and weakly lower cost with at least one strict. Unrounded."""
from __future__ import annotations

import numpy as np
import pandas as pd

MODEL_VIEW = "full_native"          # the per-model point is the model's full native release


def non_dominated(recovery: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """Boolean mask of the points no other point dominates (both lower is better)."""
    r = np.asarray(recovery, float)[:, None]
    c = np.asarray(cost, float)[:, None]
    weakly = (r.T <= r) & (c.T <= c)              # [i, j]: point j weakly better than i on both
    strictly = (r.T < r) | (c.T < c)
    return ~(weakly & strictly).any(axis=1)


def front_points(recovery: pd.DataFrame, utility: pd.DataFrame) -> pd.DataFrame:
    """recovery_results (pooled) joined with utility_results (pooled) per model and view, and the
    two memberships: among per-model points and among every model x view point."""
    rec = recovery[recovery["scope"] == "pooled"][["model", "view", "accuracy", "ci_low", "ci_high"]].rename(
        columns={"accuracy": "recovery", "ci_low": "recovery_ci_low", "ci_high": "recovery_ci_high"})
    util = utility[utility["scope"] == "pooled"][["model", "view", "task", "profile", "mean_cost", "ci_low",
                                                   "ci_high"]].rename(
        columns={"ci_low": "cost_ci_low", "ci_high": "cost_ci_high"})
    pts = util.merge(rec, on=["model", "view"], how="inner")
    if pts.empty:
        return pts.assign(nondominated_models=pd.Series(dtype=bool), nondominated_all=pd.Series(dtype=bool))
    pts["nondominated_all"] = False
    pts["nondominated_models"] = False
    for _, idx in pts.groupby(["task", "profile"]).groups.items():
        sub = pts.loc[idx]
        pts.loc[idx, "nondominated_all"] = non_dominated(sub["recovery"].to_numpy(), sub["mean_cost"].to_numpy())
        per_model = sub[sub["view"] == MODEL_VIEW]
        if len(per_model):
            pts.loc[per_model.index, "nondominated_models"] = non_dominated(per_model["recovery"].to_numpy(),
                                                                            per_model["mean_cost"].to_numpy())
    cols = ["task", "profile", "model", "view", "recovery", "recovery_ci_low", "recovery_ci_high", "mean_cost",
            "cost_ci_low", "cost_ci_high", "nondominated_models", "nondominated_all"]
    return pts[cols].sort_values(["task", "profile", "model", "view"]).reset_index(drop=True)


def fronts_json(points: pd.DataFrame) -> dict:
    """``fronts`` of ``qlb audit --json``: per task and profile, the non-dominated models of the
    full native release (sorted)."""
    full = points[points["view"] == "full_native"]
    out: dict = {}
    for (task, profile), sub in full.groupby(["task", "profile"], sort=True):
        out.setdefault(task, {})[profile] = sorted(sub.loc[sub["nondominated_models"].astype(bool), "model"])
    return out
