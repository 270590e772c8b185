"""Refusal audit (TUPLE.md section 2; paper 5.1, A.3, I.1-I.2): does selecting WITHHOLD protect
the fine-grained mechanism?

Per model (and per domain), over the valid ``ok`` responses (``unavailable`` ones are reported
but not counted in n):

* withheld |W| = choice WITHHOLD; withhold rate = |W| / n;
* direct correct d = choice is the gold mechanism S; direct incorrect = another mechanism;
* each withheld response's mechanism scores (16 in the TUPLE ontology) (WITHHOLD excluded, a missing score counts as 0,
  missing scores altogether = zero mass) fall in exactly one residual outcome, in this
  precedence: zero_mass (sum <= 0), tied (the maximum is shared, exact float equality),
  unique_correct (the unique maximum is S: residual recovery r), unique_incorrect;
* conditional residual recovery = r / |W| (None when |W| = 0, never 0);
  overall recovery = (d + r) / n; uniform guessing reference 1/M (1/16 for TUPLE).

The scoring is vectorized: one pass over an (n x (M + 1)) score matrix for every model at once.
The labels come from the dataset's ontology (default: the TUPLE ontology).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from qlb.records.ontology import WITHHOLD, Ontology, load_ontology
from qlb.stats.proportion import wilson

UNIFORM_REFERENCE = 1.0 / 16.0          # the TUPLE ontology's 16 mechanisms per domain


def mechanism_counts(ontology: Ontology | None = None) -> list[int]:
    """The distinct numbers of mechanisms the ontology's domains have, ascending (TUPLE: [16])."""
    onto = ontology or load_ontology()
    return sorted({len(onto.domain(d).mechanisms) for d in onto.domains})


def uniform_reference(ontology: Ontology | None = None) -> float:
    """Uniform guessing over a domain's mechanisms, 1/M (the mean over domains when M differs)."""
    onto = ontology or load_ontology()
    return float(np.mean([1.0 / len(onto.domain(d).mechanisms) for d in onto.domains]))

# Per-response outcome codes (one per counted response).
OUTCOMES: tuple[str, ...] = (
    "direct_correct", "direct_incorrect", "residual_unique_correct", "residual_unique_incorrect",
    "residual_tied", "residual_zero_mass",
)
DIRECT_CORRECT, DIRECT_INCORRECT, UNIQUE_CORRECT, UNIQUE_INCORRECT, TIED, ZERO_MASS = range(6)

COUNT_KEYS: tuple[str, ...] = (
    "n", "withheld", "direct_correct", "direct_incorrect", "residual_unique_correct",
    "residual_unique_incorrect", "residual_tied", "residual_zero_mass",
    "withhold_rate", "conditional_residual_recovery", "overall_recovery",
)


@dataclass(frozen=True)
class ScoredResponses:
    """Per-response outcome of the refusal audit, aligned with the input rows that were counted."""

    frame: pd.DataFrame          # model, world_id, domain, mechanism, choice, outcome, residual_winner
    unavailable: pd.DataFrame    # model, domain, unavailable (reported, not in n)


