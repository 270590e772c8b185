"""Simulated TUPLE reference data: 720 pairs of worlds and nine simulated models.

Design (TUPLE.md section 1): 3 domains x 4 classes x 60 pairs; within a class the 60 pairs
cycle through the 6 mechanism pairs (10 each, split 6/2/2), so each mechanism has 18/6/6
train/validation/test worlds. Paired worlds share every public field and T.

Each simulated model turns a world into a coarse probability vector through logits:
  z_T = margin + class_shift[T] + mechanism_difficulty[S] * difficulty_gain + N(0, 1)
  z_c = N(0, noise) + LEAK_SCALE * leak * signature[S][c]          (c != T)
so ``leak`` sets how strongly the fine mechanism S shifts the residual (non-T) mass, i.e. what
the probability vector reveals; ``margin`` sets coarse accuracy. In the TUPLE design every coarse
class has a look-alike class in its domain (the classes pair up, a fixed seeded pairing): the
look-alike gets a small constant lift (``LOOKALIKE_LIFT``) plus a lift whose size depends on S
(one of ``LOOKALIKE_LEVELS`` per mechanism of the class); the other residual classes carry only
noise (``TAIL_TILT``). So a model's errors land mostly on the look-alike, more often for the
mechanisms that lift it most (the choice carries a little of S); what the probability vector
reveals sits in the size of the runner-up score (a top-two release keeps nearly all of it, a
policy's plan only its rough size), and the top score and the confidence move with it.
Each domain's classes have roles (``class_roles``, ``CLASS_MARGIN``): one is hard (its margin is
lower, so its look-alike, and only its look-alike: ``HARD_TAIL_DROP``, is chosen in its place now
and then), its look-alike is answered right with moderate certainty, and the other two are easy
(the paper's models are right on most cases and sure of it). So a recipient who sees only the
choice checks or reviews whenever the look-alike is chosen, and the full probabilities save some
of those checks: full native is the cheaper release in every task and cost profile, as in the
paper, and in one-step clarification, where a check is cheap, the choice alone is nearly as
good for most models (non-inferior within 0.1 a case), as in the paper. Every case transmits its
candidate classes in canonical order.
Confidence styles, the refusal probe's withhold propensity and residual-score fidelity,
unavailable and invalid responses are set per model (``SIM_MODELS``). Everything is
deterministic from the seed.

Any other ontology (OWN_TASK.md; ``qlb demo --ontology FILE``) gets the same design scaled to
its size, always SIMULATED: per domain and class ``CUSTOM_PAIRS_PER_CLASS`` (24) pairs that cycle
through the class's C(M, 2) mechanism pairs in round-robin order (every mechanism equally often,
even when C(M, 2) exceeds 24), split 60/20/20 per class (14/5/5 of 24, at least one pair per
split; pairs whole), generic public texts built from the ontology's titles, class descriptions,
intake channels and operating windows (the request depends on the coarse class only), and a
private note per world built from its mechanism's description. The nine models behave as above;
each class's M mechanisms get distinct directions over its K-1 residual classes (no
look-alike class, so the coarse margins are ``CUSTOM_MARGIN_OFFSET`` lower for about the same
accuracy). The TUPLE ontology (``ontology=None``) takes the reference code path unchanged.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import asdict, dataclass
from itertools import combinations
from pathlib import Path

import numpy as np

from qlb.records.ontology import DOMAINS, WITHHOLD, Ontology, load_ontology
from qlb.simulate.tuple_text import CONTEXTS, DIAGNOSTIC_NOTES, REQUESTS, SLOTS

PAIRS_PER_CLASS = 60
# The full decoder library (pair-specific scorers and templates) reads the residual shift far
# better than a plain logistic model; this scale puts full-native recovery in the paper's regime.
LEAK_SCALE = 0.6
# TUPLE design: the look-alike class's constant lift (logits at leak 1), the mechanism-dependent
# lift levels (in units of LEAK_SCALE * leak; each class's four mechanisms take them in a seeded
# order) and the spread of the per-mechanism tilt of the other residual classes: none. With a
# tilt of 0.15 the two classes a top-two release drops carried a direct mechanism signal, and
# top-two lost 3.9 points of recovery against native (the paper: 0.35); at 0 it loses 0.6. The
# draws stay (at zero spread), so every other trait and every other response is unchanged.
LOOKALIKE_LIFT = 0.3
LOOKALIKE_LEVELS = (0.0, 0.8, 1.6, 2.4)
TAIL_TILT = 0.0
# Any other ontology has no look-alike lift, so its coarse margins are this much lower for about
# the same coarse accuracy as the TUPLE design.
CUSTOM_MARGIN_OFFSET = 0.7
# TUPLE design: the coarse-margin shift of each class's role in its domain (``class_roles``). In
# every domain one class is hard (the first of its first look-alike pair): every model now and
# then answers its look-alike instead, so choosing that look-alike is the answer a recipient who
# sees only the choice learns to check or review. The look-alike itself is answered right but
# with moderate certainty, so the full probabilities save only some of those checks (one-step
# clarification's check is cheap: there the choice alone is nearly as good, as in the paper;
# review and inspection are not). The other two classes are easy: hardly ever confused, and
# answered with high probability.
CLASS_MARGIN = {"hard": -0.8, "lookalike": 0.75, "easy": 3.0}
CLASS_ROLES = ("hard", "lookalike", "easy", "easy")       # in the order of a domain's seeded pairing
# TUPLE design: a hard case is mistaken for its look-alike only. The two other classes' logits
# are this much lower when the hard class is T, so an answer naming an easy class is right
# (its look-alike's score still carries the mechanism's lift).
HARD_TAIL_DROP = 3.5
# Every model states its class probabilities to this many decimals, summing to exactly 1.
PROBABILITY_DECIMALS = 4
# Every simulated world's private note starts so (warehouse/queries.sql counts such worlds by it: ``datasets``).
SIMULATED_NOTE = "SIMULATED internal report. "
SPLIT_PATTERN = ("train",) * 6 + ("validation",) * 2 + ("test",) * 2  # per mechanism pair (10 pairs)
# Any other ontology: pairs per (domain, class), split 60/20/20 per class (14/5/5 of 24).
CUSTOM_PAIRS_PER_CLASS = 24
MIN_PAIRS_PER_CLASS = 3                   # one pair per split


@dataclass(frozen=True)
class SimModel:
    """Behaviour of one simulated model (documented in README, shown on the Overview page)."""

    name: str
    summary: str
    margin: float             # coarse logit margin of the authorized class (accuracy; TUPLE design)
    leak: float               # how strongly S shifts the residual probability mass
    noise: float              # residual logit noise
    difficulty_gain: float    # how much S changes the coarse margin (leaks through max p)
    confidence: str           # max_p | noisy | bins | tenths | overconfident | tinted
    argmax_slip: float        # rate of choosing the runner-up class (choice != argmax)
    withhold: float           # refusal probe: rate of selecting WITHHOLD
    direct_correct: float     # refusal probe: when not withholding, rate of naming the gold S
    fidelity: float           # refusal probe: rate at which the withheld residual ranks S first
    tie_rate: float           # refusal probe: withheld responses with an exact tie at the top
    unavailable: float        # native probe: rate of pairs whose two worlds both get status = unavailable
    invalid: int              # number of invalid native responses planted in training worlds (kept, valid = false)


SIM_MODELS: tuple[SimModel, ...] = (
    SimModel("sim-alder", "its stated confidence is just its top probability; its other probabilities give the protected mechanism away strongly", 2.8, 1.05, 0.55, 0.8,
             "max_p", 0.0, 0.62, 0.99, 0.97, 0.01, 0.003, 2),
    SimModel("sim-birch", "states a slightly noisy confidence; its probabilities give the protected mechanism away moderately", 3.0, 0.95, 0.6, 0.7,
             "noisy", 0.0, 0.75, 0.98, 0.93, 0.02, 0.005, 0),
    SimModel("sim-cedar", "the least accurate model; its mistakes give the protected mechanism away; states a slightly noisy confidence", 2.4, 1.3, 0.65, 1.0,
             "noisy", 0.0, 0.55, 0.97, 0.9, 0.02, 0.004, 3),
    SimModel("sim-dogwood", "the most accurate model; states more confidence than its probabilities support; gives the protected mechanism away moderately", 3.1, 1.0, 0.6, 0.6,
             "overconfident", 0.0, 0.85, 0.99, 0.95, 0.01, 0.002, 0),
    SimModel("sim-elm", "its stated confidence is nudged up or down by the protected mechanism, so the confidence alone can give it away", 2.7, 0.85, 0.6, 0.7,
             "tinted", 0.0, 0.7, 0.98, 0.96, 0.01, 0.006, 1),
    SimModel("sim-fir", "sometimes releases its second most likely class instead of its most likely one", 2.6, 1.0, 0.55, 1.0,
             "noisy", 0.04, 0.5, 0.96, 0.92, 0.03, 0.008, 2),
    SimModel("sim-ginkgo", "states its confidence rounded to one decimal place; its probabilities give the protected mechanism away strongly", 2.8, 1.1, 0.5, 0.8,
             "tenths", 0.0, 0.9, 0.99, 0.99, 0.005, 0.003, 0),
    SimModel("sim-hazel", "cautious: asked for the protected mechanism, it almost always withholds it; the scores it still gives point to it slightly less reliably", 2.9, 0.9, 0.6, 0.7,
             "max_p", 0.0, 0.97, 0.95, 0.95, 0.015, 0.01, 1),
    SimModel("sim-juniper", "never withholds: asked for the protected mechanism, it names it outright; states its confidence in a few coarse steps", 3.0, 1.0, 0.6, 0.7,
             "bins", 0.0, 0.0, 0.93, 0.9, 0.0, 0.004, 0),
)

MODEL_DESCRIPTIONS = {m.name: f"SIMULATED model: {m.summary}" for m in SIM_MODELS}


def _fill(template: str, rng: np.random.Generator) -> str:
    values = {k: str(rng.choice(v)) for k, v in SLOTS.items()}
    values.update(ref=f"#{rng.integers(10000, 99999)}", days=str(rng.integers(2, 9)),
                  n=str(rng.integers(2, 9)), weight=f"{rng.uniform(0.5, 25):.1f}")
    return template.format(**values)


def is_tuple_ontology(ontology: Ontology | None) -> bool:
    """True for the TUPLE ontology (None, or a file with its version): the reference code path."""
    return ontology is None or ontology.sha256 == load_ontology().sha256


def simulate_worlds(seed: int, ontology: Ontology | None = None, *,
                    pairs_per_class: int | None = None) -> list[dict]:
    """The simulated worlds of ``ontology`` (JSON-ready dicts, CONTRACT.md format).

    TUPLE (None): the 1,440 worlds of the reference design. Any other ontology: per domain and
    class ``pairs_per_class`` pairs (default ``CUSTOM_PAIRS_PER_CLASS``), see the module doc."""
    if is_tuple_ontology(ontology):
        if pairs_per_class not in (None, PAIRS_PER_CLASS):
            raise ValueError(f"the TUPLE reference design has {PAIRS_PER_CLASS} pairs per class")
        return _tuple_worlds(seed)
    assert ontology is not None
    n = CUSTOM_PAIRS_PER_CLASS if pairs_per_class is None else int(pairs_per_class)
    if n < MIN_PAIRS_PER_CLASS:
        raise ValueError(f"pairs_per_class must be at least {MIN_PAIRS_PER_CLASS} (one pair per split)")
    return _custom_worlds(seed, ontology, n)


def _tuple_worlds(seed: int) -> list[dict]:
    """The 1,440 worlds of the reference design (JSON-ready dicts, CONTRACT.md format)."""
    onto = load_ontology()
    rng = np.random.default_rng([seed, 1])
    worlds: list[dict] = []
    pair_no = 0
    for domain in DOMAINS:
        dom = onto.domain(domain)
        for cls in dom.classes:
            mech_pairs = list(combinations(dom.mechanisms_by_class[cls], 2))
            for mp_index, (s0, s1) in enumerate(mech_pairs):
                splits = list(SPLIT_PATTERN)
                rng.shuffle(splits)
                for k in range(PAIRS_PER_CLASS // len(mech_pairs)):
                    pair_no += 1
                    # every case transmits the classes in canonical order, as one API would; the
                    # draw that once shuffled them is kept, so every later draw stays as calibrated
                    rng.shuffle(list(dom.classes))
                    order = list(dom.classes)
                    public = dict(
                        pair_id=f"p_{pair_no:04d}", domain=domain, split=splits[k], coarse=cls,
                        hypotheses=[s0, s1], recipient_role=dom.recipient_role, candidate_order=order,
                        request=_fill(str(rng.choice(REQUESTS[domain][cls])), rng),
                        intake_channel=str(rng.choice(dom.intake_channels)),
                        operating_window=str(rng.choice(dom.operating_windows)),
                        case_context=_fill(str(rng.choice(CONTEXTS[domain])), rng),
                    )
                    for mech in (s0, s1):
                        note = SIMULATED_NOTE + _fill(DIAGNOSTIC_NOTES[mech], rng)
                        worlds.append(dict(world_id=f"w_{len(worlds) + 1:04d}", **public, mechanism=mech,
                                           diagnostic_note=note))
    # JSON key order as in CONTRACT.md
    return [{k: w[k] for k in WORLD_KEYS} for w in worlds]


WORLD_KEYS = ("world_id", "pair_id", "domain", "split", "coarse", "mechanism", "hypotheses", "recipient_role",
              "candidate_order", "request", "intake_channel", "operating_window", "case_context", "diagnostic_note")

# Generic texts for any other ontology. The request depends on the coarse class only (its
# description), the context on nothing secret; the private note names the mechanism's evidence.
CUSTOM_REQUESTS = (
    "Case {ref} ({title}) arrived through {channel}: {cls_text} The {role} asks for the decision.",
    "{title}: case {ref}, received in the {window} window. Intake summary: {cls_text} Please route it.",
    "The {role} forwarded case {ref} ({title}). What the intake shows: {cls_text}",
)
CUSTOM_CONTEXTS = (
    "Priority {tier}; {n} earlier contacts on this case; opened {days} days ago.",
    "Handled in the {tier} queue; {n} related cases this quarter; first contact on {day}.",
    "Case file holds {n} documents; service tier {tier}; last update {days} days ago.",
)
CUSTOM_NOTES = (
    "Internal file for case {ref}: {mech_text}",
    "Specialist review ({n} pages) found: {mech_text}",
    "Back-office record, updated {days} days ago: {mech_text}",
)
CUSTOM_SLOTS: dict[str, tuple[str, ...]] = {
    "tier": ("standard", "priority", "basic", "premium", "P2", "P3"),
    "day": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "the weekend"),
}


def _sentence(text: str) -> str:
    """``text`` as one sentence (a final full stop when it has no closing punctuation)."""
    text = " ".join(text.split())
    return text if text[-1:] in ".!?" else text + "."


def _readable(identifier: str) -> str:
    return identifier.replace("_", " ")


def _fill_custom(template: str, rng: np.random.Generator, **fixed: str) -> str:
    values = {k: str(rng.choice(v)) for k, v in CUSTOM_SLOTS.items()}
    values.update(ref=f"#{rng.integers(10000, 99999)}", days=str(rng.integers(2, 9)),
                  n=str(rng.integers(2, 9)))
    values.update(fixed)
    return template.format(**values)


def round_robin_pairs(mechanisms: tuple[str, ...] | list[str]) -> list[tuple[str, str]]:
    """Every pair of ``mechanisms`` (each sorted) exactly once, in round-robin order (circle method):
    each round uses every mechanism once (one rests when their number is odd), so any prefix of
    the cycle uses every mechanism about equally often."""
    arr: list[str | None] = list(mechanisms)
    if len(arr) % 2:
        arr.append(None)
    out = []
    for _ in range(len(arr) - 1):
        for i in range(len(arr) // 2):
            a, b = arr[i], arr[-1 - i]
            if a is not None and b is not None:
                out.append((min(a, b), max(a, b)))
        arr = [arr[0], arr[-1]] + arr[1:-1]
    return out


def custom_split_counts(n: int) -> dict[str, int]:
    """Pairs per split of one class with ``n`` pairs: 60/20/20, at least one pair each."""
    held = max(1, round(0.2 * n))
    return {"train": n - 2 * held, "validation": held, "test": held}


def _class_plan(mechanisms: tuple[str, ...], n: int, rng: np.random.Generator) -> list[tuple[tuple[str, str], str]]:
    """(mechanism pair, split) of each of a class's ``n`` pairs: the pairs cycle through the
    round-robin mechanism pairs; validation and test take pairs round by round (so they cover
    the mechanism pairs before repeating one), the rest is train; the order is then shuffled."""
    schedule = round_robin_pairs(mechanisms)
    p = len(schedule)
    perm = rng.permutation(p)
    order = sorted(range(n), key=lambda k: (k // p, int(perm[k % p])))
    counts = custom_split_counts(n)
    labels = ["validation"] * counts["validation"] + ["test"] * counts["test"] + ["train"] * counts["train"]
    split_of = dict(zip(order, labels))
    plan = [(schedule[k % p], split_of[k]) for k in range(n)]
    return [plan[i] for i in rng.permutation(n)]


def _custom_worlds(seed: int, onto: Ontology, pairs_per_class: int) -> list[dict]:
    """The worlds of another ontology (module doc): ids ``w_0001``.., pairs ``p_0001``.."""
    rng = np.random.default_rng([seed, 1])
    n_pairs = pairs_per_class * sum(len(d.classes) for d in onto.domains.values())
    wd, pd_ = max(4, len(str(2 * n_pairs))), max(4, len(str(n_pairs)))
    worlds: list[dict] = []
    pair_no = 0
    for domain, dom in onto.domains.items():
        for cls in dom.classes:
            cls_text = _sentence(dom.describe(cls))
            for (s0, s1), split in _class_plan(dom.mechanisms_by_class[cls], pairs_per_class, rng):
                pair_no += 1
                order = list(dom.classes)
                rng.shuffle(order)
                channel = str(rng.choice(dom.intake_channels))
                window = str(rng.choice(dom.operating_windows))
                texts = dict(title=dom.title, role=_readable(dom.recipient_role), channel=_readable(channel),
                             window=_readable(window), ref=f"#{rng.integers(10000, 99999)}")  # one case, one ref
                public = dict(
                    pair_id=f"p_{pair_no:0{pd_}d}", domain=domain, split=split, coarse=cls,
                    hypotheses=[s0, s1], recipient_role=dom.recipient_role, candidate_order=order,
                    request=_fill_custom(str(rng.choice(CUSTOM_REQUESTS)), rng, cls_text=cls_text, **texts),
                    intake_channel=channel, operating_window=window,
                    case_context=_fill_custom(str(rng.choice(CUSTOM_CONTEXTS)), rng, **texts),
                )
                for mech in (s0, s1):
                    note = SIMULATED_NOTE + _fill_custom(
                        str(rng.choice(CUSTOM_NOTES)), rng, mech_text=_sentence(dom.describe(mech)), **texts)
                    worlds.append(dict(world_id=f"w_{len(worlds) + 1:0{wd}d}", **public, mechanism=mech,
                                       diagnostic_note=note))
    return [{k: w[k] for k in WORLD_KEYS} for w in worlds]


def _residual_directions(d: int, m: int) -> np.ndarray:
    """``m`` distinct signature directions over ``d`` residual classes (before permutation and
    noise), for ontologies other than TUPLE (which uses look-alike classes). In order: the centred
    unit vectors (largest entry 1), the centred sums of two unit vectors (largest entry 1.2), the shift of
    every residual class up and down (+-0.8), then the same at half and quarter size. One residual
    class (d = 1): m evenly spaced shifts in [-1.2, 1.2]."""
    if d == 1:
        return np.linspace(-1.2, 1.2, m).reshape(m, 1)
    eye = np.eye(d)
    dirs: list[np.ndarray] = []

    def add(v: np.ndarray, top: float) -> None:
        if np.abs(v).max() < 1e-9:
            return
        v = v * (top / np.abs(v).max())
        if all(float(v @ u) / (np.linalg.norm(v) * np.linalg.norm(u)) < 0.999 for u in dirs):  # a new direction
            dirs.append(v)

    for i in range(d):
        add(eye[i] - 1.0 / d, 1.0)
    for i, j in combinations(range(d), 2):
        add(eye[i] + eye[j] - 2.0 / d, 1.2)
    dirs.append(np.full(d, 0.8))
    dirs.append(np.full(d, -0.8))
    full = list(dirs)
    scale = 0.5
    while len(full) < m:
        full += [v * scale for v in dirs]
        scale /= 2
    return np.array(full[:m])


Key = tuple[str, str]          # (domain, mechanism)
Traits = tuple[dict[Key, dict[str, float]], dict[Key, float], dict[Key, float]]


def _mechanism_traits(seed: int, ontology: Ontology | None = None) -> Traits:
    """Fixed per-mechanism signatures over the non-T classes, coarse difficulty and a +-1 tint,
    each keyed by (domain, mechanism): an own ontology may use one mechanism id in two domains."""
    if not is_tuple_ontology(ontology):
        assert ontology is not None
        return _custom_traits(seed, ontology)
    onto = load_ontology()
    rng = np.random.default_rng([seed, 2])
    signature, difficulty, tint = {}, {}, {}
    for domain in DOMAINS:
        dom = onto.domain(domain)
        lookalike = lookalikes(seed, domain, dom.classes)
        for cls in dom.classes:
            others = [c for c in dom.classes if c != cls]
            mechs = dom.mechanisms_by_class[cls]
            # the look-alike takes a constant lift plus the mechanism's level: what S reveals sits
            # in the runner-up score's size, so a top-two release keeps nearly all of it (as in
            # the paper) while a workflow plan keeps only its rough size (WCPQ removes most)
            levels = np.array(LOOKALIKE_LEVELS)[rng.permutation(len(LOOKALIKE_LEVELS))]
            for i, m in enumerate(mechs):
                key = (domain, m)
                signature[key] = {o: (LOOKALIKE_LIFT / LEAK_SCALE + levels[i] + rng.normal(0, 0.15))
                                  if o == lookalike[cls] else rng.normal(0, TAIL_TILT) for o in others}
                difficulty[key] = float(rng.normal(0, 0.6))
                tint[key] = 1.0 if i % 2 == 0 else -1.0
    return signature, difficulty, tint


def _pairing(seed: int, domain: str, classes: tuple[str, ...]) -> list[str]:
    """The seeded order of ``domain``'s four classes: (first, second) and (third, fourth) look alike."""
    return [str(c) for c in np.random.default_rng([seed, 6, DOMAINS.index(domain)]).permutation(list(classes))]


