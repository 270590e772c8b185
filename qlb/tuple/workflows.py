"""The three downstream workflows of TUPLE.md section 5, vectorized over worlds.

Every function takes the recipient's posterior ``q`` (n x 4, canonical class order), the public
candidate ``rank`` (n x 4: position of each canonical class in the world's transmitted
candidate order), availability (False = status unavailable: the fallback, trusted review) and
the true class index ``t`` (evaluator side only, for the realized cost). Decisions never read
``t``. Ties are broken the same way everywhere (fixed here, the spec is silent):

- argmax q: the tied class that comes first in the public candidate order;
- clarification: acting now beats an equally good check; tied checks in candidate order;
- asymmetric routing: tied routes in candidate order, then general inspection.

A *plan* is the complete recipient behaviour for one world, including the action after each
possible check answer; two releases with equal plans cost the same for every true class.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from qlb.tuple.costs import DomainCosts, profile_names

if TYPE_CHECKING:
    from qlb.records.ontology import Ontology

TOL = 1e-12
TASKS: tuple[str, ...] = ("selective", "clarification", "asymmetric")
FACTORS: tuple[float, ...] = tuple(round(0.5 + 0.1 * i, 1) for i in range(11))   # selective review factor grid
# action codes (besides a class index 0..3)
REVIEW, FALLBACK, ACT_NOW = -1, -2, -1


def policy_count(ontology: Ontology | None = None) -> int:
    """The frozen recipient policies of one domain of a decision task (default TUPLE's): one per workflow and cost
    profile (3 x 6 = 18 in TUPLE)."""
    return len(TASKS) * len(profile_names(ontology))


def pick(expected: np.ndarray, preference: np.ndarray) -> np.ndarray:
    """Per row, the column of minimal ``expected`` (within TOL); ties go to the lowest ``preference``."""
    best = expected.min(axis=1, keepdims=True)
    tied = expected <= best + TOL
    return np.where(tied, preference, np.inf).argmin(axis=1)


def argmax_public(q: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """argmax over classes, ties to the class first in the public candidate order."""
    return pick(-q, rank)


@dataclass
class Outcome:
    """Per-world behaviour and realized cost of one policy in one workflow."""

    task: str
    first: np.ndarray          # route class index, REVIEW, K = general inspection (asymmetric), a check's class
                               # index (clarification, with ``checked``), or FALLBACK
    checked: np.ndarray        # clarification: a check was bought
    route_yes: np.ndarray      # clarification: route after "yes" (= the checked class), else -9
    route_no: np.ndarray       # clarification: route after "no", else -9
    cost: np.ndarray
    available: np.ndarray

    def plan(self) -> np.ndarray:
        """(n x 4) integer plan: first action, check bought, route after yes, route after no."""
        return np.stack([self.first, self.checked.astype(int), self.route_yes, self.route_no], axis=1)

    def final_route(self, t: np.ndarray) -> np.ndarray:
        """The action actually taken once the check (if any) is answered for true class ``t``."""
        return np.where(self.checked, np.where(self.route_yes == t, self.route_yes, self.route_no), self.first)


def _blank(n: int) -> np.ndarray:
    return np.full(n, -9, dtype=int)


def selective(q: np.ndarray, rank: np.ndarray, available: np.ndarray, t: np.ndarray, costs: DomainCosts,
              factor: float = 1.0) -> Outcome:
    """Route to argmax q when wrong_route * (1 - max q) < review * factor, else trusted review."""
    n = len(q)
    top = argmax_public(q, rank)
    risk = costs.wrong_route * (1.0 - q[np.arange(n), top])
    route = risk < costs.review * factor
    first = np.where(route, top, REVIEW)
    first = np.where(available, first, FALLBACK)
    out = Outcome("selective", first, np.zeros(n, bool), _blank(n), _blank(n), np.empty(n), available)
    out.cost = realized_cost(out, t, costs)
    return out


def clarification(q: np.ndarray, rank: np.ndarray, available: np.ndarray, t: np.ndarray,
                  costs: DomainCosts) -> Outcome:
    """Act now (route argmax q) or buy one check for class c (yes iff T == c): after yes route c,
    after no route argmax q over the other classes. The option of least expected cost wins."""
    n, k = q.shape
    rows = np.arange(n)
    top = argmax_public(q, rank)
    act_now = costs.wrong_route * (1.0 - q[rows, top])
    # after "no" on check c: argmax over the other classes
    no_route = np.empty((n, k), dtype=int)
    for c in range(k):
        masked = q.copy()
        masked[:, c] = -np.inf
        no_route[:, c] = argmax_public(masked, rank)
    q_no = np.take_along_axis(q, no_route, axis=1)
    check = costs.check + costs.wrong_route * (1.0 - q - q_no)
    expected = np.column_stack([act_now, check])
    preference = np.column_stack([np.full(n, -1), rank])
    choice = pick(expected, preference)
    checked = choice > 0
    c = np.where(checked, choice - 1, 0)
    route_yes = np.where(checked, c, -9)
    route_no = np.where(checked, no_route[rows, c], -9)
    first = np.where(checked, c, top)
    first = np.where(available, first, FALLBACK)
    checked = checked & available
    route_yes = np.where(available, route_yes, -9)
    route_no = np.where(available, route_no, -9)
    out = Outcome("clarification", first, checked, route_yes, route_no, np.empty(n), available)
    out.cost = realized_cost(out, t, costs)
    return out


def asymmetric(q: np.ndarray, rank: np.ndarray, available: np.ndarray, t: np.ndarray,
               costs: DomainCosts) -> Outcome:
    """The action (four routes, general inspection) minimizing sum_t q(t) C(a, t)."""
    n = len(q)
    expected = q @ costs.asymmetric.T                       # n x 5
    preference = np.column_stack([rank, np.full(n, rank.shape[1])])
    first = np.where(available, pick(expected, preference), FALLBACK)
    out = Outcome("asymmetric", first, np.zeros(n, bool), _blank(n), _blank(n), np.empty(n), available)
    out.cost = realized_cost(out, t, costs)
    return out


def realized_cost(outcome: Outcome, t: np.ndarray, costs: DomainCosts) -> np.ndarray:
    """What each world's plan costs when its true class is ``t`` (the plan never reads ``t``):
    a route costs 0 when right and the wrong-route cost otherwise, review and a check their
    costs (after a check, the route its answer leads to), an asymmetric action its matrix entry,
    an unavailable response the trusted-review fallback."""
    first, t = outcome.first, np.asarray(t)
    if outcome.task == "asymmetric":
        cost = costs.asymmetric[np.where(outcome.available, first, 0), t]
    else:
        route = costs.wrong_route * (outcome.final_route(t) != t)
        cost = np.where(outcome.checked, costs.check + route, np.where(first == REVIEW, costs.review, route))
    return np.where(outcome.available, cost, costs.fallback)


def truth_costs(outcome: Outcome, costs: DomainCosts) -> np.ndarray:
    """(n x k) what each world's plan costs for every hypothetical true class (public: the plan
    and the costs, no truth)."""
    n, k = len(outcome.first), len(costs.classes)
    return np.column_stack([realized_cost(outcome, np.full(n, c), costs) for c in range(k)])


def run_task(task: str, q: np.ndarray, rank: np.ndarray, available: np.ndarray, t: np.ndarray,
             costs: DomainCosts, factor: float = 1.0) -> Outcome:
    """The outcome of workflow ``task`` (selective, clarification or asymmetric) on posteriors ``q``; ``factor``
    scales only the selective review cost."""
    if task == "selective":
        return selective(q, rank, available, t, costs, factor)
    if task == "clarification":
        return clarification(q, rank, available, t, costs)
    if task == "asymmetric":
        return asymmetric(q, rank, available, t, costs)
    raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")


def oracle_cost(task: str, available: np.ndarray, t: np.ndarray, costs: DomainCosts) -> np.ndarray:
    """Evaluator-only oracle-T bound: knows T, pays the cheapest action for it (0 for a correct
    route); an unavailable response still takes the fallback, as every policy must."""
    best = costs.asymmetric[:, t].min(axis=0) if task == "asymmetric" else np.zeros(len(t))
    return np.where(available, best, costs.fallback)


def action_labels(outcome: Outcome, classes: tuple[str, ...], checks: dict[str, str]) -> list[str]:
    """Human-readable plan per world (the recipient-visible transcript for clarification)."""
    check_of = {cls: name for name, cls in checks.items()}
    out = []
    for first, chk, yes, no in outcome.plan():
        if first == FALLBACK:
            out.append("fallback: trusted review (unavailable)")
        elif chk:
            out.append(f"{check_of[classes[first]]} → yes: route {classes[yes]} / no: route {classes[no]}")
        elif outcome.task == "selective" and first == REVIEW:
            out.append("trusted review")
        elif outcome.task == "asymmetric" and first == len(classes):       # the action after the K routes
            out.append("general inspection")
        else:
            out.append(f"route {classes[first]}")
    return out
