-- Failure groups (tracelab-ingest's FailureGroup), embedded store. Sets are
-- JSON arrays; times are the caller's unix seconds. Writers take the database
-- write lock first (BEGIN IMMEDIATE), so concurrent sightings are all counted.
CREATE TABLE failure_groups (
    group_key        TEXT PRIMARY KEY,
    title            TEXT NOT NULL,
    kind             TEXT NOT NULL,
    language         TEXT NOT NULL,
    first_seen       INTEGER NOT NULL,
    last_seen        INTEGER NOT NULL,
    count            INTEGER NOT NULL,
    commits          TEXT NOT NULL,
    branches         TEXT NOT NULL,
    test_ids         TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('open', 'resolved')),
    resolved_at      INTEGER,
    resolved_commit  TEXT,
    regressions      INTEGER NOT NULL,
    investigation    TEXT,
    version          INTEGER NOT NULL
);
CREATE INDEX failure_groups_by_last_seen ON failure_groups(last_seen DESC, group_key);
