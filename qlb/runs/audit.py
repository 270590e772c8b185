"""Running the audits a dataset's data allows and storing them as one run in the warehouse.

Refusal, QuasiLeak detector scores, secret-recovery decoding, downstream utility and
privacy-utility fronts, output defenses and WCPQ. ``AuditOptions`` says what to run; each audit
is one function below that fills the run's results and returns the tables it stores; whatever
the data does not allow is skipped and named in ``AuditRun.skipped``.
"""
from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import duckdb
import pandas as pd

from qlb.quasileak.leaderboard import coverage_rows, score_tables, scoring_split
from qlb.quasileak.scoring import METRIC_KEYS
from qlb.runs.decoding import chosen_models, decoding_frame
from qlb.runs.quasileak import detector_coverage, load_corpus, load_predictions
from qlb.runs.refusal import NO_REFUSAL, load_refusal_input, refusal_tables
from qlb.stats.bootstrap import N_BOOT, SEED
from qlb.stats.parallel import Workers
from qlb.tuple import defense_audit, refusal
from qlb.tuple.costs import profile_names
from qlb.tuple.fronts import front_points, fronts_json
from qlb.tuple.recovery import (
    config_rows, config_score_rows, prediction_rows, recovery_json, recovery_tables, run_decoding, selection_rows,
    coarse_accuracy, coarse_json,
)
from qlb.tuple.release_views import VIEWS
from qlb.tuple.utility import (
    DomainUtility, action_rows, noninferior_json, policy_rows, result_tables, run_utility, utility_json,
)
from qlb.tuple.wcpq import policies_from_selection
from qlb.records.ontology import Ontology
from warehouse import queries
from warehouse.ontologies import dataset_ontology
from warehouse.results import code_version, dataset_fingerprint, now, store_run

log = logging.getLogger(__name__)

# why a run holds no fronts or defenses (a fresh run and a reused one say the same)
NO_FRONTS = "needs both the recovery audit and the utility audit in the same run"
NO_DEFENSES = "needs both the recovery audit and the utility audit"
NOT_DEFENDED = "not requested (defenses=False)"
NO_POLICIES = "no utility results to take the frozen full-native policies from"

Progress = Callable[[str, int, int], None]   # (stage, done, total)
Tables = dict[str, pd.DataFrame]


@dataclass(frozen=True)
class AuditOptions:
    """What one ``qlb audit`` runs.

    ``decode=False`` skips the (slow) decoding audit and so the fronts; ``utility=False`` the
    downstream utility and so the defenses, which need its frozen policies; ``defenses=False``
    the defense audit. ``families`` restricts the decoder library (default: all five families,
    as specified); ``defense_models`` restricts the defense audit to some models (default: all)
    and ``defense_families`` sets its decoder families (default: prior, logistic, template);
    ``learned_wcpq`` names the learned bounded-cost WCPQ variants to train and attack (default: all
    six, paper H.2; an empty list: none).
    ``jobs`` says where the (model, domain) tasks run: a number of local processes or a
    ``Workers`` (a Dask scheduler's); the numbers do not depend on it, so it is no parameter of
    the run. Without ``force``, an earlier run over exactly the same data and parameters is reused."""

    models: Sequence[str] | None = None
    views: Sequence[str] = VIEWS
    decode: bool = True
    utility: bool = True
    defenses: bool = True
    families: set[str] | None = None
    defense_models: Sequence[str] | None = None
    defense_families: set[str] | None = None
    learned_wcpq: Sequence[str] | None = None
    jobs: int | Workers = 1
    force: bool = False
    n_boot: int = N_BOOT
    seed: int = SEED
    quasileak_split: str = "test"

    @property
    def run_defenses(self) -> bool:
        """The defense audit needs the decoding and the utility audit of the same run."""
        return self.defenses and self.decode and self.utility

    @property
    def learned_endpoints(self) -> tuple[str, ...]:
        """The learned WCPQ variants the defense audit runs, in the audit's endpoint order."""
        wanted = defense_audit.LEARNED_ENDPOINTS if self.learned_wcpq is None else set(self.learned_wcpq)
        unknown = set(wanted) - set(defense_audit.LEARNED_ENDPOINTS)
        if unknown:
            raise ValueError(f"unknown learned WCPQ variant(s) {', '.join(sorted(unknown))}; expected some of "
                             f"{', '.join(defense_audit.LEARNED_ENDPOINTS)}")
        return tuple(ep for ep in defense_audit.LEARNED_ENDPOINTS if ep in wanted)

    def parameters(self) -> dict[str, Any]:
        """The run parameters as stored with the run (and compared to reuse an earlier run)."""
        defended = self.run_defenses
        return {"audits": ["refusal", "quasileak"] + (["decoding"] if self.decode else [])
                + (["utility"] if self.utility else []) + (["defenses"] if defended else []),
                "defense_models": sorted(self.defense_models) if (defended and self.defense_models) else None,
                "defense_families": sorted(self.defense_families or defense_audit.DEFENSE_FAMILIES) if defended else None,
                "learned_wcpq": list(self.learned_endpoints) if defended else None,
                "models": sorted(self.models) if self.models else None, "quasileak_split": self.quasileak_split,
                "n_boot": self.n_boot, "seed": self.seed, "views": list(self.views) if self.decode else None,
                "families": sorted(self.families) if (self.decode and self.families) else None}


