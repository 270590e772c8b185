"""The learned bounded-cost WCPQ variants next to the strict mapper (paper H.2, Table 15, Figure 11),
shaped for the Defenses page and the report from a run's stored tables: ``defense_results``,
``defense_costs`` (frozen policies, authored profile) and ``learned_wcpq``."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from qlb.present.names import name, pct, pct_interval, text_range
from qlb.tuple.learned_wcpq import LEARNED_PREFIX, variant

STRICT = "wcpq"
TASKS = ("selective", "clarification", "asymmetric")


def is_learned(defense: str) -> bool:
    """A learned WCPQ variant's defense name."""
    return defense.startswith(LEARNED_PREFIX)


def budget_and_kind(defense: str) -> tuple[float, str]:
    """(budget in review costs, "paired" or "no pair") of a learned variant's name."""
    budget, js_weight = variant(defense)
    return budget, "paired" if js_weight else "no pair"


def learned_points(res: pd.DataFrame, costs: pd.DataFrame) -> pd.DataFrame:
    """One row per model and mapper (WCPQ strict, then every learned variant by budget, no pair
    first): recovery with its interval and paired difference against the native control, the
    frozen full-native recipients' mean authored cost per task and over the three tasks, and the
    change of that mean against the native release. Empty when the run has no learned variant."""
    learned = res[res["defense"].map(is_learned)]
    if learned.empty:
        return pd.DataFrame()
    rows = res[res["defense"].isin([STRICT, *learned["defense"]])]
    if costs.empty or not {"recipient", "profile", "task", "mean_cost"} <= set(costs.columns):
        costs = pd.DataFrame(columns=["model", "defense", "recipient", "task", "profile", "mean_cost"])
    frozen = costs[(costs["recipient"] == "frozen") & (costs["profile"] == "authored")]
    by_task = frozen.pivot_table(index=["model", "defense"], columns="task", values="mean_cost",
                                 aggfunc="first").reindex(columns=list(TASKS))

    def task_costs(model: str, defense: str) -> np.ndarray:       # NaN where the run stored none
        key = (model, defense)
        return by_task.loc[key].to_numpy(float) if key in by_task.index else np.full(len(TASKS), np.nan)

    out = []
    for r in rows.itertuples(index=False):
        budget, kind = budget_and_kind(r.defense) if is_learned(r.defense) else (0.0, "strict")
        cost = task_costs(r.model, r.defense)
        out.append({"model": r.model, "defense": r.defense, "kind": kind, "budget": budget,
                    "accuracy": r.accuracy, "ci_low": r.ci_low, "ci_high": r.ci_high,
                    "diff_vs_native": r.diff_vs_native, "diff_ci_low": r.diff_ci_low, "diff_ci_high": r.diff_ci_high,
                    "coverage": r.coverage, **{f"cost {t}": float(c) for t, c in zip(TASKS, cost)},
                    "mean_cost": float(np.mean(cost)),
                    "cost_change": float(np.mean(cost) - np.mean(task_costs(r.model, "native")))})
    order = {"strict": 0, "no pair": 1, "paired": 2}
    frame = pd.DataFrame(out)
    return frame.assign(o=frame["kind"].map(order)).sort_values(["model", "budget", "o"]).drop(columns="o") \
        .reset_index(drop=True)


def table15(points: pd.DataFrame) -> pd.DataFrame:
    """Paper Table 15: secret recovery with its 95% interval for WCPQ strict and every learned
    variant (by budget, without the pair loss before with it) and every model, the longer list down
    the side: a row per mapper and a column per model for the usual few defended models (a few
    columns wide, it fits a 1,024 px screen and a model's column reads how recovery moves with the
    budget), a row per model when there are more models than mappers. — where a model lacks a
    variant."""
    variants = sorted(points.loc[points["kind"] != "strict", "defense"].unique(),
                      key=lambda d: (budget_and_kind(d)[0], budget_and_kind(d)[1] == "paired"))
    mappers = ["WCPQ strict"] + [column_name(d) for d in variants]
    models = sorted(points["model"].unique())
    cells = {(("WCPQ strict" if r.kind == "strict" else column_name(r.defense)), r.model):
             pct_interval(r.accuracy, r.ci_low, r.ci_high) for r in points.itertuples(index=False)}
    if len(models) > len(mappers):
        return pd.DataFrame([{"model": m, **{v: cells.get((v, m), "—") for v in mappers}} for m in models],
                            columns=["model", *mappers])
    return pd.DataFrame([{"mapper": v, **{m: cells.get((v, m), "—") for m in models}} for v in mappers],
                        columns=["mapper", *models])


def figure11_caption(run: str) -> str:
    """The Defenses page's caption of Figure 11 (``qlb.present.figures.learned_figure``), saying what is drawn:
    ``run`` is the run id as the caption shows it (already Markdown-safe)."""
    return ("Secret recovery (95% pair-clustered intervals) against what the frozen full-native recipients pay "
            "under the authored costs (the mean of the three tasks), one panel per model. Shape: WCPQ "
            "strict or a learned variant (with or without the pair loss); colour: its budget, how much more, in "
            "review costs, a release may cost any policy for any true class. Each point sits at its exact cost: "
            "mappers that cost the same share one vertical line (the strict diamond drawn largest, the squares of "
            "the pair loss smallest, so that a mapper of each kind stays visible; two budgets of one kind at one "
            "cost and recovery cover each other, their intervals overlap there, and the recovery table below gives "
            "each one). "
            "Hover a cost to read every mapper at it. Lower and further left is better. "
            f"Run {run}. (The TUPLE paper's Figure 11.)")


