-- Failure groups for issue #15 (as postgres 0012): repositories seen in,
-- the latest environment, the stack profile similar traces are compared
-- with, the investigation whose fix resolved it, and undoable merges.
ALTER TABLE failure_groups ADD COLUMN repositories TEXT NOT NULL DEFAULT '[]';
ALTER TABLE failure_groups ADD COLUMN environment TEXT;
ALTER TABLE failure_groups ADD COLUMN profile TEXT;
ALTER TABLE failure_groups ADD COLUMN resolved_by TEXT;

CREATE TABLE group_merges (
    exact_key   TEXT PRIMARY KEY,
    group_key   TEXT NOT NULL REFERENCES failure_groups(group_key),
    score       REAL NOT NULL,
    nearest     TEXT NOT NULL,
    matched     TEXT NOT NULL,
    merged_at   INTEGER NOT NULL,
    undone_at   INTEGER
);
CREATE INDEX group_merges_by_group ON group_merges(group_key);
