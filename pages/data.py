"""Data: upload a file, read its validation report line by line before anything is written,
then ingest it; browse the quarantine."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import streamlit as st

from dashboard import data_access as da
from dashboard.quarantine import (KIND_HELP, KIND_NOUNS, invalid_by_source, lines, lines_by_kind, ontology_file_name,
                                  ontology_note, ontology_notes_title, ontology_target, tuple_sentence)
from dashboard.routing import page_entry
from dashboard.widgets import (column_widths, current_dataset, finding, md_text, own_dataset, simulated_banner,
                               source_of, table)
from qlb.present.names import utc_minute
from qlb.records.ontology import Domain, Ontology, OntologyError
from warehouse.ingest import KINDS, IngestError, ValidationReport

MAX_UPLOAD_MB = 100
MAX_ONTOLOGY_MB = 2
SUFFIXES = ("jsonl", "ndjson", "json", "csv", "parquet")


KIND_NAMES = {k: many for k, (_, many) in KIND_NOUNS.items()} | {"all": "all kinds"}


@st.cache_resource
def _upload_folder() -> Path:
    """This server's own upload folder: created fresh and private, never a shared fixed path another
    user could have made first and write into; removed when the server stops."""
    return da.upload_folder()


def _save_upload(upload) -> tuple[str, str]:
    """Write the upload to a private temporary file; return (path, sha256)."""
    data = upload.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    suffix = Path(upload.name).suffix.lower()
    target = _upload_folder() / f"{digest}{suffix}"
    if not target.exists():
        target.write_bytes(data)
    return str(target), digest


def proposed_dataset(path: str, dataset: str | None, simulated: bool) -> str:
    """The dataset a file is loaded into unless the user types another: the current one, or, when
    that is simulated (or there is none), a dataset of the user's own (``own_dataset``)."""
    return dataset if dataset is not None and not simulated else own_dataset(path)


def simulated_target_note(path: str, dataset: str | None, simulated: bool, target: str) -> None:
    """Why the proposed dataset is not the current one, and a warning when the chosen target is
    an existing simulated dataset."""
    if simulated and dataset is not None and target != dataset:
        st.caption(f"The current dataset, {md_text(dataset)}, is SIMULATED, so your file goes into a dataset of "
                   f"its own (proposed: {md_text(target)}; type any name): your data and simulated data never mix.")
    known = da.datasets(path) if da.warehouse_exists(path) else None
    if known is not None and target in set(known.loc[known["simulated"], "dataset_id"]):
        st.warning(f"{md_text(target)} is a SIMULATED dataset: lines loaded into it sit beside simulated worlds "
                   "and models, and its pages keep the SIMULATED banner. Name a dataset of your own instead.")


def validation_summary(report: ValidationReport, problems: pd.DataFrame) -> str:
    """One sentence on a validated file: its lines by outcome and its problems."""
    n_rejected, n_problems = len(report.rejects), int((problems["outcome"] == "rejected").sum())
    if report.n_lines == 0:
        return "The file holds no lines: there is nothing to store."
    text = (f"{lines(report.n_lines)}: {len(report.accepted):,} will be stored"
            + (f" ({report.n_invalid:,} of them kept with valid = false)" if report.n_invalid else "")
            + (f"; {report.already_stored:,} already stored with the same values (skipped)"
               if report.already_stored else "")
            + f"; {n_rejected:,} will be quarantined")
    if n_rejected:
        text += f", with {n_problems:,} problem{'' if n_problems == 1 else 's'} between them (all listed below)"
        # one problem, one field: groups[0].cues[1] and groups[3].cues[0] count as groups[].cues
        fields = (problems.loc[problems["outcome"] == "rejected", "field"].fillna("")
                  .str.replace(r"\[\d+\]", "[]", regex=True).value_counts())
        top, count = fields.index[0], int(fields.iloc[0])
        if len(fields) > 1:
            where = "whole lines" if top == "" else f"the field {top}"
            text += f". Most often at fault: {where} ({count:,} of the {n_problems:,})"
    return text + "."


