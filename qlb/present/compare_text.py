"""The Compare runs page's words, computed from two stored audit runs (pure: frames and dicts in,
plain text out; no Streamlit, no database): which runs the page opens on and why, what differs
between the runs' settings, the rates both runs hold with their change B − A, and the findings.

Every sentence is plain text (data text such as model names included as it is): the page escapes
it before it is shown."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Collection, Mapping

import pandas as pd

from qlb.present.names import (AUDIT_NAMES, FAMILY_NAMES, QL_METRIC_NAMES, cost_interval, count_of, listing, name,
                               pct_interval, run_label)
from qlb.present.scope import run_parameters
from qlb.tuple.defense_audit import DEFENSE_FAMILIES
from qlb.tuple.release_views import DECODER_FAMILIES, VIEWS

MOVED_POINTS = 0.01     # a rate that changed by less than one point has not moved
MOVED_COST = 0.01       # nor a mean cost that changed by less than 0.01 cost units
SAME = 5e-7             # changes below this are float noise: the same value


# ---------------------------------------------------------------------------------- the runs
def short_id(run_id: str) -> str:
    """The end of a run id, as the pickers and captions show it: ``run-…b0e4ed``."""
    return f"run-…{str(run_id)[-6:]}"


def picker_label(run_id: str, started_at: object, parameters: str | dict,
                 ran: Collection[str] | None = None) -> str:
    """A run as the Compare pickers show it: ``run_label`` (``ran``: the audits that stored
    results) with the end of the run id first, since two runs of one dataset often share their
    start minute and audits and a long label is cut at its right end on a 1,024 px screen."""
    label, suffix = run_label(run_id, started_at, parameters, ran), short_id(run_id)
    rest = label.removesuffix(f" · {suffix}")
    return f"{suffix} · {rest}"


@dataclass(frozen=True)
class DefaultRuns:
    """The runs the Compare page opens on (``a`` before, ``b`` after) and why, in plain words."""
    a: str
    b: str
    why: str


def _kinds(kinds: Collection[str]) -> str:
    """Stored audit kinds (``decoding``, ...) by the names a reader knows, in the pages' order:
    ``refusal, recovery and utility``."""
    held = [label for key, label in AUDIT_NAMES.items() if key in set(kinds)]
    return listing(held) if held else "no audit"


def default_runs(runs: pd.DataFrame, ran: Mapping[str, Collection[str]], headline: str | None,
                 linked: str | None = None) -> DefaultRuns | None:
    """The two runs the page opens on. Run B: the run a ``?run=`` link names (``linked``), else the
    run the Overview and the report show (``headline``), else the newest. Run A: of the runs
    started before B, the newest whose stored results are of the same audits as B's, else the
    one sharing most of B's audits (then fewest others, then the newest); a run after B only when
    none started before it. ``runs``: ``run_id`` and ``started_at``, newest first; ``ran``: run
    id -> the audits it stored results for. None with fewer than two runs."""
    if len(runs) < 2:
        return None
    ids = [str(r) for r in runs["run_id"]]
    start = dict(zip(ids, pd.to_datetime(runs["started_at"])))
    if linked in start:
        b, because = linked, "the run the link names"
    elif headline in start:
        b, because = headline, "the run the Overview and the report show"
    else:
        b, because = ids[0], "the newest run"
    held = {r: frozenset(ran.get(r, ())) for r in ids}
    kinds_b = held[b]
    earlier = [r for r in ids if r != b and start[r] <= start[b]]
    pool = earlier or [r for r in ids if r != b]

    def closeness(r: str) -> tuple:
        return (len(held[r] & kinds_b), -len(held[r] - kinds_b), start[r] if earlier else -start[r].value)

    a = max(pool, key=closeness)
    same = held[a] == kinds_b
    if same and earlier:
        how = "the newest earlier run with results of the same audits"
    elif same:
        how = "the run closest after it with results of the same audits (no run started before it)"
    elif earlier:
        how = (f"the newest earlier run holding most of its audits (no earlier run holds results of all of "
               f"{_kinds(kinds_b) if kinds_b else 'them'})")
    else:
        how = "the run closest to it in audits (no run started before it)"
    audits = f" ({_kinds(kinds_b)})" if same and kinds_b else ""
    why = (f"Run B opens on {short_id(b)}, {because}; run A on {short_id(a)}, {how}{audits}.")
    newer = [r for r in ids if start[r] > start[b] and r != a]
    if newer and b != ids[0]:
        kinds = sorted({k for r in newer for k in held[r]}, key=list(AUDIT_NAMES).index)
        what = f"results of {_kinds(kinds)}" if kinds else "no results"
        which = "1 newer run holds" if len(newer) == 1 else f"{len(newer)} newer runs hold"
        why += f" {which} {what}: pick {'it' if len(newer) == 1 else 'one'} as run B to see what it changed."
    return DefaultRuns(a, b, why)


# ---------------------------------------------------------------------------- their settings
@dataclass(frozen=True)
class Setting:
    """One stored setting of the two runs: how a reader calls it, its value in each run in words,
    and, when it differs in a way that bears on what both runs hold, what that means."""
    label: str
    a: str
    b: str
    differs: str | None = None


def _families(listed: list[str] | None) -> list[str]:
    """Attacker families in the engine's order (none listed: all five), unknown ones after."""
    chosen = list(listed) if listed else list(DECODER_FAMILIES)
    return [f for f in DECODER_FAMILIES if f in chosen] + sorted(f for f in chosen if f not in DECODER_FAMILIES)