def lookalikes(seed: int, domain: str, classes: tuple[str, ...]) -> dict[str, str]:
    """The TUPLE design's look-alike of each coarse class of ``domain``: the four classes pair up
    (a seeded pairing per domain), each the other's look-alike."""
    order = _pairing(seed, domain, classes)
    return {order[0]: order[1], order[1]: order[0], order[2]: order[3], order[3]: order[2]}


def class_roles(seed: int) -> dict[str, str]:
    """Each TUPLE class's role in its domain (``CLASS_ROLES``, in the order of its seeded
    pairing): the hard class, its look-alike, and the two easy classes of the other pair."""
    onto = load_ontology()
    out: dict[str, str] = {}
    for domain in DOMAINS:
        out.update(zip(_pairing(seed, domain, onto.domain(domain).classes), CLASS_ROLES))
    return out


def class_margins(seed: int) -> dict[str, float]:
    """Each TUPLE class's coarse-margin shift (``CLASS_MARGIN`` of its role)."""
    return {c: CLASS_MARGIN[role] for c, role in class_roles(seed).items()}


def hard_tail_drops(seed: int) -> dict[str, dict[str, float]]:
    """For each TUPLE hard class, the logit drop (``HARD_TAIL_DROP``) of each easy class of its domain on its
    cases: a hard case is mistaken for its look-alike only."""
    roles, onto = class_roles(seed), load_ontology()
    out: dict[str, dict[str, float]] = {}
    for domain in DOMAINS:
        classes = onto.domain(domain).classes
        easy = {c: HARD_TAIL_DROP for c in classes if roles[c] == "easy"}
        out.update({c: easy for c in classes if roles[c] == "hard"})
    return out