def problems_section(report: ValidationReport, problems: pd.DataFrame) -> None:
    """Every problem of the file, one row each (file, line, field, problem), filtered by outcome;
    then the raw text of the rejected lines."""
    if problems.empty:
        st.success("Every line is valid.")
        return
    outcome = st.segmented_control("Show problems of", ["all", "rejected", "invalid"], default="all",
                                   key="outcome_filter",
                                   help="rejected: the line is quarantined, not stored. invalid: the line is stored "
                                        "with valid = false and enters the audits as unavailable.")
    shown = problems if outcome in (None, "all") else problems[problems["outcome"] == outcome]
    shown = shown.assign(field=shown["field"].fillna(""))
    table(shown.head(5000), "validation_problems",
          f"{len(shown):,} problems (at most 5,000 shown; the CSV holds the same rows): every error found on each "
          "line, with the field it concerns (blank: the whole line).",
          column_config=column_widths({"file": 95, "line": 50, "outcome": 70, "field": 100, "problem": 240},
                                      numbers=("line",)))
    if report.rejects:
        raw_line_viewer({f"line {r.line_no:,}": r.raw for r in report.rejects[:5000]}, "upload_raw_line")


def raw_line_viewer(lines: dict[str, str], key: str) -> None:
    """One rejected line's raw text, in full, as received (a code block: never read as Markdown)."""
    with st.expander("Raw text of a rejected line"):
        which = st.selectbox("Line", list(lines), key=key, help="The rejected lines, in file order.")
        st.code(lines[which][:5000] if which else "", language=None, wrap_lines=True)


