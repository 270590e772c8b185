-- Test coarse accuracy per model (issue 15; paper Tables 22 and 24): the share of the decoding
-- audit's test worlds whose released choice is the true coarse class (an unavailable or invalid
-- response counts as wrong), pooled, domain macro-average and per domain, with the same
-- pair-clustered percentile intervals as recovery.
CREATE TABLE IF NOT EXISTS coarse_accuracy (
    run_id      VARCHAR NOT NULL,
    dataset_id  VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    scope       VARCHAR NOT NULL,     -- pooled | macro | <domain>
    accuracy    DOUBLE NOT NULL,
    ci_low      DOUBLE,
    ci_high     DOUBLE,
    n           INTEGER NOT NULL,
    PRIMARY KEY (run_id, model, scope)
);
