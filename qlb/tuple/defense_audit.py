"""Defense-aware evaluation over a dataset (TUPLE.md section 7; paper Section 6, H.3-H.4).

Per model and domain, every endpoint starts from the same native responses: the native control,
quantize, top-two, temperature (the inverse-aware attacker reads the release through its public
inverse), Gaussian noise under each of the three seeds, and WCPQ
(strict mapper against the model's frozen full-native policies (18 in TUPLE) of the same run, with the main
codebook: static grid, training vectors, training-pair midpoints) with its canonical control
``wcpq grid`` (the static grid alone). Fresh decoders are fitted and selected on the defended
train and validation releases for the full native view (with its nested subviews), frozen, and
scored on test; as in the paper, every release's attacker (the native control's too) also sees
the release's public workflow signatures under the frozen policies. Recipients: the frozen
full-native policies replayed on the defended release, and adapted ones refitted on it
(candidates and selection as in the utility audit). Noise results also average per-world
outcomes over the three seeds.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Sequence

import numpy as np
import pandas as pd

from qlb.stats.bootstrap import N_BOOT, SEED, PairResamples, percentile_interval, resampled_means
from qlb.tuple.decoding import correct, decode_domain, log_loss_per_world, proxy_recovery
from qlb.tuple.recovery import decodable
from qlb.stats.parallel import Workers, domain_tasks, run_tasks
from qlb.tuple.defenses import NOISE_SEEDS, apply, temperature_inverse, to_dict
from qlb.records.ontology import Ontology
from qlb.tuple.costs import profile_names
from qlb.tuple.recipients import SharedQ, candidate_ranks, features, native_q
from qlb.tuple.release_views import apply_view
from qlb.tuple.utility import utility_domain
from qlb.tuple.learned_wcpq import LEARNED_ENDPOINTS, PROXY_CONFIGS, LearnedRelease, learned_releases
from qlb.tuple.wcpq import (
    POLICY_VIEW, Mapping, Policy, main_codebook, map_domain, released_frame, signature, verify,
)
from qlb.tuple.workflows import run_task

log = logging.getLogger(__name__)

VIEW = "full_native"
DEFENSE_FAMILIES = frozenset({"prior", "logistic", "template"})
ENDPOINTS: tuple[str, ...] = ("native", "quantize", "top2", "temperature",
                              *[f"noise seed {s}" for s in NOISE_SEEDS], "wcpq", "wcpq grid")
WCPQ_ENDPOINTS = ("wcpq", "wcpq grid")     # the main strict codebook, and the static-grid canonical control
# the strict endpoints, then the six learned bounded-cost variants (paper H.2, ``learned_wcpq``)
ALL_ENDPOINTS: tuple[str, ...] = ENDPOINTS + LEARNED_ENDPOINTS


def endpoint_method(endpoint: str) -> str:
    """The defense method behind an endpoint: ``noise`` for every noise seed, ``wcpq`` for both
    strict codebooks, ``wcpq learned`` for the learned variants, else the endpoint itself."""
    if endpoint in LEARNED_ENDPOINTS:
        return "wcpq learned"
    return "noise" if endpoint.startswith("noise") else "wcpq" if endpoint in WCPQ_ENDPOINTS else endpoint


def is_wcpq(endpoint: str) -> bool:
    """A WCPQ endpoint (strict or learned): a mapping to codewords, whose confidence becomes the
    codeword's maximum, with coverage and verification."""
    return endpoint_method(endpoint) in ("wcpq", "wcpq learned")


def defended(frame: pd.DataFrame, method: str, seed: int = NOISE_SEEDS[0]) -> pd.DataFrame:
    """The frame with each available response's scores transformed (candidate order per world);
    choice and confidence unchanged; unavailable responses pass through."""
    out = frame.copy()
    probs = list(out["probabilities"])
    rows = [i for i, (st, p) in enumerate(zip(out["status"], probs)) if st == "ok" and isinstance(p, dict)]
    if rows:
        orders = [list(out["candidate_order"].iloc[i]) for i in rows]
        vec = np.array([[float(probs[i][c]) for c in order] for i, order in zip(rows, orders)])
        new = apply(method, vec, [out["world_id"].iloc[i] for i in rows], seed)
        for i, order, v in zip(rows, orders, new):
            probs[i] = to_dict(v, order)
    out["probabilities"] = probs
    return out


