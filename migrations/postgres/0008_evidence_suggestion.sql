-- The investigation the group policy asked for when this evidence was
-- recorded ({"reason": ..., "count": n}), written in the same transaction as
-- the group's mark: a retry re-publishes the suggestion if its first publish
-- was lost (an outbox of one).
ALTER TABLE evidence ADD COLUMN suggestion JSONB;
