-- Downstream utility and privacy-utility fronts (issue 5): the frozen recipient policy per
-- (model, domain, view, task, profile), per-world test actions, mean costs with pair-clustered
-- intervals, paired differences against full native with the non-inferiority mark, front points.
CREATE TABLE IF NOT EXISTS utility_policies (
    run_id        VARCHAR NOT NULL,
    dataset_id    VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,
    domain        VARCHAR NOT NULL,
    view          VARCHAR NOT NULL,
    task          VARCHAR NOT NULL,
    profile       VARCHAR NOT NULL,
    policy        VARCHAR NOT NULL,       -- empirical_prior | native | logistic C=...
    review_factor DOUBLE,                 -- selective routing only
    val_cost      DOUBLE NOT NULL,
    n_candidates  INTEGER NOT NULL,
    PRIMARY KEY (run_id, model, domain, view, task, profile)
);

CREATE TABLE IF NOT EXISTS recipient_models (
    run_id      VARCHAR NOT NULL,
    dataset_id  VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    domain      VARCHAR NOT NULL,
    view        VARCHAR NOT NULL,
    policy      VARCHAR NOT NULL,
    spec        VARCHAR NOT NULL,         -- JSON: the frozen q(T | features)
    PRIMARY KEY (run_id, model, domain, view, policy)
);

CREATE TABLE IF NOT EXISTS policy_actions (
    run_id        VARCHAR NOT NULL,
    dataset_id    VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,
    view          VARCHAR NOT NULL,
    task          VARCHAR NOT NULL,
    profile       VARCHAR NOT NULL,
    world_id      VARCHAR NOT NULL,
    domain        VARCHAR NOT NULL,
    pair_id       VARCHAR NOT NULL,
    available     BOOLEAN NOT NULL,
    plan          VARCHAR NOT NULL,       -- the complete plan, including both check branches
    check_name    VARCHAR,
    check_answer  BOOLEAN,
    final_action  VARCHAR NOT NULL,
    routed        BOOLEAN NOT NULL,
    route_correct BOOLEAN NOT NULL,
    cost          DOUBLE NOT NULL,
    oracle_cost   DOUBLE NOT NULL,
    policy        VARCHAR NOT NULL,
    PRIMARY KEY (run_id, model, view, task, profile, world_id)
);

CREATE TABLE IF NOT EXISTS utility_results (
    run_id             VARCHAR NOT NULL,
    dataset_id         VARCHAR NOT NULL,
    model              VARCHAR NOT NULL,
    view               VARCHAR NOT NULL,
    task               VARCHAR NOT NULL,
    profile            VARCHAR NOT NULL,
    scope              VARCHAR NOT NULL,  -- pooled | <domain>
    mean_cost          DOUBLE NOT NULL,
    ci_low             DOUBLE NOT NULL,
    ci_high            DOUBLE NOT NULL,
    oracle_cost        DOUBLE NOT NULL,
    coverage           DOUBLE,            -- selective: automatic routing share
    routed_error       DOUBLE,            -- selective: wrong among routed
    clarification_rate DOUBLE,            -- clarification: share that bought a check
    fallback_rate      DOUBLE NOT NULL,
    n                  INTEGER NOT NULL,
    PRIMARY KEY (run_id, model, view, task, profile, scope)
);

CREATE TABLE IF NOT EXISTS utility_differences (
    run_id      VARCHAR NOT NULL,
    dataset_id  VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    view_a      VARCHAR NOT NULL,
    view_b      VARCHAR NOT NULL,
    task        VARCHAR NOT NULL,
    profile     VARCHAR NOT NULL,
    difference  DOUBLE NOT NULL,
    ci_low      DOUBLE NOT NULL,
    ci_high     DOUBLE NOT NULL,
    noninferior BOOLEAN NOT NULL,        -- ci_high <= delta = 0.1
    n           INTEGER NOT NULL,
    PRIMARY KEY (run_id, model, view_a, view_b, task, profile)
);

CREATE TABLE IF NOT EXISTS front_points (
    run_id              VARCHAR NOT NULL,
    dataset_id          VARCHAR NOT NULL,
    task                VARCHAR NOT NULL,
    profile             VARCHAR NOT NULL,
    model               VARCHAR NOT NULL,
    view                VARCHAR NOT NULL,
    recovery            DOUBLE NOT NULL,
    recovery_ci_low     DOUBLE,
    recovery_ci_high    DOUBLE,
    mean_cost           DOUBLE NOT NULL,
    cost_ci_low         DOUBLE,
    cost_ci_high        DOUBLE,
    nondominated_models BOOLEAN NOT NULL,
    nondominated_all    BOOLEAN NOT NULL,
    PRIMARY KEY (run_id, task, profile, model, view)
);
