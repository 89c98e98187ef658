-- Who started an investigation, the draft pull request it became (and the
-- last error opening it), and the decisions table as the append-only audit
-- log of people's decisions (#13).
ALTER TABLE investigations
    ADD COLUMN started_by TEXT,
    ADD COLUMN pull_request_url TEXT,
    ADD COLUMN pull_request_number BIGINT,
    ADD COLUMN pull_request_host TEXT,
    ADD COLUMN pull_request_error TEXT;

-- One vocabulary with the embedded store (tracelab_domain::audit::AuditAction);
-- rows written before it are renamed, once, before the trigger exists.
UPDATE decisions SET action = 'approved' WHERE action = 'approve';
UPDATE decisions SET action = 'rejected' WHERE action = 'reject';
ALTER TABLE decisions ADD CONSTRAINT decisions_action CHECK (
    action IN ('started', 'approved', 'rejected', 'pull_request_opened', 'pull_request_failed')
);

-- Append-only, enforced by the database rather than by the application's
-- good behaviour: UPDATE, DELETE and TRUNCATE are refused for every role
-- that does not drop the trigger (which needs the table's owner).
CREATE FUNCTION decisions_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'decisions is append-only: % refused', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER decisions_no_update_or_delete
    BEFORE UPDATE OR DELETE ON decisions
    FOR EACH ROW EXECUTE FUNCTION decisions_append_only();

CREATE TRIGGER decisions_no_truncate
    BEFORE TRUNCATE ON decisions
    FOR EACH STATEMENT EXECUTE FUNCTION decisions_append_only();
