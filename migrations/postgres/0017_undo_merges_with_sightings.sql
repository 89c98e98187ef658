-- Undoing a similarity merge (#15): who undid it, why, and how many
-- sightings it moved back; and the sightings counted through the merging
-- path, each under the group it was counted in and its own exact key, so
-- an undone merge moves what it counted back to the exact key's own group.
ALTER TABLE group_merges ADD COLUMN undone_by TEXT;
ALTER TABLE group_merges ADD COLUMN undo_reason TEXT;
ALTER TABLE group_merges ADD COLUMN moved BIGINT;
-- The merged trace's stack profile: its own group compares with it once undone.
ALTER TABLE group_merges ADD COLUMN profile JSONB;

CREATE TABLE group_sightings (
    id          BIGSERIAL PRIMARY KEY,
    group_key   TEXT NOT NULL,
    exact_key   TEXT NOT NULL,
    at          BIGINT NOT NULL,
    -- tracelab_ingest::Occurrence as JSON, its key the exact key.
    occurrence  JSONB NOT NULL
);
CREATE INDEX group_sightings_by_group ON group_sightings (group_key, exact_key);