def inverse_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Temperature releases read through the public inverse (the inverse-aware attacker), with the
    public workflow signatures of the inverse when the release carries them."""
    out = frame.copy()
    if "_inverse_signature" in out.columns:
        out["_signature"] = out.pop("_inverse_signature")
    probs = list(out["probabilities"])
    for i, (st, p) in enumerate(zip(out["status"], probs)):
        if st == "ok" and isinstance(p, dict):
            keys = list(p)
            inv = temperature_inverse(np.array([[p[k] for k in keys]]))[0]
            probs[i] = dict(zip(keys, map(float, inv)))
    out["probabilities"] = probs
    return out


def signature_keys(frame: pd.DataFrame, domain: str, policies: Sequence[Policy]) -> list[list[str]]:
    """Per world, the public workflow signature of its release under every frozen policy that can
    read it (a native-distribution recipient cannot read a release without full vectors, such as
    top-two scores: it adds no signature there)."""
    classes = policies[0].costs.classes if policies else ()
    rel = apply_view(frame, POLICY_VIEW)
    rank = candidate_ranks(rel, classes)
    avail = (rel["status"] == "ok").to_numpy()
    partial = native_q(rel, classes) is None
    q = SharedQ(rel, features(rel, classes))        # the same features for every policy: built once
    keys: list[list[str]] = [[] for _ in range(len(rel))]
    rows = np.flatnonzero(avail)
    for j, p in enumerate(policies):
        if p.recipient.kind == "native" and partial:
            continue
        sig = signature(p, q(p.recipient), rank)[rows]
        # a policy's signatures take few distinct values: each one's text is written once
        distinct, which = np.unique(sig, axis=0, return_inverse=True)
        text = [f"{j}=" + ",".join(map(str, row)) for row in distinct]
        for i, k in zip(rows, which.reshape(-1)):
            keys[i].append(text[k])
    return keys


class EndpointCost(NamedTuple):
    """Per-world costs of one recipient policy on one endpoint's test release."""

    endpoint: str
    recipient: str              # "frozen" (the run's full-native policies) or "adapted" (refitted)
    task: str
    profile: str
    world_ids: np.ndarray
    pair_ids: np.ndarray
    cost: np.ndarray


@dataclass
class EndpointResult:
    """The defense-aware attacker's test predictions on one endpoint."""

    endpoint: str
    world_ids: np.ndarray
    pair_ids: np.ndarray
    y: np.ndarray
    p: np.ndarray
    candidate: str
    val_accuracy: float
    val_log_loss: float


class Unreadable(NamedTuple):
    """A frozen policy with no cost on one endpoint's release: its native-distribution recipient
    cannot read a release in which an available world lacks the full probability vector (top-two
    scores)."""

    endpoint: str
    recipient: str
    task: str
    profile: str


@dataclass
class DefenseDomain:
    """Every endpoint's attack, release and recipient costs for one (model, domain); ``unreadable``
    names the frozen policies that have no cost on an endpoint (and why: see ``Unreadable``)."""

    model: str
    domain: str
    endpoints: dict[str, EndpointResult] = field(default_factory=dict)
    releases: dict[str, pd.DataFrame] = field(default_factory=dict)     # world_id, probabilities, confidence, codeword
    costs: list[EndpointCost] = field(default_factory=list)
    wcpq: dict[str, dict] = field(default_factory=dict)       # per WCPQ endpoint: coverage and verification
    unreadable: list[Unreadable] = field(default_factory=list)


@dataclass
class Release:
    """One endpoint's released frame (sorted by world_id), the WCPQ codeword per world (-1:
    none or not WCPQ) and, for WCPQ, its coverage and verification summary."""

    frame: pd.DataFrame
    codes: np.ndarray
    wcpq: dict = field(default_factory=dict)


def release_endpoint(frame: pd.DataFrame, domain: str, endpoint: str, policies: Sequence[Policy]) -> Release | None:
    """What ``endpoint`` releases for the native responses in ``frame`` (None: WCPQ without
    frozen policies to map against)."""
    method = endpoint_method(endpoint)
    if method == "wcpq":
        if not policies:
            return None
        code = main_codebook(frame, policies[0].costs.classes) if endpoint == "wcpq" else None  # None: grid
        return _wcpq_release(frame, domain, list(policies), code)
    if endpoint == "native":
        released = frame.copy()
    else:
        released = defended(frame, method, int(endpoint.rsplit(" ", 1)[1]) if method == "noise" else NOISE_SEEDS[0])
    if policies:            # every release's attacker sees its public workflow signatures (paper H.3, H.4)
        released["_signature"] = signature_keys(released, domain, policies)
        if method == "temperature":     # and what the policies do with the public inverse, for the attacker who reads it
            released["_inverse_signature"] = signature_keys(inverse_frame(released), domain, policies)
    return Release(released, np.full(len(released), -1))


