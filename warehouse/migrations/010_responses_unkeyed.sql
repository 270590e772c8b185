-- Native responses without a primary-key index (issue #17 goal 3, issue #20 item 7). The key
-- (dataset_id, model, world_id) stays unique: the ingest is the only writer of this table and
-- stores a batch's rows with an anti-join against the stored keys (first line of a key wins),
-- which is 2.4x faster than a checked primary key and keeps no index in memory while a large
-- file's transaction is open (the index grew with the file).
CREATE TABLE responses_010 (
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
    line_no            INTEGER NOT NULL
);
INSERT INTO responses_010 SELECT dataset_id, model, world_id, status, choice, probabilities, confidence, valid,
                                 invalid_reason, choice_not_argmax, ingest_id, line_no
FROM responses ORDER BY dataset_id, model, world_id;
DROP TABLE responses;
ALTER TABLE responses_010 RENAME TO responses;
