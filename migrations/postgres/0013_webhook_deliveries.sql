-- Outgoing webhooks (#13): one row per delivery attempt of a signed event
-- (created, decided, approved, rejected, pull_request_opened) to one
-- configured URL, so the investigation's page can show what was sent and
-- whether it arrived.
CREATE TABLE webhook_deliveries (
    seq              BIGSERIAL PRIMARY KEY,
    investigation_id TEXT NOT NULL,
    event            TEXT NOT NULL,
    delivery_id      TEXT NOT NULL,
    url              TEXT NOT NULL,
    attempt          INTEGER NOT NULL,
    delivered        BOOLEAN NOT NULL,
    http_status      INTEGER,
    error            TEXT,
    at               TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_by_investigation ON webhook_deliveries (investigation_id, seq);