def _wcpq_release(frame: pd.DataFrame, domain: str, policies: list[Policy], code: np.ndarray | None) -> Release:
    return mapped_release(frame, domain, policies, map_domain(frame, domain, policies, code))


def mapped_release(frame: pd.DataFrame, domain: str, policies: list[Policy], mapping: Mapping,
                   extra: dict | None = None) -> Release:
    """The release of a WCPQ mapping (``frame`` sorted by world_id), with its public workflow
    signatures, and the test split's coverage and verification (plus ``extra``)."""
    released = released_frame(frame, mapping).sort_values("world_id").reset_index(drop=True)
    test = (frame["split"] == "test").to_numpy()
    v = verify(frame[test], released[test], domain, policies)
    code = pd.Series(mapping.code_index, index=mapping.world_ids)
    test_codes = code.loc[frame.loc[test, "world_id"]].to_numpy()
    test_avail = (frame.loc[test, "status"] == "ok").to_numpy()
    summary = {"available": int(test_avail.sum()), "covered": int((test_codes >= 0).sum()),
               "fallbacks": int((test_avail & (test_codes < 0)).sum()), "worlds": int(test.sum()),
               "plan_agreement": v.plan_agreement, "comparisons": v.comparisons,
               "max_abs_cost_diff": v.max_abs_cost_diff, "max_cost_increase": v.max_cost_increase,
               **(extra or {})}
    released = released.copy()
    released["_signature"] = signature_keys(released, domain, policies)
    return Release(released, code.loc[released["world_id"]].to_numpy(), summary)


def learned_endpoint_releases(model: str, domain: str, frame: pd.DataFrame, policies: Sequence[Policy],
                              endpoints: Sequence[str], ontology: Ontology | None = None) -> dict[str, Release]:
    """The learned WCPQ variants' releases of one (model, domain) (``frame`` sorted by world_id),
    each seed chosen by the proxy attackers on its defended train and validation releases."""
    if not policies or not endpoints:
        return {}
    policies = list(policies)

    def proxy(mapping: Mapping) -> tuple[float, float]:
        released = released_frame(frame, mapping).sort_values("world_id").reset_index(drop=True)
        released["_signature"] = signature_keys(released, domain, policies)
        acc, ll = proxy_recovery(released, domain, VIEW, set(PROXY_CONFIGS), ontology)
        return float(acc), float(ll)

    out = {}
    for r in learned_releases(frame, policies, proxy, endpoints):
        out[r.endpoint] = mapped_release(frame, domain, policies, r.mapping, learned_info(r))
    return out


def learned_info(r: LearnedRelease) -> dict:
    """What a learned variant stores besides coverage and verification."""
    return {"budget": r.budget, "js_weight": r.js_weight, "seed": r.seed, "pool": r.pool, "deployed": r.deployed,
            "guarded": r.guarded, "proxy": {str(k): list(v) for k, v in r.proxy.items()}}


def _decode(model: str, domain: str, frame: pd.DataFrame, families, reuse,
            ontology: Ontology | None = None) -> EndpointResult:
    d = decode_domain(model, domain, frame, (VIEW,), set(families), reuse=reuse, ontology=ontology)
    s = d.selections[VIEW]
    return EndpointResult("", d.test_world_ids, d.test_pair_ids, d.test_y, s.test_p,
                          f"{s.candidate} [{s.candidate_view}]", s.val_accuracy, s.val_log_loss)


# the native control's views whose fields some other endpoint leaves unchanged (see ``reused_views``)
REUSABLE_VIEWS = frozenset({"no_output", "choice", "choice_confidence"})


def reused_views(endpoint: str) -> frozenset[str]:
    """The views whose fits ``endpoint``'s attacker takes from the native control: those whose
    fields the release leaves unchanged (the choice, and the confidence except under WCPQ, which
    releases its codeword's top score); none for the native control itself."""
    if endpoint == "native":
        return frozenset()
    return REUSABLE_VIEWS - ({"choice_confidence"} if is_wcpq(endpoint) else set())


