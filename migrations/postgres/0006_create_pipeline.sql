-- What the fleet's services hand each other through the store: the original
-- request (API → investigator), the investigator's proposal (→ verifiers and
-- arbiter) and each hypothesis in full (verifier → arbiter).
ALTER TABLE investigations ADD COLUMN request JSONB;

ALTER TABLE hypotheses ADD COLUMN body JSONB;
ALTER TABLE hypotheses ADD COLUMN verified_by TEXT;

CREATE TABLE proposals (
    investigation_id TEXT PRIMARY KEY REFERENCES investigations(id) ON DELETE CASCADE,
    classification   JSONB NOT NULL,
    proposal         JSONB NOT NULL,
    bad              TEXT NOT NULL,
    test_command     TEXT NOT NULL,
    -- After this the arbiter decides with the results it has.
    deadline         TIMESTAMPTZ NOT NULL,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX proposals_by_deadline ON proposals (deadline);
