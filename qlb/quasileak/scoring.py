"""QuasiLeak detector scoring: group-aware and policy-conditioned (QUASILEAK.md section 3), the
document-clustered bootstrap, and the lift / verification check of section 2.

Per document the *targets* are the gold groups whose attribute the policy labels ``hide``.
A predicted span matches a gold span when their character IoU is >= 0.5; between one predicted
and one gold group, cues are matched one-to-one so that the number of matched pairs is maximal
(ties: the larger total IoU). A target's credit is the best matched fraction over predicted
groups with its attribute; it is complete at credit 1. Predicted groups are strict true
positives when complete for a same-attribute target, lenient when they match at least one of its
cues; a binding error is a target covered completely only under a wrong attribute; an over-flag
is a predicted group whose attribute is keep or neutral. Empty denominators give None.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import permutations
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

Span = tuple[int, int]
Group = tuple[str, tuple[Span, ...]]          # (attribute, cues)

IOU_THRESHOLD = 0.5
DISTANCE_BINS = ((0, 200, "<200"), (200, 500, "200-499"), (500, None, ">=500"))
METRIC_KEYS: tuple[str, ...] = (
    "targets", "predicted_groups", "complete_recall", "graded_recall", "strict_precision",
    "lenient_precision", "complete_f1", "graded_f1", "binding_error_rate", "over_flag_rate",
    "document_flag_recall", "span_f1",
)
HEADLINE = ("complete_recall", "graded_recall", "strict_precision", "lenient_precision", "complete_f1",
            "graded_f1", "binding_error_rate", "over_flag_rate")


# ------------------------------------------------------------------------------------ matching
def iou(a: Span, b: Span) -> float:
    """Character intersection over union of two half-open spans."""
    inter = min(a[1], b[1]) - max(a[0], b[0])
    if inter <= 0:
        return 0.0
    return inter / (max(a[1], b[1]) - min(a[0], b[0]))


def match_cues(pred: Sequence[Span], gold: Sequence[Span]) -> tuple[int, float]:
    """(matched pairs, total IoU) of a maximal one-to-one matching of cues with IoU >= 0.5,
    ties broken by the larger total IoU."""
    edges = [(i, j, v) for i, p in enumerate(pred) for j, g in enumerate(gold)
             if (v := iou(p, g)) >= IOU_THRESHOLD]
    if not edges:
        return 0, 0.0
    if len({i for i, _, _ in edges}) == len(edges) and len({j for _, j, _ in edges}) == len(edges):
        return len(edges), sum(v for _, _, v in edges)       # already one-to-one
    weight = {(i, j): v for i, j, v in edges}
    rows = sorted({i for i, _, _ in edges})
    cols = sorted({j for _, j, _ in edges})
    best = (0, 0.0)
    small, large, flip = (rows, cols, False) if len(rows) <= len(cols) else (cols, rows, True)
    for perm in permutations(large + [None] * len(small), len(small)):
        n, total = 0, 0.0
        for a, b in zip(small, perm):
            if b is None:
                continue
            v = weight.get((b, a) if flip else (a, b))
            if v is not None:
                n += 1
                total += v
        if (n, total) > best:
            best = (n, total)
    return best


# ----------------------------------------------------------------------------- per document
@dataclass
class DocumentScore:
    """Everything the corpus metrics need from one document and one detector."""

    doc_id: str
    context_id: str
    # one entry per target
    target_attribute: list[str] = field(default_factory=list)
    target_arity: list[int] = field(default_factory=list)
    target_distance: list[int] = field(default_factory=list)
    target_credit: list[float] = field(default_factory=list)
    target_binding_error: list[bool] = field(default_factory=list)
    target_group_index: list[int] = field(default_factory=list)
    # one entry per predicted group
    pred_attribute: list[str] = field(default_factory=list)
    pred_strict: list[bool] = field(default_factory=list)
    pred_lenient: list[bool] = field(default_factory=list)
    pred_over_flag: list[bool] = field(default_factory=list)
    pred_bound_target: list[int] = field(default_factory=list)    # index into targets, -1 if none
    flagged_hide: bool = False
    span_inter: int = 0
    span_pred: int = 0
    span_gold: int = 0


def _union_length(spans: Iterable[Span]) -> tuple[int, list[Span]]:
    merged: list[list[int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return sum(e - s for s, e in merged), [(s, e) for s, e in merged]


def _intersection_length(a: list[Span], b: list[Span]) -> int:
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def score_document(doc_id: str, context_id: str, policy: Mapping[str, str], gold: Sequence[Group],
                   predicted: Sequence[Group]) -> DocumentScore:
    """Score one detector's groups on one document (QUASILEAK.md section 3)."""
    out = DocumentScore(doc_id, context_id)
    targets = [(gi, a, cues) for gi, (a, cues) in enumerate(gold) if policy.get(a) == "hide"]
    # matched[t][p] = (pairs, total IoU)
    matched = [[match_cues(pcues, tcues) for _, pcues in predicted] for _, _, tcues in targets]
    for t, (gi, attr, cues) in enumerate(targets):
        k = len(cues)
        same = [matched[t][p][0] for p, (pa, _) in enumerate(predicted) if pa == attr]
        credit = max(same, default=0) / k
        complete_elsewhere = any(matched[t][p][0] == k for p, (pa, _) in enumerate(predicted) if pa != attr)
        out.target_attribute.append(attr)
        out.target_arity.append(k)
        out.target_distance.append(max(e for _, e in cues) - min(s for s, _ in cues))
        out.target_credit.append(credit)
        out.target_binding_error.append(credit < 1 and complete_elsewhere)
        out.target_group_index.append(gi)
    for p, (pattr, _) in enumerate(predicted):
        best_t, best_key = -1, (0, 0.0)
        strict = lenient = False
        for t, (_, tattr, tcues) in enumerate(targets):
            n, total = matched[t][p]
            if tattr == pattr and n > 0:
                lenient = True
                strict = strict or n == len(tcues)
                if (n, total) > best_key:
                    best_t, best_key = t, (n, total)
        out.pred_attribute.append(pattr)
        out.pred_strict.append(strict)
        out.pred_lenient.append(lenient)
        out.pred_over_flag.append(policy.get(pattr) in ("keep", "neutral"))
        out.pred_bound_target.append(best_t)
    out.flagged_hide = any(policy.get(a) == "hide" for a, _ in predicted)
    pred_len, pred_union = _union_length(c for _, cues in predicted for c in cues)
    gold_len, gold_union = _union_length(c for _, _, cues in targets for c in cues)
    out.span_pred, out.span_gold = pred_len, gold_len
    out.span_inter = _intersection_length(pred_union, gold_union)
    return out


