-- Failure groups for issue #15: the repositories a group was seen in (the
-- `repository` filter of GET /v1/groups), the environment of its latest
-- sighting, the stack profile a new trace is compared with (similar-issue
-- merging), the investigation whose approved fix resolved it, and the
-- record of every similarity merge (score, matched frames) so it can be
-- undone. Evidence keeps the CI report's environment fingerprint.
ALTER TABLE failure_groups ADD COLUMN repositories TEXT[] NOT NULL DEFAULT '{}';
ALTER TABLE failure_groups ADD COLUMN environment JSONB;
ALTER TABLE failure_groups ADD COLUMN profile JSONB;
ALTER TABLE failure_groups ADD COLUMN resolved_by TEXT;
CREATE INDEX failure_groups_by_repository ON failure_groups USING GIN (repositories);

ALTER TABLE evidence ADD COLUMN environment JSONB;
-- The failure's own exact key when it was counted in another group by similarity.
ALTER TABLE evidence ADD COLUMN exact_key TEXT;

-- One row per exact key merged into another group. While `undone_at` is
-- null, sightings of `exact_key` are counted in `group_key`; undoing it
-- sends the next sighting to a group of its own.
CREATE TABLE group_merges (
    exact_key   TEXT PRIMARY KEY,
    group_key   TEXT NOT NULL REFERENCES failure_groups(group_key),
    score       DOUBLE PRECISION NOT NULL,
    nearest     TEXT NOT NULL,
    matched     JSONB NOT NULL,
    merged_at   BIGINT NOT NULL,
    undone_at   BIGINT
);
CREATE INDEX group_merges_by_group ON group_merges (group_key);
