"""Who is on a privacy-utility front, in words, for the Fronts page and the report.

With several models the front compares models: each model's full native release, the
``nondominated_models`` flag of ``front_points`` (paper Section 7.4). With one model (an auditor's
own) there is no other model to compare, and the informative front is the one over its release
views, the ``nondominated_all`` flag (TUPLE.md section 6: "per model (and per model x view)").
``Front`` names which of the two a run's points give; the sentences below read either.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from qlb.present.names import count_of, cost_interval, listing, name, pct, pct_interval, under
from qlb.tuple.release_views import VIEWS


@dataclass(frozen=True)
class Front:
    """What a run's front compares: ``key`` is ``model`` (each model's full native release) or ``view``
    (the one model's release views); ``member`` is the flag that marks the points on it."""

    key: str
    member: str
    points: pd.DataFrame      # the points compared (every task and profile)

    @property
    def noun(self) -> str:
        return "model" if self.key == "model" else "release view"

    def members(self, task: str, profile: str) -> list[str]:
        """The models (sorted) or release views (in the views' order) on the front for ``task`` under ``profile``."""
        p = self.points
        return self.order(p.loc[(p["task"] == task) & (p["profile"] == profile) & p[self.member], self.key])

    def order(self, values) -> list[str]:
        values = set(values)
        if self.key == "view":
            return [v for v in VIEWS if v in values] + sorted(values - set(VIEWS))
        return sorted(values)

    def label(self, value: str) -> str:
        """A model's name, or a release view's display name."""
        return value if self.key == "model" else name("view", value)

    def with_recovery(self, values: list[str]) -> str:
        """``name (secret recovery 71.5% [66.3, 76.4])`` for each, joined (recovery does not depend on the task)."""
        rec = self.points.drop_duplicates(self.key).set_index(self.key)
        cols = ["recovery", "recovery_ci_low", "recovery_ci_high"]
        return ", ".join(f"{self.label(v)} (secret recovery {pct_interval(*(rec.at[v, c] for c in cols))})"
                         for v in values)


def front_of(points: pd.DataFrame) -> Front:
    """The front a run's ``front_points`` call for: over models, or over the one model's release views."""
    if points["model"].nunique() == 1:
        return Front("view", "nondominated_all", points)
    return Front("model", "nondominated_models", points[points["view"] == "full_native"])


def who_sentence(front: Front, tasks: list[str], profile: str, left_out: Sequence[str] = ()) -> str:
    """Who is on the front under ``profile`` and whether that changes with the task, with secret recoveries;
    ``left_out``: the models the findings leave out (``qlb.present.left_out``), said when one model is left."""
    members = {t: front.members(t, profile) for t in tasks}
    on_any = front.order(set().union(*members.values()))
    total = front.points[front.key].nunique()
    opening = under(profile)
    if front.key == "view":
        one = front.points["model"].iloc[0]
        which = (f"With one model left once {listing(list(left_out))} {'is' if len(left_out) == 1 else 'are'} left "
                 f"out ({one})" if left_out else f"With one model audited ({one})")
        opening = f"{which}, the front compares its release views. {opening}"
    if not on_any:
        return f"{opening}, no {front.noun} is on the front in any task."
    if len({frozenset(v) for v in members.values()}) == 1:
        other = ("Every other model's full native release is dominated: another model's leaks no more and costs "
                 "no more." if front.key == "model" else
                 "Every other view is dominated: another view leaks no more and costs no more.")
        verb = "is" if len(on_any) == 1 else "are"
        who = (f"every one of the {count_of(total, front.noun)} is" if len(on_any) == total
               else f"the same {len(on_any)} of {count_of(total, front.noun)} {verb}")
        return (f"{opening}, {who} on the front in every task: "
                f"{front.with_recovery(on_any)}. " + (other if len(on_any) < total else "")).strip()
    per_task = "; ".join(f"{name('task', t)}: {', '.join(front.label(v) for v in m) or 'none'}"
                         for t, m in members.items())
    return f"{opening}, the front changes with the task ({per_task}). On it: {front.with_recovery(on_any)}."


def stability_sentence(front: Front, tasks: list[str], profiles: list[str]) -> str:
    """In how many of the task × profile settings each model (or release view) is on the front."""
    settings = len(tasks) * len(profiles)
    on = front.points[front.points[front.member]]
    counts = on.groupby(front.key).size()
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], front.order(counts.index).index(kv[0])))
    listed = ", ".join(f"{front.label(v)} in {k}" for v, k in ranked)
    never = front.points[front.key].nunique() - len(counts)
    what = "a model's full native release" if front.key == "model" else "a release view"
    over = f"Over {'the' if settings == 1 else 'all'} {count_of(settings, 'task × cost-profile setting')}"
    if not ranked:
        return f"{over}, no {front.noun} is on the front."
    rest = (f"; every {front.noun} is on it at least once" if never == 0 else
            f"; the other {front.noun} never is" if never == 1 else f"; the other {never} {front.noun}s never are")
    return f"{over}, {what} is on the front: {listed}{rest}."


