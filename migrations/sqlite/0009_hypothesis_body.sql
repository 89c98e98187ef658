-- Each hypothesis's full JSON, as the fleet's store keeps it (PostgreSQL
-- 0001): the report save is one statement set for both databases.
ALTER TABLE hypotheses ADD COLUMN body TEXT;