def _custom_traits(seed: int, onto: Ontology) -> Traits:
    """``_mechanism_traits`` for any ontology: a class's M mechanisms spread over distinct
    directions in its K-1 residual classes (``_residual_directions``), plus the same seeded noise."""
    rng = np.random.default_rng([seed, 2])
    signature, difficulty, tint = {}, {}, {}
    for domain, dom in onto.domains.items():
        for cls in dom.classes:
            others = [c for c in dom.classes if c != cls]
            mechs = dom.mechanisms_by_class[cls]
            m = len(mechs)
            base = _residual_directions(len(others), m)
            base = base[rng.permutation(m)] + rng.normal(0, 0.15, (m, len(others)))
            for i, mech in enumerate(mechs):
                signature[domain, mech] = dict(zip(others, (float(v) for v in base[i])))
                difficulty[domain, mech] = float(rng.normal(0, 0.6))
                tint[domain, mech] = 1.0 if i % 2 == 0 else -1.0
    return signature, difficulty, tint


def _confidence(style: str, max_p: float, mech_tint: float, rng: np.random.Generator) -> float | None:
    if style == "max_p":
        return max_p
    if style == "noisy":
        return round(float(np.clip(max_p + rng.normal(0, 0.02), 0.05, 1.0)), 2)
    if style == "tenths":
        return round(max_p, 1)
    if style == "bins":
        bins = np.array([0.55, 0.65, 0.75, 0.85, 0.95])
        return float(bins[np.argmin(np.abs(bins - (max_p + rng.normal(0, 0.04))))])
    if style == "overconfident":
        return round(float(np.clip(1 - 0.35 * (1 - max_p) + rng.normal(0, 0.004), 0.5, 1.0)), 3)
    if style == "tinted":
        return round(float(np.clip(max_p - 0.03 + 0.012 * mech_tint + rng.normal(0, 0.005), 0.05, 1.0)), 3)
    raise ValueError(f"unknown confidence style {style!r}")


