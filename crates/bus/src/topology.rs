//! Subjects and streams: which subject lands in which stream, with which
//! retention. One [`Topology`] describes the whole fleet; a prefix lets tests
//! (and several fleets on one server) live side by side.

use std::time::Duration;

/// How long a stream keeps messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// Kept until a limit (age) is reached; any number of durable consumers
    /// read the same messages. For events.
    Limits,
    /// A message is removed once one consumer acks (or terminates) it; the
    /// consumers of one durable share the work. For jobs.
    WorkQueue,
}

/// One stream: a name, the subjects it captures, its retention.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSpec {
    pub name: String,
    pub subjects: Vec<String>,
    pub retention: Retention,
    /// A second publish with the same message id within this window is dropped.
    pub duplicate_window: Duration,
    /// `None` keeps messages until they are consumed (work queues) or forever.
    pub max_age: Option<Duration>,
    /// The stream's size limit. A full stream refuses new messages (the
    /// publisher gets an error and retries, or leaves the event in the
    /// outbox) rather than dropping unconsumed ones.
    pub max_bytes: i64,
    /// Payloads are raw, unredacted input (CI reports before ingest read
    /// them): a dead letter keeps a reference to such a message, never its
    /// payload or its publisher's headers.
    pub raw_payload: bool,
}

impl StreamSpec {
    /// Whether this stream captures `subject`.
    pub fn captures(&self, subject: &str) -> bool {
        self.subjects.iter().any(|p| subject_matches(p, subject))
    }
}

/// The fleet's subjects and streams under one prefix (`tracelab` in production).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    prefix: String,
    streams: Vec<StreamSpec>,
}

const DAY: Duration = Duration::from_secs(24 * 3600);
/// Stream size limits. JetStream reserves a stream's `max_bytes` from the
/// server's file store when the stream is created, so they are sized for
/// what each stream holds (small protobuf events; raw CI reports waiting for
/// an ingest), not generously: a full stream refuses new messages.
const MIB: i64 = 1 << 20;
/// The limit of the largest streams in the production topology.
const DEFAULT_STREAM_BYTES: i64 = 512 * MIB;

impl Topology {
    /// The production topology (`tracelab.…` subjects, `TRACELAB_…` streams).
    pub fn fleet() -> Self {
        Self::with_prefix("tracelab")
    }

    /// The same layout under another prefix (lowercase ASCII letters, digits
    /// and `_`), so tests sharing one server do not see each other's messages.
    pub fn with_prefix(prefix: &str) -> Self {
        assert!(
            !prefix.is_empty()
                && prefix
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "topology prefix must be lowercase ASCII letters, digits or _: {prefix:?}"
        );
        let upper = prefix.to_ascii_uppercase();
        let dup = Duration::from_secs(120);
        let streams = vec![
            StreamSpec {
                name: format!("{upper}_EVIDENCE"),
                subjects: vec![format!("{prefix}.evidence.>")],
                retention: Retention::Limits,
                duplicate_window: dup,
                max_age: Some(7 * DAY),
                max_bytes: DEFAULT_STREAM_BYTES,
                raw_payload: false,
            },
            StreamSpec {
                name: format!("{upper}_INVESTIGATIONS"),
                subjects: vec![format!("{prefix}.investigations.>")],
                retention: Retention::Limits,
                duplicate_window: dup,
                max_age: Some(30 * DAY),
                max_bytes: DEFAULT_STREAM_BYTES,
                raw_payload: false,
            },
            StreamSpec {
                name: format!("{upper}_JOBS_VERIFY"),
                subjects: vec![format!("{prefix}.jobs.verify")],
                retention: Retention::WorkQueue,
                duplicate_window: dup,
                max_age: None,
                max_bytes: DEFAULT_STREAM_BYTES / 4,
                raw_payload: false,
            },
            StreamSpec {
                name: format!("{upper}_DLQ"),
                subjects: vec![format!("{prefix}.dlq.>")],
                retention: Retention::Limits,
                duplicate_window: dup,
                max_age: Some(30 * DAY),
                max_bytes: DEFAULT_STREAM_BYTES / 4,
                raw_payload: false,
            },
            // Raw evidence CI systems publish for the ingest (work queue:
            // one ingest takes each message; removed once processed).
            StreamSpec {
                name: format!("{upper}_INTAKE"),
                subjects: vec![format!("{prefix}.intake.>")],
                retention: Retention::WorkQueue,
                duplicate_window: dup,
                max_age: None,
                max_bytes: DEFAULT_STREAM_BYTES,
                raw_payload: true,
            },
        ];
        Self {
            prefix: prefix.to_string(),
            streams,
        }
    }