def _family_words(families: list[str]) -> str:
    return listing([FAMILY_NAMES.get(f, f) for f in families])


def _attacker(who: str, what: str, fa: list[str], fb: list[str]) -> str:
    """What a different set of attacker families means (``who``: which attacker; ``what``: the
    rates it measures)."""
    more_b, more_a = [f for f in fb if f not in fa], [f for f in fa if f not in fb]
    adds = "; ".join(p for p in (f"run B adds {_family_words(more_b)}" if more_b else "",
                                 f"run A adds {_family_words(more_a)}" if more_a else "") if p)
    if len(fb) == len(fa):
        return (f"the {who} tried different families in the two runs ({adds}): a change in {what} may come from "
                "the attacker, not the model")
    stronger = "stronger" if len(fb) > len(fa) else "weaker"
    return (f"run B's {who} tried {count_of(len(fb), 'family', 'families')}, run A's {len(fa)} ({adds}): a change "
            f"in {what} may come from the {stronger} attacker, not the model")


def settings(run_a: Mapping, run_b: Mapping, ran_a: Collection[str] | None = None,
             ran_b: Collection[str] | None = None) -> list[Setting]:
    """Both runs' stored settings side by side (``run_a``, ``run_b``: ``runs`` rows with
    ``parameters``, ``dataset_fingerprint`` and ``code_version``; ``ran_*``: the audits that stored
    results, when known): the data and code, the audits, models, release views, the recovery attacker's
    families, the defended models and the defense-aware attacker's families, the learned WCPQ variants, the
    QuasiLeak split, the decision task, bootstrap resamples and seed, then any other stored
    parameter. A setting of an audit only one run holds is shown but said to differ only when both
    hold it (its rows are not compared)."""
    pa, pb = run_parameters(run_a), run_parameters(run_b)
    held_a = set(pa.get("audits") or []) if ran_a is None else set(ran_a)
    held_b = set(pb.get("audits") or []) if ran_b is None else set(ran_b)
    both = held_a & held_b
    out: list[Setting] = []

    def add(label: str, va: str, vb: str, differs: str | None) -> None:
        out.append(Setting(label, va, vb, differs if va != vb else None))

    fa, fb = str(run_a["dataset_fingerprint"]), str(run_b["dataset_fingerprint"])
    add("data fingerprint", fa[:12], fb[:12], "the runs read different data (the dataset fingerprints differ): a "
        "change may come from the data")
    add("code version", str(run_a["code_version"]), str(run_b["code_version"]),
        f"the runs ran different code (qlb {run_a['code_version']} in run A, {run_b['code_version']} in run B)")
    ka, kb = _kinds(held_a), _kinds(held_b)
    only_a, only_b = _kinds(held_a - held_b), _kinds(held_b - held_a)
    add("audits with results", ka, kb, "; ".join(p for p in (
        f"only run A holds results of {only_a}" if held_a - held_b else "",
        f"only run B holds results of {only_b}" if held_b - held_a else "") if p) + ": those are not compared")

    def models(p: dict) -> str:
        return ", ".join(p["models"]) if p.get("models") else "every model of the dataset"
    add("models", models(pa), models(pb),
        f"the runs audited different models ({'run A: ' + models(pa)}; {'run B: ' + models(pb)}): only the "
        "models both audited are compared")

    def views(p: dict, held: set) -> str:
        if "decoding" not in held:
            return "—"
        return ", ".join(name("view", v) for v in (p.get("views") or VIEWS))
    va, vb = views(pa, held_a), views(pb, held_b)
    add("release views", va, vb, "the runs released different views to the attacker: only the views both hold "
        "are compared" if "decoding" in both else None)

    dfa, dfb = _families(pa.get("families")), _families(pb.get("families"))
    add("recovery attacker families", _family_words(dfa) if "decoding" in held_a else "—",
        _family_words(dfb) if "decoding" in held_b else "—",
        _attacker("recovery attacker", "recovery", dfa, dfb) if "decoding" in both else None)

    def defended(p: dict, held: set) -> str:
        if "defenses" not in held:
            return "—"
        return ", ".join(p["defense_models"]) if p.get("defense_models") else "every audited model"
    add("defended models", defended(pa, held_a), defended(pb, held_b),
        f"the runs defended different models (run A: {defended(pa, held_a)}; run B: {defended(pb, held_b)}): only "
        "the models both defended are compared" if "defenses" in both
        else None)
    aa = _families(pa.get("defense_families") or sorted(DEFENSE_FAMILIES))
    ab = _families(pb.get("defense_families") or sorted(DEFENSE_FAMILIES))
    add("defense-aware attacker families", _family_words(aa) if "defenses" in held_a else "—",
        _family_words(ab) if "defenses" in held_b else "—",
        _attacker("defense-aware attacker", "recovery under the defenses", aa, ab) if "defenses" in both else None)

    def learned(p: dict, held: set) -> str:
        if "defenses" not in held:
            return "—"
        n = len(p.get("learned_wcpq") or [])
        return count_of(n, "variant", "variants") if n else "none"
    add("learned WCPQ variants", learned(pa, held_a), learned(pb, held_b),
        "the runs trained different learned WCPQ variants: only the variants both trained are compared"
        if "defenses" in both else None)

    qa = (pa.get("quasileak_split") or "test") if "quasileak" in held_a else "—"
    qb = (pb.get("quasileak_split") or "test") if "quasileak" in held_b else "—"
    add("QuasiLeak split", qa, qb, f"QuasiLeak was scored on the {qa} split in run A and the {qb} split in run B: "
        "its scores are of different documents" if "quasileak" in both else None)
    oa, ob = str(pa.get("ontology_sha256") or "—")[:12], str(pb.get("ontology_sha256") or "—")[:12]
    add("decision task (checksum)", oa, ob, "the runs read different versions of the decision task (its checksum "
        "differs): its costs or mechanisms may have changed")

    def resamples(p: dict) -> str:
        return f"{p['n_boot']:,}" if isinstance(p.get("n_boot"), int) else "—"
    add("bootstrap resamples", resamples(pa), resamples(pb),
        f"run A's intervals come from {resamples(pa)} bootstrap resamples and run B's from {resamples(pb)}: the "
        "intervals' widths may differ for that alone (the rates do not depend on it)")
    add("seed", str(pa.get("seed", "—")), str(pb.get("seed", "—")),
        f"the runs used different random seeds ({pa.get('seed', '—')} in run A, {pb.get('seed', '—')} in run B): "
        "the attackers' fits and the intervals depend on the seed, so a small change may come from the seed alone")
    known = {"audits", "models", "views", "families", "defense_models", "defense_families", "learned_wcpq",
             "quasileak_split", "ontology_sha256", "n_boot", "seed"}
    for key in sorted((set(pa) | set(pb)) - known):
        va, vb = json.dumps(pa.get(key)), json.dumps(pb.get(key))
        add(key.replace("_", " "), va, vb, f"the stored parameter {key} differs ({va} in run A, {vb} in run B)")
    return out