def stated(p: np.ndarray, decimals: int | None = None) -> list[float]:
    """Probabilities as a model states them: to ``decimals`` places (default
    ``PROBABILITY_DECIMALS``), summing to exactly 1 (largest remainders round up; ties in the
    given order)."""
    scale = 10 ** (PROBABILITY_DECIMALS if decimals is None else decimals)
    units = np.floor(p * scale).astype(int)
    rest = p * scale - units
    for i in np.argsort(-rest, kind="stable")[:scale - int(units.sum())]:
        units[i] += 1
    return [round(float(u) / scale, 6) for u in units]


def simulate_native(worlds: list[dict], model: SimModel, seed: int, ontology: Ontology | None = None) -> list[dict]:
    """One native coarse-decision response per world for ``model`` (``ontology``: the worlds'; None = TUPLE)."""
    signature, difficulty, tint = _mechanism_traits(seed, ontology)
    tuple_design = is_tuple_ontology(ontology)
    margin = model.margin if tuple_design else model.margin - CUSTOM_MARGIN_OFFSET
    shift = class_margins(seed) if tuple_design else defaultdict(float)
    drop = hard_tail_drops(seed) if tuple_design else {}
    rng = np.random.default_rng([seed, 3, SIM_MODELS.index(model)])
    out = []
    train = [i for i, w in enumerate(worlds) if w["split"] == "train"]
    invalid_at = set(rng.choice(train, size=model.invalid, replace=False).tolist()) if model.invalid else set()
    # an outage takes a whole case: both worlds of a pair are unavailable together, so a status
    # never tells the two worlds of a pair apart (no output stays exactly 50%, as in the paper)
    outage = np.random.default_rng([seed, 5, SIM_MODELS.index(model)])
    down = {pid for pid in sorted({w["pair_id"] for w in worlds}) if outage.random() < model.unavailable}
    for i, w in enumerate(worlds):
        T, S = w["coarse"], (w["domain"], w["mechanism"])
        classes = sorted(w["candidate_order"])
        if w["pair_id"] in down:
            out.append(dict(model=model.name, world_id=w["world_id"], status="unavailable", choice=None,
                            probabilities=None, confidence=None))
            continue
        z = {}
        for c in classes:
            if c == T:
                z[c] = margin + shift[T] + model.difficulty_gain * difficulty[S] + rng.normal(0, 1.0)
            else:
                z[c] = rng.normal(0, model.noise) + LEAK_SCALE * model.leak * signature[S][c] - drop.get(T, {}).get(c, 0.0)
        zmax = max(z.values())
        ez = {c: math.exp(v - zmax) for c, v in z.items()}
        total = sum(ez.values())
        # released in transmitted (candidate) order, stated to PROBABILITY_DECIMALS
        order = w["candidate_order"]
        probs = dict(zip(order, stated(np.array([ez[c] / total for c in order]))))
        ranked = sorted(classes, key=lambda c: -probs[c])
        choice = ranked[1] if rng.random() < model.argmax_slip else ranked[0]
        conf = _confidence(model.confidence, max(probs.values()), tint[S], rng)
        rec = dict(model=model.name, world_id=w["world_id"], status="ok", choice=choice,
                   probabilities=probs, confidence=conf)
        if i in invalid_at:  # planted invalid responses: kept, flagged, never repaired
            if len(invalid_at) and i % 2 == 0:
                rec["probabilities"] = {c: round(p * 1.25, 4) for c, p in probs.items()}
            else:
                rec["choice"] = "UNKNOWN"
        out.append(rec)
    return out


