"""What one audit run covers and what its numbers support, for a reader who has not read the papers
(a privacy board): the run's scope (its models, test worlds, attackers and the audits it did not
run), a warning when the dataset changed after it, and the release options its measurements
support. The report and the Overview show them before their findings' details.

Every sentence is computed from the run's stored tables. The options are what the measurements
support, per task and model, for the board to weigh; they decide nothing (a release also depends
on what the recipient is allowed to learn, which the audit does not know)."""
from __future__ import annotations

import json

import pandas as pd

from qlb.present.names import (AUDIT_NAMES, FAMILY_NAMES, KIND_NOUNS, TASK_NAMES, authored_sentence, cost_interval,
                               count_of, exactly_half, how_many, listing, pct, pct_interval, text_range, utc_minute)
from qlb.present.rundata import RunData
from qlb.tuple.release_views import DECODER_FAMILIES
from qlb.tuple.utility import DELTA
from qlb.tuple.workflows import TASKS

OPTIONS_NOTE = ("Release options the measurements support, under the authored costs, for the board to weigh: they "
                "decide nothing, since a release also depends on what each recipient may learn.")


def options_note(d: RunData) -> str:
    """``OPTIONS_NOTE`` with the scale of its costs: the task's authored costs in cost units; and the
    models the options leave out (``d.left_out``, ``qlb.present.left_out``), so that "every model" reads
    as every model but those."""
    note = OPTIONS_NOTE + f" Costs are in the task's cost units: {authored_sentence(d.ontology)}."
    if not d.left_out.empty:
        gone = list(d.left_out.index)
        note += (f" The options leave out {listing(gone)} (a valid decision answer for fewer than half of the "
                 f"worlds): \"every model\" means every model but {'it' if len(gone) == 1 else 'them'}.")
    return note
NAMED = 4                      # name the models audited when a run restricts itself to at most this many


def run_parameters(run: pd.Series) -> dict:
    """A run's stored parameters (a JSON text in the warehouse); {} when there are none."""
    raw = run.get("parameters")
    params = json.loads(raw) if isinstance(raw, str) else raw
    return params if isinstance(params, dict) else {}


def parameters(d: RunData) -> dict:
    """The loaded run's stored parameters (``run_parameters``)."""
    return run_parameters(d.run)


CHANGES_SHOWN = 3                # a stale warning names at most this many changes, then counts the rest


def change_phrases(ingests: pd.DataFrame | None) -> list[str]:
    """What was loaded or collected after a run started (rows of ``ingests_after``: kind, file_name,
    file_format, model, finished_at), one phrase per kind of answer collected and per file loaded, in
    the order they happened: ``native responses of router-a and router-b collected (last 2026-12-04
    13:02 UTC)``, ``worlds loaded from worlds.jsonl (2026-12-04 13:05 UTC)``."""
    if ingests is None or ingests.empty:
        return []
    collected = ingests["file_format"].eq("collect")
    rows = ingests.assign(collected=collected, source=ingests["file_name"].where(~collected, ""))
    phrases = []
    for (kind, is_collected, source), g in rows.groupby(["kind", "collected", "source"], sort=False):
        models = list(dict.fromkeys(g["model"].dropna().astype(str)))
        if len(models) > NAMED:
            models = models[:NAMED - 1] + [f"{len(models) - NAMED + 1} more models"]
        what = KIND_NOUNS.get(kind, (kind, kind))[1] + (f" of {listing(models)}" if models else "")
        when = ("last " if len(g) > 1 else "") + utc_minute(g["finished_at"].max())
        phrases.append(f"{what} collected ({when})" if is_collected else f"{what} loaded from {source} ({when})")
    return phrases


def audited_models(params: dict, read: pd.DataFrame, exact: bool = True) -> frozenset[str] | None:
    """The models a run audited: those its parameters name, else every model whose answers it read (``read``:
    the ingests it read, ``warehouse.results.run_ingests``); None (unknown) when that split was only by time
    (``exact`` false), where a collection storing as the run started may have fed it, or when it read a file of
    answers of several models."""
    if params.get("models"):
        return frozenset(params["models"])
    if not exact:
        return None
    answers = read[read["kind"].isin(["responses", "refusal"])] if not read.empty else read
    if not answers.empty and answers["model"].isna().any():      # a file of several models: whose is unknown
        return None
    return frozenset(answers["model"].astype(str)) if not answers.empty else frozenset()