def attack_endpoint(model: str, domain: str, endpoint: str, released: pd.DataFrame, families: frozenset[str],
                    native_fits: dict, ontology: Ontology | None = None) -> tuple[EndpointResult, dict]:
    """The defense-aware attacker on one endpoint: fresh decoders fitted and selected on the
    defended train and validation releases, scored on test. Subviews whose fields the endpoint
    leaves unchanged reuse the native control's fits (``native_fits``). Returns the result and
    the fits made (the native control's are the ones later endpoints reuse)."""
    method = endpoint_method(endpoint)
    fits = {v: f for v, f in native_fits.items() if v in reused_views(endpoint)}
    if method == "temperature":
        # the inverse-aware attacker (TUPLE.md section 8): the inverse is public and one-to-one, so
        # the released scores hold nothing it lacks; reading them as well and choosing by a noisy
        # validation split (the paper's H.3 protocol) only adds selection noise around native
        res = _decode(model, domain, inverse_frame(released), families, fits, ontology)
        res.candidate += " on the public inverse"
    else:
        res = _decode(model, domain, released, families, fits, ontology)
    res.endpoint = endpoint
    return res, fits


def _frozen_costs(endpoint: str, frame: pd.DataFrame, domain: str, policies: Sequence[Policy]
                  ) -> tuple[list[EndpointCost], list[Unreadable]]:
    """The frozen policies replayed on the endpoint's test release, and the policies that cannot
    read it (a native-distribution recipient where some available world lacks the full vector)."""
    classes = policies[0].costs.classes             # the domain's classes, canonical order
    test = apply_view(frame[frame["split"] == "test"], POLICY_VIEW).sort_values("world_id").reset_index(drop=True)
    rank = candidate_ranks(test, classes)
    avail = (test["status"] == "ok").to_numpy()
    t = test["coarse"].map({c: i for i, c in enumerate(classes)}).to_numpy()
    partial = native_q(test, classes) is None
    q = SharedQ(test, features(test, classes))      # the same features for every policy: built once
    out, unreadable = [], []
    for p in policies:
        if p.recipient.kind == "native" and partial:
            unreadable.append(Unreadable(endpoint, "frozen", p.task, p.profile))
            continue
        o = run_task(p.task, q(p.recipient), rank, avail, t, p.costs, p.factor)
        out.append(EndpointCost(endpoint, "frozen", p.task, p.profile, test["world_id"].to_numpy(),
                                test["pair_id"].to_numpy(), o.cost))
    return out, unreadable


def _adapted_costs(endpoint: str, model: str, domain: str, frame: pd.DataFrame,
                   ontology: Ontology | None = None) -> list[EndpointCost]:
    res = utility_domain(model, domain, frame, views=(VIEW,), profiles=profile_names(ontology), ontology=ontology)
    return [EndpointCost(endpoint, "adapted", s.task, s.profile, res.test["world_id"].to_numpy(),
                         res.test["pair_id"].to_numpy(), s.outcome.cost) for s in res.selected]


def endpoint_costs(model: str, domain: str, endpoint: str, released: pd.DataFrame,
                   policies: Sequence[Policy], ontology: Ontology | None = None
                   ) -> tuple[list[EndpointCost], list[Unreadable]]:
    """What recipients pay on the endpoint's test release: the frozen full-native policies
    replayed, and (for the transforms, not WCPQ) adapted recipients refitted on the release; and
    the frozen policies that cannot read the release (no cost)."""
    out, unreadable = _frozen_costs(endpoint, released, domain, policies) if policies else ([], [])
    if endpoint != "native" and not is_wcpq(endpoint):
        plain = released.drop(columns=["_signature", "_inverse_signature"], errors="ignore")
        out += _adapted_costs(endpoint, model, domain, plain, ontology)
    return out, unreadable


def release_table(release: Release, domain: str) -> pd.DataFrame:
    """The ``defense_releases`` rows of one endpoint's release."""
    rel = release.frame
    return pd.DataFrame({
        "world_id": rel["world_id"], "domain": domain, "split": rel["split"],
        "probabilities": [json.dumps(p) if isinstance(p, dict) else None for p in rel["probabilities"]],
        "confidence": rel["confidence"].astype(float), "codeword": release.codes})


