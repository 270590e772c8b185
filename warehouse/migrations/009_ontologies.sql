-- Own decision tasks (issue 14, OWN_TASK.md): ontology files, stored once per version (the sha256
-- of the file's canonical JSON), and the ontology each dataset uses. A dataset without a row
-- here uses the packaged TUPLE ontology. The row can change only while the dataset has no worlds.
CREATE TABLE IF NOT EXISTS ontologies (
    sha256      VARCHAR PRIMARY KEY,
    body        VARCHAR NOT NULL,               -- the canonical JSON (sorted keys, no whitespace)
    source      VARCHAR,                        -- the file name it was first read from
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);

CREATE TABLE IF NOT EXISTS dataset_ontologies (
    dataset_id  VARCHAR PRIMARY KEY,
    sha256      VARCHAR NOT NULL,
    ingested_at TIMESTAMP NOT NULL
);
