-- Failure groups (tracelab-ingest's FailureGroup): one row per group key.
-- Times are the caller's unix seconds (the model never reads a clock), kept
-- as BIGINT so a value reads back exactly. `record` serialises writers of one
-- group with a row lock (SELECT ... FOR UPDATE) and creates a group with
-- INSERT ... ON CONFLICT DO NOTHING, so concurrent sightings are all counted.
CREATE TABLE failure_groups (
    group_key        TEXT PRIMARY KEY,
    title            TEXT NOT NULL,
    kind             TEXT NOT NULL,
    language         TEXT NOT NULL,
    first_seen       BIGINT NOT NULL,
    last_seen        BIGINT NOT NULL,
    count            BIGINT NOT NULL,
    commits          TEXT[] NOT NULL,
    branches         TEXT[] NOT NULL,
    test_ids         TEXT[] NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('open', 'resolved')),
    resolved_at      BIGINT,
    resolved_commit  TEXT,
    regressions      INTEGER NOT NULL,
    investigation    JSONB,
    version          BIGINT NOT NULL
);
-- Byte order (COLLATE "C") for the tie-break, as the in-memory store sorts keys.
CREATE INDEX failure_groups_by_last_seen ON failure_groups (last_seen DESC, group_key COLLATE "C");
