-- Secret inference decoding (issue 4): per-world test predictions, the frozen selection per
-- (model, domain, view), recovery with pair-clustered intervals, paired view differences.
CREATE TABLE IF NOT EXISTS decoder_predictions (
    run_id      VARCHAR NOT NULL,
    dataset_id  VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    view        VARCHAR NOT NULL,
    defense     VARCHAR NOT NULL DEFAULT 'none',
    world_id    VARCHAR NOT NULL,
    domain      VARCHAR NOT NULL,
    pair_id     VARCHAR NOT NULL,
    p_s1        DOUBLE NOT NULL,
    correct     BOOLEAN NOT NULL,
    log_loss    DOUBLE NOT NULL,
    candidate   VARCHAR NOT NULL,
    PRIMARY KEY (run_id, model, view, defense, world_id)
);

CREATE TABLE IF NOT EXISTS decoder_selections (
    run_id          VARCHAR NOT NULL,
    dataset_id      VARCHAR NOT NULL,
    model           VARCHAR NOT NULL,
    domain          VARCHAR NOT NULL,
    view            VARCHAR NOT NULL,
    candidate       VARCHAR NOT NULL,
    candidate_view  VARCHAR NOT NULL,
    val_accuracy    DOUBLE NOT NULL,
    val_log_loss    DOUBLE NOT NULL,
    n_candidates    INTEGER NOT NULL,
    PRIMARY KEY (run_id, model, domain, view)
);

CREATE TABLE IF NOT EXISTS recovery_results (
    run_id      VARCHAR NOT NULL,
    dataset_id  VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    view        VARCHAR NOT NULL,
    scope       VARCHAR NOT NULL,     -- pooled | macro | <domain>
    accuracy    DOUBLE NOT NULL,
    ci_low      DOUBLE,
    ci_high     DOUBLE,
    log_loss    DOUBLE,
    n           INTEGER NOT NULL,
    PRIMARY KEY (run_id, model, view, scope)
);

CREATE TABLE IF NOT EXISTS recovery_differences (
    run_id      VARCHAR NOT NULL,
    dataset_id  VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    view_a      VARCHAR NOT NULL,
    view_b      VARCHAR NOT NULL,
    difference  DOUBLE NOT NULL,
    ci_low      DOUBLE NOT NULL,
    ci_high     DOUBLE NOT NULL,
    n           INTEGER NOT NULL,
    PRIMARY KEY (run_id, model, view_a, view_b)
);
