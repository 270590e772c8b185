-- Every base decoder configuration's P(s1) per world of a decoding audit (issue 4): out-of-fold
-- on train, and validation and test from the refit on all of train. The recovery page's
-- recompute re-runs candidate building, selection and test scoring on these for any choice of
-- decoder families without refitting (configurations are fitted independently, so a subset's
-- columns are exactly what a refit with that subset gives). Native releases only.
CREATE TABLE IF NOT EXISTS decoder_configs (
    run_id      VARCHAR NOT NULL,
    dataset_id  VARCHAR NOT NULL,
    view        VARCHAR NOT NULL,
    config      SMALLINT NOT NULL,    -- position in the run's library (TUPLE.md section 4 order)
    family      VARCHAR NOT NULL,
    name        VARCHAR NOT NULL,
    PRIMARY KEY (run_id, view, config)
);

CREATE TABLE IF NOT EXISTS decoder_config_scores (
    run_id      VARCHAR NOT NULL,
    dataset_id  VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    domain      VARCHAR NOT NULL,
    view        VARCHAR NOT NULL,
    split       VARCHAR NOT NULL,     -- train (out-of-fold) | validation | test
    world_id    VARCHAR NOT NULL,
    p_s1        DOUBLE[] NOT NULL,    -- one entry per configuration, in decoder_configs order
    PRIMARY KEY (run_id, model, view, world_id)
);
