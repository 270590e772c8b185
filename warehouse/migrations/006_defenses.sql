-- Output defenses and WCPQ (issue 6): the defended releases per world, recovery per defense
-- with the paired difference against the native control and the WCPQ verification, and the
-- recipients' costs (frozen full-native policies and adapted ones) per defense.
-- Defense-aware decoder predictions go to decoder_predictions with defense = the endpoint.
CREATE TABLE IF NOT EXISTS defense_releases (
    run_id        VARCHAR NOT NULL,
    dataset_id    VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,
    defense       VARCHAR NOT NULL,       -- quantize | top2 | temperature | noise seed N | wcpq
    world_id      VARCHAR NOT NULL,
    domain        VARCHAR NOT NULL,
    split         VARCHAR NOT NULL,
    probabilities VARCHAR,                -- JSON class -> released score (absent keys: not released)
    confidence    DOUBLE,
    codeword      INTEGER NOT NULL,       -- WCPQ: index in the static grid, -1 = identity fallback
    PRIMARY KEY (run_id, model, defense, world_id)
);

CREATE TABLE IF NOT EXISTS defense_results (
    run_id            VARCHAR NOT NULL,
    dataset_id        VARCHAR NOT NULL,
    model             VARCHAR NOT NULL,
    defense           VARCHAR NOT NULL,   -- native (control) | endpoints | noise (three-seed mean)
    method            VARCHAR NOT NULL,
    seed              BIGINT,
    accuracy          DOUBLE NOT NULL,
    ci_low            DOUBLE NOT NULL,
    ci_high           DOUBLE NOT NULL,
    log_loss          DOUBLE,
    n                 INTEGER NOT NULL,
    diff_vs_native    DOUBLE,
    diff_ci_low       DOUBLE,
    diff_ci_high      DOUBLE,
    coverage          DOUBLE,             -- WCPQ: covered / available test responses
    fallbacks         INTEGER,
    plan_agreement    INTEGER,            -- WCPQ: agreeing (world, policy) comparisons
    plan_comparisons  INTEGER,
    max_abs_cost_diff DOUBLE,
    PRIMARY KEY (run_id, model, defense)
);

CREATE TABLE IF NOT EXISTS defense_costs (
    run_id     VARCHAR NOT NULL,
    dataset_id VARCHAR NOT NULL,
    model      VARCHAR NOT NULL,
    defense    VARCHAR NOT NULL,
    recipient  VARCHAR NOT NULL,          -- frozen (the 18 full-native policies) | adapted (refitted)
    task       VARCHAR NOT NULL,
    profile    VARCHAR NOT NULL,
    mean_cost  DOUBLE NOT NULL,
    ci_low     DOUBLE NOT NULL,
    ci_high    DOUBLE NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (run_id, model, defense, recipient, task, profile)
);