# -------------------------------------------------------------------------------- aggregation
def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den else None


def _f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return float(2 * p * r / (p + r)) if p + r > 0 else 0.0


def metrics_from_sums(s: Mapping[str, float]) -> dict[str, float | int | None]:
    """The corpus metrics (micro) from sufficient statistics."""
    complete_recall = _ratio(s["complete"], s["targets"])
    graded_recall = _ratio(s["credit"], s["targets"])
    strict_precision = _ratio(s["strict"], s["predicted"])
    lenient_precision = _ratio(s["lenient"], s["predicted"])
    span_p, span_r = _ratio(s["span_inter"], s["span_pred"]), _ratio(s["span_inter"], s["span_gold"])
    return {
        "targets": int(s["targets"]), "predicted_groups": int(s["predicted"]),
        "complete_recall": complete_recall, "graded_recall": graded_recall,
        "strict_precision": strict_precision, "lenient_precision": lenient_precision,
        "complete_f1": _f1(strict_precision, complete_recall), "graded_f1": _f1(lenient_precision, graded_recall),
        "binding_error_rate": _ratio(s["binding"], s["targets"]),
        "over_flag_rate": _ratio(s["over_flag"], s["predicted"]),
        "document_flag_recall": _ratio(s["flag_docs"], s["docs_with_targets"]),
        "span_f1": _f1(span_p, span_r),
    }


SUM_KEYS = ("targets", "complete", "credit", "binding", "predicted", "strict", "lenient", "over_flag",
            "flag_docs", "docs_with_targets", "span_inter", "span_pred", "span_gold")


def document_sums(scores: Sequence[DocumentScore], target_mask=None, pred_mask=None) -> np.ndarray:
    """(documents x SUM_KEYS) sufficient statistics; masks select a slice of targets (and the
    predicted groups bound to them)."""
    rows = np.zeros((len(scores), len(SUM_KEYS)))
    for i, d in enumerate(scores):
        tsel = [k for k in range(len(d.target_credit)) if target_mask is None or target_mask(d, k)]
        psel = [k for k in range(len(d.pred_attribute)) if pred_mask is None or pred_mask(d, k)]
        credit = [d.target_credit[k] for k in tsel]
        rows[i] = (len(tsel), sum(c == 1.0 for c in credit), sum(credit),
                   sum(d.target_binding_error[k] for k in tsel), len(psel),
                   sum(d.pred_strict[k] for k in psel), sum(d.pred_lenient[k] for k in psel),
                   sum(d.pred_over_flag[k] for k in psel),
                   1 if (tsel and d.flagged_hide) else 0, 1 if tsel else 0,
                   d.span_inter, d.span_pred, d.span_gold)
    return rows