@dataclass
class AuditRun:
    """One stored (or reused) audit run and its result tables."""

    run_id: str
    dataset_id: str
    reused: bool
    refusal_summary: pd.DataFrame | None = None
    ql_scores: pd.DataFrame | None = None
    recovery: pd.DataFrame | None = None
    differences: pd.DataFrame | None = None
    coarse: pd.DataFrame | None = None
    selections: pd.DataFrame | None = None
    utility: pd.DataFrame | None = None
    utility_differences: pd.DataFrame | None = None
    fronts: pd.DataFrame | None = None
    defenses: pd.DataFrame | None = None
    defense_costs: pd.DataFrame | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    resumed: tuple[str, ...] = ()        # the stages kept from an audit in stages that stopped midway

    def to_json(self) -> dict[str, Any]:
        """The ``qlb audit --json`` summary (CONTRACT.md section 2)."""
        out: dict[str, Any] = {"run_id": self.run_id, "dataset": self.dataset_id,
                               "test_used_for_selection": False, "reused_existing_run": self.reused}
        if self.recovery is not None:
            out["recovery"] = recovery_json(self.recovery)
        if self.coarse is not None:
            out["coarse_accuracy"] = coarse_json(self.coarse)
        if self.utility is not None:
            out["utility"] = utility_json(self.utility)
        if self.utility_differences is not None:
            out["noninferior"] = noninferior_json(self.utility_differences)
        if self.fronts is not None:
            out["fronts"] = fronts_json(self.fronts)
        if self.defenses is not None:
            out["defenses"] = defense_audit.defenses_json(self.defenses)
        if self.refusal_summary is not None:
            out["refusal"] = refusal.to_contract_json(self.refusal_summary)
        if self.ql_scores is not None:
            out["quasileak"] = quasileak_json(self.ql_scores)
        for key in ("recovery", "utility", "defenses"):    # CONTRACT.md's keys, empty when skipped (why: "skipped")
            out.setdefault(key, {})
        out["skipped"] = self.skipped
        return out


