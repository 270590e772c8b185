-- Collection (issue 13, COLLECT.md): answers asked from a model by `qlb collect`, with their
-- provenance. Refusal responses get the validity native responses have: a collected answer that
-- cannot be read or validated is stored invalid (with its reason) and enters the refusal audit
-- as unavailable, like an invalid native response; lines from files stay valid or rejected.
ALTER TABLE refusal_responses ADD COLUMN valid BOOLEAN DEFAULT TRUE;
ALTER TABLE refusal_responses ADD COLUMN invalid_reason VARCHAR;

-- One collection run: one model, one probe, one transport.
CREATE TABLE IF NOT EXISTS collections (
    collection_id       VARCHAR PRIMARY KEY,
    dataset_id          VARCHAR NOT NULL,
    model               VARCHAR NOT NULL,
    probe               VARCHAR NOT NULL,       -- native | refusal
    transport           VARCHAR NOT NULL,       -- typed | openai | python
    endpoint            VARCHAR NOT NULL,       -- URL or module:function
    endpoint_model      VARCHAR,
    settings            VARCHAR NOT NULL,       -- JSON: answer format, schema, timeout, retries, ... (never a key)
    instruction_version VARCHAR NOT NULL,
    ingest_id           INTEGER NOT NULL,       -- the ingests row its answers are stored under
    started_at          TIMESTAMP NOT NULL,
    finished_at         TIMESTAMP,
    asked               INTEGER NOT NULL DEFAULT 0,
    stored              INTEGER NOT NULL DEFAULT 0,
    valid               INTEGER NOT NULL DEFAULT 0,
    invalid             INTEGER NOT NULL DEFAULT 0,
    unavailable         INTEGER NOT NULL DEFAULT 0,
    skipped_existing    INTEGER NOT NULL DEFAULT 0,
    stopped             VARCHAR                 -- NULL, or why the collection stopped early
);

-- Every call (each attempt of a retried world too).
CREATE TABLE IF NOT EXISTS collection_calls (
    collection_id   VARCHAR NOT NULL,
    dataset_id      VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    probe           VARCHAR NOT NULL,
    world_id        VARCHAR NOT NULL,
    attempt         INTEGER NOT NULL,
    request_sha256  VARCHAR NOT NULL,
    http_status     INTEGER,
    latency_ms      DOUBLE NOT NULL,
    raw_answer      VARCHAR NOT NULL,           -- first 64 KiB
    outcome         VARCHAR NOT NULL,           -- valid | invalid | unavailable | stop
    reason          VARCHAR,
    called_at       TIMESTAMP NOT NULL
);

-- Responses replaced by `qlb collect --replace-invalid` (the audits use the replacement).
CREATE TABLE IF NOT EXISTS response_history (
    dataset_id      VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    probe           VARCHAR NOT NULL,
    world_id        VARCHAR NOT NULL,
    status          VARCHAR NOT NULL,
    choice          VARCHAR,
    probabilities   VARCHAR,                    -- native
    confidence      DOUBLE,                     -- native
    scores          VARCHAR,                    -- refusal
    valid           BOOLEAN,
    invalid_reason  VARCHAR,
    ingest_id       INTEGER NOT NULL,
    line_no         INTEGER NOT NULL,
    replaced_at     TIMESTAMP NOT NULL,
    replaced_by     VARCHAR NOT NULL            -- the collection that asked again
);