def stale_matters(changes: pd.DataFrame | None, audited: frozenset[str] | None = None) -> bool:
    """Whether a dataset's change after a run can move the run's numbers: unless every change is answers of models
    the run did not audit (worlds, documents and unrecorded changes always can)."""
    if changes is None or changes.empty or audited is None:
        return True
    return bool((changes["model"].isna() | changes["model"].isin(audited)).any())


def stale_warning(run_id: str, changes: pd.DataFrame | None = None, audited: frozenset[str] | None = None) -> str:
    """What a reader must know before any number of a run whose dataset changed after it: what was
    loaded or collected since the run started (``change_phrases`` of ``changes``), when the warehouse
    says; the change in general words otherwise (detector predictions are stored without a record). When
    every change is answers of models the run did not audit (``audited``), that its numbers still stand."""
    phrases = change_phrases(changes)
    if len(phrases) > CHANGES_SHOWN:
        rest = len(phrases) - CHANGES_SHOWN
        phrases = phrases[:CHANGES_SHOWN] + [f"{rest} more change{'s' if rest > 1 else ''}"]
    what = (f"since it started: {listing(phrases)}" if phrases
            else "(answers, worlds or documents were added or replaced)")
    if phrases and not stale_matters(changes, audited):
        return (f"The dataset changed after run {run_id} {what}. None of these are answers of the models this run "
                "audited, so its numbers still describe them; run qlb audit again to include the new ones.")
    return (f"The dataset changed after run {run_id} {what}. Its numbers describe the data as it was then. "
            "Run qlb audit again before relying on them.")


def ran(d: RunData) -> dict[str, bool]:
    """Per audit (as run parameters name them), whether the run holds its results: one asked for can
    store none for lack of input (QuasiLeak without a corpus)."""
    return {"refusal": not d.refusal.empty, "decoding": not d.recovery.empty, "utility": not d.utility.empty,
            "defenses": not d.defenses.empty, "quasileak": not d.ql.empty}


def scope_sentence(d: RunData) -> str:
    """The run's scope in one paragraph: which of the dataset's models it audited, on how many test
    worlds, with which attackers (fewer than the five attacker families make recovery a lower bound),
    which models the defenses were tried on, and which audits it did not run."""
    params = parameters(d)
    held = ran(d)
    if not d.models and not int(d.dataset.get("worlds", 0) or 0) and held["quasileak"]:
        return corpus_scope(d)
    ran_on = set().union(*(set(f["model"]) for f in (d.recovery, d.utility, d.refusal) if "model" in f))
    audited = sorted(params.get("models") or ran_on or d.models)      # all the models there were, at the time
    n_all = len(d.models)
    if n_all == 0:                    # a QuasiLeak-only dataset: detectors, no decision model
        who = "no decision model"
    elif len(audited) >= n_all:
        who = how_many(n_all, n_all) if n_all > 1 else f"the dataset's one model, {audited[0]}"
    else:
        named = f" ({listing(audited)})" if len(audited) <= NAMED else ""
        who = f"{len(audited)} of the dataset's {count_of(n_all)}{named}"
    parts = [f"This run audited {who}"]
    pooled = d.recovery[d.recovery["scope"] == "pooled"] if held["decoding"] else d.recovery
    if not pooled.empty:
        sizes = pooled.groupby("model")["n"].max()
        lo, hi = int(sizes.min()), int(sizes.max())
        full = pooled[pooled["view"] == "full_native"] if (pooled["view"] == "full_native").any() else pooled
        half = 50 * float((full["ci_high"] - full["ci_low"]).median())
        parts.append(f" on {text_range(f'{lo:,}', f'{hi:,}')} test worlds{' each' if len(sizes) > 1 else ''}"
                     + (f" (the 95% intervals of its full-output recovery about ±{half:.0f} points)" if half >= 5 else ""))
        families = [f for f in DECODER_FAMILIES if f in (params.get("families") or DECODER_FAMILIES)]
        if len(families) < len(DECODER_FAMILIES):
            parts.append(f", with {len(families)} of the five attacker families "
                         f"({listing([FAMILY_NAMES.get(f, f) for f in families])}): a stronger attacker could recover "
                         "more than it reports")
        else:
            parts.append(", with all five attacker families")
    text = "".join(parts) + "."
    if held["defenses"]:
        defended = sorted(set(d.defenses["model"]))
        if len(defended) < len(audited):
            text += f" The defenses were tried on {len(defended)} of them ({listing(defended)})."
        attackers = [f for f in DECODER_FAMILIES if f in (params.get("defense_families") or DECODER_FAMILIES)]
        if len(attackers) < len(DECODER_FAMILIES):
            text += (f" The defended releases were attacked with {len(attackers)} of the five attacker families "
                     f"({listing([FAMILY_NAMES.get(f, f) for f in attackers])}): their recovery too could be higher.")
    skipped = [AUDIT_NAMES[a] for a in AUDIT_NAMES if not held[a]]
    if skipped:
        why = {a: "no QuasiLeak corpus" for a in ("QuasiLeak",) if "quasileak" in (params.get("audits") or [])}
        text += " Not run: " + listing([f"{a} ({why[a]})" if a in why else a for a in skipped]) + "."
    return text