def run_audits(con: duckdb.DuckDBPyConnection, dataset_id: str, options: AuditOptions | None = None,
               progress: Progress | None = None, **changes: Any) -> AuditRun:
    """Run every audit the dataset allows and store it as one run (read-write handle).

    ``options`` (default ``AuditOptions()``) says what to run; keyword ``changes`` override
    single options (``run_audits(con, ds, decode=False)``)."""
    opts = replace(options or AuditOptions(), **changes)
    _check(con, dataset_id, opts)
    ontology = dataset_ontology(con, dataset_id)
    params = {**opts.parameters(), "ontology_sha256": ontology.sha256}
    fingerprint = dataset_fingerprint(con, dataset_id)
    if not opts.force:
        earlier = _stored_run(con, dataset_id, fingerprint, params)
        if earlier is not None:
            return earlier
    started = now()
    run = AuditRun(_new_run_id(started), dataset_id, False)
    tables: Tables = {}
    tables.update(_refusal_audit(con, run, opts, ontology))
    tables.update(_quasileak_audit(con, run, opts))
    frames = _frames(con, dataset_id, opts)
    for _, stage_tables in _later_stages(frames, run, opts, progress, ontology):
        for name, frame in stage_tables.items():
            tables[name] = pd.concat([tables[name], frame], ignore_index=True) if name in tables else frame
    store_run(con, run_id=run.run_id, dataset_id=dataset_id, kind="audit", parameters=params,
              fingerprint=fingerprint, started=started, tables=tables)
    log.info("stored run %s for %s", run.run_id, dataset_id)
    return run


Stored = Callable[[str, AuditRun], None]     # (stage just stored, the run)


def run_audits_in_stages(warehouse: str | Path, dataset_id: str, options: AuditOptions | None = None,
                         progress: Progress | None = None, stored: Stored | None = None, **changes: Any) -> AuditRun:
    """``run_audits`` for a long audit while the dashboard reads the same warehouse: the file is
    opened only to read the inputs and to store each stage (refusal and QuasiLeak; decoding;
    utility with the fronts; defenses), each in one short transaction, and never while a stage
    computes. The run is stored unfinished after its first stage (pages show each stage as it
    lands) and finished with its last; the numbers are those of ``run_audits``. ``stored`` is
    called after each stage is stored. A run over the same data and parameters that finished
    earlier is reused. One that never finished (a build stopped midway: the dashboard closed, a
    lost Dask scheduler) is resumed, ``force`` or not, when the same qlb code left it: its stored
    stages are kept (``AuditRun.resumed``, each reported to ``stored`` before the first
    computation) and only the rest is computed; the utility audit is computed again when the
    defenses are left, for their frozen policies, and not stored twice. Unfinished runs over other
    data, parameters or code are dropped. The whole audit holds the warehouse's build lock
    (``warehouse.build_status.build_lock``; ``BuildRunning`` when another process holds it), so two
    audits in stages never store into one run."""
    from warehouse.db import writer
    from warehouse.results import drop_unfinished_runs, store_stage
    from warehouse.build_status import build_lock

    with build_lock(warehouse):
        opts = replace(options or AuditOptions(), **changes)
        with writer(warehouse) as con:
            _check(con, dataset_id, opts)
            ontology = dataset_ontology(con, dataset_id)
            params = {**opts.parameters(), "ontology_sha256": ontology.sha256}
            fingerprint = dataset_fingerprint(con, dataset_id)
            earlier = None if opts.force else _stored_run(con, dataset_id, fingerprint, params)
            if earlier is not None:
                return earlier
            run = _unfinished_run(con, dataset_id, fingerprint, params)
            for run_id in drop_unfinished_runs(con, dataset_id, keep=run.run_id if run is not None else None):
                log.info("dropped unfinished run %s", run_id)
            if run is None:
                started = now()
                run = AuditRun(_new_run_id(started), dataset_id, False)
                first = {**_refusal_audit(con, run, opts, ontology), **_quasileak_audit(con, run, opts)}
                store_run(con, run_id=run.run_id, dataset_id=dataset_id, kind="audit", parameters=params,
                          fingerprint=fingerprint, started=started, tables=first, finished=False)
            else:
                log.info("resuming unfinished run %s (kept: %s)", run.run_id, ", ".join(run.resumed))
            frames = _frames(con, dataset_id, opts)
        if stored is not None:
            for stage in ("refusal", *(s for s in run.resumed if s != "refusal")):
                stored(stage, run)
        for stage, tables in _later_stages(frames, run, opts, progress, ontology, kept=run.resumed):
            if stage in run.resumed:
                continue
            with writer(warehouse) as con:
                store_stage(con, run_id=run.run_id, dataset_id=dataset_id, tables=tables, finished=stage == "defenses")
            if stored is not None:
                stored(stage, run)
        log.info("stored run %s for %s in stages", run.run_id, dataset_id)
        return run