def upload_section(path: str, dataset: str | None, simulated: bool) -> None:
    """Load a file: choose kind, dataset and model, upload, read every problem of every line before
    anything is written, then ingest the accepted lines."""
    st.subheader("Load a file")
    c1, c2, c3 = st.columns(3)
    rows = da.datasets(path) if dataset is not None and da.warehouse_exists(path) else None
    held = rows[rows["dataset_id"] == dataset] if rows is not None else None
    corpus_only = held is not None and not held.empty and int(held["worlds"].iloc[0]) == 0 \
        and int(held["documents"].iloc[0]) > 0          # a detector team's dataset: its next file is predictions
    kind = c1.selectbox("Kind", KINDS, index=KINDS.index("predictions") if corpus_only else 0,
                        format_func=lambda k: KIND_NAMES.get(k, k),
                        help="What the file holds. " + " ".join(f"{KIND_NAMES[k]}: {v}" for k, v in KIND_HELP.items()))
    target = c2.text_input("Into dataset", value=proposed_dataset(path, dataset, simulated), max_chars=80,
                           help="Loaded into this dataset (created if new). User datasets are not marked "
                                "simulated. When the current dataset is simulated, a dataset of your own is "
                                "proposed.").strip()
    model = c3.text_input("Model name (optional)", max_chars=80, disabled=kind not in ("responses", "refusal"),
                          help="For response lines without a model field; lines naming another model "
                               "are rejected.").strip()
    simulated_target_note(path, dataset, simulated, target)
    st.caption(KIND_HELP[kind])
    upload = st.file_uploader(f"File (JSON Lines, CSV or Parquet; at most {MAX_UPLOAD_MB} MB)", type=list(SUFFIXES),
                              max_upload_size=MAX_UPLOAD_MB, key="upload")
    if upload is None:
        return
    if upload.size > MAX_UPLOAD_MB * 1024 * 1024:
        st.error(f"{md_text(upload.name)}: {upload.size / 1e6:.1f} MB is over the {MAX_UPLOAD_MB} MB limit.")
        return
    if not target:
        st.error("Name the dataset to load into.")
        return
    file_path, digest = _save_upload(upload)
    signature = (digest, kind, target, model)
    if st.session_state.get("validated_sig") != signature:
        try:
            with st.spinner(f"Validating {md_text(upload.name)} ..."):
                report = da.validate_upload(path, kind, file_path, target, model, upload.name)
                problems = da.line_problems(report, file_path)
        except IngestError as exc:
            st.error(md_text(exc))
            return
        st.session_state["validated_sig"] = signature
        st.session_state["validation_report"] = report
        st.session_state["validation_problems"] = problems
        st.session_state.pop("ingest_message", None)
    report = st.session_state["validation_report"]
    problems = st.session_state["validation_problems"]

    st.markdown("**Validation report** (nothing has been written yet)")
    finding(validation_summary(report, problems))
    m = st.columns(4)
    m[0].metric("Lines", f"{report.n_lines:,}", help="Non-blank lines (rows) of the file.")
    m[1].metric("Accepted", f"{len(report.accepted):,}", help="Lines that will be stored, invalid ones included.")
    m[2].metric("Invalid (kept)", f"{report.n_invalid:,}",
                help="Native responses stored with valid = false, never repaired: the audits count them as "
                     "unavailable.")
    m[3].metric("Rejected", f"{len(report.rejects):,}", help="Lines quarantined, not stored: see their problems below.")
    problems_section(report, problems)

    done = st.session_state.get("ingest_message")
    if done:
        st.success(done)
        return
    label = f"Ingest {lines(len(report.accepted), 'accepted line')} into '{md_text(target)}'"
    if st.button(label, type="primary", disabled=not report.accepted and not report.rejects, key="ingest_button"):
        try:
            with st.spinner("Ingesting in one transaction ..."):
                result = da.ingest_upload(path, kind, file_path, target, model, upload.name)
        except Exception as exc:  # shown, never a traceback; the warehouse is unchanged
            st.error(f"Ingest failed, nothing was written: {md_text(exc)}")
            return
        if result.duplicate:
            msg = (f"{md_text(upload.name)} was already ingested into '{md_text(target)}' (ingest "
                   f"#{result.ingest_id}, same sha256); nothing changed.")
        else:
            same = result.report.already_stored
            msg = (f"Every line of {md_text(upload.name)} is already stored in '{md_text(target)}' with the same "
                   f"values ({lines(same)}); nothing changed, no ingest recorded." if result.ingest_id is None else
                   f"Stored {lines(len(result.report.accepted))} from {md_text(upload.name)} into "
                   f"'{md_text(target)}' (ingest #{result.ingest_id}); "
                   + (f"{lines(same)} already stored with the same values (skipped); " if same else "")
                   + f"{lines(len(result.report.rejects))} quarantined.")
        st.session_state["ingest_message"] = msg
        st.session_state["pending_dataset"] = target
        st.rerun()


def _domain_tree(dom: Domain) -> str:
    """One domain as a Markdown list: its classes (with their check), each with its mechanisms and
    their descriptions. Every piece of file text is escaped."""
    checks = {cls: chk for chk, cls in dom.checks.items()}
    lines = [f"Recipient **{md_text(dom.recipient_role)}** may receive {md_text(dom.may_receive)}; must not receive "
             f"{md_text(dom.must_not_receive)}.", ""]
    for cls in dom.classes:
        desc = dom.descriptions.get(cls)
        lines.append(f"- **{md_text(cls)}**" + (f": {md_text(desc)}" if desc else "")
                     + (f" (check {md_text(checks[cls])})" if cls in checks else ""))
        for mech in dom.mechanisms_by_class[cls]:
            desc = dom.descriptions.get(mech)
            lines.append(f"    - {md_text(mech)}" + (f": {md_text(desc)}" if desc else ""))
    return "\n".join(lines)


