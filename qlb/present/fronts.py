"""Who is on a privacy-utility front, in words, for the Fronts page and the report.

With several models the front compares models: each model's full native release, the
``nondominated_models`` flag of ``front_points`` (paper Section 7.4). With one model (an auditor's
own) there is no other model to compare, and the informative front is the one over its release
views, the ``nondominated_all`` flag (TUPLE.md section 6: "per model (and per model x view)").
``Front`` names which of the two a run's points give; the sentences below read either.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from qlb.present.names import count_of, name, pct_interval, under
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


def who_sentence(front: Front, tasks: list[str], profile: str) -> str:
    """Who is on the front under ``profile`` and whether that changes with the task, with secret recoveries."""
    members = {t: front.members(t, profile) for t in tasks}
    on_any = front.order(set().union(*members.values()))
    total = front.points[front.key].nunique()
    opening = under(profile)
    if front.key == "view":
        opening = (f"With one model audited ({front.points['model'].iloc[0]}), the front compares its release "
                   f"views. {opening}")
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