def corpus_scope(d: RunData) -> str:
    """The scope of a run of a dataset that holds a QuasiLeak corpus and no decision task: the
    detectors scored (the simulated ones among them) and the test split's target groups."""
    rows = d.ql[(d.ql["slice_kind"] == "all") & (d.ql["metric"] == "targets")]
    detectors = sorted(set(d.ql["detector"]))
    simulated = sorted(set(d.ql.loc[d.ql["simulated"].astype(bool), "detector"])) if "simulated" in d.ql else []
    targets = int(rows["value"].max()) if not rows.empty else 0
    split = str(d.ql["split"].iloc[0])
    where = "every document of the QuasiLeak corpus (it has no test split)" if split == "all" else \
        f"the QuasiLeak corpus's {split} split"
    text = (f"This run scored {count_of(len(detectors), 'privacy detector')} on {where} "
            f"({count_of(targets, 'target group')}: sets of weak cues that together reveal an attribute the policy "
            "hides)")
    if simulated:
        one = len(simulated) == 1
        text += (f"; {listing(simulated)} {'is' if one else 'are'} simulated from the answer key: an upper "
                 f"reference, not {'a detector' if one else 'detectors'} one could run")
    return text + (". The dataset holds no decision task (no worlds), so the audits of a model's decision outputs "
                   "(refusal, recovery, utility, defenses) do not apply to it.")