def _frames(con: duckdb.DuckDBPyConnection, dataset_id: str, opts: AuditOptions) -> dict[str, pd.DataFrame]:
    """The decoding frame of each chosen model (what the decoding, utility and defense audits read)."""
    if not (opts.decode or opts.utility):
        return {}
    return {m: decoding_frame(con, dataset_id, m) for m in chosen_models(con, dataset_id, opts.models)}


def _later_stages(frames: dict[str, pd.DataFrame], run: AuditRun, opts: AuditOptions, progress: Progress | None,
                  ontology: Ontology, kept: Sequence[str] = ()) -> Iterator[tuple[str, Tables]]:
    """The audits after refusal and QuasiLeak, in order, each with the tables it stores: decoding;
    utility with the fronts (which need both); the defenses (which need the utility audit's frozen
    policies). A stage in ``kept`` (stored by an earlier, unfinished attempt of the run, whose
    results ``run`` holds) is not computed again, except the utility audit, whose policies the
    defenses need."""
    yield "decoding", {} if "decoding" in kept else _decoding_audit(frames, run, opts, progress, ontology)
    selected, utility_tables = _utility_audit(frames, run, opts, progress, ontology)
    yield "utility", {**utility_tables, **_fronts(run)}
    yield "defenses", _defense_audit(frames, selected, run, opts, progress, ontology)


def audit_inputs(con: duckdb.DuckDBPyConnection, dataset_id: str) -> tuple[list[str], int]:
    """(the dataset's models with native or refusal responses, its number of detector predictions)."""
    inputs = queries.fetch_df(con, "audit_inputs", [dataset_id] * 3)
    return list(inputs["models"][0]), int(inputs["predictions"][0])


def unknown_models(models: Sequence[str] | None, have: Sequence[str], dataset_id: str) -> str | None:
    """Why ``models`` cannot be audited (a model without responses), or None."""
    missing = [m for m in models or () if m not in have]
    if not missing:
        return None
    return (f"no responses of model {', '.join(map(repr, missing))} in dataset {dataset_id!r} "
            f"(models with responses: {', '.join(have) or 'none'})")


def unknown_defense_models(defense_models: Sequence[str] | None, models: Sequence[str] | None,
                           have: Sequence[str], dataset_id: str) -> str | None:
    """Why ``defense_models`` cannot be defended (a model without responses, or one that ``models``
    leaves out of the audit), or None."""
    missing = [m for m in defense_models or () if m not in have]
    if missing:
        return (f"--defense-models: no responses of model {', '.join(map(repr, missing))} in dataset "
                f"{dataset_id!r} (models with responses: {', '.join(have) or 'none'})")
    left_out = [m for m in defense_models or () if models and m not in models]
    if left_out:
        return (f"--defense-models: model {', '.join(map(repr, left_out))} is not among the audited --models "
                f"({', '.join(models)}); the defenses are evaluated on audited models only")
    return None