def corpus_metrics(scores: Sequence[DocumentScore]) -> dict:
    """The corpus metrics (micro) over every scored document."""
    return metrics_from_sums(dict(zip(SUM_KEYS, document_sums(scores).sum(axis=0))))


def _distance_bin(distance: int) -> str:
    for lo, hi, label in DISTANCE_BINS:
        if distance >= lo and (hi is None or distance < hi):
            return label
    raise ValueError(distance)


def breakdowns(scores: Sequence[DocumentScore]) -> dict[str, dict[str, dict]]:
    """Metrics by arity, attribute, cue distance and context. In a slice, precision-type
    metrics count only the predicted groups bound to targets of that slice; span F1 and
    document flag recall are computed over the slice's targets."""
    out: dict[str, dict[str, dict]] = {"arity": {}, "attribute": {}, "distance": {}, "context": {}}
    keys = {
        "arity": lambda d, k: str(d.target_arity[k]),
        "attribute": lambda d, k: d.target_attribute[k],
        "distance": lambda d, k: _distance_bin(d.target_distance[k]),
    }
    for kind, key in keys.items():
        values = sorted({key(d, k) for d in scores for k in range(len(d.target_credit))})
        for v in values:
            tmask = lambda d, k, key=key, v=v: key(d, k) == v  # noqa: E731
            pmask = lambda d, k, key=key, v=v: d.pred_bound_target[k] >= 0 and key(d, d.pred_bound_target[k]) == v  # noqa: E731
            sums = document_sums(scores, tmask, pmask).sum(axis=0)
            m = metrics_from_sums(dict(zip(SUM_KEYS, sums)))
            m["span_f1"] = None   # span F1 ignores groups: not defined per group slice
            out[kind][v] = m
    for ctx in sorted({d.context_id for d in scores}):
        out["context"][ctx] = corpus_metrics([d for d in scores if d.context_id == ctx])
    return out


@dataclass(frozen=True)
class Interval:
    estimate: float | None
    ci_low: float | None
    ci_high: float | None


def document_bootstrap(scores: Sequence[DocumentScore], n_boot: int = 2000, seed: int = 20261011,
                       confidence: float = 0.95) -> dict[str, Interval]:
    """Document-clustered percentile bootstrap of the headline metrics: documents are resampled
    with replacement and the micro metrics recomputed from their sufficient statistics."""
    sums = document_sums(scores)
    est = metrics_from_sums(dict(zip(SUM_KEYS, sums.sum(axis=0))))
    n = len(scores)
    if n == 0:
        return {k: Interval(None, None, None) for k in HEADLINE}
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n, np.full(n, 1.0 / n), size=n_boot).astype(float)   # (B, D)
    boot = weights @ sums                                                           # (B, k)
    cols = {k: boot[:, i] for i, k in enumerate(SUM_KEYS)}
    with np.errstate(divide="ignore", invalid="ignore"):
        r_complete = cols["complete"] / cols["targets"]
        r_graded = cols["credit"] / cols["targets"]
        p_strict = cols["strict"] / cols["predicted"]
        p_lenient = cols["lenient"] / cols["predicted"]
        series = {
            "complete_recall": r_complete, "graded_recall": r_graded,
            "strict_precision": p_strict, "lenient_precision": p_lenient,
            "complete_f1": np.where(p_strict + r_complete > 0, 2 * p_strict * r_complete / (p_strict + r_complete), 0.0),
            "graded_f1": np.where(p_lenient + r_graded > 0, 2 * p_lenient * r_graded / (p_lenient + r_graded), 0.0),
            "binding_error_rate": cols["binding"] / cols["targets"],
            "over_flag_rate": cols["over_flag"] / cols["predicted"],
        }
    alpha = (1 - confidence) / 2
    out = {}
    for k, values in series.items():
        if est[k] is None:
            out[k] = Interval(None, None, None)
            continue
        values = values[np.isfinite(values)]
        lo, hi = np.quantile(values, [alpha, 1 - alpha]) if len(values) else (None, None)
        out[k] = Interval(est[k], float(lo), float(hi))
    return out


# --------------------------------------------------------------------------- whole corpora
def score_detector(documents: Mapping[str, dict], predictions: Mapping[str, Sequence[Group]],
                   doc_ids: Iterable[str] | None = None) -> list[DocumentScore]:
    """Score one detector over documents (a document without predictions reported nothing).

    ``documents`` maps doc_id -> {"context_id", "policy", "groups": [(attribute, cues)]}."""
    ids = list(doc_ids) if doc_ids is not None else list(documents)
    return [score_document(d, documents[d]["context_id"], documents[d]["policy"], documents[d]["groups"],
                           predictions.get(d, ())) for d in ids]


