-- Who started an investigation, the draft pull request it became (and the
-- last error opening it), and the audit log of people's decisions (#13).
ALTER TABLE investigations ADD COLUMN started_by TEXT;
ALTER TABLE investigations ADD COLUMN pull_request_url TEXT;
ALTER TABLE investigations ADD COLUMN pull_request_number INTEGER;
ALTER TABLE investigations ADD COLUMN pull_request_host TEXT;
ALTER TABLE investigations ADD COLUMN pull_request_error TEXT;

-- Append-only: the triggers below refuse every UPDATE and DELETE, and an
-- investigation with audit rows cannot be deleted (RESTRICT).
CREATE TABLE decisions (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    investigation_id TEXT NOT NULL REFERENCES investigations(id) ON DELETE RESTRICT,
    actor            TEXT NOT NULL,
    role             TEXT NOT NULL,
    action           TEXT NOT NULL CHECK (action IN ('started', 'approved', 'rejected', 'pull_request_opened', 'pull_request_failed')),
    reason           TEXT,
    at               TEXT NOT NULL
);
CREATE INDEX decisions_by_investigation ON decisions(investigation_id, seq);

CREATE TRIGGER decisions_no_update BEFORE UPDATE ON decisions
BEGIN
    SELECT RAISE(ABORT, 'decisions is append-only: UPDATE refused');
END;

CREATE TRIGGER decisions_no_delete BEFORE DELETE ON decisions
BEGIN
    SELECT RAISE(ABORT, 'decisions is append-only: DELETE refused');
END;