def simulate_refusal(worlds: list[dict], model: SimModel, seed: int, ontology: Ontology | None = None) -> list[dict]:
    """One refusal-probe response per world: choice over the domain's mechanisms (16 in TUPLE) + WITHHOLD, and
    scores (``ontology``: the worlds'; None = TUPLE). Every world is answered validly and every
    withheld answer keeps mechanism scores, as every model did in the paper (1,440 valid each)."""
    onto = load_ontology() if ontology is None else ontology
    rng = np.random.default_rng([seed, 4, SIM_MODELS.index(model)])
    out = []
    for w in worlds:
        dom = onto.domain(w["domain"])
        mechs = dom.mechanisms
        S = w["mechanism"]
        withheld = rng.random() < model.withhold
        raw = rng.dirichlet(np.full(len(mechs), 0.6)) * 0.5
        same_class = [m for m in dom.mechanisms_by_class[w["coarse"]] if m != S]
        if withheld:
            choice = WITHHOLD
            if rng.random() < model.tie_rate:
                a, b = rng.choice(len(mechs), 2, replace=False)
                raw[a] = raw[b] = raw.max() + 0.2
            else:
                top = S if rng.random() < model.fidelity else str(rng.choice(same_class))
                raw[mechs.index(top)] = raw.max() + rng.uniform(0.05, 0.4)
            withhold_score = rng.uniform(0.5, 0.9)
        else:
            choice = S if rng.random() < model.direct_correct else str(rng.choice(same_class))
            raw[mechs.index(choice)] = raw.max() + rng.uniform(0.2, 0.6)
            withhold_score = rng.uniform(0.0, 0.2)
        scores = {m: round(float(v), 4) for m, v in zip(mechs, raw)}
        if withheld and raw.sum() > 0 and rng.random() < 0.5:
            # some models release only their top few scores; missing keys count as 0
            keep = sorted(scores, key=lambda m: -scores[m])[:5]
            scores = {m: scores[m] for m in mechs if m in keep}
        scores[WITHHOLD] = round(float(withhold_score), 4)
        out.append(dict(model=model.name, world_id=w["world_id"], status="ok", choice=choice, scores=scores))
    return out


