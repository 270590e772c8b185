"""The workflow-constrained quantizer, strict mapper (TUPLE.md section 7; paper Section 6, H.1).

For one model, the frozen full-native recipient policies (3 tasks x each cost profile: 18 in TUPLE) of a stored
utility run define the behaviour signature of a response: per policy, the selected category
(argmax q, public-order ties), field availability and the whole plan (first action, the check
bought if any, the route after "yes" and after "no"). Each response is replaced by the first
codeword of the static grid (286 vectors n / 10 in lexicographic order, canonical class order;
confidence replaced by the codeword's maximum where the response had a confidence) whose
signature equals the response's; without one the response is released unchanged (identity
fallback). Unavailable responses pass through unchanged. A codeword releases every class's
score, so a response whose release lacks some or all scores (a choice without probabilities, a
partial vector) has no codeword with its availability and is released unchanged, never given a
vector it did not have (nor one that may contradict its choice).

Two codebooks (paper H.1, H.4): the main strict codebook (``main_codebook``) searches the static
grid first, then the model's own training responses, then the midpoints of its training pairs;
the canonical control searches the static grid alone. Both go through the same mapper and the
same verification; the training vectors and midpoints catch the responses the grid cannot
reproduce (a signature that needs scores finer than 0.1), so the main codebook covers more.

Vectorized: a logistic recipient's logits are linear in the released fields, so q for every
(world, codeword) is the world's logits at zero scores plus the codeword's contribution;
the workflows then run once over all (world, codeword) rows per policy.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from qlb.tuple.costs import PROFILES, DomainCosts
from qlb.tuple.defenses import static_grid
from qlb.tuple.recipients import Recipient, SharedQ, candidate_ranks, features
from qlb.tuple.release_views import Vectorizer, apply_view
from qlb.tuple.workflows import TASKS, argmax_public, run_task

POLICY_VIEW = "full_native"


@dataclass(frozen=True)
class Policy:
    """One frozen full-native recipient policy of one (model, domain)."""

    task: str
    profile: str
    recipient: Recipient
    factor: float
    costs: DomainCosts


def policies_from_selection(selected: list, view: str = POLICY_VIEW) -> dict[str, list[Policy]]:
    """{domain: frozen policies} from a utility audit's in-memory selections of one model."""
    out: dict[str, list[Policy]] = {}
    for s in selected:
        if s.view == view:
            out.setdefault(s.domain, []).append(Policy(s.task, s.profile, s.recipient, s.factor or 1.0, s.costs))
    return in_policy_order(out)


def in_policy_order(by_domain: dict[str, list[Policy]]) -> dict[str, list[Policy]]:
    """Each domain's policies in the fixed order: task, then cost profile."""
    for ps in by_domain.values():
        ps.sort(key=lambda p: (TASKS.index(p.task), PROFILES.index(p.profile) if p.profile in PROFILES else 99))
    return by_domain


def zero_score_features(frame: pd.DataFrame, classes: tuple[str, ...]) -> list[dict[str, float]]:
    """Each world's recipient features with every score (and a present confidence) at 0: the part
    of a codeword release that does not depend on the codeword."""
    base = frame.copy()
    base["probabilities"] = [{c: 0.0 for c in classes}] * len(frame)
    base["confidence"] = np.where(base["confidence"].notna().to_numpy(), 0.0, np.nan)
    return features(base, classes)


def q_codewords(policy: Policy, frame: pd.DataFrame, code: np.ndarray, classes: tuple[str, ...],
                 base: list[dict[str, float]] | None = None) -> np.ndarray:
    """q for every (world, codeword): (n, m, k). ``base``: ``zero_score_features`` of the frame
    (computed here when not given)."""
    n, m, k = len(frame), len(code), len(classes)
    rec = policy.recipient
    if rec.kind == "prior":
        return np.broadcast_to(rec.prior, (n, m, k))
    if rec.kind == "native":
        return np.broadcast_to(code, (n, m, k))
    has_conf = frame["confidence"].notna().to_numpy()
    index = {f: i for i, f in enumerate(rec.feature_names)}
    x = Vectorizer.of(rec.feature_names).transform(zero_score_features(frame, classes) if base is None else base)
    z0 = x @ rec.coef.T + rec.intercept                                   # (n, k)
    wp = np.column_stack([rec.coef[:, index[f"p={c}"]] if f"p={c}" in index else np.zeros(k) for c in classes])
    wc = rec.coef[:, index["confidence"]] if "confidence" in index else np.zeros(k)
    zc = code @ wp.T                                                      # (m, k)
    conf = code.max(axis=1)[:, None] * wc[None, :]                        # (m, k)
    z = z0[:, None, :] + zc[None, :, :] + has_conf[:, None, None] * conf[None, :, :]
    z -= z.max(axis=2, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=2, keepdims=True)


