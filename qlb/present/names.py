"""One presentation vocabulary: the display name of every view, defense, task, cost profile,
refusal outcome, attacker family and attacker, and the label, kind and explanation of every result
column the pages, the report and the CSV downloads show. Pages never print an internal name
(``full_native``, ``review_half``, ``conditional_residual_recovery``); they go through ``readable``.

One name for one thing: what recovers the protected mechanism is the *attacker* (the paper's
"decoder"; the code keeps ``decoder``/``decoding`` identifiers), built from *attacker families*,
and its audit is the *recovery* audit (``AUDIT_NAMES``). ``tests/present/test_vocabulary.py``
keeps the retired words out of what a reader sees.

A column's *kind* says how it is shown: ``rate`` (a share of cases, shown as a percent),
``share`` (a rate whose size is the point: a bar), ``count`` (a whole number), ``points`` (a
difference of two rates in percentage points), ``cost`` (cost units per case), ``number`` (any
other number), ``text``, ``flag`` (yes/no). Interval cells (``63.4% [60.9, 65.8]``) are text
made by ``pct_interval``, ``points_interval`` or ``cost_interval``.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Collection

import numpy as np
import pandas as pd

from qlb.tuple.learned_wcpq import LEARNED_ENDPOINTS, variant

if TYPE_CHECKING:
    from qlb.records.ontology import Ontology

VIEW_NAMES = {"no_output": "no output", "choice": "choice", "choice_confidence": "choice + confidence",
              "full_probabilities": "full probabilities", "full_native": "full native"}
VIEW_HELP = {
    "no_output": "Only the response status is released (answered or unavailable): the guessing baseline.",
    "choice": "Only the model's chosen class.",
    "choice_confidence": "The chosen class and the model's stated confidence.",
    "full_probabilities": "The chosen class and the probability of every class.",
    "full_native": "Everything the model returned: choice, every class probability and the confidence.",
}
DEFENSE_NAMES = {"native": "native (control)", "quantize": "quantize 0.1", "top2": "top-two",
                 "temperature": "temperature τ=2", "noise": "noise σ=0.05 (3-seed mean)",
                 "wcpq grid": "WCPQ strict, grid only (control)", "wcpq": "WCPQ strict"}
LEARNED = {ep: variant(ep) for ep in LEARNED_ENDPOINTS}       # name -> (budget, pair-loss weight)
DEFENSE_NAMES.update({ep: f"WCPQ learned, budget {b:g}, {'pair loss' if w else 'no pair loss'}"
                      for ep, (b, w) in LEARNED.items()})
DEFENSE_HELP = {
    "native": "The model's own probabilities, unchanged: what every defense is compared with.",
    "quantize": "Every probability rounded to the nearest 0.1, then renormalised.",
    "top2": "Only the two largest probabilities are released; the rest are withheld.",
    "temperature": "Probabilities flattened with temperature 2 (an invertible change).",
    "noise": "Gaussian noise (σ = 0.05) added to the probabilities; three seeds, averaged.",
    "wcpq grid": "WCPQ with only the static 0.1 grid as codewords: the canonical control.",
    "wcpq": "The workflow-constrained quantizer: each response is replaced by the first codeword that makes "
            "every frozen recipient policy (one per task and cost profile) act exactly as it would on the "
            "original.",
    **{ep: (f"A learned quantizer: a small network picks, per response, a codeword that keeps every "
            f"frozen policy's chosen class and costs at most {b:g} review costs more for any true class, trained "
            f"against a critic that tries to recover the protected mechanism"
            + (", and to give a pair's two worlds the same codeword." if w else ".")
            + " (The TUPLE paper's Appendix H.2.)")
       for ep, (b, w) in LEARNED.items()},
}
TASK_NAMES = {"selective": "selective routing", "clarification": "one-step clarification",
              "asymmetric": "asymmetric-cost routing"}
TASK_HELP = {
    "selective": "Route the case to the most likely class, or pay for trusted review.",
    "clarification": "Act now, or buy one yes/no check of a class before routing.",
    "asymmetric": "Choose the route (or general inspection) with the lowest expected cost under an "
                  "action-by-class cost matrix.",
}
PROFILE_NAMES = {"authored": "authored costs", "review_half": "review at half cost",
                 "review_double": "review at double cost", "check_quarter": "check at a quarter",
                 "error_double": "errors at double cost",
                 "asymmetric_class0_double": "first class's errors doubled"}
PROFILE_HELP = {
    "authored": "The costs as written: a wrong route 10, trusted review 2, one check 0.4.",
    "review_half": "Trusted review and general inspection cost half (review 1).",
    "review_double": "Trusted review and general inspection cost double (review 4).",
    "check_quarter": "A clarification check costs a quarter (0.1).",
    "error_double": "A wrong route costs double (20), and every off-diagonal asymmetric cost doubles.",
    "asymmetric_class0_double": "In the asymmetric-cost matrix, the costs when the true class is the domain's "
                                "first class double.",
}
_TIMES = {0.25: "a quarter", 0.5: "half", 2.0: "double", 3.0: "triple", 4.0: "four times as much"}


def _times(x: float) -> str:
    """``half``, ``double``, ``1.5 times as much``."""
    return _TIMES.get(float(x), f"{float(x):g} times as much")


def authored_sentence(ontology: "Ontology | None" = None) -> str:
    """The task's authored costs in words: ``a wrong route 10, trusted review 2, one check 0.4`` (TUPLE's)."""
    from qlb.tuple.costs import authored
    base = authored(ontology)
    return (f"a wrong route {float(base['wrong_route']):g}, trusted review {float(base['review']):g}, one check "
            f"{float(base['check']):g}")


def profile_descriptions(ontology: "Ontology | None" = None) -> dict[str, str]:
    """What each cost profile of a decision task changes, in words and with the resulting costs: TUPLE's six
    in the paper's wording (``PROFILE_HELP``), any other task's (OWN_TASK.md) from its own authored costs and
    multipliers, so an auditor's own costs are never shown as TUPLE's."""
    from qlb.records.ontology import PROFILE_COLUMN_CLASS, PROFILE_COLUMN_X, humanise, load_ontology
    from qlb.tuple.costs import authored
    tuple_task = load_ontology()
    onto = ontology or tuple_task
    if onto.sha256 == tuple_task.sha256:
        return dict(PROFILE_HELP)
    base = authored(onto)
    w, r, k = (float(base[key]) for key in ("wrong_route", "review", "check"))
    classes = {c for d in onto.domains.values() for c in d.classes}
    out = {}
    for profile, spec in onto.cost_profiles.items():
        x = {key: float(v) for key, v in spec.items() if key != PROFILE_COLUMN_CLASS}
        parts = []
        rx, ix = x.get("review_x", 1.0), x.get("inspect_x", 1.0)
        if rx == ix != 1.0:
            parts.append(f"trusted review and general inspection cost {_times(rx)} (review {r * rx:g})")
        else:
            if rx != 1.0:
                parts.append(f"trusted review costs {_times(rx)} ({r * rx:g})")
            if ix != 1.0:
                parts.append(f"general inspection costs {_times(ix)}")
        if x.get("check_x", 1.0) != 1.0:
            parts.append(f"a clarification check costs {_times(x['check_x'])} ({k * x['check_x']:g})")
        if x.get("wrong_route_x", 1.0) != 1.0:
            parts.append(f"a wrong route costs {_times(x['wrong_route_x'])} ({w * x['wrong_route_x']:g})")
        if x.get("asymmetric_offdiag_x", 1.0) != 1.0:
            parts.append(f"every off-diagonal asymmetric cost is multiplied by {x['asymmetric_offdiag_x']:g}")
        if x.get("asymmetric_class0_column_x", 1.0) != 1.0:
            parts.append(f"in the asymmetric-cost matrix, the costs when the true class is the domain's first class "
                         f"are multiplied by {x['asymmetric_class0_column_x']:g}")
        if PROFILE_COLUMN_CLASS in spec and x.get(PROFILE_COLUMN_X, 1.0) != 1.0:
            cls = str(spec[PROFILE_COLUMN_CLASS])
            without = [d.title for d in onto.domains.values() if cls not in d.classes]
            parts.append(f"in the asymmetric-cost matrix, the costs when the true class is {humanise(cls)} are "
                         f"multiplied by {x[PROFILE_COLUMN_X]:g}"
                         + (" (no domain has that class, so nothing changes)" if cls not in classes else
                            f" (nothing changes in {listing(without)}, which {'has' if len(without) == 1 else 'have'} "
                            "no such class)" if without else ""))
        text = "; ".join(parts)
        out[profile] = (text[:1].upper() + text[1:] + "." if parts
                        else f"The costs as written: {authored_sentence(onto)}.")
    return out


OUTCOME_NAMES = {
    "direct_correct": "named the mechanism",
    "direct_incorrect": "named another mechanism",
    "residual_unique_correct": "withheld, residual ranks it first",
    "residual_unique_incorrect": "withheld, residual ranks another first",
    "residual_tied": "withheld, residual tied",
    "residual_zero_mass": "withheld, no residual mass",
}
FAMILY_NAMES = {"prior": "base rate", "logistic": "logistic regression", "forest": "random forest",
                "shared_scorer": "shared mechanism scorer", "template": "Gaussian templates"}
TRACK_NAMES = {"selected": "selected attacker", "best_configuration": "best single configuration",
               **{f: f"best {n}" for f, n in FAMILY_NAMES.items()}, "prior": "base rate",
               "family_winners": "average of family bests",
               "all_configurations": "average of all configurations", "stack": "learned stack"}
TRACK_HELP = {
    "selected": "The attacker the run froze (the paper's selected strategy): best validation recovery among every "
                "candidate, nested subviews included.",
    "best_configuration": "The configuration of the full native view with the best validation recovery (then "
                          "log loss), per domain.",
    **{f: f"The {n} configuration with the best validation recovery (then log loss), per domain."
       for f, n in FAMILY_NAMES.items()},
    "prior": "P(second hypothesis) from the training worlds with the same class and hypotheses: both worlds of a "
             "pair get the same answer, so it is right for exactly one of them (50%).",
    "family_winners": "The equal-weight average of each family's best configuration (chosen by out-of-fold "
                      "recovery on the training worlds).",
    "all_configurations": "The equal-weight average of every configuration's probability.",
    "stack": "A logistic regression on every configuration's out-of-fold log-odds (the learned out-of-fold "
             "combination).",
}
OUTCOME_HELP = {
    "direct_correct": "The model did not withhold and named the true mechanism: a policy violation that gives the "
                      "mechanism away.",
    "direct_incorrect": "The model did not withhold and named another mechanism: a policy violation, but nothing is "
                        "recovered.",
    "residual_unique_correct": "The model withheld, but its residual scores rank the true mechanism uniquely first: "
                               "recovered anyway.",
    "residual_unique_incorrect": "The model withheld; its residual scores rank another mechanism uniquely first: not "
                                 "recovered.",
    "residual_tied": "The model withheld; its top residual score is shared by two or more mechanisms: not recovered.",
    "residual_zero_mass": "The model withheld and put no score on any mechanism: not recovered.",
}

# --- the attacker's candidates in words (a run stores each as ``qlb.tuple.decoding`` names it) -------------------
# a combination of configurations is the attack track of the same name (``qlb.tuple.tracks``)
COMBINATION_WORDS = {"ensemble of family winners": TRACK_NAMES["family_winners"],
                     "ensemble of all configurations": TRACK_NAMES["all_configurations"],
                     "stack": TRACK_NAMES["stack"]}
REPRESENTATION_WORDS = {"raw": "", "logratio": " on probability log-ratios", "residual": " on residual shares"}
_CANDIDATE = re.compile(r"^(?P<name>.+?)(?: \[(?P<view>[a-z_]+)\])?(?P<inverse> on the public inverse)?$")


def _number(value: str) -> str:
    """A stored parameter value without a needless ``.0`` (``10.0`` -> ``10``)."""
    return value[:-2] if value.endswith(".0") else value


def attacker_words(candidate: str, view: str | None = None) -> str:
    """A stored attacker candidate in words: a base configuration of ``qlb.tuple.decoders.base_library`` (family,
    representation, parameters: ``template logratio full shrink=2``) or a combination of
    ``qlb.tuple.decoding.view_candidates``, optionally followed by ``[subview]`` (the candidate was built on that
    nested view) and the defense audit's `` on the public inverse``. ``template logratio full shrink=2
    [full_probabilities]`` reads ``Gaussian templates on probability log-ratios (correlated features, shrunk
    means), using only the full probabilities view``; the subview is named only when it differs from ``view``, the
    view being attacked. A name this function does not know keeps its own wording."""
    m = _CANDIDATE.match(candidate.strip())
    if m is None:
        return candidate
    base, subview = m["name"], m["view"]
    words = COMBINATION_WORDS.get(base) or _configuration_words(base) or base
    if subview and subview != view:
        words += ", using no released field" if subview == "no_output" else \
            f", using only the {VIEW_NAMES.get(subview, subview)} view"
    if m["inverse"]:       # the defense audit's attacker who undoes a temperature release first
        words += ", after undoing the temperature"
    return words


def _configuration_words(base: str) -> str | None:
    """One base configuration of the attacker library in words; None when ``base`` is not one."""
    parts = base.split()
    params = dict(p.split("=", 1) for p in parts if "=" in p)
    flags = [p for p in parts if "=" not in p]
    if base == "prior":
        return "base rate of the hypothesis pair"
    if flags[:1] == ["logistic"] and "C" in params:
        terms = "with pairwise terms" if "quadratic" in flags else "linear"
        return f"{FAMILY_NAMES['logistic']}, {terms} (regularization C = {_number(params['C'])})"
    if flags[:1] == ["forest"] and {"depth", "leaf"} <= params.keys():
        depth = "any depth" if params["depth"] == "None" else f"depth ≤ {params['depth']}"
        leaf = f"at least {params['leaf']} world{'' if params['leaf'] == '1' else 's'} per leaf"
        return f"{FAMILY_NAMES['forest']} ({depth}, {leaf})"
    if flags[:2] == ["shared", "scorer"] and len(flags) == 3 and "C" in params:
        representation = REPRESENTATION_WORDS.get(flags[2], " " + flags[2])
        return f"{FAMILY_NAMES['shared_scorer']}{representation} (regularization C = {_number(params['C'])})"
    if flags[:1] == ["template"] and len(flags) == 3 and "shrink" in params:
        features = "correlated features" if flags[2] == "full" else "independent features"
        means = "unshrunk means" if float(params["shrink"]) == 0 else "shrunk means"
        return (f"{FAMILY_NAMES['template']}{REPRESENTATION_WORDS.get(flags[1], ' ' + flags[1])} "
                f"({features}, {means})")
    return None


def family_words(families: Collection[str]) -> str:
    """Attacker families in words, comma separated, in the library's order (as the Glossary lists them; an unknown
    one last, as it is)."""
    order = list(FAMILY_NAMES)
    ranked = sorted(families, key=lambda f: (order.index(f) if f in order else len(order), f))
    return ", ".join(FAMILY_NAMES.get(f, f) for f in ranked)


QL_METRIC_NAMES = {
    "complete_f1": "complete-group F1", "complete_recall": "complete recall", "strict_precision": "strict precision",
    "graded_f1": "graded F1", "graded_recall": "graded recall", "lenient_precision": "lenient precision",
    "binding_error_rate": "binding error", "over_flag_rate": "over-flag", "document_flag_recall": "document flag recall",
    "span_f1": "span F1", "targets": "targets", "predicted_groups": "predicted groups",
}
QL_METRIC_HELP = {
    "complete_f1": "Harmonic mean of strict precision and complete recall: whole groups found, bound to the right "
                   "attribute, only where the policy says hide.",
    "complete_recall": "Share of target groups (gold groups of a hide attribute) whose every cue one predicted "
                       "group of the same attribute found.",
    "strict_precision": "Share of predicted groups that completely cover a target of the same attribute.",
    "graded_f1": "Harmonic mean of lenient precision and graded recall: partial credit for part of a group.",
    "graded_recall": "Target groups' mean share of cues found (partial credit).",
    "lenient_precision": "Share of predicted groups that overlap a target group of the same attribute.",
    "binding_error_rate": "Share of targets that a predicted group covers completely, but only under a wrong "
                          "attribute.",
    "over_flag_rate": "Share of predicted groups for attributes the policy keeps or leaves neutral.",
    "document_flag_recall": "Share of documents with a target in which the detector reports at least one group "
                            "of a hide attribute.",
    "span_f1": "Span-level F1 that ignores groups and attributes: the usual PII-detector score.",
}
SCOPE_NAMES = {"pooled": "all domains", "macro": "domain average", "all": "all domains"}

VALUE_NAMES: dict[str, dict[str, str]] = {
    "view": VIEW_NAMES, "view_a": VIEW_NAMES, "view_b": VIEW_NAMES, "candidate_view": VIEW_NAMES,
    "defense": DEFENSE_NAMES, "task": TASK_NAMES, "profile": PROFILE_NAMES, "outcome": OUTCOME_NAMES,
    "scope": SCOPE_NAMES, "family": FAMILY_NAMES, "track": TRACK_NAMES,
}


@dataclass(frozen=True)
class Column:
    """How one result column is shown: its label (also the CSV header), its kind and its tooltip."""
    label: str
    kind: str = "text"
    help: str = ""


_RECOVERY = "How often the attacker names the true mechanism of a test world; 50% is guessing."
COLUMNS: dict[str, Column] = {
    "model": Column("model"),
    "domain": Column("domain"),
    "view": Column("release view", help="Which fields of the response are released."),
    "view_a": Column("view A"), "view_b": Column("view B"),
    "defense": Column("defense", help="How the released probabilities were changed."),
    "task": Column("task", help="The downstream task the recipient runs with the release."),
    "profile": Column("cost profile", help="Which of the six fixed sets of costs is in force."),
    "scope": Column("scope"),
    "split": Column("split"),
    "n": Column("cases", "count", "How many cases (test worlds, or responses in the refusal audit) the figure "
                                  "is computed on."),
    "n_worlds": Column("worlds", "count"),
    "withheld": Column("withheld", "count", "Responses whose choice is WITHHOLD."),
    "withhold_rate": Column("withheld (share)", "share", "Share of refusal probes the model answered with WITHHOLD."),
    "conditional_residual_recovery": Column(
        "recovered when withheld", "rate",
        "Of the withheld responses, the share whose residual scores rank the true mechanism uniquely first."),
    "overall_recovery": Column(
        "recovered overall", "rate",
        "Share of all refusal probes that give the mechanism away: named directly, or withheld with the "
        "residual scores ranking it uniquely first."),
    "unavailable": Column("unavailable", "count", "Responses with status unavailable (not counted in n)."),
    "unique_winner_coverage": Column("single top score", "rate",
                                     "Share of withheld responses whose residual scores have one unique maximum."),
    "choice_not_argmax": Column("choice not the top score", "count",
                                "Responses whose choice is not the class with the largest released score."),
    "direct_correct": Column("named the mechanism", "count"),
    "direct_incorrect": Column("named another", "count"),
    "residual_unique_correct": Column("residual: true first", "count"),
    "residual_unique_incorrect": Column("residual: other first", "count"),
    "residual_tied": Column("residual: tied", "count"),
    "residual_zero_mass": Column("residual: no mass", "count"),
    "accuracy": Column("secret recovery", "rate", _RECOVERY),
    "recovery": Column("secret recovery", "rate", _RECOVERY),
    "log_loss": Column("log loss", "number", "Mean test log loss of the attacker (natural log; 0.693 is guessing)."),
    "difference": Column("difference (points)", "points"),
    "diff_vs_native": Column("vs native (points)", "points",
                             "Recovery under the defense minus recovery under the native control, in points."),
    "mean_cost": Column("mean cost", "cost", "Mean realized cost per test world, in the profile's cost units."),
    "oracle_cost": Column("oracle-T cost", "cost", "The lowest cost a policy knowing the true class could reach."),
    "cost": Column("cost", "cost"),
    "coverage": Column("coverage", "rate", "Selective routing: the share of cases routed without trusted review. "
                                          "WCPQ: the share of available responses that found a codeword."),
    "fallbacks": Column("fallbacks", "count", "WCPQ: responses released unchanged because no codeword kept every "
                                              "policy's plan (the identity fallback)."),
    "plan_agreement": Column("plans kept", "count", "WCPQ: (world, policy) comparisons whose complete plan is the "
                                                    "same for the native and the released response."),
    "plan_comparisons": Column("plans compared", "count"),
    "max_abs_cost_diff": Column("largest cost change", "cost", "WCPQ: the largest change of any world's realized "
                                                               "cost under any frozen policy (0 = none)."),
    "routed_error": Column("routed error", "rate", "Share of routed cases sent to the wrong class."),
    "fallback_rate": Column("fallback", "rate", "Share of cases that fell back to trusted review (unavailable)."),
    "clarify_rate": Column("clarified", "rate", "Share of cases where the recipient bought a check."),
    "val_accuracy": Column("validation recovery", "rate"),
    "val_log_loss": Column("validation log loss", "number"),
    "val_cost": Column("validation cost", "cost"),
    "n_candidates": Column("candidates tried", "count"),
    "candidate": Column("selected attacker"),
    "candidate_view": Column("features from"),
    "track": Column("attack track", help="A saved way of attacking the full native release on the same test "
                                         "worlds: the selected attacker, a family's best configuration, an "
                                         "equal-weight average or the learned stack."),
    "pairs_kept": Column("pairs kept", "count", "Test pairs whose released choices are the true coarse class in "
                                                "both worlds."),
    "pairs_total": Column("test pairs", "count"),
    "policy": Column("recipient policy"),
    "noninferior": Column("non-inferior", "flag",
                          "Yes when the upper end of the paired 95% interval of the extra cost is at most 0.1."),
    "world_id": Column("world"), "pair_id": Column("pair"),
    "p_s1": Column("P(second hypothesis)", "number"),
    "correct": Column("correct", "flag"),
    "available": Column("available", "flag"),
}


COLUMNS |= {m: Column(QL_METRIC_NAMES[m], "rate", QL_METRIC_HELP[m]) for m in QL_METRIC_HELP}
COLUMNS |= {"targets": Column("targets", "count", "Gold groups of a hide attribute: what a detector should find."),
            "predicted_groups": Column("predicted groups", "count")}


def readable(df: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Column]]:
    """``df`` with internal values in the known name columns replaced by their display names and
    its columns relabelled; returns the frame and the ``Column`` of each shown label. Columns
    not in ``COLUMNS`` keep their name (the page already wrote a label) and are text or numbers
    as they are; missing values in text columns become an empty cell, never "None"."""
    out = df.copy()
    specs: dict[str, Column] = {}
    renames: dict[str, str] = {}
    for col in df.columns:
        names = VALUE_NAMES.get(col)
        if names is not None and not pd.api.types.is_numeric_dtype(df[col]):
            out[col] = [name(col, v) if isinstance(v, str) else v for v in df[col]]
        spec = COLUMNS.get(col, Column(str(col), _kind_of(df[col])))
        renames[col] = spec.label
        specs[spec.label] = spec
        if spec.kind == "text" and not pd.api.types.is_numeric_dtype(out[col]):     # object or str dtype
            out[col] = ["" if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA else v
                        for v in out[col]]
    return out.rename(columns=renames), specs


def _kind_of(series: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(series):
        return "flag"
    if pd.api.types.is_integer_dtype(series):
        return "count"
    if pd.api.types.is_numeric_dtype(series):
        return "number"
    return "text"


def name(kind: str, value: str) -> str:
    """The display name of one ``value`` of a name column (``view``, ``defense``, ``task``,
    ``profile``, ``outcome``, ``scope``, ``family``, ``track``); an unknown value is shown as it is, but an own task's
    cost profile as words (``regulator_strict`` -> "regulator strict", like "review at half cost")."""
    if kind == "profile" and value not in VALUE_NAMES[kind] and isinstance(value, str):
        return value.replace("_", " ")
    return VALUE_NAMES[kind].get(value, value)


def pct(v: float | None, digits: int = 1) -> str:
    """A rate as a percent (``63.4%``); N/A when missing."""
    return "N/A" if v is None or pd.isna(v) else f"{100 * v:.{digits}f}%"


def chance_pct(v: float) -> str:
    """A guessing rate as a percent: exact when two decimals hold it (1/16: ``6.25%``), else to one decimal like every
    other rate (1/7: ``14.3%``)."""
    exact = round(10000 * v, 6) == round(10000 * v)
    return pct(v, 2) if exact and round(10000 * v) % 10 else pct(v)


def exactly_half(rows: pd.DataFrame) -> bool:
    """Whether every row's recovery and its 95% interval are exactly 50% (each pair one world right and one wrong,
    in every resample: the attacker gives both worlds of a pair the same answer), which an interval of zero width
    does not explain by itself."""
    return not rows.empty and bool(((rows[["accuracy", "ci_low", "ci_high"]] - 0.5).abs() < 1e-12).all(axis=None))


def pct_interval(v: float | None, lo: float | None = None, hi: float | None = None, digits: int = 1) -> str:
    """A rate with its 95% interval: ``63.4% [60.9, 65.8]``; the rate alone when there is no interval."""
    if v is None or pd.isna(v):
        return "N/A"
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return pct(v, digits)
    return f"{100 * v:.{digits}f}% [{100 * lo:.{digits}f}, {100 * hi:.{digits}f}]"


def as_shown(values, digits: int):
    """``values`` (a Series or an array) with every value a signed format of ``digits`` decimals
    would print as -0.0 (a small negative number, or -0.0 itself) set to 0.0, so that it prints
    +0.0; Streamlit's ``%+.1f`` and Plotly's ``+.1f`` print "-0.0". Every other value, and NaN,
    stays as it is (full precision in the CSV downloads)."""
    tiny = 0.5 * 10.0 ** -digits
    if isinstance(values, pd.Series):
        values = pd.to_numeric(values, errors="coerce")      # an object column (None for a missing value) too
        return values.mask(values.abs() < tiny, 0.0)
    v = np.asarray(values, dtype=float)
    return np.where(np.abs(v) < tiny, 0.0, v)


def points_interval(d: float | None, lo: float | None = None, hi: float | None = None, digits: int = 1) -> str:
    """A difference of two rates in percentage points with its interval: ``+5.9 [+2.6, +9.4]``."""
    if d is None or pd.isna(d):
        return "N/A"
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return f"{100 * d:+z.{digits}f}"
    return f"{100 * d:+z.{digits}f} [{100 * lo:+z.{digits}f}, {100 * hi:+z.{digits}f}]"


def cost_interval(v: float | None, lo: float | None = None, hi: float | None = None, digits: int = 3,
                  signed: bool = False) -> str:
    """A cost (or a cost difference when ``signed``) with its interval: ``1.616 [1.271, 2.001]``."""
    if v is None or pd.isna(v):
        return "N/A"
    f = f"{{:{'+z' if signed else ''}.{digits}f}}"
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return f.format(v)
    return f"{f.format(v)} [{f.format(lo)}, {f.format(hi)}]"


def text_range(lo: str, hi: str) -> str:
    """``lo to hi`` as a finding says a range; one figure when both read the same (one model,
    or values that differ only past the digits shown)."""
    return lo if lo == hi else f"{lo} to {hi}"


def utc_minute(value: object, missing: str = "") -> str:
    """A stored timestamp (the warehouse stamps in UTC) to the minute, one way everywhere: ``2026-12-04 11:23 UTC``;
    ``missing`` when there is none."""
    return missing if value is None or pd.isna(value) else pd.Timestamp(value).strftime("%Y-%m-%d %H:%M UTC")


def utc_second(value: object) -> str:
    """A stored timestamp (UTC) to the second, for tables of calls and runs: ``2026-12-04 20:00:47``; empty when
    there is none (the column's label says UTC)."""
    return "" if value is None or pd.isna(value) else pd.Timestamp(value).strftime("%Y-%m-%d %H:%M:%S")


def under(profile: str) -> str:
    """``Under the authored costs`` or ``Under the cost profile “review at half cost”``: a sentence's opening."""
    return ("Under the authored costs" if profile == "authored"
            else f"Under the cost profile “{name('profile', profile)}”")


def listing(items: list[str], word: str = "and") -> str:
    """``a, b and c`` (``word``: "or" for ``a, b or c``)."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {word} {items[-1]}"


# one and many of each kind of input line (a rejected worlds line is "1 world", not "1 worlds")
KIND_NOUNS: dict[str, tuple[str, str]] = {
    "worlds": ("world", "worlds"), "responses": ("native response", "native responses"),
    "refusal": ("refusal response", "refusal responses"), "corpus": ("QuasiLeak document", "QuasiLeak documents"),
    "predictions": ("detector prediction", "detector predictions"),
}


# audit names as stored in a run's parameters -> as a reader knows them, in the pages' order
AUDIT_NAMES = {"refusal": "refusal", "decoding": "recovery", "utility": "utility", "defenses": "defenses",
               "quasileak": "QuasiLeak"}


def audit_names(params: dict, every: str | None = None) -> str:
    """A run's audits (its stored parameters' ``audits``) by the names a reader knows, in the pages'
    order; ``every``, when given, stands for all five."""
    held = [label for key, label in AUDIT_NAMES.items() if key in params.get("audits", [])]
    if every and len(held) == len(AUDIT_NAMES):
        return every
    return ", ".join(held) or "no audit"


def run_label(run_id: str, started_at: object, parameters: str | dict, ran: Collection[str] | None = None) -> str:
    """A run as a reader picks it: when it started (UTC, to the minute), its audits, its models and
    attacker families when restricted, and the end of its id (``2026-12-02 00:07 UTC · refusal,
    QuasiLeak · 2 models · run-…ec1b08``; short enough for a picker at 1,024 px). ``ran``: the
    audits that stored results, when known; an audit asked for that stored none (QuasiLeak without a
    corpus) is then left out."""
    params = json.loads(parameters) if isinstance(parameters, str) else parameters
    if ran is not None:
        params = {**params, "audits": [a for a in params.get("audits", []) if a in ran]}
    parts = [utc_minute(started_at), audit_names(params, every="every audit")]
    if params.get("models"):
        parts.append(count_of(len(params["models"])))
    if params.get("families") and "decoding" in params.get("audits", []):
        n = len(params["families"])
        parts.append(f"{n} attacker famil{'y' if n == 1 else 'ies'}")
    return " · ".join(parts + [f"run-…{str(run_id)[-6:]}"])


def count_of(n: int, noun: str = "model", many: str | None = None) -> str:
    """``n`` and its noun, singular for one: "1 model", "9 models", "2,000 lines" (``many``: an irregular plural,
    "2 families")."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {many or noun + 's'}"


def how_many(k: int, n: int, noun: str = "model") -> str:
    """``k`` of ``n`` in words, for a finding: none of the 9 models, all 9 models, 3 of 9 models;
    with one in all, the model or no model (an audit of one's own single model reads as such); with
    two, both models or neither model."""
    if n == 1:
        return f"the {noun}" if k == 1 else f"no {noun}"
    many = f"{noun}s"
    if n == 2 and k != 1:
        return f"both {many}" if k == 2 else f"neither {noun}"
    return f"none of the {n} {many}" if k == 0 else f"all {n} {many}" if k == n else f"{k} of {n} {many}"
