-- A stage's notifications are enqueued in the stage's own transaction
-- (#13), before the investigation as it now reads can be rendered: such a
-- row is stored without a body, and the dispatcher renders it from the
-- investigation when it first claims it, storing what it sends so every
-- retry carries the same bytes.
ALTER TABLE notifications ALTER COLUMN body DROP NOT NULL;
