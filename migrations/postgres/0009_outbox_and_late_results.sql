-- The transactional outbox: an event that must follow a state change is
-- written in the same transaction as the change and deleted once the bus
-- acknowledged it; a relay publishes rows a crash left behind (at-least-once,
-- de-duplicated by the message id on the bus).
CREATE TABLE outbox (
    message_id TEXT PRIMARY KEY,
    subject    TEXT NOT NULL,
    payload    BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX outbox_by_age ON outbox (created_at);

-- A verifier's result that arrived after its hypothesis stopped being
-- PENDING (the arbiter decided at the deadline): kept for the record, never
-- allowed to overwrite what the decision was based on.
CREATE TABLE late_verifications (
    hypothesis_id TEXT NOT NULL REFERENCES hypotheses(id) ON DELETE CASCADE,
    message_id    TEXT NOT NULL,
    verifier      TEXT NOT NULL,
    status        TEXT NOT NULL,
    body          JSONB NOT NULL,
    at            TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (hypothesis_id, message_id)
);

-- One investigation per key: the failure-group policy keys its
-- investigations by group and revision, so two suggestions racing for the
-- same failure start one investigation, not two.
ALTER TABLE investigations ADD COLUMN dedupe_key TEXT UNIQUE;