def setup_note(items: list[Setting]) -> tuple[str, str]:
    """(lead, text): what differs between the two runs' inputs and settings, in plain words, said
    before the findings so that a reader weighs a change against it."""
    def sentence(text: str) -> str:
        return text[:1].upper() + text[1:] + "."
    by = {s.label: s for s in items}
    data, code = by["data fingerprint"], by["code version"]
    opening = ("The two runs read the same data (same dataset fingerprint)" if data.differs is None
               else "The two runs read different data (the dataset fingerprints differ)")
    opening += (", with the same code version" if code.differs is None
                else f", with code {code.a} in run A and {code.b} in run B")
    rest = [s for s in items if s.differs and s.label not in ("data fingerprint", "code version")]
    if rest:
        return "Not like for like.", (f"{opening}, but their settings differ. "
                                      + " ".join(sentence(s.differs) for s in rest))
    held = [s.label.split(" (")[0] for s in items
            if s.label not in ("data fingerprint", "code version", "audits with results") and "—" not in (s.a, s.b)]
    same = f", and the same settings ({listing(held)})" if held else ", and the same settings"
    if data.differs is None and code.differs is None:
        return "Like for like.", f"{opening}{same}."
    cause = listing([w for w, s in (("the data", data), ("the code", code)) if s.differs], "or")
    return "Same settings.", f"{opening}{same}: a change comes from {cause}."