def ontology_tree(onto: Ontology, key: str) -> None:
    """The ontology as a readable tree: one expander per domain (classes -> mechanisms), with the
    domain's asymmetric costs."""
    for name, dom in onto.domains.items():
        n_mech = len(dom.mechanisms)
        with st.expander(f"{md_text(dom.title)} ({md_text(name)}): {len(dom.classes)} classes, {n_mech} mechanisms",
                         key=f"{key}_{name}"):
            st.markdown(_domain_tree(dom))
            st.caption("Asymmetric costs (row: the action taken; column: the true class).")
            st.dataframe(da.asymmetric_cost_table(dom))
    if onto.notes:
        with st.expander(ontology_notes_title(len(onto.notes)), key=f"{key}_notes"):
            st.markdown("\n".join(f"- {md_text(ontology_note(n))}" for n in onto.notes))
            st.caption("Allowed by the ontology's rules, so nothing was rejected; said here because it changes what "
                       "a cost profile's figures mean.")


def ontology_section(path: str, dataset: str | None, simulated: bool) -> None:
    """Which ontology (decision task) the dataset uses, and loading a new one: upload, read every
    problem before anything is written, then attach it to a dataset."""
    st.subheader("Decision task (ontology)")
    if dataset is not None:
        onto, stored = da.dataset_ontology(path, dataset)
        rows = da.datasets(path)
        no_worlds = rows.loc[rows["dataset_id"] == dataset, "worlds"].fillna(0).astype(int).sum() == 0
        if stored is None and no_worlds:          # nothing decided yet (a QuasiLeak corpus needs no decision task)
            st.markdown(f"Dataset **{md_text(dataset)}** holds no decision worlds: worlds loaded into it will be "
                        f"checked against the default **TUPLE** ontology (version `{onto.sha256[:12]}`) unless "
                        "you attach your own below first. "
                        + md_text(tuple_sentence([d.title for d in onto.domains.values()])) + ".")
        elif stored is None:
            st.markdown(f"Dataset **{md_text(dataset)}** uses the default **TUPLE** ontology (version "
                        f"`{onto.sha256[:12]}`). "
                        + md_text(tuple_sentence([d.title for d in onto.domains.values()])) + ".")
        else:
            st.markdown(f"Dataset **{md_text(dataset)}** uses its own ontology, from the file "
                        f"**{md_text(ontology_file_name(stored['source']))}** (its name at ingest; version "
                        f"`{str(stored['sha256'])[:12]}`, attached {utc_minute(stored['ingested_at'])}).")
        ontology_tree(onto, "ontology_current")
    st.markdown("**Load an ontology** (your own decision classes and protected mechanisms, in the format of "
                "the README section *Your own decision task*)")
    known = da.datasets(path) if da.warehouse_exists(path) else None
    proposed, why = ontology_target(known, dataset, simulated, own_dataset(path))
    target = st.text_input("For dataset", value=proposed, max_chars=80, key="ontology_dataset",
                           help="The dataset that will use this ontology (created if new). Its ontology can be "
                                "replaced only while it has no worlds, so a dataset with worlds is never proposed. "
                                "When the current dataset is simulated, a dataset of your own is "
                                "proposed.").strip()
    if why:
        st.caption(md_text(why))
    upload = st.file_uploader(f"Ontology file (JSON; at most {MAX_ONTOLOGY_MB} MB)", type=["json"],
                              max_upload_size=MAX_ONTOLOGY_MB, key="ontology_upload")
    if upload is None:
        return
    if upload.size > MAX_ONTOLOGY_MB * 1024 * 1024:
        st.error(f"{md_text(upload.name)}: {upload.size / 1e6:.1f} MB is over the {MAX_ONTOLOGY_MB} MB limit.")
        return
    if not target:
        st.error("Name the dataset that will use this ontology.")
        return
    data = upload.getvalue()
    signature = (hashlib.sha256(data).hexdigest(), target)
    if st.session_state.get("ontology_sig") != signature:
        st.session_state["ontology_sig"] = signature
        st.session_state["ontology_check"] = da.check_ontology_upload(path, target, data, upload.name)
        st.session_state.pop("ontology_message", None)
    check = st.session_state["ontology_check"]

    st.markdown("**Validation report** (nothing has been written yet)")
    if not check.ok and check.ontology is not None:     # a valid file the dataset cannot take
        why = " ".join(p.removeprefix(f"{upload.name}: ") for p in check.problems)
        st.error(f"{md_text(upload.name)} is valid, but {md_text(why)}. Here: type a new "
                 "name under **For dataset** above. Nothing will be stored.")
        return
    if not check.ok:
        st.error(f"{md_text(upload.name)} is rejected: {len(check.problems)} problem"
                 f"{'' if len(check.problems) == 1 else 's'}. Nothing will be stored; fix the file and upload "
                 "it again.")
        st.code("\n".join(check.problems), language=None, wrap_lines=True)
        return
    onto = check.ontology
    n_classes = sum(len(d.classes) for d in onto.domains.values())
    n_mech = sum(len(d.mechanisms) for d in onto.domains.values())
    st.success(f"{md_text(upload.name)} is valid: {len(onto.domains)} domains, {n_classes} classes, "
               f"{n_mech} mechanisms (version {onto.sha256[:12]}).")
    ontology_tree(onto, "ontology_preview")
    done = st.session_state.get("ontology_message")
    if done:
        st.success(done)
        return
    if st.button(f"Ingest ontology into '{md_text(target)}'", type="primary", key="ontology_button"):
        try:
            with st.spinner("Storing in one transaction ..."):
                sha, changed = da.ingest_ontology_upload(path, target, check.text, upload.name)
        except OntologyError as exc:
            st.error("Not stored: " + md_text(" ".join(exc.problems)))
            return
        except Exception as exc:  # shown, never a traceback; the warehouse is unchanged
            st.error(f"Ingest failed, nothing was written: {md_text(exc)}")
            return
        st.session_state["ontology_message"] = (
            f"Dataset '{md_text(target)}' uses {md_text(upload.name)} (version {sha[:12]})." if changed else
            f"Dataset '{md_text(target)}' already uses this ontology (version {sha[:12]}); nothing changed.")
        st.session_state["pending_dataset"] = target
        st.rerun()