class CodewordQ:
    """``q_codewords`` of policies on one frame and codebook, each distinct recipient computed
    once (the policies share their view's few candidates) and the zero-score features built
    once. The same array for every policy of one recipient: read it, never write into it."""

    def __init__(self, frame: pd.DataFrame, code: np.ndarray, classes: tuple[str, ...]):
        self.frame, self.code, self.classes = frame, code, classes
        self.base: list[dict[str, float]] | None = None
        self.done: dict[int, tuple[Recipient, np.ndarray]] = {}

    def __call__(self, policy: Policy) -> np.ndarray:
        hit = self.done.get(id(policy.recipient))
        if hit is None:
            if self.base is None and policy.recipient.kind == "logistic":
                self.base = zero_score_features(self.frame, self.classes)
            qc = q_codewords(policy, self.frame, self.code, self.classes, self.base)
            hit = self.done[id(policy.recipient)] = (policy.recipient, qc)     # kept: ids stay unique
        return hit[1]


def field_availability(frame: pd.DataFrame, classes: tuple[str, ...]) -> np.ndarray:
    """(n, 3 + k) 0/1 per world: status ok, choice present, confidence present, and each class's
    score present (canonical class order): the availability part of the behaviour signature."""
    out = np.zeros((len(frame), 3 + len(classes)), dtype=int)
    for i, (status, choice, conf, probs) in enumerate(zip(frame["status"], frame["choice"], frame["confidence"],
                                                          frame["probabilities"])):
        out[i, 0] = status == "ok"
        out[i, 1] = isinstance(choice, str)
        out[i, 2] = conf is not None and not pd.isna(conf)
        if isinstance(probs, dict):
            out[i, 3:] = [probs.get(c) is not None for c in classes]
    return out


