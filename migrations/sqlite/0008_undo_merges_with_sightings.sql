-- Undoing a similarity merge (#15, as postgres 0017): who undid it, why,
-- how many sightings it moved back; and the sightings counted through the
-- merging path, so an undone merge moves what it counted back.
ALTER TABLE group_merges ADD COLUMN undone_by TEXT;
ALTER TABLE group_merges ADD COLUMN undo_reason TEXT;
ALTER TABLE group_merges ADD COLUMN moved INTEGER;
ALTER TABLE group_merges ADD COLUMN profile TEXT;

CREATE TABLE group_sightings (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    group_key   TEXT NOT NULL,
    exact_key   TEXT NOT NULL,
    at          INTEGER NOT NULL,
    occurrence  TEXT NOT NULL
);
CREATE INDEX group_sightings_by_group ON group_sightings(group_key, exact_key);