def quarantine_finding(path: str, dataset: str) -> None:
    """One sentence on the dataset's quarantine: its rejected lines by kind and its invalid responses."""
    rejected = da.query(path, "quarantine_summary", (dataset,)).groupby("kind")["rejected_lines"].sum()
    invalid = da.query(path, "invalid_summary", (dataset,))
    n_rej, n_inv = int(rejected.sum()), int(invalid["responses"].sum())
    if n_rej:
        by = lines_by_kind({k: int(n) for k, n in rejected.items()})
        text = (f"{n_rej:,} line{'' if n_rej == 1 else 's'} of this dataset {'was' if n_rej == 1 else 'were'} "
                f"rejected when ingested ({by}): kept here with the raw text, in no audit.")
    else:
        text = "No line of this dataset was rejected when ingested."
    if n_inv:
        models = invalid["model"].nunique()
        text += (f" {n_inv:,} native response{'' if n_inv == 1 else 's'} of {models} model{'' if models == 1 else 's'} "
                 f"{'is' if n_inv == 1 else 'are'} stored with valid = false: the audits count "
                 f"{'it' if n_inv == 1 else 'them'} as unavailable.")
    else:
        text += " No native response is stored as invalid."
    finding(text)


def _response_text(choice: object, probabilities: object, confidence: object) -> str:
    """A stored native response as plain text: ``choice STORAGE; STORAGE 0.9963 · NETWORK 0.1041;
    confidence 0.797`` (the probabilities map is stored as JSON text)."""
    parts = [f"choice {choice}" if isinstance(choice, str) else "no choice"]
    if isinstance(probabilities, str):
        try:
            scores = json.loads(probabilities)
        except ValueError:
            scores = probabilities
        parts.append(" · ".join(f"{k} {v}" for k, v in scores.items()) if isinstance(scores, dict) else str(scores))
    if confidence is not None and not pd.isna(confidence):
        parts.append(f"confidence {confidence:g}")
    return "; ".join(parts)