def options(d: RunData) -> list[str]:
    """The release options the run's numbers support, one sentence each, under the authored costs:
    per task, for which models the choice alone costs the legitimate recipient at most 0.1 cost units
    a case more than the full output (non-inferior: the paired 95% upper bound), with the measured
    extra cost, and what that does to recovery where the paired interval shows it; where the full output must go, what the workflow-constrained quantizer keeps
    and removes; and the models whose choice alone, or whose failures, already leak. Empty when the
    run has no recovery audit."""
    pooled = d.recovery[d.recovery["scope"] == "pooled"] if not d.recovery.empty else d.recovery
    if pooled.empty:
        return []
    by_view = {v: f.set_index("model") for v, f in pooled.groupby("view")}
    out: list[str] = []
    ud = d.utility_diff
    pairs = ud[(ud["view_a"] == "choice") & (ud["view_b"] == "full_native") & (ud["profile"] == "authored")] \
        if not ud.empty else ud
    if not pairs.empty and {"choice", "full_native"} <= set(by_view):
        # the same models in several tasks: one sentence (where none is non-inferior, the same models also
        # clearly above the margin, so that each model is said one way for all the sentence's tasks)
        groups: dict[tuple[tuple[str, ...], tuple[str, ...], int], list[str]] = {}
        for task in [t for t in TASKS if (pairs["task"] == t).any()] + sorted(set(pairs["task"]) - set(TASKS)):
            cell = pairs[pairs["task"] == task]
            ok = tuple(sorted(cell.loc[cell["noninferior"].astype(bool), "model"]))
            above = () if ok else tuple(sorted(cell.loc[cell["ci_low"] > DELTA, "model"]))
            groups.setdefault((ok, above, len(cell)), []).append(task)
        for (ok, above, n), tasks in groups.items():
            where = listing([TASK_NAMES.get(t, t) for t in tasks])
            rows = pairs[pairs["task"].isin(tasks)]
            if ok:
                whom = "every model" if len(ok) == n and n > 1 else listing(list(ok))
                others = sorted(set(pairs["model"]) - set(ok))
                whom += f" (not for {listing(others, 'or')})" if others and len(others) <= NAMED else ""
                extra = _cost_range(rows[rows["model"].isin(ok)])
                out.append(f"In {where}, releasing the choice alone costs the recipient at most 0.1 cost units a case "
                           f"more than the full output (the margin; measured: {extra} a case) for {whom}"
                           + _recovery_effect(d, by_view, list(ok)) + ".")
            else:
                out.append(_costs_more(where, rows, n, list(above)))
    wcpq = d.defenses[d.defenses["defense"] == "wcpq"] if not d.defenses.empty else d.defenses
    if not wcpq.empty:
        kept = bool(((wcpq["plan_agreement"] == wcpq["plan_comparisons"]) & (wcpq["max_abs_cost_diff"] == 0)).all())
        if kept:
            cover = text_range(pct(wcpq["coverage"].min()), pct(wcpq["coverage"].max()))
            uncovered = "" if (wcpq["coverage"] >= 1).all() else "; the responses it cannot cover go out unchanged"
            out.append(f"Where the full output must be released, the workflow-constrained quantizer (WCPQ) keeps every "
                       f"recipient decision and cost exactly (it covers {cover} of the responses{uncovered})"
                       + _wcpq_effect(wcpq, len(d.models)) + ".")
        else:
            out.append("The workflow-constrained quantizer (WCPQ) did not keep every recipient decision in this run: "
                       "see the verification on the Defenses page before relying on it.")
    none = by_view.get("no_output")
    failing = sorted(none.index[none["ci_low"] > 0.5]) if none is not None else []
    choice = by_view.get("choice")
    leaky = sorted(set(choice.index[choice["ci_low"] > 0.5]) - set(failing)) if choice is not None else []
    if leaky:
        out.append(f"Even the choice alone lets an attacker recover the protected mechanism above chance for "
                   f"{listing(leaky)} ({_range(choice, leaky)}): any release of "
                   f"{'its' if len(leaky) == 1 else 'their'} decisions leaks somewhat.")
    if failing:
        out.append(f"Which cases {listing(failing)} fail{'s' if len(failing) == 1 else ''} to answer gives the "
                   f"mechanism away ({_range(none, failing)} from whether an answer came at all, and so from every "
                   "release): the failures need fixing before any release of "
                   f"{'its' if len(failing) == 1 else 'their'} decisions is private.")
    return out


def _wcpq_effect(wcpq: pd.DataFrame, n_all: int) -> str:
    """What WCPQ does to recovery: lowers it for the models whose paired 95% interval (defended minus native) lies
    below 0, with the drop in points (and its interval, for one model); no clear change for the others."""
    clear = wcpq[wcpq["diff_ci_high"] < 0].sort_values("model")
    unclear = sorted(set(wcpq["model"]) - set(clear["model"]))
    text = ""
    if not clear.empty:
        drop = 100 * clear["diff_vs_native"]
        change = text_range(f"{-drop.max():.1f}", f"{-drop.min():.1f}")
        span = (f" (95% interval {-100 * clear['diff_ci_high'].iloc[0]:.1f} to {-100 * clear['diff_ci_low'].iloc[0]:.1f})"
                if len(clear) == 1 else "")
        text = f", and lowers recovery by {change} points{span} for {_models(list(clear['model']), n_all)}"
    if unclear:
        text += (f"{';' if text else ', but'} recovery shows no clear change for {_models(unclear, n_all)} (the "
                 "paired 95% interval includes no change)")
    return text


