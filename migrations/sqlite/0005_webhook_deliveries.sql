-- Outgoing webhooks (#13): one row per delivery attempt of a signed event
-- to one configured URL (see the PostgreSQL migration 0013).
CREATE TABLE webhook_deliveries (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    investigation_id TEXT NOT NULL,
    event            TEXT NOT NULL,
    delivery_id      TEXT NOT NULL,
    url              TEXT NOT NULL,
    attempt          INTEGER NOT NULL,
    delivered        INTEGER NOT NULL,
    http_status      INTEGER,
    error            TEXT,
    at               TEXT NOT NULL
);
CREATE INDEX webhook_deliveries_by_investigation ON webhook_deliveries(investigation_id, seq);