def defend_endpoint(model: str, domain: str, frame: pd.DataFrame, policies: Sequence[Policy], endpoint: str,
                    families: frozenset[str] = DEFENSE_FAMILIES, native_fits: dict | None = None,
                    ontology: Ontology | None = None, release: Release | None = None) -> tuple[DefenseDomain, dict]:
    """One endpoint of one (model, domain) (``frame`` sorted by world_id): release (``release``
    when already made: the learned variants), attack (reusing ``native_fits``, the native
    control's fits, where the endpoint leaves their fields unchanged), recipient costs. Returns
    that endpoint's part of the domain's result (nothing for WCPQ without frozen policies) and
    the fits its attack made."""
    out = DefenseDomain(model, domain)
    if release is None and endpoint not in LEARNED_ENDPOINTS:
        release = release_endpoint(frame, domain, endpoint, policies)
    if release is None:
        return out, {}
    if release.wcpq:
        out.wcpq[endpoint] = release.wcpq
    result, fits = attack_endpoint(model, domain, endpoint, release.frame, families, native_fits or {}, ontology)
    if endpoint != "native":
        out.releases[endpoint] = release_table(release, domain)
    out.endpoints[endpoint] = result
    out.costs, out.unreadable = endpoint_costs(model, domain, endpoint, release.frame, policies, ontology)
    return out, fits


def joined(model: str, domain: str, parts: Sequence[DefenseDomain]) -> DefenseDomain:
    """The endpoints' parts of one (model, domain) as one result, in the parts' order."""
    out = DefenseDomain(model, domain)
    for part in parts:
        out.endpoints.update(part.endpoints)
        out.releases.update(part.releases)
        out.costs += part.costs
        out.wcpq.update(part.wcpq)
        out.unreadable += part.unreadable
    return out


def _native_endpoint(model: str, domain: str, frame: pd.DataFrame, policies: Sequence[Policy],
                     families: frozenset[str], ontology: Ontology | None) -> tuple[DefenseDomain, dict]:
    """The native control's part and its fits that other endpoints may reuse (only those travel back)."""
    part, fits = defend_endpoint(model, domain, frame, policies, "native", families, None, ontology)
    return part, {v: f for v, f in fits.items() if v in REUSABLE_VIEWS}


def _first_stage(kind: str, model: str, domain: str, frame: pd.DataFrame, policies: Sequence[Policy],
                 families: frozenset[str], endpoints: Sequence[str], ontology: Ontology | None):
    """A task of the first stage: the native control (``kind`` "native") or the learned WCPQ
    releases ("learned") of one (model, domain)."""
    if kind == "native":
        return _native_endpoint(model, domain, frame, policies, families, ontology)
    return learned_endpoint_releases(model, domain, frame, policies, endpoints, ontology)


def run_defenses(frames: dict[str, pd.DataFrame], policies: dict[str, dict[str, list[Policy]]], jobs: int | Workers = 1,
                 families: frozenset[str] = DEFENSE_FAMILIES, endpoints: Sequence[str] = ALL_ENDPOINTS,
                 progress: Callable[[int, int], None] | None = None,
                 skipped: dict[str, str] | None = None, ontology: Ontology | None = None) -> list[DefenseDomain]:
    """The defense audit of every decodable (model, domain) of ``frames``, in parallel. First
    stage: the native controls, and the learned WCPQ variants' releases (trained per (model,
    domain)); then every other (model, domain, endpoint) as a task of its own (a few domains keep
    every worker busy), which reuses its native control's fits when it comes after the native
    control in ``endpoints``. Each (model, domain)'s result holds its endpoints in that order;
    progress counts the tasks of both stages."""
    tasks = [(m, d, f.sort_values("world_id").reset_index(drop=True), policies.get(m, {}).get(d, []))
             for m, d, f in domain_tasks(frames, decodable, "defenses", skipped)]
    endpoints = tuple(endpoints)
    learned = [ep for ep in endpoints if ep in LEARNED_ENDPOINTS]
    # the learned releases (several times a native control's work) go first, so that the short
    # native controls fill the workers at the end of the stage instead of one long task alone
    first = ([("learned", i) for i, t in enumerate(tasks) if t[3]] if learned else []) \
        + ([("native", i) for i in range(len(tasks))] if "native" in endpoints else [])
    # a learned variant needs frozen policies to map against; without them it releases nothing
    later = [(i, ep) for i in range(len(tasks)) for ep in endpoints
             if ep != "native" and (ep not in LEARNED_ENDPOINTS or tasks[i][3])]
    total = len(first) + len(later)
    done_first = run_tasks(_first_stage, [(kind, *tasks[i][:4], families, learned, ontology) for kind, i in first],
                           total, jobs, progress)
    heads = {i: out for (kind, i), out in zip(first, done_first) if kind == "native"}
    made = {i: out for (kind, i), out in zip(first, done_first) if kind == "learned"}
    after_native = set(endpoints[endpoints.index("native") + 1:]) if "native" in endpoints else set()

    def step(done: int, of: int) -> None:       # after the first stage, its last report is this stage's start
        if done or not first:
            progress(len(first) + done, of)

    rest = run_tasks(defend_endpoint, [(*tasks[i], ep, families, heads[i][1] if ep in after_native and i in heads
                                        else None, ontology, made.get(i, {}).get(ep)) for i, ep in later],
                     total, jobs, step if progress else None)
    parts = {(i, "native"): part for i, (part, _) in heads.items()}
    parts.update((key, part) for key, (part, _) in zip(later, rest))
    return [joined(m, d, [parts[i, ep] for ep in endpoints if (i, ep) in parts]) for i, (m, d, _, _) in enumerate(tasks)]


