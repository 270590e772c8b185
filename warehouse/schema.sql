-- qlb warehouse schema.
-- schema_version: 1
-- A fresh warehouse runs this file whole and records version 1. An existing warehouse at an
-- older version runs warehouse/migrations/NNN_*.sql in order (forward only), each in the same
-- transaction as the version bump.

CREATE TABLE IF NOT EXISTS schema_version (
    version     INTEGER NOT NULL,
    applied_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS datasets (
    dataset_id   VARCHAR PRIMARY KEY,
    simulated    BOOLEAN NOT NULL,
    description  VARCHAR,
    seed         BIGINT,
    created_at   TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS ingests (
    ingest_id    INTEGER PRIMARY KEY,
    dataset_id   VARCHAR NOT NULL,
    kind         VARCHAR NOT NULL,
    file_name    VARCHAR NOT NULL,
    file_format  VARCHAR NOT NULL,
    sha256       VARCHAR NOT NULL,
    model        VARCHAR,
    n_lines      INTEGER NOT NULL,
    n_accepted   INTEGER NOT NULL,
    n_invalid    INTEGER NOT NULL,
    n_rejected   INTEGER NOT NULL,
    started_at   TIMESTAMP NOT NULL,
    finished_at  TIMESTAMP NOT NULL,
    UNIQUE (dataset_id, kind, sha256)
);

-- Quarantine: every rejected line, with its raw text, where it was and why.
CREATE TABLE IF NOT EXISTS rejects (
    ingest_id   INTEGER NOT NULL,
    dataset_id  VARCHAR NOT NULL,
    kind        VARCHAR NOT NULL,
    file_name   VARCHAR NOT NULL,
    line_no     INTEGER NOT NULL,
    field       VARCHAR,
    reason      VARCHAR NOT NULL,
    raw_text    VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS worlds (
    dataset_id        VARCHAR NOT NULL,
    world_id          VARCHAR NOT NULL,
    pair_id           VARCHAR NOT NULL,
    domain            VARCHAR NOT NULL,
    split             VARCHAR NOT NULL,
    coarse            VARCHAR NOT NULL,
    mechanism         VARCHAR NOT NULL,
    hypothesis_0      VARCHAR NOT NULL,
    hypothesis_1      VARCHAR NOT NULL,
    recipient_role    VARCHAR NOT NULL,
    candidate_order   VARCHAR[] NOT NULL,
    request           VARCHAR NOT NULL,
    intake_channel    VARCHAR NOT NULL,
    operating_window  VARCHAR NOT NULL,
    case_context      VARCHAR NOT NULL,
    diagnostic_note   VARCHAR NOT NULL,
    ingest_id         INTEGER NOT NULL,
    line_no           INTEGER NOT NULL,
    PRIMARY KEY (dataset_id, world_id)
);

CREATE TABLE IF NOT EXISTS models (
    dataset_id   VARCHAR NOT NULL,
    model        VARCHAR NOT NULL,
    simulated    BOOLEAN NOT NULL,
    description  VARCHAR,
    PRIMARY KEY (dataset_id, model)
);

-- Native coarse-decision responses. probabilities is the released map as JSON text, exactly as
-- received (missing stays missing). valid = false keeps invalid responses, never repaired.
CREATE TABLE IF NOT EXISTS responses (
    dataset_id         VARCHAR NOT NULL,
    model              VARCHAR NOT NULL,
    world_id           VARCHAR NOT NULL,
    status             VARCHAR NOT NULL,
    choice             VARCHAR,
    probabilities      VARCHAR,
    confidence         DOUBLE,
    valid              BOOLEAN NOT NULL,
    invalid_reason     VARCHAR,
    choice_not_argmax  BOOLEAN NOT NULL,
    ingest_id          INTEGER NOT NULL,
    line_no            INTEGER NOT NULL,
    PRIMARY KEY (dataset_id, model, world_id)
);

CREATE TABLE IF NOT EXISTS refusal_responses (
    dataset_id  VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    world_id    VARCHAR NOT NULL,
    status      VARCHAR NOT NULL,
    choice      VARCHAR,
    scores      VARCHAR,
    ingest_id   INTEGER NOT NULL,
    line_no     INTEGER NOT NULL,
    PRIMARY KEY (dataset_id, model, world_id)
);

CREATE TABLE IF NOT EXISTS ql_documents (
    dataset_id   VARCHAR NOT NULL,
    doc_id       VARCHAR NOT NULL,
    split        VARCHAR NOT NULL,
    context_id   VARCHAR NOT NULL,
    recipient    VARCHAR,
    purpose      VARCHAR,
    text         VARCHAR NOT NULL,
    profile      VARCHAR NOT NULL,
    policy       VARCHAR NOT NULL,
    distractors  VARCHAR NOT NULL,
    n_groups     INTEGER NOT NULL,
    n_targets    INTEGER NOT NULL,
    ingest_id    INTEGER NOT NULL,
    line_no      INTEGER NOT NULL,
    PRIMARY KEY (dataset_id, doc_id)
);

-- Gold quasi-evidence groups, one row per group; cues as JSON [[start, end], ...].
CREATE TABLE IF NOT EXISTS ql_groups (
    dataset_id    VARCHAR NOT NULL,
    doc_id        VARCHAR NOT NULL,
    group_index   INTEGER NOT NULL,
    attribute     VARCHAR NOT NULL,
    policy_label  VARCHAR NOT NULL,
    arity         INTEGER NOT NULL,
    cues          VARCHAR NOT NULL,
    cue_distance  INTEGER NOT NULL,
    PRIMARY KEY (dataset_id, doc_id, group_index)
);

-- Detector output, one row per (detector, document) line; groups as JSON.
CREATE TABLE IF NOT EXISTS ql_predictions (
    dataset_id  VARCHAR NOT NULL,
    detector    VARCHAR NOT NULL,
    doc_id      VARCHAR NOT NULL,
    groups      VARCHAR NOT NULL,
    n_groups    INTEGER NOT NULL,
    ingest_id   INTEGER NOT NULL,
    line_no     INTEGER NOT NULL,
    PRIMARY KEY (dataset_id, detector, doc_id)
);

-- One row per audit run (later audits store their results against run_id).
CREATE TABLE IF NOT EXISTS runs (
    run_id                   VARCHAR PRIMARY KEY,
    dataset_id               VARCHAR NOT NULL,
    kind                     VARCHAR NOT NULL,
    parameters               VARCHAR NOT NULL,
    dataset_fingerprint      VARCHAR NOT NULL,
    code_version             VARCHAR NOT NULL,
    test_used_for_selection  BOOLEAN NOT NULL DEFAULT false,
    started_at               TIMESTAMP NOT NULL,
    finished_at              TIMESTAMP
);
