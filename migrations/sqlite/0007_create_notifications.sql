-- Durable outgoing notifications for `tracelab serve` (#13): the same rows
-- as the fleet's (PostgreSQL 0015, 0016): a signed webhook to one URL or a
-- comment on one Jira issue, stored before it is sent (in the stage's own
-- transaction where there is one), sent and retried by serve's dispatcher.
-- Times are Unix milliseconds, so "due" is an integer comparison.
CREATE TABLE notifications (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    key              TEXT NOT NULL UNIQUE,
    investigation_id TEXT NOT NULL,
    channel          TEXT NOT NULL,
    event            TEXT NOT NULL,
    target           TEXT NOT NULL,
    -- JSON; NULL until the dispatcher renders it from the investigation.
    body             TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_at          INTEGER NOT NULL DEFAULT 0,
    delivered_at     INTEGER,
    given_up_at      INTEGER,
    last_error       TEXT,
    created_at       INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
);
CREATE INDEX notifications_due ON notifications (next_at)
    WHERE delivered_at IS NULL AND given_up_at IS NULL;
CREATE INDEX notifications_by_investigation ON notifications (investigation_id, seq);
