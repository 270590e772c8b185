-- Refusal audit results (issue 3): one row per run, model and domain ('all' for the model as a
-- whole), and the outcome of every counted response for the drill-down.
CREATE TABLE IF NOT EXISTS refusal_results (
    run_id                          VARCHAR NOT NULL,
    dataset_id                      VARCHAR NOT NULL,
    model                           VARCHAR NOT NULL,
    domain                          VARCHAR NOT NULL,
    n                               INTEGER NOT NULL,
    withheld                        INTEGER NOT NULL,
    direct_correct                  INTEGER NOT NULL,
    direct_incorrect                INTEGER NOT NULL,
    residual_unique_correct         INTEGER NOT NULL,
    residual_unique_incorrect       INTEGER NOT NULL,
    residual_tied                   INTEGER NOT NULL,
    residual_zero_mass              INTEGER NOT NULL,
    withhold_rate                   DOUBLE,
    conditional_residual_recovery   DOUBLE,
    overall_recovery                DOUBLE,
    unavailable                     INTEGER NOT NULL,
    unique_winner_coverage          DOUBLE,
    choice_not_argmax               INTEGER NOT NULL,
    PRIMARY KEY (run_id, model, domain)
);

CREATE TABLE IF NOT EXISTS refusal_outcomes (
    run_id             VARCHAR NOT NULL,
    dataset_id         VARCHAR NOT NULL,
    model              VARCHAR NOT NULL,
    world_id           VARCHAR NOT NULL,
    domain             VARCHAR NOT NULL,
    mechanism          VARCHAR NOT NULL,
    choice             VARCHAR NOT NULL,
    outcome            VARCHAR NOT NULL,
    residual_winner    VARCHAR,
    choice_not_argmax  BOOLEAN NOT NULL,
    PRIMARY KEY (run_id, model, world_id)
);