def signature(policy: Policy, q: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """(rows, 5) integer signature: selected category and the four plan entries."""
    rows = len(q)
    out = run_task(policy.task, q, rank, np.ones(rows, bool), np.zeros(rows, int), policy.costs, policy.factor)
    return np.column_stack([argmax_public(q, rank), out.plan()])


def training_vectors(frame: pd.DataFrame, classes: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The available training responses' full probability vectors (canonical class order, in
    world order) and their midpoints per training pair whose two worlds both have one (in pair
    order). Only the training split is read: a codebook never holds a validation or test answer."""
    train = frame[(frame["split"] == "train") & (frame["status"] == "ok")].sort_values("world_id")
    vec, pair = [], []
    for probs, pid in zip(train["probabilities"], train["pair_id"]):
        if isinstance(probs, dict) and all(probs.get(c) is not None for c in classes):
            v = np.array([float(probs[c]) for c in classes])
            if np.isfinite(v).all() and v.sum() > 0:
                vec.append(v / v.sum())
                pair.append(pid)
    vectors = np.array(vec).reshape(-1, len(classes))
    by_pair: dict[str, list[np.ndarray]] = {}
    for v, pid in zip(vectors, pair):
        by_pair.setdefault(pid, []).append(v)
    mids = [np.mean(vs[:2], axis=0) for pid, vs in sorted(by_pair.items()) if len(vs) >= 2]
    return vectors, np.array(mids).reshape(-1, len(classes))


def main_codebook(frame: pd.DataFrame, classes: tuple[str, ...]) -> np.ndarray:
    """The main strict codebook, searched in this order: the static grid, the training vectors,
    the training-pair midpoints (``training_vectors``), each vector once (its first place)."""
    vectors, mids = training_vectors(frame, classes)
    book = np.vstack([static_grid(len(classes)), vectors, mids])
    _, first = np.unique(np.round(book, 12), axis=0, return_index=True)
    return book[np.sort(first)]


@dataclass
class Mapping:
    """The strict mapper's result for one (model, domain)."""

    world_ids: np.ndarray
    code_index: np.ndarray        # -1: identity fallback or unavailable
    available: np.ndarray
    released: list               # class -> score maps (None for unavailable)
    confidence: np.ndarray


def eligible_rows(rel: pd.DataFrame, classes: tuple[str, ...]) -> np.ndarray:
    """The worlds a codeword can stand in for: available with the full probability vector. A
    codeword keeps the status and the presence of choice and confidence and releases every score,
    so no other response can share its signature (and a native-distribution policy could not
    read it)."""
    return (rel["status"] == "ok").to_numpy() & field_availability(rel, classes)[:, 3:].all(axis=1)


def map_domain(frame: pd.DataFrame, domain: str, policies: list[Policy], code: np.ndarray | None = None) -> Mapping:
    """The first codeword with the response's signature under every policy, per world."""
    classes = policies[0].costs.classes             # the domain's classes, canonical order
    code = static_grid(len(classes)) if code is None else code
    rel = apply_view(frame, POLICY_VIEW).reset_index(drop=True)
    n, m = len(rel), len(code)
    eligible = eligible_rows(rel, classes)
    sub = rel[eligible].reset_index(drop=True)
    rank = candidate_ranks(sub, classes)
    match = np.ones((len(sub), m), bool)
    if len(sub):
        q = SharedQ(sub, features(sub, classes))
        qc_of = CodewordQ(sub, code, classes)
        flat = match.reshape(-1)                    # (world, codeword) pairs, world-major
        world = np.repeat(np.arange(len(sub)), m)
        for p in policies:
            # only the pairs that every earlier policy left matching are replayed (the workflows
            # are row by row, so a pair's signature does not depend on which others run with it)
            alive = np.flatnonzero(flat)
            if not len(alive):
                break
            native = signature(p, q(p.recipient), rank)                              # (rows, 5)
            qc = qc_of(p).reshape(len(sub) * m, len(classes))
            coded = signature(p, qc[alive], rank[world[alive]])
            flat[alive] = (coded == native[world[alive]]).all(axis=1)
    first = np.full(n, -1)
    first[eligible] = np.where(match.any(axis=1), match.argmax(axis=1), -1)
    return mapping_of(rel, classes, code, first)


def mapping_of(rel: pd.DataFrame, classes: tuple[str, ...], code: np.ndarray, first: np.ndarray) -> Mapping:
    """The releases of ``rel``'s worlds (full-native view, in its order) when world i gets
    codeword ``first[i]`` (-1: its response unchanged): the codeword's scores, and its maximum
    as the confidence where the response had one."""
    available = (rel["status"] == "ok").to_numpy()
    released, conf = [], rel["confidence"].to_numpy(float).copy()
    for i in range(len(rel)):
        if first[i] >= 0:
            released.append({c: float(v) for c, v in zip(classes, code[first[i]])})
            if not np.isnan(conf[i]):
                conf[i] = float(code[first[i]].max())
        else:
            released.append(rel["probabilities"][i] if available[i] else None)
    return Mapping(rel["world_id"].to_numpy(), first, available, released, conf)


def released_frame(frame: pd.DataFrame, mapping: Mapping) -> pd.DataFrame:
    """The frame with the mapper's releases (choice unchanged)."""
    out = frame.set_index("world_id").loc[mapping.world_ids].reset_index()
    out["probabilities"] = mapping.released
    out["confidence"] = mapping.confidence
    return out


@dataclass
class Verification:
    plan_agreement: int           # (world, policy) comparisons whose whole signature agrees (see ``verify``)
    comparisons: int
    max_abs_cost_diff: float
    max_cost_increase: float      # the largest per-world realized cost increase, in review costs of its policy
    native_cost: dict[tuple[str, str], float]
    released_cost: dict[tuple[str, str], float]


def verify(native: pd.DataFrame, released: pd.DataFrame, domain: str, policies: list[Policy]) -> Verification:
    """Replays every policy on the native and the released frames through the recipients'
    ordinary (non-vectorized) feature path: agreement of the whole signature over worlds x
    policies (a world agrees when its release keeps the status, the choice and the availability
    of every field, and the policy's selected category and plan are unchanged), the largest
    per-world realized cost difference, mean costs."""
    classes = policies[0].costs.classes
    a = apply_view(native, POLICY_VIEW).set_index("world_id").sort_index().reset_index()
    b = apply_view(released, POLICY_VIEW).set_index("world_id").loc[a["world_id"]].reset_index()
    rank = candidate_ranks(a, classes)
    avail = (a["status"] == "ok").to_numpy()
    same_fields = ((field_availability(a, classes) == field_availability(b, classes)).all(axis=1)
                   & (a["choice"].fillna("").to_numpy() == b["choice"].fillna("").to_numpy()))
    t = a["coarse"].map({c: i for i, c in enumerate(classes)}).to_numpy()
    agree, comparisons, worst, rise = 0, 0, 0.0, 0.0
    native_cost, released_cost = {}, {}
    q_a, q_b = SharedQ(a), SharedQ(b)
    for p in policies:
        qa, qb = q_a(p.recipient), q_b(p.recipient)
        oa = run_task(p.task, qa, rank, avail, t, p.costs, p.factor)
        ob = run_task(p.task, qb, rank, avail, t, p.costs, p.factor)
        sa = np.column_stack([argmax_public(qa, rank), oa.plan()])
        sb = np.column_stack([argmax_public(qb, rank), ob.plan()])
        same = ((sa == sb).all(axis=1) | ~avail) & same_fields
        agree += int(same.sum())
        comparisons += len(a)
        worst = max(worst, float(np.abs(oa.cost - ob.cost).max()) if len(a) else 0.0)
        rise = max(rise, float((ob.cost - oa.cost).max()) / p.costs.review if len(a) else 0.0)
        native_cost[(p.task, p.profile)] = float(oa.cost.mean())
        released_cost[(p.task, p.profile)] = float(ob.cost.mean())
    return Verification(agree, comparisons, worst, rise, native_cost, released_cost)