def quarantine_section(path: str, dataset: str) -> None:
    """The dataset's rejected lines (with their raw text) and its invalid native responses."""
    st.subheader("Quarantine")
    quarantine_finding(path, dataset)
    kind = st.selectbox("Kind", ["all"] + list(KINDS), format_func=lambda k: KIND_NAMES.get(k, k),
                        key="quarantine_kind", help="Which kind of file's rejected lines to list.")
    k = None if kind == "all" else kind
    rejects = da.query(path, "rejects", (dataset, k, k, 2000))
    if rejects.empty:
        st.success("No rejected lines in this dataset." if k is None else f"No rejected lines of {KIND_NAMES[k]}.")
    else:
        shown = pd.DataFrame({"file": rejects["file_name"], "line": rejects["line_no"],
                              "field": rejects["field"].fillna(""), "problem": rejects["reason"],
                              "raw text as received": rejects["raw_text"].fillna("")})
        table(shown, "rejected_lines",
              f"{lines(len(rejects), 'rejected line')} (at most 2,000 shown): the file, the line, the field at "
              "fault (blank: the whole line), the problem and the raw text as received (in full in the CSV and "
              "below).",
              column_config=column_widths({"file": 120, "line": 55, "field": 90, "problem": 215,
                                           "raw text as received": 75}, numbers=("line",)))
        raw_line_viewer({f"{f}, line {n:,}": t for f, n, t in zip(shown["file"], shown["line"],
                                                                  shown["raw text as received"])},
                        "quarantine_raw_line")
    invalid = da.query(path, "invalid_responses", (dataset, 2000))
    st.markdown("**Invalid native responses** (stored with valid = false, never repaired; they enter the "
                "audits as unavailable)")
    if invalid.empty:
        st.success("No invalid responses.")
        return
    sources = [source_of(f, n) for f, n in zip(invalid["file_name"], invalid["line_no"])]
    shown = pd.DataFrame({"model": invalid["model"], "world_id": invalid["world_id"],
                          "reason": invalid["invalid_reason"].fillna(""),
                          "response as stored": [_response_text(c, p, f) for c, p, f in
                                                 zip(invalid["choice"], invalid["probabilities"],
                                                     invalid["confidence"])],
                          "source": sources})
    table(invalid_by_source(shown), "invalid_responses_by_source",
          "Where the invalid responses listed below come from (at most 2,000): per model, the collection run that "
          "stored them (collected) or the file they were loaded from.",
          column_config=column_widths({"model": 150, "from": 330, "responses": 80}, numbers=("responses",)))
    table(shown, "invalid_responses", f"{len(invalid):,} invalid response{'' if len(invalid) == 1 else 's'} (at most "
                                      "2,000 shown), with the reason and the response as stored; the source (the "
                                      "run or the file's line) last.",
          column_config=column_widths({"model": 140, "world": 62, "reason": 150, "response as stored": 110,
                                       "source": 98}))   # 1,024 px: 560


def render() -> None:
    """The Data page: the upload and ingest section, and the quarantine of the selected dataset."""
    st.title("Data")
    path, dataset, simulated = current_dataset()
    simulated_banner(simulated, path, dataset)
    st.caption("Files are validated against the warehouse before anything is written. Each file is "
               "ingested in one transaction; the same file twice changes nothing.")
    upload_section(path, dataset, simulated)
    st.divider()
    ontology_section(path, dataset, simulated)
    if dataset is not None:
        st.divider()
        quarantine_section(path, dataset)


page_entry(render)