# ---------------------------------------------------------------- tables

RESULT_COLUMNS = ["model", "defense", "method", "seed", "accuracy", "ci_low", "ci_high", "log_loss", "n",
                  "diff_vs_native", "diff_ci_low", "diff_ci_high", "coverage", "fallbacks", "plan_agreement",
                  "plan_comparisons", "max_abs_cost_diff"]
COST_COLUMNS = ["model", "defense", "recipient", "task", "profile", "mean_cost", "ci_low", "ci_high", "n"]


def prediction_rows(results: list[DefenseDomain]) -> pd.DataFrame:
    """Per-world defense-aware predictions (``decoder_predictions`` rows with their defense)."""
    rows = []
    for r in results:
        for ep, e in r.endpoints.items():
            ok = correct(e.y, e.p)
            ll = log_loss_per_world(e.y, e.p)
            for wid, pid, p, c, l in zip(e.world_ids, e.pair_ids, e.p, ok, ll):
                rows.append((r.model, VIEW, ep, wid, r.domain, pid, float(p), bool(c), float(l), e.candidate))
    return pd.DataFrame(rows, columns=["model", "view", "defense", "world_id", "domain", "pair_id", "p_s1", "correct",
                                       "log_loss", "candidate"])


LEARNED_COLUMNS = ["model", "domain", "defense", "budget", "js_weight", "seed", "proxy", "pool", "deployed", "guarded",
                   "available", "covered", "max_cost_increase"]


def learned_rows(results: list[DefenseDomain]) -> pd.DataFrame:
    """The ``learned_wcpq`` rows: each learned variant's choice and verification per (model, domain)."""
    rows = [{"model": r.model, "domain": r.domain, "defense": ep, **{k: w[k] for k in LEARNED_COLUMNS[3:] if k != "proxy"},
             "proxy": json.dumps(w["proxy"], sort_keys=True)}
            for r in results for ep, w in r.wcpq.items() if endpoint_method(ep) == "wcpq learned"]
    return pd.DataFrame(rows, columns=LEARNED_COLUMNS)


def release_rows(results: list[DefenseDomain]) -> pd.DataFrame:
    """Every defended release of every (model, domain) (``defense_releases`` rows)."""
    parts = [rel.assign(model=r.model, defense=ep) for r in results for ep, rel in r.releases.items()]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _boot(values: np.ndarray, pairs: np.ndarray, rs: PairResamples) -> tuple[float, float, float]:
    """Mean of a per-world value with its pair-clustered percentile interval."""
    sums, sizes = rs.totals(pairs, values)
    return (float(np.mean(values)), *percentile_interval(resampled_means(sums, sizes, rs.W)))


