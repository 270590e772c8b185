-- QuasiLeak scoring (issue 7): detector failures on prediction lines, and scores per run in a
-- long format (one row per detector, slice and metric, with bootstrap intervals where computed).
ALTER TABLE ql_predictions ADD COLUMN failure VARCHAR;

CREATE TABLE IF NOT EXISTS ql_scores (
    run_id      VARCHAR NOT NULL,
    dataset_id  VARCHAR NOT NULL,
    detector    VARCHAR NOT NULL,
    split       VARCHAR NOT NULL,
    slice_kind  VARCHAR NOT NULL,   -- all | arity | attribute | distance | context
    slice       VARCHAR NOT NULL,
    metric      VARCHAR NOT NULL,
    value       DOUBLE,
    ci_low      DOUBLE,
    ci_high     DOUBLE,
    PRIMARY KEY (run_id, detector, slice_kind, slice, metric)
);

CREATE TABLE IF NOT EXISTS ql_detectors (
    dataset_id   VARCHAR NOT NULL,
    detector     VARCHAR NOT NULL,
    simulated    BOOLEAN NOT NULL,
    description  VARCHAR,
    PRIMARY KEY (dataset_id, detector)
);
