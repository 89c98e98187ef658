-- Investigations, their transitions, hypotheses and experiments (embedded store).
CREATE TABLE investigations (
    id            TEXT PRIMARY KEY,
    repository    TEXT NOT NULL,
    test_command  TEXT NOT NULL,
    state         TEXT NOT NULL,
    verdict       TEXT,
    culprit       TEXT,
    report_json   TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

CREATE TABLE transitions (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    investigation_id TEXT NOT NULL REFERENCES investigations(id) ON DELETE CASCADE,
    from_state       TEXT NOT NULL,
    to_state         TEXT NOT NULL,
    at               TEXT NOT NULL,
    reason           TEXT
);
CREATE INDEX transitions_by_investigation ON transitions(investigation_id, seq);

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
CREATE INDEX hypotheses_by_investigation ON hypotheses(investigation_id, number);

CREATE TABLE experiments (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    hypothesis_id TEXT NOT NULL REFERENCES hypotheses(id) ON DELETE CASCADE,
    step          TEXT NOT NULL,
    command       TEXT NOT NULL,
    revision      TEXT NOT NULL,
    exit_code     INTEGER,
    duration_ms   INTEGER NOT NULL,
    outcome       TEXT NOT NULL,
    output        TEXT NOT NULL,
    sandbox       TEXT NOT NULL,
    note          TEXT,
    runs          INTEGER NOT NULL,
    failures      INTEGER NOT NULL
);
CREATE INDEX experiments_by_hypothesis ON experiments(hypothesis_id, seq);