def _check(con: duckdb.DuckDBPyConnection, dataset_id: str, opts: AuditOptions) -> None:
    if queries.fetch_df(con, "dataset_by_id", [dataset_id]).empty:
        raise ValueError(f"no dataset {dataset_id!r} in the warehouse")
    models, predictions = audit_inputs(con, dataset_id)
    if not models and not predictions:
        raise ValueError(f"nothing to audit in dataset {dataset_id!r}: it holds no model responses and no detector "
                         "predictions yet (collect them with `qlb collect native|refusal`, or load them with "
                         "`qlb ingest responses|refusal|predictions`)")
    problem = (unknown_models(opts.models, models, dataset_id)
               or unknown_defense_models(opts.defense_models, opts.models, models, dataset_id))
    if problem:
        raise ValueError(problem)
    unknown = [v for v in opts.views if v not in VIEWS]
    if unknown:
        raise ValueError(f"unknown view(s) {', '.join(unknown)}; expected {', '.join(VIEWS)}")


def _new_run_id(started: datetime) -> str:
    return f"run-{started:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def _loaded_run(con: duckdb.DuckDBPyConnection, run_id: str, dataset_id: str, reused: bool) -> AuditRun:
    """A stored run's result tables as an ``AuditRun`` (None for a table without its rows)."""
    stored = {name: queries.fetch_df(con, name, [run_id])
              for name in ("refusal_results", "ql_scores", "recovery_results", "coarse_accuracy", "utility_results",
                           "utility_differences", "front_points", "defense_results")}
    present = {name: (None if frame.empty else frame) for name, frame in stored.items()}
    return AuditRun(run_id, dataset_id, reused, present["refusal_results"], present["ql_scores"],
                    present["recovery_results"], coarse=present["coarse_accuracy"],
                    utility=present["utility_results"], utility_differences=present["utility_differences"],
                    fronts=present["front_points"], defenses=present["defense_results"])


def _unfinished_run(con: duckdb.DuckDBPyConnection, dataset_id: str, fingerprint: str,
                    params: dict[str, Any]) -> AuditRun | None:
    """The newest run over the same data with the same parameters that an audit in stages of this
    very code (``code_version``: a resume never mixes two versions' numbers) left unfinished, with the
    stages it stored (``resumed``: refusal, then decoding and utility when their results are there; a
    stage stores in one transaction, so it is there whole or not at all), or None.
    """
    found = queries.fetch_df(con, "unfinished_run_of_fingerprint",
                             [dataset_id, "audit", fingerprint, json.dumps(params, sort_keys=True), code_version()])
    if found.empty:
        return None
    run = _loaded_run(con, str(found["run_id"][0]), dataset_id, False)
    _first_stage_skips(con, run)
    run.resumed = ("refusal", *(["decoding"] if run.recovery is not None else []),
                   *(["utility"] if run.utility is not None else []))
    return run


def _first_stage_skips(con: duckdb.DuckDBPyConnection, run: AuditRun) -> None:
    """Why a stored run holds no refusal results or QuasiLeak scores, as a fresh run says it."""
    if run.refusal_summary is None:
        run.skipped["refusal"] = NO_REFUSAL
    if run.ql_scores is None:
        corpus = load_corpus(con, run.dataset_id)
        run.skipped["quasileak"] = _quasileak_skip(bool(corpus), bool(corpus and load_predictions(con, run.dataset_id)))


def _stored_run(con: duckdb.DuckDBPyConnection, dataset_id: str, fingerprint: str,
                params: dict[str, Any]) -> AuditRun | None:
    """The newest run over the same data with the same parameters, or None."""
    earlier = queries.fetch_df(con, "latest_run_of_fingerprint",
                               [dataset_id, "audit", fingerprint, json.dumps(params, sort_keys=True)])
    if earlier.empty:
        return None
    run = _loaded_run(con, str(earlier["run_id"][0]), dataset_id, True)
    audits = params.get("audits") or []
    _first_stage_skips(con, run)
    for audit, result in (("decoding", run.recovery), ("utility", run.utility)):     # as a fresh run says them
        if result is None:
            run.skipped[audit] = (f"not requested ({'decode' if audit == 'decoding' else audit}=False)"
                                  if audit not in audits else "no native responses in this dataset")
    if run.fronts is None:
        run.skipped["fronts"] = NO_FRONTS
    if run.defenses is None:
        asked = {"decoding", "utility"} <= set(audits)
        run.skipped["defenses"] = (NOT_DEFENDED if asked and "defenses" not in audits else
                                   NO_DEFENSES if "defenses" not in audits else NO_POLICIES if run.utility is None
                                   else "no defended model stored results in this run")
    return run