def detector_report(scores: Sequence[DocumentScore]) -> dict:
    """The ``qlb quasileak score`` JSON block of one detector (CONTRACT.md section 2)."""
    b = breakdowns(scores)
    return {"all": corpus_metrics(scores), "by_arity": b["arity"], "by_attribute": b["attribute"]}


# ------------------------------------------------------------------------- construction check
def lift(confidence: float, n_values: int) -> float:
    """L = (conf - chance) / (1 - chance), chance = 1 / number of values, clipped to [0, 1]."""
    if n_values < 2:
        raise ValueError("an attribute needs at least 2 values at its recovery granularity")
    chance = 1.0 / n_values
    return float(min(1.0, max(0.0, (confidence - chance) / (1 - chance))))


def verify_group(single_cue_confidences: Sequence[float], group_confidence: float, n_values: int,
                 tau_weak: float = 0.35, tau_reveal: float = 0.70) -> tuple[bool, str]:
    """The reverse-construction check: every cue weak alone, the whole group revealing."""
    singles = [lift(c, n_values) for c in single_cue_confidences]
    whole = lift(group_confidence, n_values)
    if singles and max(singles) > tau_weak:
        return False, f"a single cue already reveals the value (lift {max(singles):.2f} > {tau_weak})"
    if whole < tau_reveal:
        return False, f"the group does not reveal the value (lift {whole:.2f} < {tau_reveal})"
    return True, f"verified: max single-cue lift {max(singles, default=0):.2f}, group lift {whole:.2f}"


def documents_from_records(records: Iterable) -> dict[str, dict]:
    """QLDocument records -> the scorer's document map."""
    return {d.doc_id: {"context_id": d.context_id, "policy": dict(d.policy), "text": d.text, "split": d.split,
                       "groups": [(g.attribute, tuple(g.cues)) for g in d.groups]} for d in records}


def predictions_from_records(records: Iterable) -> dict[str, dict[str, list[Group]]]:
    """QLPrediction records -> {detector: {doc_id: groups}}."""
    out: dict[str, dict[str, list[Group]]] = {}
    for p in records:
        out.setdefault(p.detector, {})[p.doc_id] = [(g.attribute, tuple(g.cues)) for g in p.groups]
    return out


def leaderboard(per_detector: Mapping[str, Sequence[DocumentScore]], n_boot: int = 2000,
                seed: int = 20261011) -> pd.DataFrame:
    """One row per detector: every metric, with bootstrap intervals for the headline ones."""
    rows = []
    for det, scores in per_detector.items():
        m = corpus_metrics(scores)
        ci = document_bootstrap(scores, n_boot, seed)
        row = {"detector": det, **m}
        for k in HEADLINE:
            row[f"{k}_ci_low"], row[f"{k}_ci_high"] = ci[k].ci_low, ci[k].ci_high
        rows.append(row)
    return pd.DataFrame(rows)


def explain_targets(policy: Mapping[str, str], gold: Sequence[Group], predicted: Sequence[Group]) -> list[dict]:
    """For the document viewer: each target's credit and why, in words."""
    rows = []
    for gi, (attr, cues) in enumerate(gold):
        if policy.get(attr) != "hide":
            continue
        k = len(cues)
        best_p, best = -1, (0, 0.0)
        for p, (pattr, pcues) in enumerate(predicted):
            if pattr == attr:
                m = match_cues(pcues, cues)
                if m > best:
                    best_p, best = p, m
        wrong = [(p, pattr) for p, (pattr, pcues) in enumerate(predicted)
                 if pattr != attr and match_cues(pcues, cues)[0] == k]
        credit = best[0] / k
        if credit == 1:
            why = f"complete: predicted group {best_p + 1} ({attr}) matches all {k} cues"
        elif best[0] > 0:
            why = f"partial: predicted group {best_p + 1} ({attr}) matches {best[0]} of {k} cues"
        else:
            why = f"missed: no predicted {attr} group matches any of its {k} cues"
        if credit < 1 and wrong:
            p, pattr = wrong[0]
            why += f"; binding error: predicted group {p + 1} covers it completely but says {pattr}"
        rows.append({"gold group": gi + 1, "attribute": attr, "arity": k, "credit": credit,
                     "complete": credit == 1, "binding error": credit < 1 and bool(wrong), "why": why})
    return rows
