"""Data: upload a file, read its validation report line by line before anything is written,
then ingest it; browse the quarantine."""
from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import streamlit as st

from dashboard import data_access as da
from dashboard.routing import page_entry
from dashboard.widgets import current_dataset, md_text, simulated_banner, table
from qlb.records.ontology import Domain, Ontology, OntologyError
from warehouse.ingest import KINDS, IngestError

MAX_UPLOAD_MB = 100
MAX_ONTOLOGY_MB = 2
SUFFIXES = ("jsonl", "ndjson", "json", "csv", "parquet")
KIND_HELP = {
    "worlds": "TUPLE worlds, one per line (world_id, pair_id, domain, split, coarse, mechanism, hypotheses, ...).",
    "responses": "Native coarse-decision responses (model, world_id, status, choice, probabilities, confidence). "
                 "Ingest the worlds first.",
    "refusal": "Refusal-probe responses (model, world_id, status, choice, scores over the domain's mechanisms + WITHHOLD).",
    "corpus": "QuasiLeak documents (doc_id, split, context_id, text, profile, policy, groups, distractors).",
    "predictions": "QuasiLeak detector output (doc_id, detector, groups). Ingest the corpus first.",
}


def _save_upload(upload) -> tuple[str, str]:
    """Write the upload to a private temporary file; return (path, sha256)."""
    data = upload.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    suffix = Path(upload.name).suffix.lower()
    folder = Path(tempfile.gettempdir()) / "qlb_uploads"
    folder.mkdir(mode=0o700, exist_ok=True)
    target = folder / f"{digest}{suffix}"
    if not target.exists():
        target.write_bytes(data)
    return str(target), digest


def upload_section(path: str, dataset: str | None) -> None:
    """Load a file: choose kind, dataset and model, upload, read the line-by-line validation report, then ingest the
    accepted lines."""
    st.subheader("Load a file")
    c1, c2, c3 = st.columns(3)
    kind = c1.selectbox("Kind", KINDS, help="What the file holds. " + " ".join(
        f"{k}: {v}" for k, v in KIND_HELP.items()))
    target = c2.text_input("Into dataset", value=dataset or "my-audit", max_chars=80,
                           help="Loaded into this dataset (created if new). User datasets are not "
                                "marked simulated.").strip()
    model = c3.text_input("Model name (optional)", max_chars=80, disabled=kind not in ("responses", "refusal"),
                          help="For response lines without a model field; lines naming another model "
                               "are rejected.").strip()
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
        except IngestError as exc:
            st.error(md_text(exc))
            return
        st.session_state["validated_sig"] = signature
        st.session_state["validation_report"] = report
        st.session_state.pop("ingest_message", None)
    report = st.session_state["validation_report"]

    st.markdown("**Validation report** (nothing has been written yet)")
    m = st.columns(4)
    m[0].metric("Lines", f"{report.n_lines:,}")
    m[1].metric("Accepted", f"{len(report.accepted):,}")
    m[2].metric("Invalid (kept, valid = false)", f"{report.n_invalid:,}")
    m[3].metric("Rejected (quarantined)", f"{len(report.rejects):,}")
    lines = report.lines()
    outcome = st.segmented_control("Show lines", ["all", "accepted", "invalid", "rejected"], default="all",
                                   key="outcome_filter")
    shown = lines if outcome in (None, "all") else lines[lines["outcome"] == outcome]
    table(shown.head(5000), "validation_report",
          f"{len(shown):,} lines shown (at most 5,000). Rejected lines name the field and the reason.")
    if report.rejects:
        with st.expander("Raw text of rejected lines"):
            raw = lines[lines["outcome"] == "rejected"].head(500).copy()
            raw["raw_text"] = [r.raw[:500] for r in report.rejects[:500]]
            st.dataframe(raw, hide_index=True)

    done = st.session_state.get("ingest_message")
    if done:
        st.success(done)
        return
    label = f"Ingest {len(report.accepted):,} accepted lines into '{md_text(target)}'"
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
            msg = (f"Stored {len(result.report.accepted):,} lines from {md_text(upload.name)} into "
                   f"'{md_text(target)}' (ingest #{result.ingest_id}); {len(result.report.rejects):,} lines quarantined.")
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
    for note in onto.notes:
        st.info(md_text(note))


def ontology_section(path: str, dataset: str | None) -> None:
    """Which ontology (decision task) the dataset uses, and loading a new one: upload, read every
    problem before anything is written, then attach it to a dataset."""
    st.subheader("Decision task (ontology)")
    if dataset is not None:
        onto, stored = da.dataset_ontology(path, dataset)
        if stored is None:
            st.markdown(f"Dataset **{md_text(dataset)}** uses the default **TUPLE** ontology (version "
                        f"`{onto.sha256[:12]}`).")
        else:
            st.markdown(f"Dataset **{md_text(dataset)}** uses its own ontology, from {md_text(stored['source'])} "
                        f"(version `{str(stored['sha256'])[:12]}`, attached {md_text(stored['ingested_at'])}).")
        ontology_tree(onto, "ontology_current")
    st.markdown("**Load an ontology** (your own classes and protected mechanisms; the same format as "
                "the TUPLE ontology, see README, *Your own decision task*)")
    target = st.text_input("For dataset", value=dataset or "my-audit", max_chars=80, key="ontology_dataset",
                           help="The dataset that will use this ontology (created if new). Its ontology can be "
                                "replaced only while it has no worlds.").strip()
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


def quarantine_section(path: str, dataset: str) -> None:
    """The dataset's rejected lines (with their raw text) and its invalid native responses."""
    st.subheader("Quarantine")
    kind = st.selectbox("Kind", ["all"] + list(KINDS), key="quarantine_kind")
    k = None if kind == "all" else kind
    rejects = da.query(path, "rejects", (dataset, k, k, 2000))
    if rejects.empty:
        st.success("No rejected lines in this dataset.")
    else:
        table(rejects, "rejected_lines", f"{len(rejects):,} rejected lines (at most 2,000 shown), with the "
                                          "raw text as received.")
    invalid = da.query(path, "invalid_responses", (dataset, 2000))
    st.markdown("**Invalid native responses** (stored with valid = false, never repaired; they enter the "
                "audits as unavailable)")
    if invalid.empty:
        st.success("No invalid responses.")
    else:
        table(invalid, "invalid_responses", f"{len(invalid):,} invalid responses.")


def render() -> None:
    """The Data page: the upload and ingest section, and the quarantine of the selected dataset."""
    st.title("Data")
    path, dataset, simulated = current_dataset()
    simulated_banner(simulated, path, dataset)
    st.caption("Files are validated against the warehouse before anything is written. Each file is "
               "ingested in one transaction; the same file twice changes nothing.")
    upload_section(path, dataset)
    st.divider()
    ontology_section(path, dataset)
    if dataset is not None:
        st.divider()
        quarantine_section(path, dataset)


page_entry(render)
