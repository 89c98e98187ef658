-- The culprit search's judgements, one row per revision and oracle, written
-- as the search probes: an investigation redelivered after its investigator
-- died resumes from them instead of probing again (tracelab_domain::journal).
CREATE TABLE probe_journal (
    investigation_id TEXT NOT NULL REFERENCES investigations(id) ON DELETE CASCADE,
    revision         TEXT NOT NULL,
    oracle           TEXT NOT NULL,
    result           TEXT NOT NULL CHECK (result IN ('good', 'bad', 'untestable')),
    runs             INTEGER NOT NULL CHECK (runs >= 0),
    passes           INTEGER NOT NULL CHECK (passes >= 0),
    at               TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (investigation_id, revision, oracle)
);

-- The failure's classification at the bad revision (re-runs, decision,
-- baseline), once an attempt decided it: a redelivered investigation does
-- not re-run what classified it.
CREATE TABLE reproduction_journal (
    investigation_id TEXT PRIMARY KEY REFERENCES investigations(id) ON DELETE CASCADE,
    classification   JSONB NOT NULL,
    at               TIMESTAMPTZ NOT NULL DEFAULT now()
);
