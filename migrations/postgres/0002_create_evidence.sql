-- Evidence as ingest stores it: already redacted, with its signatures and failure group.
CREATE TABLE evidence (
    id               TEXT PRIMARY KEY,
    kind             TEXT NOT NULL,           -- junit, build_log, stack_trace, log_line, diff, ...
    source           TEXT NOT NULL,           -- ci, otlp, http, cli
    repository       TEXT,
    commit_sha       TEXT,
    stack_signature  TEXT,
    error_signature  TEXT,
    group_key        TEXT,
    body             JSONB NOT NULL,
    received_at      TIMESTAMPTZ NOT NULL
);
CREATE INDEX evidence_by_group ON evidence (group_key, received_at);

-- Which evidence an investigation looks at.
CREATE TABLE investigation_evidence (
    investigation_id TEXT NOT NULL REFERENCES investigations(id) ON DELETE CASCADE,
    evidence_id      TEXT NOT NULL REFERENCES evidence(id) ON DELETE CASCADE,
    PRIMARY KEY (investigation_id, evidence_id)
);
