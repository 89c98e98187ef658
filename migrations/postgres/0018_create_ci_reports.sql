-- CI reports kept for mining in the fleet (#16): ingest publishes one
-- CiReportRecorded per report (passing ones too); the indexer's durable
-- consumer keeps each here, by (repository, branch) in arrival order, and
-- mines a branch's failing -> passing sequence once a report completes it.
-- The id is the event's report id, so a redelivered event adds nothing.
CREATE TABLE ci_reports (
    seq              BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id               TEXT NOT NULL UNIQUE,
    repository       TEXT NOT NULL,
    branch           TEXT NOT NULL,
    commit_sha       TEXT NOT NULL,
    job              TEXT NOT NULL,
    has_test_reports BOOLEAN NOT NULL,
    -- tracelab_experience::Failure list, frames as CI printed them.
    failures         JSONB NOT NULL,
    received_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX ci_reports_by_branch ON ci_reports(repository, branch, seq);

-- What mining one completed sequence gave: how many records, and the notes
-- saying what could not be organised (a force-push, no workflow, a problem
-- left unresolved). Written again when the same sequence is mined again.
CREATE TABLE ci_report_minings (
    repository TEXT NOT NULL,
    branch     TEXT NOT NULL,
    failing    TEXT NOT NULL,
    passing    TEXT NOT NULL,
    workflow   TEXT NOT NULL,
    records    INTEGER NOT NULL,
    notes      JSONB NOT NULL,
    mined_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (repository, branch, failing, passing)
);
