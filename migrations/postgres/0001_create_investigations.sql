-- Investigations, their state transitions, hypotheses and experiments (fleet store).
CREATE TABLE investigations (
    id            TEXT PRIMARY KEY,
    repository    TEXT NOT NULL,
    test_command  TEXT NOT NULL,
    state         TEXT NOT NULL,
    verdict       TEXT,
    culprit       TEXT,
    report        JSONB,
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX investigations_by_created ON investigations (created_at DESC, id DESC);

CREATE TABLE transitions (
    seq              BIGSERIAL PRIMARY KEY,
    investigation_id TEXT NOT NULL REFERENCES investigations(id) ON DELETE CASCADE,
    from_state       TEXT NOT NULL,
    to_state         TEXT NOT NULL,
    at               TIMESTAMPTZ NOT NULL,
    reason           TEXT
);
CREATE INDEX transitions_by_investigation ON transitions (investigation_id, seq);

CREATE TABLE hypotheses (
    id               TEXT PRIMARY KEY,
    investigation_id TEXT NOT NULL REFERENCES investigations(id) ON DELETE CASCADE,
    number           INTEGER NOT NULL,
    agent            TEXT NOT NULL,
    kind             TEXT NOT NULL,
    status           TEXT NOT NULL,
    summary          TEXT NOT NULL,
    patch            TEXT,
    branch           TEXT
);
CREATE INDEX hypotheses_by_investigation ON hypotheses (investigation_id, number);

CREATE TABLE experiments (
    seq           BIGSERIAL PRIMARY KEY,
    hypothesis_id TEXT NOT NULL REFERENCES hypotheses(id) ON DELETE CASCADE,
    step          TEXT NOT NULL,
    command       TEXT NOT NULL,
    revision      TEXT NOT NULL,
    exit_code     INTEGER,
    duration_ms   BIGINT NOT NULL,
    outcome       TEXT NOT NULL,
    output        TEXT NOT NULL,
    sandbox       TEXT NOT NULL,
    note          TEXT,
    runs          INTEGER NOT NULL,
    failures      INTEGER NOT NULL
);
CREATE INDEX experiments_by_hypothesis ON experiments (hypothesis_id, seq);
