-- Consumer progress for exactly-once effects: a consumer inserts the message
-- id in the same transaction as its results; a redelivered message finds its
-- id here and does nothing.
CREATE TABLE processed_messages (
    consumer     TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    processed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer, message_id)
);