# ---------------------------------------------------------------------- results of both runs
def paired(a: pd.DataFrame, b: pd.DataFrame, keys: list[str], value: str) -> pd.DataFrame:
    """The rows both runs hold: ``keys``, each run's ``value`` with its interval (``a``, ``a_lo``,
    ``a_hi``, ``b``, ``b_lo``, ``b_hi``) and ``change`` = b − a (unrounded); the largest changes
    first."""
    def side(df: pd.DataFrame, s: str) -> pd.DataFrame:
        return df[keys + [value, "ci_low", "ci_high"]].rename(columns={value: s, "ci_low": f"{s}_lo",
                                                                         "ci_high": f"{s}_hi"})
    m = side(a, "a").merge(side(b, "b"), on=keys)
    m["change"] = m["b"] - m["a"]
    order = (-m["change"].abs().fillna(0)).sort_values(kind="stable").index     # ties keep the keys' order
    return m.loc[order].reset_index(drop=True)


def largest_cell(pairs: pd.DataFrame, keys: list[str]) -> dict[str, object] | None:
    """The ``keys`` of the row of ``pairs`` whose value changed most (where a table's pickers open,
    so that the cell a finding cites is on screen); None when nothing changed."""
    moved = pairs.dropna(subset=["change"])
    moved = moved[moved["change"].abs() >= SAME]
    if moved.empty:
        return None
    top = moved.loc[moved["change"].abs().idxmax()]
    return {k: top[k] for k in keys}


SECTION = {"recovery": "secret recovery", "cost": "downstream cost", "defenses": "recovery under defenses",
           "refusal": "refusal probes", "quasileak": "QuasiLeak"}
# how a finding sentence names one rate of each audit the findings weigh
SUBJECTS = {
    "recovery": lambda r: f"{name('view', r['view'])} secret recovery of {r['model']}",
    "defenses": lambda r: (f"secret recovery of {r['model']} with no defense (the defense audit's native control)"
                           if r["defense"] == "native" else
                           f"secret recovery of {r['model']} under {name('defense', r['defense'])}"),
    "refusal": lambda r: f"refusal-probe recovery of {r['model']}",
    "quasileak": lambda r: f"{QL_METRIC_NAMES['complete_f1']} of detector {r['detector']}",
}
# how a count of an audit's rates reads: (one, many)
RATE_NOUNS = {
    "secret recovery": ("protected-mechanism recovery rate from a release view",
                        "protected-mechanism recovery rates from a release view"),
    "recovery under defenses": ("protected-mechanism recovery rate under a defense",
                                "protected-mechanism recovery rates under a defense"),
    "refusal probes": ("refusal-probe recovery rate", "refusal-probe recovery rates"),
    "QuasiLeak": (f"QuasiLeak detector's {QL_METRIC_NAMES['complete_f1']}",
                  f"QuasiLeak detectors' {QL_METRIC_NAMES['complete_f1']}"),
}


def rates(both: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Every rate both runs hold that the findings weigh, one row each: its audit, how a sentence
    names it, both runs' values with intervals and the change (QuasiLeak: complete-group F1 only)."""
    cols = ["audit", "subject", "a", "a_lo", "a_hi", "b", "b_lo", "b_hi", "change"]
    parts = []
    for audit, subject in SUBJECTS.items():
        p = both.get(audit)
        if p is None:
            continue
        if audit == "quasileak":
            p = p[p["metric"] == "complete_f1"]
        parts.append(p.assign(audit=SECTION[audit], subject=[subject(r) for _, r in p.iterrows()])[cols])
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)