def _quasileak_skip(corpus: bool, predictions: bool) -> str:
    """Why a run holds no QuasiLeak scores: no corpus, or a corpus without detector predictions."""
    return ("no QuasiLeak corpus in this dataset" if not corpus else
            "the corpus has no detector predictions (run `qlb quasileak run` or ingest some)")


def _stage(progress: Progress | None, stage: str) -> Callable[[int, int], None] | None:
    return (lambda done, total: progress(stage, done, total)) if progress else None


def _refusal_audit(con: duckdb.DuckDBPyConnection, run: AuditRun, opts: AuditOptions, ontology: Ontology) -> Tables:
    """Refusal: does selecting WITHHOLD protect the mechanism (TUPLE.md section 3), with the
    labels of the dataset's ontology."""
    inputs = load_refusal_input(con, run.dataset_id, opts.models)
    if inputs.empty:
        run.skipped["refusal"] = NO_REFUSAL
        return {}
    run.refusal_summary, tables = refusal_tables(inputs, ontology)
    return tables


def _quasileak_audit(con: duckdb.DuckDBPyConnection, run: AuditRun, opts: AuditOptions) -> Tables:
    """QuasiLeak: every stored detector's predictions scored on the scoring split."""
    corpus = load_corpus(con, run.dataset_id)
    predictions = load_predictions(con, run.dataset_id) if corpus else {}
    if not corpus or not predictions:
        run.skipped["quasileak"] = _quasileak_skip(bool(corpus), bool(predictions))
        return {}
    split = scoring_split(corpus, opts.quasileak_split)
    coverage = coverage_rows(detector_coverage(con, run.dataset_id), split, sorted(predictions))
    run.ql_scores = pd.concat([score_tables(corpus, predictions, split, opts.n_boot, opts.seed), coverage],
                              ignore_index=True)
    return {"ql_scores": run.ql_scores}


def _decoding_audit(frames: dict[str, pd.DataFrame], run: AuditRun, opts: AuditOptions,
                    progress: Progress | None, ontology: Ontology | None = None) -> Tables:
    """Secret recovery per (model, view) with pair-clustered intervals (TUPLE.md section 4)."""
    if not opts.decode:
        run.skipped["decoding"] = "not requested (decode=False)"
        return {}
    if not frames:
        run.skipped["decoding"] = "no native responses in this dataset"
        return {}
    results = run_decoding(frames, opts.views, opts.jobs, opts.families, _stage(progress, "decoding"),
                           skipped=run.skipped, ontology=ontology)
    if not results:
        return {}
    preds = prediction_rows(results)
    run.recovery, run.differences = recovery_tables(preds, opts.n_boot, opts.seed)
    run.coarse = coarse_accuracy(frames, preds, opts.n_boot, opts.seed)
    run.selections = selection_rows(results)
    return {"decoder_predictions": preds, "decoder_selections": run.selections, "decoder_configs": config_rows(results),
            "decoder_config_scores": config_score_rows(results), "recovery_results": run.recovery,
            "recovery_differences": run.differences, "coarse_accuracy": run.coarse}


