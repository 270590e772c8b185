"""Where a run lands against the TUPLE paper's findings (TUPLE.md section 8; issue 15).

The SIMULATED reference demo must tell the paper's story. Each ``Check`` is one of the paper's
findings: the paper's figure, the band a run must fall in to tell the same story (stated in the
check's ``band``), and the run's own figure, computed from the run's tables. The bands are this
project's reading of "the same regime", not the paper's: a simulated dataset is not expected to
reproduce the paper's exact numbers, only their direction and rough size. A real model's run is
compared the same way, and there a check that fails is a finding about that model, not an error.

``paper_checks`` needs every audit of a full TUPLE run; a check whose audit the run lacks has
``holds = None``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import pandas as pd

from qlb.present.learned import learned_points
from qlb.present.names import how_many, text_range
from qlb.present.rundata import RunData
from qlb.tuple.workflows import TASKS


@dataclass(frozen=True)
class Check:
    key: str
    finding: str        # the paper's finding, as a sentence
    paper: str          # what the paper reports
    band: str           # what a run must show to tell the same story
    run: str            # what the run shows
    holds: bool | None  # None: the run lacks the audit


def _pct(v: float) -> str:
    return f"{100 * v:.1f}%"


def _pts(v: float) -> str:
    return f"{100 * v:+z.1f}"


def _span(values: pd.Series, fmt: Callable[[float], str] = _pct) -> str:
    values = values.dropna()
    if values.empty:
        return "none"
    return text_range(fmt(float(values.min())), fmt(float(values.max())))


def _pooled(d: RunData) -> pd.DataFrame:
    """Recovery per (model, view) pooled over domains."""
    rec = d.recovery
    return rec[rec["scope"] == "pooled"].pivot(index="model", columns="view", values="accuracy") if not rec.empty \
        else pd.DataFrame()


def _diff(d: RunData, a: str, b: str) -> pd.Series:
    rd = d.recovery_diff
    if rd.empty:
        return pd.Series(dtype=float)
    sub = rd[(rd["view_a"] == a) & (rd["view_b"] == b)]
    return sub.set_index("model")["difference"]


def choice_vs_native(d: RunData) -> pd.DataFrame:
    """Pooled utility differences choice minus full native (positive: choice costs more)."""
    ud = d.utility_diff
    if ud.empty:
        return ud
    return ud[(ud["view_a"] == "choice") & (ud["view_b"] == "full_native")]


def _defense(d: RunData, name: str) -> pd.DataFrame:
    df = d.defenses
    return df[df["defense"] == name] if not df.empty else df


# Each check's finding, the paper's figure, and the band a run must fall in: stated once.
FINDINGS: dict[str, tuple[str, str, str]] = {
    "refusal_recovery": ("Refusal does not stop the leak: the mechanism is recovered from the refusal probe's "
                         "answers (direct, or the withheld response's top residual score)", "91.88% to 99.93%",
                         "at least 85% for every model"),
    "refusal_valid": ("Every model answers every refusal-probe world validly, and every withheld answer keeps its "
                      "mechanism scores", "1,440 valid per model; no withheld answer without scores",
                      "every world answered validly; none without scores"),
    "no_output": ("With no prediction released, recovery is exactly a coin flip", "exactly 50%",
                  "exactly 50% for every model"),
    "choice": ("The coarse choice alone leaks a little", "51.04% to 57.64%",
               "above 50% and at most 60% for every model"),
    "full_native": ("The full native output leaks much more", "62.85% to 75.35%",
                    "between 60% and 80% for every model"),
    "confidence_adds": ("Adding the confidence to the choice raises recovery", "9 of 9 models",
                        "above choice for every model"),
    "native_gap": ("Full native minus choice", "+11.46 to +23.61 points", "+8 to +28 points for every model"),
    "native_cheaper_authored": ("Full native is cheaper than choice for the legitimate recipient (authored costs)",
                                "27 of 27 model-task cases", "every model-task case"),
    "native_cheaper_all": ("Full native is cheaper than choice under all six cost profiles", "162 of 162",
                           "every case"),
    "noninferior": ("Choice is non-inferior to full native (paired 95% upper bound of the extra cost at most 0.1) "
                    "mainly in one-step clarification", "clarification 6/9, selective 0/9, asymmetric 0/9",
                    "clarification at least half the models; selective and asymmetric none"),
    "fronts_change": ("The non-dominated models (no other model leaks less and costs less) change with the task",
                      "yes", "not the same set in every task (authored costs)"),
    "wcpq_recovery": ("WCPQ lowers recovery at no cost to the recipients", "-10.07 to -24.65 points, every plan kept",
                      "-6 to -28 points for every model, every plan and cost kept"),
    "wcpq_coverage": ("WCPQ finds a codeword for almost every response", "99.3% to 100%",
                      "at least 99% for every model"),
    "temperature": ("Temperature scaling does not protect against an attacker who applies its public inverse",
                    "equal to native", "within 0.5 points of native for every model"),
    "top2": ("Releasing only the top two scores is about as leaky as native", "-0.35 points",
             "mean within 2 points of native"),
    "quantize": ("0.1 quantization lowers recovery a little", "-6.25 points (mean)", "mean -3 to -10 points"),
    "noise": ("Gaussian noise (sigma 0.05) lowers recovery a little more", "-8.91 points (mean)",
              "mean -5 to -13 points (seed average)"),
    "learned_budget": ("The learned bounded-cost WCPQ keeps every release within its cost budget",
                       "no budget violation observed (H.2)",
                       "largest realized cost increase within the budget for every model and variant"),
    "learned_cost": ("A positive budget can raise what the recipients pay; a zero budget never does",
                     "positive budgets can materially increase cost (Figure 11)",
                     "budget 0: no increase for any model; budget 0.5: at least 0.01 a case more for some model"),
    "learned_pair": ("The pair loss gives no consistent extra privacy", "no consistent additional benefit (Table 15)",
                     "paired minus no-pair recovery at or above zero for at least one model and budget"),
}


def _check(key: str, run: str, holds: bool | None) -> Check:
    return Check(key, *FINDINGS[key], run, holds)


def refusal_checks(d: RunData) -> list[Check]:
    ref = d.refusal[d.refusal["domain"] == "all"] if not d.refusal.empty else d.refusal
    if ref.empty:
        return [_check(k, "no refusal audit", None) for k in ("refusal_recovery", "refusal_valid")]
    rec = ref["overall_recovery"]
    valid = ref["n"] - ref["unavailable"]
    zero = ref["residual_zero_mass"]
    return [
        _check("refusal_recovery", _span(rec), bool((rec >= 0.85).all())),
        _check("refusal_valid", f"{_span(valid, lambda v: f'{v:,.0f}')} valid per model of {int(ref['n'].max()):,}; "
                                f"{int(zero.sum())} withheld without scores",
               bool((ref["unavailable"] == 0).all() and (zero == 0).all())),
    ]


def recovery_checks(d: RunData) -> list[Check]:
    by = _pooled(d)
    out = []
    for view, ok in (("no_output", lambda s: bool((s - 0.5).abs().max() < 1e-9)),
                     ("choice", lambda s: bool(((s > 0.5) & (s <= 0.6)).all())),
                     ("full_native", lambda s: bool(((s >= 0.6) & (s <= 0.8)).all()))):
        out.append(_check(view, "no recovery audit", None) if view not in by
                   else _check(view, _span(by[view]), bool(ok(by[view].dropna()))))
    for key, a, b, ok in (("confidence_adds", "choice_confidence", "choice", lambda s: (s > 0).all()),
                          ("native_gap", "full_native", "choice", lambda s: ((s >= 0.08) & (s <= 0.28)).all())):
        s = _diff(d, a, b)
        if s.empty:
            out.append(_check(key, "no recovery audit", None))
        else:
            run = f"{_span(s, _pts)} points"
            if key == "confidence_adds":       # the point estimates, and how many the paired interval clears
                rd = d.recovery_diff
                low = rd[(rd["view_a"] == a) & (rd["view_b"] == b)]["ci_low"] if "ci_low" in rd else pd.Series()
                run = (f"higher for {how_many(int((s > 0).sum()), len(s))} ({run})"
                       + (f"; paired 95% interval above 0 for {int((low > 0).sum())}" if len(low) else ""))
            out.append(_check(key, run, bool(ok(s))))
    return out


def utility_checks(d: RunData) -> list[Check]:
    cv = choice_vs_native(d)
    if cv.empty:
        return [_check(k, "no utility audit", None)
                for k in ("native_cheaper_authored", "native_cheaper_all", "noninferior", "fronts_change")]
    auth = cv[cv["profile"] == "authored"]
    ni = {t: auth[auth["task"] == t]["noninferior"].astype(bool) for t in TASKS}
    n_models = auth["model"].nunique()
    ni_run = ", ".join(f"{t} {int(ni[t].sum())}/{len(ni[t])}" for t in ("clarification", "selective", "asymmetric"))
    ni_ok = (ni["clarification"].sum() * 2 >= n_models and not ni["selective"].any() and not ni["asymmetric"].any())
    out = [
        _check("native_cheaper_authored", f"{int((auth['difference'] > 0).sum())} of {len(auth)}",
               bool((auth["difference"] > 0).all())),
        _check("native_cheaper_all", f"{int((cv['difference'] > 0).sum())} of {len(cv)}",
               bool((cv["difference"] > 0).all())),
        _check("noninferior", ni_run, bool(ni_ok)),
    ]
    if d.fronts.empty:
        out.append(_check("fronts_change", "no fronts", None))
    else:
        f = d.fronts[(d.fronts["profile"] == "authored") & (d.fronts["view"] == "full_native")
                     & d.fronts["nondominated_models"].astype(bool)]
        sets = {t: tuple(sorted(f[f["task"] == t]["model"])) for t in TASKS}
        run = "; ".join(f"{t}: {', '.join(m) or 'none'}" for t, m in sets.items())
        out.append(_check("fronts_change", run, len(set(sets.values())) > 1))
    return out


def defense_checks(d: RunData) -> list[Check]:
    out = []
    w = _defense(d, "wcpq")
    if w.empty:
        out += [_check(k, "no defense audit", None) for k in ("wcpq_recovery", "wcpq_coverage")]
    else:
        kept = bool((w["plan_agreement"] == w["plan_comparisons"]).all() and (w["max_abs_cost_diff"] == 0).all())
        diff = w["diff_vs_native"]
        out += [_check("wcpq_recovery", f"{_span(diff, _pts)} points; "
                                        + ("every plan kept" if kept else "NOT every plan kept"),
                       bool(kept and ((diff <= -0.06) & (diff >= -0.28)).all())),
                _check("wcpq_coverage", _span(w["coverage"]), bool((w["coverage"] >= 0.99).all()))]
    for key, ok in (("temperature", lambda s: bool((s.abs() <= 0.005).all())),
                    ("top2", lambda s: abs(float(s.mean())) <= 0.02),
                    ("quantize", lambda s: -0.10 <= float(s.mean()) <= -0.03),
                    ("noise", lambda s: -0.13 <= float(s.mean()) <= -0.05)):
        rows = _defense(d, key)
        if rows.empty:
            out.append(_check(key, "no defense audit", None))
        else:
            s = rows["diff_vs_native"].astype(float)
            out.append(_check(key, f"{_span(s, _pts)} points (mean {_pts(float(s.mean()))})", ok(s)))
    return out


LEARNED_KEYS = ("learned_budget", "learned_cost", "learned_pair")


def learned_checks(d: RunData) -> list[Check]:
    """The learned bounded-cost WCPQ (paper H.2): every release within its budget, what a budget
    costs the frozen recipients (authored costs, mean of the three tasks), what the pair loss
    changes in recovery. A check the run's variants cannot answer is None."""
    points = learned_points(d.defenses, d.defense_costs) if not d.defenses.empty else pd.DataFrame()
    info = d.learned
    if points.empty or info.empty:
        return [_check(k, "no learned WCPQ in the run", None) for k in LEARNED_KEYS]
    learned = points[points["kind"] != "strict"]
    known = info.dropna(subset=["max_cost_increase"])
    worst = known.groupby("budget")["max_cost_increase"].max()
    out = [_check("learned_budget", ", ".join(f"{v:.2f} at budget {b:g}" for b, v in worst.items()) + " review costs",
                  bool((known["max_cost_increase"] <= known["budget"] + 1e-9).all())) if len(known)
           else _check("learned_budget", "no verification stored", None)]
    zero = learned.loc[learned["budget"] == 0, "cost_change"].dropna()
    top = learned.loc[learned["budget"] == 0.5, "cost_change"].dropna()
    if zero.empty or top.empty:
        out.append(_check("learned_cost", "needs budgets 0 and 0.5", None))
    else:
        out.append(_check("learned_cost", f"budget 0: up to {zero.max():+z.3f} a case; budget 0.5: up to {top.max():+z.3f}",
                          bool(zero.max() <= 1e-12 and top.max() >= 0.01)))
    both = learned.pivot_table(index=["model", "budget"], columns="kind", values="accuracy")
    gap = (both["paired"] - both["no pair"]).dropna() if {"paired", "no pair"} <= set(both.columns) \
        else pd.Series(dtype=float)
    out.append(_check("learned_pair", f"{_span(gap, _pts)} points (mean {_pts(float(gap.mean()))})", bool((gap >= 0).any()))
               if len(gap) else _check("learned_pair", "needs both variants of a budget", None))
    return out