def _costs_more(where: str, rows: pd.DataFrame, n: int, clear: list[str]) -> str:
    """The option where the choice alone is non-inferior for no model (``rows``: choice minus full native,
    paired): for the models ``clear`` (the whole 95% interval of the extra cost above the 0.1 margin in
    each of the sentence's tasks) the full output is what the recipient uses; for the others it includes
    the margin, the run cannot tell (too few test worlds), and the sentence says so rather than advise."""
    unclear = sorted(set(rows["model"]) - set(clear))

    def whom(models: list[str]) -> str:
        return how_many(n, n) if len(models) == n and n > 1 else _models(models, n)

    parts = []
    if clear:
        part = rows[rows["model"].isin(clear)]
        parts.append(f"withholding the probabilities and the confidence costs the recipient {_cost_range(part)} a "
                     f"case more for {whom(clear)} (the paired 95% interval above the 0.1 margin): there the full "
                     "output is what the recipient uses, and a defense that keeps its decisions is the option")
    if unclear:
        part = rows[rows["model"].isin(unclear)]
        measured = (cost_interval(*part.iloc[0][["difference", "ci_low", "ci_high"]], signed=True) + " a case"
                    if len(part) == 1 else f"{_cost_range(part)} a case; no paired 95% interval lies wholly above the margin")
        parts.append(f"{'for ' + whom(unclear) + ', ' if clear else ''}the run cannot tell whether the choice alone "
                     f"costs more than the 0.1 margin{'' if clear else ' for ' + whom(unclear)} (measured "
                     f"{measured}): more test worlds would decide it")
    return f"In {where}, " + "; ".join(parts) + "."


def _cost_range(rows: pd.DataFrame) -> str:
    """The lowest to the highest extra cost a case (choice minus full native) of ``rows``."""
    return text_range(f"{rows['difference'].min():+.3f}", f"{rows['difference'].max():+.3f}")


def _recovery_effect(d: RunData, by_view: dict[str, pd.DataFrame], models: list[str]) -> str:
    """What keeping only the choice does to recovery for ``models``: lower where the paired 95% interval of full
    output minus choice lies above 0 (with both views' ranges), no clear change for the others."""
    diff = d.recovery_diff
    pair = diff[(diff["view_a"] == "full_native") & (diff["view_b"] == "choice")] if not diff.empty else diff
    clear = sorted(set(pair.loc[pair["ci_low"] > 0, "model"]) & set(models)) if not pair.empty else list(models)
    unclear = sorted(set(models) - set(clear))
    text = ""
    if clear:
        text = (f", and it lowers what an attacker recovers{' for ' + listing(clear) if unclear else ''} (full "
                f"output: {_range(by_view['full_native'], clear)} of test worlds; choice alone: "
                f"{_range(by_view['choice'], clear)})")
    if unclear and clear:
        text += f"; recovery shows no clear change for {listing(unclear)}"
    elif unclear:
        text += ", with no clear change in what an attacker recovers (the paired 95% intervals include no change)"
    return text


def _range(frame: pd.DataFrame, models: list[str]) -> str:
    """The lowest to the highest recovery of ``models`` in a view's rows (indexed by model; a model the view
    has no row for is left out, N/A when none has); one model's with its 95% interval."""
    rows = frame.loc[frame.index.intersection(models)]
    if len(rows) == 1 and exactly_half(rows):         # an interval of zero width says less than the word
        return "exactly 50.0%"
    if len(rows) == 1:                                # one model: its 95% interval too
        return pct_interval(*rows.iloc[0][["accuracy", "ci_low", "ci_high"]])
    return text_range(pct(rows["accuracy"].min()), pct(rows["accuracy"].max()))


def _models(models: list[str], n_all: int) -> str:
    return how_many(n_all, n_all) if len(models) == n_all and n_all > 1 else (
        listing(models) if len(models) <= NAMED else count_of(len(models)))