    /// The same topology scaled so its largest streams (events, raw input)
    /// hold `max_bytes`; the others keep their share (a quarter for verify
    /// jobs and dead letters). JetStream reserves each limit from the
    /// server's file store when it creates the stream, so tests that create
    /// many topologies on one server give them small limits.
    pub fn with_stream_limit(mut self, max_bytes: i64) -> Self {
        for spec in &mut self.streams {
            let scaled = i128::from(spec.max_bytes) * i128::from(max_bytes)
                / i128::from(DEFAULT_STREAM_BYTES);
            spec.max_bytes = i64::try_from(scaled).unwrap_or(i64::MAX).max(1);
        }
        self
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn streams(&self) -> &[StreamSpec] {
        &self.streams
    }

    /// Evidence of one kind (`ci`, `logs`, `otlp`, ...): `<prefix>.evidence.<kind>`.
    pub fn evidence(&self, kind: &str) -> String {
        format!("{}.evidence.{kind}", self.prefix)
    }

    /// One event per CI report, passing ones too (`CiReportRecorded`):
    /// `<prefix>.evidence.ci-report`, in the evidence stream. The indexer
    /// keeps each branch's reports from it and mines completed sequences.
    pub fn ci_reports(&self) -> String {
        self.evidence("ci-report")
    }

    /// Everything that happens to one investigation: `<prefix>.investigations.<id>.events`.
    pub fn investigation_events(&self, id: &str) -> String {
        format!("{}.investigations.{id}.events", self.prefix)
    }

    /// One step of one investigation's pipeline: `<prefix>.investigations.<id>.<step>`
    /// (`requested`, `arbitrate.proposed`, `arbitrate.verified.<n>`, `decided`).
    pub fn investigation_step(&self, id: &str, step: &str) -> String {
        format!("{}.investigations.{id}.{step}", self.prefix)
    }

    /// Filter over one step of every investigation: `<prefix>.investigations.*.<step>`.
    pub fn investigation_steps(&self, step: &str) -> String {
        format!("{}.investigations.*.{step}", self.prefix)
    }

    /// The verification work queue: `<prefix>.jobs.verify`.
    pub fn verify_jobs(&self) -> String {
        format!("{}.jobs.verify", self.prefix)
    }

    /// Raw evidence for the ingest (`ci-failures`, `logs`): `<prefix>.intake.<kind>`.
    pub fn intake(&self, kind: &str) -> String {
        format!("{}.intake.{kind}", self.prefix)
    }

    /// Where a message that cannot be processed goes: `<prefix>.dlq.<original subject>`.
    pub fn dead_letter(&self, original: &str) -> String {
        format!("{}.dlq.{original}", self.prefix)
    }

    /// Filter matching every dead letter: `<prefix>.dlq.>`.
    pub fn dead_letters(&self) -> String {
        format!("{}.dlq.>", self.prefix)
    }

    pub fn evidence_stream(&self) -> &StreamSpec {
        &self.streams[0]
    }
    pub fn investigations_stream(&self) -> &StreamSpec {
        &self.streams[1]
    }
    pub fn verify_jobs_stream(&self) -> &StreamSpec {
        &self.streams[2]
    }
    pub fn dead_letter_stream(&self) -> &StreamSpec {
        &self.streams[3]
    }
    pub fn intake_stream(&self) -> &StreamSpec {
        &self.streams[4]
    }

    /// The stream that captures `subject`, if any.
    pub fn stream_for(&self, subject: &str) -> Option<&StreamSpec> {
        self.streams.iter().find(|s| s.captures(subject))
    }

    pub fn stream(&self, name: &str) -> Option<&StreamSpec> {
        self.streams.iter().find(|s| s.name == name)
    }
}

/// NATS subject matching: `*` is one token, `>` the rest (one token or more).
pub fn subject_matches(pattern: &str, subject: &str) -> bool {
    let mut p = pattern.split('.');
    let mut s = subject.split('.');
    loop {
        match (p.next(), s.next()) {
            (Some(">"), Some(_)) => return true,
            (Some("*"), Some(_)) => {}
            (Some(a), Some(b)) if a == b => {}
            (None, None) => return true,
            _ => return false,
        }
    }
}

/// Whether two filters can match a common subject (approximation good for
/// literal subjects and trailing wildcards, which is all the fleet uses).
pub fn filters_overlap(a: &str, b: &str) -> bool {
    subject_matches(a, b) || subject_matches(b, a) || a == b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        let check = |p: &str, s: &str, expected: bool| {
            assert_eq!(subject_matches(p, s), expected, "{p} vs {s}");
        };
        check("a.b", "a.b", true);
        check("a.b", "a.c", false);
        check("a.*", "a.b", true);
        check("a.*", "a.b.c", false);
        check("a.>", "a.b.c", true);
        check("a.>", "a", false);
        check("a.*.events", "a.x.events", true);
        check("a.*.events", "a.x.other", false);
        check("a.b.c", "a.b", false);
    }

    #[test]
    fn every_fleet_subject_has_exactly_one_stream() {
        let t = Topology::fleet();
        for subject in [
            t.evidence("ci"),
            t.ci_reports(),
            t.dead_letter(&t.ci_reports()),
            t.investigation_events("01J"),
            t.verify_jobs(),
            t.dead_letter(&t.verify_jobs()),
            t.intake("ci-failures"),
            t.dead_letter(&t.intake("logs")),
        ] {
            let n = t.streams().iter().filter(|s| s.captures(&subject)).count();
            assert_eq!(n, 1, "{subject}");
        }
        assert_eq!(t.stream_for("elsewhere.x"), None);
        assert_eq!(t.verify_jobs_stream().retention, Retention::WorkQueue);
        assert_eq!(t.verify_jobs(), "tracelab.jobs.verify");
        assert_eq!(t.dead_letter_stream().name, "TRACELAB_DLQ");
        assert_eq!(t.intake_stream().name, "TRACELAB_INTAKE");
        assert_eq!(t.intake_stream().retention, Retention::WorkQueue);
        assert_eq!(t.intake("logs"), "tracelab.intake.logs");
        assert_eq!(t.ci_reports(), "tracelab.evidence.ci-report");
        assert_eq!(t.stream_for(&t.ci_reports()), Some(t.evidence_stream()));
    }

    #[test]
    #[should_panic(expected = "topology prefix")]
    fn prefix_with_a_dot_is_refused() {
        Topology::with_prefix("a.b");
    }
}