# ---------------------------------------------------------------------------------- findings
def stated_change(a: float, b: float, scale: float = 100.0, digits: int = 1, unit: str = "points",
                  of: str = "rates") -> str:
    """The change b − a as a finding states it, ``+5.4 points``: from the unrounded values, as every
    qlb difference is (the tables' B − A column, the paired differences of the other pages); when
    the figures shown beside it, each rounded to ``digits``, differ by another amount, it says so
    (``+5.4 points, from the unrounded rates``) so the reader does not take it for a slip."""
    change = f"{scale * (b - a):+z.{digits}f} {unit}"
    of_shown = float(f"{scale * b:.{digits}f}") - float(f"{scale * a:.{digits}f}")
    if f"{of_shown:+z.{digits}f}" != f"{scale * (b - a):+z.{digits}f}":
        change += f", from the unrounded {of}"
    return change


def went(row: Mapping) -> str:
    """``<subject> went from <A [CI]> in run A to <B [CI]> in run B (<change> points)``."""
    return (f"{row['subject']} went from {pct_interval(row['a'], row['a_lo'], row['a_hi'])} in run A to "
            f"{pct_interval(row['b'], row['b_lo'], row['b_hi'])} in run B ({stated_change(row['a'], row['b'])})")


def capital(text: str) -> str:
    """``text`` with its first letter upper case (the rest as it is: names keep their case)."""
    return text[:1].upper() + text[1:]


def largest_change(figs: pd.DataFrame) -> tuple[str, str]:
    """(lead, sentence): the largest change of a rate between the runs, or that none moved."""
    figs = figs.dropna(subset=["change"])
    n = len(figs)
    if n == 0:
        return "No change to report.", "No rate has a value in both runs."
    if (figs["change"].abs() < SAME).all():
        return "No change.", f"All {n} rates both runs hold are the same in the two runs (to 0.0001 points)."
    top = figs.loc[figs["change"].abs().idxmax()]
    if abs(top["change"]) < MOVED_POINTS:
        return ("No rate moved by more than 1 point.",
                f"The largest change of the {n} rates both runs hold: {went(top)}.")
    moved = int((figs["change"].abs() >= MOVED_POINTS).sum())
    return ("Largest change.", f"{capital(went(top))}. {moved} of the {n} rates both runs hold moved by 1 point "
                               "or more.")


NOT_A_TEST = ("This counts values; it is not a test of change: run A's interval describes run A alone, so a rate can "
              "leave it by chance and a real change can stay inside it.")


def outside_interval(figs: pd.DataFrame) -> str:
    """How many rates lie, in run B, outside their 95% interval in run A, by audit (named as a
    count of rates: "2 protected-mechanism recovery rates from a release view"), and that this is
    a count, not a test of change."""
    figs = figs.dropna(subset=["a_lo", "a_hi", "b"])
    n = len(figs)
    out = figs[(figs["b"] < figs["a_lo"] - 1e-9) | (figs["b"] > figs["a_hi"] + 1e-9)]
    if out.empty:
        return f"In run B, none of the {n} rates lies outside its 95% interval in run A. {NOT_A_TEST}"
    by = listing([f"{k} {RATE_NOUNS.get(audit, (audit, audit))[k != 1]}"
                  for audit, k in out.groupby("audit", sort=False).size().items()])
    if len(out) == 1:
        return f"In run B, 1 of the {n} rates lies outside its 95% interval in run A: {by}. {NOT_A_TEST}"
    return f"In run B, {len(out)} of the {n} rates lie outside their 95% interval in run A: {by}. {NOT_A_TEST}"


def cost_change(cost: pd.DataFrame) -> str:
    """The largest change of a mean cost per case (authored costs), or that none moved."""
    cost = cost.dropna(subset=["change"])
    n = len(cost)
    if n == 0:
        return "No mean cost has a value in both runs."
    if (cost["change"].abs() < SAME).all():
        return f"All {n} mean costs per case (authored costs) are the same in the two runs."
    top = cost.loc[cost["change"].abs().idxmax()]
    what = (f"mean cost per case of {top['model']} ({name('view', top['view'])}, {name('task', top['task'])}, "
            "authored costs)")
    moved = stated_change(top["a"], top["b"], scale=1.0, digits=3, unit="cost units", of="costs")
    went_ = (f"{what} went from {cost_interval(top['a'], top['a_lo'], top['a_hi'])} in run A to "
             f"{cost_interval(top['b'], top['b_lo'], top['b_hi'])} in run B ({moved})")
    if abs(top["change"]) < MOVED_COST:
        return f"No mean cost moved by 0.01 cost units or more; the largest change of the {n}: {went_}."
    return f"The {went_}, the largest change of the {n} mean costs both runs hold."

