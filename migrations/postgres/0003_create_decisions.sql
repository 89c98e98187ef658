-- Every decision people take (approve, reject, open a PR): the audit log.
-- Append-only: rows are never updated or deleted by the application.
CREATE TABLE decisions (
    seq              BIGSERIAL PRIMARY KEY,
    investigation_id TEXT NOT NULL REFERENCES investigations(id) ON DELETE RESTRICT,
    actor            TEXT NOT NULL,
    role             TEXT NOT NULL,
    action           TEXT NOT NULL,
    reason           TEXT,
    at               TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX decisions_by_investigation ON decisions (investigation_id, seq);