# The Fronts page's caveat, said with its first finding (who is on the front) rather than only in the intro
MEMBERSHIP_NOTE = ("Being on the front is descriptive, not a significance claim: a point just off the front may be "
                   "within its intervals of one on it, so look at the intervals.")


def review_cost(profile: str, ontology=None) -> float | None:
    """What one trusted review costs under ``profile``: the task's authored review cost times the profile's
    ``review_x`` (``ontology``: the dataset's decision task; None = TUPLE); None for a profile the task lacks."""
    from qlb.tuple.costs import CostProfile, authored
    try:
        return float(authored(ontology)["review"]) * CostProfile.named(profile, ontology).review_x
    except ValueError:
        return None


def price_of_privacy(points: pd.DataFrame, tasks: list[str], profile: str, review: float | None = None) -> str:
    """Per task, counting every model × view release: what the most private end of the front costs per case, and
    what its cheapest end costs (with the interval), each with its recovery. ``review``: what one trusted review
    costs under ``profile`` (``review_cost``); a private end that costs exactly that per case (as shown) is said to
    be the price of sending every case to trusted review."""
    private, cheap = [], []
    for t in tasks:
        front = points[(points["task"] == t) & (points["profile"] == profile) & points["nondominated_all"]]
        private.append(corner(front, "recovery", "mean_cost").iloc[0])
        cheap.append(corner(front, "mean_cost", "recovery").iloc[0])
    names = [name("task", t) for t in tasks]
    dear = listing([f"{p['mean_cost']:.3f}" + (" per case" if i == 0 else "") + f" in {n}"
                    for i, (p, n) in enumerate(zip(private, names))])
    cheapest = listing([cost_interval(c["mean_cost"], c["cost_ci_low"], c["cost_ci_high"]) for c in cheap])
    guessing = ": guessing" if all(p["recovery"] == 0.5 for p in private) else ""
    every = "counting every release view" if points["model"].nunique() == 1 else "counting every model × view release"
    said = (f"{under(profile)}, {every}, the most private end of each front "
            f"({recoveries(private)}{guessing}) costs {dear}; the cheapest end costs {cheapest} "
            f"({recoveries(cheap)}).")
    if review is None:
        return said
    reviewed = [n for p, n in zip(private, names) if f"{p['mean_cost']:.3f}" == f"{review:.3f}"]
    if not reviewed:
        return said
    return (f"{said} In {listing(reviewed)}, {review:.3f} per case is the price of sending every case to trusted "
            f"review (one review costs {review:g}).")


def recoveries(rows: list[pd.Series]) -> str:
    """``50.0% recovery``, or ``recovery 50.0%, 52.1% and 50.0%`` when the tasks differ."""
    values = [pct(r["recovery"]) for r in rows]
    return f"{values[0]} recovery" if len(set(values)) == 1 else f"recovery {listing(values)}"


def corner(front: pd.DataFrame, first: str, then: str) -> pd.DataFrame:
    """The releases of ``front`` with the smallest ``first``, and among them the smallest ``then`` (one spot)."""
    d = front[front[first] == front[first].min()]
    return d[d[then] == d[then].min()]


def members_heading(front: Front, profiles: list[str]) -> str:
    """The heading of the per-task members table, saying what its cells count: across every cost profile."""
    plural = f"{front.noun}s"
    if len(profiles) == 1:
        return f"{under(profiles[0])}: which {plural} are on the front, per task"
    return f"Across the {len(profiles)} cost profiles: how often each {front.noun} is on the front, per task"


def members_note(front: Front, tasks: list[str], profiles: list[str], profile: str) -> str:
    """What the members table's cells say (on the front under ``profile``, yes or no; in brackets, under how many of
    the profiles), after whether the front under ``profile`` is the same in every task."""
    members = {t: front.members(t, profile) for t in tasks}
    same = len({frozenset(v) for v in members.values()}) == 1
    plural = f"{front.noun}s"
    what = "the model's full native release" if front.key == "model" else "the release view"
    return (f"{under(profile)}, " + (f"the same {plural} are on the front in every task. " if same
                                     else "the front changes with the task. ")
            + f"Each cell says whether {what} is on the front {under(profile)[0].lower() + under(profile)[1:]} (yes "
            f"or no) and, in brackets, under how many of the {count_of(len(profiles), 'cost profile')} it is.")
