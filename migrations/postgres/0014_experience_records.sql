-- Repair experience (#16): one row per problem-level record mined from a
-- completed failing -> passing history. The id is a hash of repository,
-- workflow, history and problem, so mining a history again adds nothing.
-- The record itself (L1/L2/L3) is kept whole as JSON; the columns are what
-- retrieval filters on (scope: repository and workflow; the problem).
CREATE TABLE experience_records (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    repository TEXT NOT NULL,
    workflow   TEXT NOT NULL,
    history    TEXT NOT NULL,
    problem    TEXT NOT NULL,
    record     JSONB NOT NULL,
    mined_at   TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX experience_records_by_repository ON experience_records(repository, problem);