def column_name(defense: str) -> str:
    """A learned variant's short name: ``budget 0.2 · pair loss``."""
    budget, kind = budget_and_kind(defense)
    return f"budget {budget:g} · {'pair loss' if kind == 'paired' else 'no pair loss'}"


def verification_table(info: pd.DataFrame) -> pd.DataFrame:
    """Per model and learned variant, pooled over its domains: coverage of the available test
    responses, the identity fallbacks the verification forced, codewords deployed (per domain),
    the seeds the proxy attackers chose, and the largest realized cost increase against the budget."""
    rows = []
    for (model, defense), d in info.groupby(["model", "defense"], sort=True):
        budget, _ = budget_and_kind(defense)
        rows.append({"model": model, "variant": name("defense", defense),
                     "coverage": d["covered"].sum() / d["available"].sum() if d["available"].sum() else np.nan,
                     "verification fallbacks": int(d["guarded"].sum()),
                     "codewords deployed": " / ".join(str(int(v)) for v in d["deployed"]),
                     "pool": " / ".join(str(int(v)) for v in d["pool"]),
                     "seed chosen": " / ".join(str(int(v)) for v in d["seed"]),
                     "largest cost increase": float(d["max_cost_increase"].max()), "budget": budget})
    return pd.DataFrame(rows)


def proxy_table(info: pd.DataFrame) -> pd.DataFrame:
    """Per model, variant and domain: each seed's strongest-proxy validation recovery and log loss."""
    rows = []
    for r in info.itertuples(index=False):
        for seed, (acc, ll) in sorted(json.loads(r.proxy).items()):
            rows.append({"model": r.model, "variant": name("defense", r.defense), "domain": r.domain,
                         "seed": int(seed), "proxy validation recovery": acc, "proxy log loss": ll,
                         "chosen": int(seed) == int(r.seed)})
    return pd.DataFrame(rows)


def span(values: pd.Series) -> str:
    """``52.8%`` for one value (or equal ones), else ``52.8% to 57.6%``."""
    low, high = pct(values.min()), pct(values.max())
    return low if low == high else f"{low} to {high}"


def learned_sentence(points: pd.DataFrame, info: pd.DataFrame) -> str:
    """What the learned variants do against WCPQ strict: the range of their recovery, the lowest
    (with its interval), what the pair loss changes on average, what the recipients pay at budget 0
    and at the largest budget, and whether every release stayed within its budget."""
    learned = points[(points["kind"] != "strict")].dropna(subset=["accuracy"])
    if learned.empty:
        return "The run holds no recovery for a learned variant."
    strict = points[(points["kind"] == "strict") & points["model"].isin(learned["model"])]
    low = learned.loc[learned["accuracy"].idxmin()]
    text = f"Under the learned variants, secret recovery is {span(learned['accuracy'])}"
    if not strict.empty:
        text += f" (WCPQ strict: {span(strict['accuracy'])})"
    text += (f"; the lowest is {pct_interval(low['accuracy'], low['ci_low'], low['ci_high'])} "
             f"({name('defense', low['defense'])}, {low['model']}).")
    both = learned.pivot_table(index=["model", "budget"], columns="kind", values="accuracy")
    if {"paired", "no pair"} <= set(both.columns):
        gap = (both["paired"] - both["no pair"]).dropna()
        if len(gap):
            pairs = f"{len(gap)} model–budget pair{'s' * (len(gap) > 1)}"
            spread = text_range(f"{100 * gap.min():+z.1f}", f"{100 * gap.max():+z.1f}")
            if spread == "+0.0":
                text += f" The pair loss leaves recovery unchanged (within 0.05 points) over {pairs}."
            elif " to " not in spread:          # one pair, or the same change in each
                text += f" The pair loss changes recovery by {spread} points ({pairs})."
            else:
                text += (f" The pair loss changes recovery by {100 * gap.mean():+z.1f} points on average "
                         f"({spread} over {pairs}).")
    for budget in sorted({learned["budget"].min(), learned["budget"].max()}):
        rise = learned.loc[learned["budget"] == budget, "cost_change"].dropna()
        if rise.empty:
            continue
        if np.isclose(rise.max(), 0, atol=1e-12) and np.isclose(rise.min(), 0, atol=1e-12):
            what = "the frozen recipients pay what they pay on the native release"
        elif rise.max() > 1e-12:
            what = (f"the frozen recipients pay up to {rise.max():.3f} cost units more per case (mean over the three "
                    f"tasks, authored costs) than on the native release")
        else:
            what = f"the frozen recipients pay up to {-rise.min():.3f} cost units less per case than on the native release"
        text += f" At budget {budget:g}, {what}."
    known = info.dropna(subset=["max_cost_increase"])
    if len(known):
        over = known[known["max_cost_increase"] > known["budget"] + 1e-9]
        if over.empty:
            worst = known.groupby("budget")["max_cost_increase"].max()
            text += (" Every release stayed within its budget (a budget is counted in review costs, the authored cost "
                     "of one trusted review, per world, not in cost units per case): the largest realized increase of "
                     "a world's cost is "
                     + ", ".join(f"{v:.2f} review costs at budget {b:g}" for b, v in worst.items()) + ".")
        else:
            o = over.loc[(over["max_cost_increase"] - over["budget"]).idxmax()]       # the largest breach, first of ties
            text += (f" A release BROKE its budget: {o['max_cost_increase']:.2f} review costs at budget "
                     f"{o['budget']:g} ({o['model']}, {o['domain']}).")
    return text