def _utility_audit(frames: dict[str, pd.DataFrame], run: AuditRun, opts: AuditOptions,
                   progress: Progress | None, ontology: Ontology | None = None
                   ) -> tuple[list[DomainUtility], Tables]:
    """Downstream utility: each view priced in three workflows under six cost profiles
    (TUPLE.md section 5); returns the per-domain results too (their frozen policies feed WCPQ)."""
    if not opts.utility:
        run.skipped["utility"] = "not requested (utility=False)"
        return [], {}
    if not frames:
        run.skipped["utility"] = "no native responses in this dataset"
        return [], {}
    profiles = profile_names(ontology)                 # the task's own cost profiles
    results = run_utility(frames, opts.views, opts.jobs, _stage(progress, "utility"), skipped=run.skipped,
                          profiles=profiles, ontology=ontology)
    if not results:
        return [], {}
    actions = action_rows(results, ontology)
    run.utility, run.utility_differences = result_tables(actions, opts.n_boot, opts.seed)
    policies, recipients = policy_rows(results)
    return results, {"policy_actions": actions, "utility_policies": policies, "recipient_models": recipients,
                     "utility_results": run.utility, "utility_differences": run.utility_differences}


def _fronts(run: AuditRun) -> Tables:
    """Privacy-utility fronts: needs recovery and utility from the same run."""
    if run.recovery is None or run.utility is None:
        run.skipped["fronts"] = NO_FRONTS
        return {}
    run.fronts = front_points(run.recovery, run.utility)
    return {"front_points": run.fronts}


def _defense_audit(frames: dict[str, pd.DataFrame], selected: list[DomainUtility], run: AuditRun,
                   opts: AuditOptions, progress: Progress | None, ontology: Ontology | None = None) -> Tables:
    """Output defenses and WCPQ against the utility audit's frozen full-native policies
    (TUPLE.md section 7)."""
    if not opts.run_defenses:
        run.skipped["defenses"] = NOT_DEFENDED if (opts.decode and opts.utility) else NO_DEFENSES   # as a reused run
        return {}
    if run.utility is None:
        run.skipped["defenses"] = NO_POLICIES
        return {}
    targets = [m for m in frames if not opts.defense_models or m in opts.defense_models]
    policies = {m: policies_from_selection([s for r in selected if r.model == m for s in r.selected]) for m in targets}
    results = defense_audit.run_defenses({m: frames[m] for m in targets}, policies, opts.jobs,
                                         frozenset(opts.defense_families or defense_audit.DEFENSE_FAMILIES),
                                         endpoints=defense_audit.ENDPOINTS + opts.learned_endpoints,
                                         progress=_stage(progress, "defenses"), skipped=run.skipped,
                                         ontology=ontology)
    if not results:
        return {}
    preds = defense_audit.prediction_rows(results)
    run.defenses, run.defense_costs = defense_audit.result_tables(results, preds, opts.n_boot, opts.seed,
                                                                  skipped=run.skipped)
    return {"decoder_predictions": preds, "defense_releases": defense_audit.release_rows(results),
            "defense_results": run.defenses, "defense_costs": run.defense_costs,
            "learned_wcpq": defense_audit.learned_rows(results)}


def quasileak_json(scores: pd.DataFrame) -> dict:
    """ql_scores rows -> the ``qlb quasileak score`` JSON shape (CONTRACT.md section 2)."""
    out: dict[str, Any] = {"detectors": {}}
    for det, sub in scores.groupby("detector", sort=True):
        entry: dict[str, Any] = {"all": {}, "by_arity": {}, "by_attribute": {}}
        for kind, key in (("all", None), ("arity", "by_arity"), ("attribute", "by_attribute")):
            part = sub[sub["slice_kind"] == kind]
            for name, rows in part.groupby("slice", sort=True):
                metrics = {m: _value(v, m) for m, v in zip(rows["metric"], rows["value"])}
                metrics = {k: metrics.get(k) for k in METRIC_KEYS}
                if key is None:
                    entry["all"] = metrics
                else:
                    entry[key][name] = metrics
        out["detectors"][det] = entry
    return out


def _value(v: Any, metric: str) -> Any:
    if v is None or pd.isna(v):
        return None
    return int(v) if metric in ("targets", "predicted_groups") else float(v)