def result_tables(results: list[DefenseDomain], preds: pd.DataFrame, n_boot: int = N_BOOT, seed: int = SEED,
                  skipped: dict[str, str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """defense_results (recovery with intervals, paired difference against the native control,
    WCPQ coverage and verification) and defense_costs (frozen and adapted recipients). A pooled
    cost left out because a frozen policy cannot read an endpoint is named in ``skipped``."""
    res_rows: list[dict] = []
    cost_rows: list[dict] = []
    for model, sub in preds.groupby("model", sort=True):
        rs = PairResamples.of(sub, n_boot, seed)
        domains = [r for r in results if r.model == model]
        res_rows += _recovery_rows(model, sub, domains, rs)
        cost_rows += _cost_rows(model, domains, rs, skipped)
    return pd.DataFrame(res_rows, columns=RESULT_COLUMNS), pd.DataFrame(cost_rows, columns=COST_COLUMNS)


def _wcpq_summary(domains: list[DefenseDomain], endpoint: str) -> dict:
    """One model's coverage and verification of one WCPQ endpoint, pooled over its domains."""
    got = [r.wcpq.get(endpoint, {}) for r in domains]
    out = {k: sum(w.get(k, 0) for w in got)
           for k in ("worlds", "available", "covered", "fallbacks", "plan_agreement", "comparisons")}
    out["max_abs_cost_diff"] = max((w.get("max_abs_cost_diff", 0.0) for w in got), default=None)
    return out


def _recovery_rows(model: str, sub: pd.DataFrame, domains: list[DefenseDomain], rs: PairResamples) -> list[dict]:
    """One model's recovery per endpoint (noise: also the per-world mean over seeds), with
    intervals and the paired difference against the native control."""
    wide = sub.pivot_table(index=["world_id", "pair_id"], columns="defense", values="correct", aggfunc="first")
    wide = wide.astype(float)
    noise_cols = [c for c in wide.columns if c.startswith("noise seed")]
    if noise_cols:
        wide["noise"] = wide[noise_cols].mean(axis=1)
    pair_of = wide.index.get_level_values("pair_id").to_numpy()
    ll = sub.groupby("defense")["log_loss"].mean()
    rows = []
    for ep in wide.columns:
        wc = _wcpq_summary(domains, ep)
        vals = wide[ep].to_numpy()
        est, lo, hi = _boot(vals, pair_of, rs)
        if "native" in wide.columns and ep != "native":
            d, dlo, dhi = _boot(vals - wide["native"].to_numpy(), pair_of, rs)
        else:
            d = dlo = dhi = None
        is_w = is_wcpq(ep) and wc["comparisons"] > 0
        rows.append({"model": model, "defense": ep, "method": endpoint_method(ep) if ep != "native" else "none",
                     "seed": int(ep.rsplit(" ", 1)[1]) if ep.startswith("noise seed") else None,
                     "accuracy": est, "ci_low": lo, "ci_high": hi,
                     "log_loss": float(ll.get(ep, np.nan)) if ep in ll else None, "n": len(vals),
                     "diff_vs_native": d, "diff_ci_low": dlo, "diff_ci_high": dhi,
                     "coverage": wc["covered"] / wc["available"] if is_w and wc["available"] else None,
                     "fallbacks": wc["fallbacks"] if is_w else None,
                     "plan_agreement": wc["plan_agreement"] if is_w else None,
                     "plan_comparisons": wc["comparisons"] if is_w else None,
                     "max_abs_cost_diff": wc["max_abs_cost_diff"] if is_w else None})
    return rows


NAMED = 3       # how many task/profile pairs, and domains of each, a skip reason names


def _first(items: list[str], sep: str = ", ", last: str = " and ", noun: str = "") -> str:
    """The first ``NAMED`` items joined by ``sep`` and how many more (``a, b, c and 3 more``;
    with ``noun``: ``...; and 1 more task/profile pair``)."""
    more = len(items) - NAMED
    if more <= 0:
        return sep.join(items)
    return f"{sep.join(items[:NAMED])}{last}{more} more" + (f" {noun}{'s' * (more > 1)}" if noun else "")


def pooled_costs(model: str, domains: list[DefenseDomain], skipped: dict[str, str] | None = None
                 ) -> dict[tuple, list[tuple[np.ndarray, np.ndarray]]]:
    """(pair ids, per-world costs) of every domain per (endpoint, recipient, task, profile) that
    has a cost in every domain. A key without a cost in some domain is left out only when that
    domain recorded why (``DefenseDomain.unreadable``); it is then logged and named in
    ``skipped``. A cost missing for any other reason is an error, never dropped silently."""
    costs: dict[tuple, list[tuple[np.ndarray, np.ndarray]]] = {}
    for r in domains:
        for c in r.costs:
            costs.setdefault((c.endpoint, c.recipient, c.task, c.profile), []).append((c.pair_ids, c.cost))
    out = {k: v for k, v in costs.items() if len(v) == len(domains)}
    left_out: dict[tuple[str, str], dict[str, list[str]]] = {}
    for key in sorted({*costs, *(tuple(u) for r in domains for u in r.unreadable)} - set(out)):
        lacking = [r for r in domains if key not in {(c.endpoint, c.recipient, c.task, c.profile) for c in r.costs}]
        unexplained = [r.domain for r in lacking if key not in {tuple(u) for u in r.unreadable}]
        if unexplained:
            raise RuntimeError(f"defense costs of {model}: no {key[1]} cost for {key[0]} {key[2]}/{key[3]} in "
                               f"domain(s) {', '.join(unexplained)} and no reason recorded")
        left_out.setdefault(key[:2], {})[f"{key[2]}/{key[3]}"] = [r.domain for r in lacking]
    cause = "a native-distribution policy cannot read a release without the full probability vector"
    for (endpoint, recipient), policies in left_out.items():
        every = [f"{task_profile} (in {', '.join(where)})" for task_profile, where in policies.items()]
        log.info("defense costs of %s on %s (%s recipients): no pooled cost for %s: %s",
                 model, endpoint, recipient, "; ".join(every), cause)
        if skipped is not None:             # the first few, so that 20 domains do not make a page of text
            shown = [f"{task_profile} (in {_first(where)})" for task_profile, where in policies.items()]
            skipped[f"defense costs {model}/{endpoint}/{recipient}"] = (
                f"no pooled cost for {_first(shown, '; ', '; and ', 'task/profile pair')}: {cause}")
    return out


def _cost_rows(model: str, domains: list[DefenseDomain], rs: PairResamples,
               skipped: dict[str, str] | None = None) -> list[dict]:
    """One model's mean recipient cost per (endpoint, recipient, task, profile) with intervals;
    noise also as the per-world mean over the three seeds."""
    costs = pooled_costs(model, domains, skipped)
    rows = []

    def row(endpoint: str, recipient: str, task: str, profile: str, pids: np.ndarray, c: np.ndarray) -> dict:
        est, lo, hi = _boot(c, pids, rs)
        return {"model": model, "defense": endpoint, "recipient": recipient, "task": task, "profile": profile,
                "mean_cost": est, "ci_low": lo, "ci_high": hi, "n": len(c)}

    for (ep, recipient, task, profile), parts in sorted(costs.items()):
        rows.append(row(ep, recipient, task, profile, np.concatenate([p for p, _ in parts]),
                        np.concatenate([v for _, v in parts])))
    for recipient in ("frozen", "adapted"):
        noisy = {(t, p) for (e, rc, t, p) in costs if e.startswith("noise seed") and rc == recipient}
        for task_profile in sorted(noisy):            # sorted: the rows' order does not follow string hashing
            seeds = [costs[(e, recipient, *task_profile)] for e in ENDPOINTS
                     if e.startswith("noise seed") and (e, recipient, *task_profile) in costs]
            if len(seeds) == len(NOISE_SEEDS):
                pids = np.concatenate([p for p, _ in seeds[0]])
                c = np.mean([np.concatenate([v for _, v in s]) for s in seeds], axis=0)
                rows.append(row("noise", recipient, *task_profile, pids, c))
    return rows


def defenses_json(res: pd.DataFrame) -> dict:
    """``defenses`` of ``qlb audit --json``: per model and defense (noise = the three-seed mean;
    ``native`` is the control the others are compared with)."""
    out: dict = {}
    for row in res.itertuples(index=False):
        if row.defense.startswith("noise seed"):
            continue
        out.setdefault(row.model, {})[row.defense] = {
            "accuracy": float(row.accuracy), "ci_low": float(row.ci_low), "ci_high": float(row.ci_high),
            "coverage": None if row.coverage is None or pd.isna(row.coverage) else float(row.coverage),
            "plan_agreement": None if row.plan_agreement is None or pd.isna(row.plan_agreement)
            else float(row.plan_agreement / row.plan_comparisons),
            "max_abs_cost_diff": None if row.max_abs_cost_diff is None or pd.isna(row.max_abs_cost_diff)
            else float(row.max_abs_cost_diff)}
    return out