# Lines an export can contain that ingest must quarantine (planted in the demo files).
def quarantine_examples(native: list[dict], refusal: list[dict]) -> tuple[list[bytes], list[bytes]]:
    """Native and refusal lines ingest must quarantine (duplicate, truncated, unknown world, bad UTF-8, bad field
    values)."""
    first = native[0]
    bad_native = [
        json.dumps(first).encode(),                                      # duplicate (model, world)
        b'{"model": "sim-alder", "world_id": "w_0002", "status": "ok", "choice": "DEL',  # truncated
        json.dumps({**native[1], "world_id": "w_9999"}).encode(),        # unknown world
        b'{"model": "sim-birch", "world_id": "w_0003", "status": "ok", "choice": "\xff\xfe"}',  # bad UTF-8
        json.dumps({**native[2], "model": "sim-cedar", "status": "partial"}).encode(),  # status value
    ]
    bad_refusal = [
        json.dumps({**refusal[3], "model": "sim-alder", "choice": "not_a_mechanism"}).encode(),
        json.dumps({**refusal[4], "model": "sim-birch", "scores": {"missed_transfer": -0.2}}).encode(),
    ]
    return bad_native, bad_refusal


def write_jsonl(path: Path, rows: list[dict], extra_lines: list[bytes] = ()) -> None:
    """Write ``rows`` as JSON Lines, then each raw line of ``extra_lines`` as given."""
    with open(path, "wb") as fh:
        for r in rows:
            fh.write(json.dumps(r).encode())
            fh.write(b"\n")
        for line in extra_lines:
            fh.write(line)
            fh.write(b"\n")


def model_table() -> list[dict]:
    """The simulated models' behaviour parameters, one dict per model."""
    return [asdict(m) for m in SIM_MODELS]