def paper_checks(d: RunData) -> list[Check]:
    """Every check, in the order of the paper's story: refusal, recovery, utility, defenses, and
    the learned WCPQ extension."""
    return refusal_checks(d) + recovery_checks(d) + utility_checks(d) + defense_checks(d) + learned_checks(d)


def checks_frame(checks: list[Check]) -> pd.DataFrame:
    return pd.DataFrame([c.__dict__ for c in checks], columns=list(Check.__dataclass_fields__))


def failing(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.holds is False]


def tally(checks: list[Check]) -> tuple[int, int]:
    """(how many of the paper's findings hold, how many the run can judge): checks the run holds no audit for
    count in neither."""
    return sum(c.holds is True for c in checks), sum(c.holds is not None for c in checks)


def comparison_lead(simulated: bool) -> tuple[str, str]:
    """The bold lead of the paper comparison and what it is a check of: on simulated data, of qlb's
    simulator (built so that the demo tells the paper's story), not of any model; on real answers, how
    the dataset's models compare with the paper's."""
    if simulated:
        return ("Does the simulation reproduce the paper?",
                " This checks qlb's simulator, which was built to tell the paper's story, not any model.")
    return "Against the paper's models.", ""


def comparison_sentence(checks: list[Check]) -> str | None:
    """How many of the paper's findings hold on the run and, by name, which do not (with what the run shows against
    the band): said beside the headline findings, so a finding that praises a result the paper comparison fails is
    never read alone. None when the run holds none of the audits the checks read."""
    held, known = tally(checks)
    if not known:
        return None
    bad = failing(checks)
    text = f"{held} of {known} of the TUPLE paper's findings hold on this run"
    if not bad:
        return text + "."
    return (text + "; " + ("this one does not: " if len(bad) == 1 else f"these {len(bad)} do not: ")
            + "; ".join(f"{c.finding.rstrip('.')} (this run: {c.run}; the paper's story needs {c.band})" for c in bad)
            + ".")



