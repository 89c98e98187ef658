-- Durable outgoing notifications (#13): a signed webhook to one URL or a
-- comment on one Jira issue, stored before it is sent and sent by the
-- investigator's dispatcher (which resumes the pending ones after a
-- restart). `key` (investigation, event, channel, target) makes enqueueing
-- idempotent: a redelivered `decided` event or a repeated request adds
-- nothing. Each attempt is also logged in webhook_deliveries (0013).
CREATE TABLE notifications (
    seq              BIGSERIAL PRIMARY KEY,
    key              TEXT NOT NULL UNIQUE,
    investigation_id TEXT NOT NULL,
    channel          TEXT NOT NULL,
    event            TEXT NOT NULL,
    target           TEXT NOT NULL,
    body             JSONB NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    -- Due from then on; a claimed row is pushed ahead by its lease, so a
    -- dispatcher that dies mid-send leaves it due again.
    next_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    delivered_at     TIMESTAMPTZ,
    -- Out of attempts: kept, with last_error, for the operator.
    given_up_at      TIMESTAMPTZ,
    last_error       TEXT,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX notifications_due ON notifications (next_at)
    WHERE delivered_at IS NULL AND given_up_at IS NULL;
CREATE INDEX notifications_by_investigation ON notifications (investigation_id, seq);
