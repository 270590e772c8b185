-- The learned bounded-cost WCPQ variants (issue 15; paper H.2, Table 15): per (model, domain) and
-- variant, how its deterministic mapping was chosen and verified on the test split. Recovery and
-- costs are in defense_results and defense_costs under the variant's defense name.
CREATE TABLE IF NOT EXISTS learned_wcpq (
    run_id            VARCHAR NOT NULL,
    dataset_id        VARCHAR NOT NULL,
    model             VARCHAR NOT NULL,
    domain            VARCHAR NOT NULL,
    defense           VARCHAR NOT NULL,   -- wcpq learned <budget> paired | no pair
    budget            DOUBLE NOT NULL,    -- allowed cost increase per true class, in review costs
    js_weight         DOUBLE NOT NULL,    -- the pair Jensen-Shannon loss weight (0: no pair)
    seed              INTEGER NOT NULL,   -- the training seed the proxy attackers chose
    proxy             VARCHAR NOT NULL,   -- JSON {seed: [validation recovery, log loss]}
    pool              INTEGER NOT NULL,   -- codewords in the learned pool
    deployed          INTEGER NOT NULL,   -- codewords kept at deployment (at most 64)
    guarded           INTEGER NOT NULL,   -- test responses the verification sent back to the identity
    available         INTEGER NOT NULL,   -- test responses available
    covered           INTEGER NOT NULL,   -- test responses given a codeword
    max_cost_increase DOUBLE NOT NULL,    -- largest realized per-world cost increase on test, in review costs
    PRIMARY KEY (run_id, model, domain, defense)
);