def classify(choice_idx: np.ndarray, gold_idx: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Outcome code per response, and the residual winner's index (-1 when none).

    scores:     (n, M + 1) released scores, missing entries as 0: the M mechanisms in order
                (domains with fewer mechanisms padded with 0), then WITHHOLD in the last column
                (TUPLE: M = 16, 17 columns).
    choice_idx: (n,) index into those columns (WITHHOLD = M).
    gold_idx:   (n,) index of the gold mechanism S among the M.
    """
    choice_idx = np.asarray(choice_idx)
    gold_idx = np.asarray(gold_idx)
    scores = np.asarray(scores, dtype=float)
    m = scores.shape[1] - 1
    mech = scores[:, :m]
    withheld = choice_idx == m
    total = mech.sum(axis=1)
    top = mech.max(axis=1)
    n_top = (mech == top[:, None]).sum(axis=1)
    winner = mech.argmax(axis=1)
    zero = total <= 0
    tied = ~zero & (n_top >= 2)
    unique = ~zero & ~tied
    out = np.where(choice_idx == gold_idx, DIRECT_CORRECT, DIRECT_INCORRECT)
    out = np.where(withheld & zero, ZERO_MASS, out)
    out = np.where(withheld & tied, TIED, out)
    out = np.where(withheld & unique & (winner == gold_idx), UNIQUE_CORRECT, out)
    out = np.where(withheld & unique & (winner != gold_idx), UNIQUE_INCORRECT, out)
    residual_winner = np.where(withheld & unique, winner, -1)
    return out.astype(np.int8), residual_winner


def _parse_scores(value: Any) -> Mapping[str, float] | None:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, str):
        return json.loads(value)
    return value


def score_responses(responses: pd.DataFrame, ontology: Ontology | None = None) -> ScoredResponses:
    """Score refusal responses joined with their worlds.

    ``responses`` columns: model, world_id, domain, mechanism (gold S), status, choice, scores
    (dict or JSON text or None). Rows with status ``unavailable`` are set aside and counted.
    ``ontology``: the dataset's decision task (default the TUPLE ontology)."""
    onto = ontology or load_ontology()
    width = max(len(onto.domain(d).mechanisms) for d in onto.domains)      # M; WITHHOLD in column M
    ok = responses[responses["status"] == "ok"].reset_index(drop=True)
    unavailable = (responses[responses["status"] != "ok"].groupby(["model", "domain"]).size()
                   .rename("unavailable").reset_index())
    n = len(ok)
    choice_idx = np.empty(n, dtype=np.int16)
    gold_idx = np.empty(n, dtype=np.int16)
    scores = np.zeros((n, width + 1), dtype=float)
    index_of = {d: {**{lab: i for i, lab in enumerate(onto.domain(d).mechanisms)}, WITHHOLD: width}
                for d in onto.domains}
    loads = json.loads
    for i, (domain, choice, gold, raw) in enumerate(zip(ok["domain"], ok["choice"], ok["mechanism"], ok["scores"])):
        idx = index_of[domain]
        choice_idx[i] = idx[choice]
        gold_idx[i] = idx[gold]
        s = loads(raw) if isinstance(raw, str) else _parse_scores(raw)
        if s:
            row = scores[i]
            for label, v in s.items():
                row[idx[label]] = v
    outcome, winner = classify(choice_idx, gold_idx, scores)
    labels = {d: onto.domain(d).mechanisms for d in onto.domains}
    frame = ok[["model", "world_id", "domain", "mechanism", "choice"]].copy()
    frame["outcome"] = np.asarray(OUTCOMES, dtype=object)[outcome]
    frame["residual_winner"] = [labels[d][w] if w >= 0 else None for d, w in zip(frame["domain"], winner)]
    # choice not the unique argmax of all released scores (only where scores were released)
    top = scores.max(axis=1)
    has_scores = scores.sum(axis=1) > 0
    unique_top = (scores == top[:, None]).sum(axis=1) == 1
    frame["choice_not_argmax"] = has_scores & ~(unique_top & (scores.argmax(axis=1) == choice_idx))
    return ScoredResponses(frame, unavailable)


def _rates(counts: Mapping[str, int]) -> dict[str, Any]:
    n, w = counts["n"], counts["withheld"]
    r, d = counts["residual_unique_correct"], counts["direct_correct"]
    out = {k: int(counts[k]) for k in COUNT_KEYS[:8]}
    out["withhold_rate"] = w / n if n else None
    out["conditional_residual_recovery"] = r / w if w else None
    out["overall_recovery"] = (d + r) / n if n else None
    return out


def summarize(scored: ScoredResponses) -> pd.DataFrame:
    """One row per (model, domain) plus (model, 'all'): the COUNTS of CONTRACT.md section 2 and
    the extras the page shows (unavailable, unique-winner coverage, choice_not_argmax)."""
    f = scored.frame
    both = pd.concat([f, f.assign(domain="all")], ignore_index=True)
    counts = pd.crosstab([both["model"], both["domain"]], both["outcome"]).reindex(columns=list(OUTCOMES),
                                                                                   fill_value=0)
    counts["choice_not_argmax"] = both.groupby(["model", "domain"])["choice_not_argmax"].sum()
    un = scored.unavailable
    un_all = pd.concat([un, un.assign(domain="all")]).groupby(["model", "domain"])["unavailable"].sum()
    index = counts.index.union(un_all.index)
    counts = counts.reindex(index, fill_value=0)
    counts["unavailable"] = un_all.reindex(index, fill_value=0)
    counts = counts.reset_index()
    counts["n"] = counts[list(OUTCOMES)].sum(axis=1)
    counts["withheld"] = counts[list(OUTCOMES[2:])].sum(axis=1)
    rows = []
    for rec in counts.to_dict("records"):
        w = rec["withheld"]
        unique = rec["residual_unique_correct"] + rec["residual_unique_incorrect"]
        rows.append({"model": rec["model"], "domain": rec["domain"], **_rates(rec),
                     "unavailable": int(rec["unavailable"]),
                     "unique_winner_coverage": unique / w if w else None,
                     "choice_not_argmax": int(rec["choice_not_argmax"])})
    out = pd.DataFrame(rows, columns=["model", "domain", *COUNT_KEYS, "unavailable", "unique_winner_coverage",
                                      "choice_not_argmax"])
    # per model: domains in order, then 'all'
    out["_all"] = out["domain"] == "all"
    return out.sort_values(["model", "_all", "domain"]).drop(columns="_all").reset_index(drop=True)


def to_contract_json(summary: pd.DataFrame) -> dict:
    """The JSON document of ``qlb refusal --json`` (CONTRACT.md section 2, keys fixed)."""
    out: dict[str, Any] = {"models": {}}
    for model, sub in summary.groupby("model", sort=True):
        entry: dict[str, Any] = {"all": None, "by_domain": {}}
        for row in sub.to_dict("records"):
            counts = {k: _plain(row[k]) for k in COUNT_KEYS}
            if row["domain"] == "all":
                entry["all"] = counts
            else:
                entry["by_domain"][row["domain"]] = counts
        out["models"][model] = entry
    return out


def _plain(v: Any) -> Any:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    return v


def recovery_routes(summary: pd.DataFrame) -> pd.DataFrame:
    """Per model, the two recovery routes on the common denominator n (paper Figure 12):
    direct correct / n and residual unique correct / n; they add up to the overall recovery."""
    a = summary[summary["domain"] == "all"].copy()
    a["direct_share"] = a["direct_correct"] / a["n"]
    a["residual_share"] = a["residual_unique_correct"] / a["n"]
    return a[["model", "n", "direct_correct", "residual_unique_correct", "direct_share", "residual_share",
              "overall_recovery", "withhold_rate"]].reset_index(drop=True)


def world_scores(scores: Mapping[str, float] | None, domain: str, ontology: Ontology | None = None) -> pd.DataFrame:
    """The released scores of one response over the domain's refusal labels (mechanisms, then
    WITHHOLD; missing shown as 0, flagged)."""
    labels = (ontology or load_ontology()).domain(domain).refusal_labels
    s = scores or {}
    return pd.DataFrame({"label": labels, "score": [float(s.get(l, 0.0)) for l in labels],
                         "released": [l in s for l in labels]})



def responses_frame(responses: list, worlds: Mapping[str, Any]) -> pd.DataFrame:
    """Validated RefusalResponse records joined with their worlds (the stateless path)."""
    return pd.DataFrame({
        "model": [r.model for r in responses],
        "world_id": [r.world_id for r in responses],
        "domain": [worlds[r.world_id].domain for r in responses],
        "mechanism": [worlds[r.world_id].mechanism for r in responses],
        "status": [r.status for r in responses],
        "choice": [r.choice for r in responses],
        "scores": [r.scores for r in responses],
    })


def format_table(summary: pd.DataFrame, ontology: Ontology | None = None) -> str:
    """A plain-text table of the per-model results (all domains) for the terminal."""
    a = summary[summary["domain"] == "all"]
    pct = lambda v: "N/A" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{100 * v:.2f}%"  # noqa: E731
    lines = [f"{'model':<16}{'n':>6}{'withheld':>10}{'withhold rate':>15}{'conditional':>13}{'overall':>10}"]
    for r in a.itertuples(index=False):
        lines.append(f"{r.model:<16}{r.n:>6}{r.withheld:>10}{pct(r.withhold_rate):>15}"
                     f"{pct(r.conditional_residual_recovery):>13}{pct(r.overall_recovery):>10}")
    lines.append(f"uniform guessing over a domain's mechanisms: {pct(uniform_reference(ontology))}")
    return "\n".join(lines)


# Each stored rate of ``refusal_results`` as (successes, denominator) over its counts
RATE_COUNTS: dict[str, tuple[str, str]] = {
    "withhold_rate": ("withheld", "n"),
    "conditional_residual_recovery": ("residual_unique_correct", "withheld"),
    "overall_recovery": ("recovered", "n"),
    "unique_winner_coverage": ("unique_winner", "withheld"),
}


def rate_intervals(results: pd.DataFrame) -> pd.DataFrame:
    """``results`` (rows of ``refusal_results``) with the Wilson 95% interval (``<rate>_lo``,
    ``<rate>_hi``) of each rate in ``RATE_COUNTS``: withheld share = withheld / n, recovered when
    withheld = residual unique correct / withheld, recovered overall = (direct correct + residual
    unique correct) / n, unique residual winner = (unique correct + unique incorrect) / withheld.
    An interval is missing where its denominator is 0."""
    out = results.copy()
    out["recovered"] = out["direct_correct"] + out["residual_unique_correct"]
    out["unique_winner"] = out["residual_unique_correct"] + out["residual_unique_incorrect"]
    for rate, (k, n) in RATE_COUNTS.items():
        out[f"{rate}_lo"], out[f"{rate}_hi"] = wilson(out[k], out[n])
    return out
