//! A submission: the one path every input takes, whatever its channel: admission
//! (body limit → rate per source → in-flight bound), decoding and parsing on
//! the blocking pool, then per failure: store the evidence row, triage its
//! group when the row is new, publish `EvidenceRecorded` (and
//! `InvestigationSuggested` when the policy says so), and for a CI report
//! one `CiReportRecorded` (`ci_report_event`). The admission
//! [`Permit`] lives until the last publish.

use crate::admission::{Admission, Permit, SourceLimiter};
use crate::body::{self, LogEncoding};
use crate::ci_report_event;
use crate::evidence;
use crate::rejection::{Rejection, ingest_error};
use bytes::Bytes;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use tracelab_bus::Bus;
use tracelab_domain::Error;
use tracelab_evidence::otlp::{self, OtlpLogs};
use tracelab_evidence::similar::{SimilarityConfig, StackProfile};
use tracelab_evidence::{
    CiFailureReport, Decision, DetectedFormat, Failure, Observation, Occurrence, ParseOptions,
    Policy, Reason, Redactor, Trigger, parse, parse_ci_report, parse_log_records,
};
use tracelab_evidence::{Refusal, RequestLimits};
use tracelab_fleet::events;
use tracelab_proto::events::v1::{EvidenceRecorded, InvestigationSuggested};
use tracelab_store::groups::MergeRecord;
use tracelab_store::{EvidenceOutcome, NewEvidence, PgGroupStore, PgStore};

/// What [`Ingest`] is built from (see `intake_parts` in lib.rs).
pub struct Parts {
    pub options: ParseOptions,
    pub redactor: Redactor,
    pub limits: RequestLimits,
    pub limiter: SourceLimiter,
    pub admission: Admission,
    pub policy: Policy,
    /// Similar-issue merging of new exact keys; `None`: exact keys only.
    pub similarity: Option<SimilarityConfig>,
}

/// Which endpoint a body was sent to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// A `CiFailureReport` (`/v1/ci-failures`, `<prefix>.intake.ci-failures`).
    CiReport,
    /// Log records (`/v1/logs`, `<prefix>.intake.logs`).
    Logs(LogEncoding),
}

/// A body to ingest, already decompressed.
#[derive(Debug, Clone)]
pub struct Submission {
    pub input: Input,
    /// Rate-limit key and (redacted) `source` column.
    pub source: String,
    /// `http`, `grpc` or `intake`, kept in the evidence body.
    pub channel: &'static str,
    pub body: Bytes,
}

/// The answer to a submission (the 202 body).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Summary {
    /// One per failure, in order; the same request sent again gets the same ids.
    pub evidence_ids: Vec<String>,
    pub failures: usize,
    /// Failures stored by this request (the rest were stored by an earlier copy of it).
    pub stored: usize,
    pub groups: Vec<GroupOutcome>,
    pub diagnostics: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GroupOutcome {
    pub key: String,
    /// `new`, `recurrence`, `regression`, or `already_recorded` for a repeat.
    pub observation: &'static str,
    /// The policy's decision; null for a repeat (it was decided the first time).
    pub decision: Option<Decision>,
    /// Set when this failure's exact key was merged into `key` by
    /// similarity now: its own key, the score and the matched frames.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergeRecord>,
}

/// Parsed failures of one submission with what they share.
struct Batch {
    kind: &'static str,
    source: String,
    channel: &'static str,
    digest: [u8; 32],
    repository: Option<String>,
    commit: Option<String>,
    branch: Option<String>,
    job: Value,
    formats: Value,
    /// The CI report's environment fingerprint (none for logs).
    environment: Option<Value>,
    failures: Vec<Failure>,
    diagnostics: usize,
}

pub struct Ingest {
    groups: PgGroupStore,
    bus: Arc<dyn Bus>,
    options: Arc<ParseOptions>,
    redactor: Redactor,
    limits: RequestLimits,
    limiter: SourceLimiter,
    admission: Admission,
    policy: Policy,
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Rejection> + Send + 'static,
) -> Result<T, Rejection> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Rejection::Failed(Error::internal(format!("parsing task failed: {e}"))))?
}

fn observation_name(o: &Observation) -> &'static str {
    match o {
        Observation::New => "new",
        Observation::Recurrence => "recurrence",
        Observation::Regression { .. } => "regression",
    }
}

fn reason_name(r: &Reason) -> &'static str {
    match r {
        Reason::NewOnProtectedBranch { .. } => "new_on_protected_branch",
        Reason::Regression => "regression",
        Reason::Recurrence { .. } => "recurrence",
        Reason::Manual { .. } => "manual",
    }
}

impl Ingest {
    pub fn new(store: PgStore, bus: Arc<dyn Bus>, parts: Parts) -> Self {
        Self {
            groups: match parts.similarity {
                Some(cfg) => PgGroupStore::new(store.pool().clone()).merging(cfg),
                None => PgGroupStore::new(store.pool().clone()),
            },
            bus,
            options: Arc::new(parts.options),
            redactor: parts.redactor,
            limits: parts.limits,
            limiter: parts.limiter,
            admission: parts.admission,
            policy: parts.policy,
        }
    }

    /// The failure groups (read by `GET /v1/groups`).
    pub fn groups(&self) -> &PgGroupStore {
        &self.groups
    }

    /// `text` with secrets and personal data redacted, for error messages
    /// that may quote the input they refused.
    pub fn redact(&self, text: &str) -> String {
        self.redactor.redact_text(text).into_owned()
    }

    pub fn limits(&self) -> &RequestLimits {
        &self.limits
    }

    /// OTLP records read from one request (the rest are counted, not kept).
    pub fn max_records(&self) -> usize {
        self.options.limits.max_records
    }

    /// Room in the in-flight bound for a body of at most `declared` bytes
    /// (the request limit when it is not declared or compressed) while it is
    /// read off the wire: concurrent large uploads are told to retry (Busy)
    /// instead of being buffered without bound before admission. Drop the
    /// permit once the body is read; [`Ingest::submit`] admits the work.
    pub fn reserve_upload(&self, declared: Option<usize>) -> Result<Permit, Rejection> {
        let limit = self.limits.max_body_bytes;
        self.admission
            .try_admit(declared.map_or(limit, |d| d.min(limit)))
    }

    /// Rate per source, then the in-flight bound.
    fn admit(&self, source: &str, cost: u32, bytes: usize) -> Result<Permit, Rejection> {
        self.limiter.check(source, cost)?;
        self.admission.try_admit(bytes)
    }

    /// Admits, parses and records one body.
    pub async fn submit(&self, s: Submission) -> Result<Summary, Rejection> {
        self.limits.check_body(s.body.len())?;
        match s.input {
            Input::CiReport => self.ci_report(s).await,
            Input::Logs(LogEncoding::JsonLines) => self.json_lines(s).await,
            Input::Logs(LogEncoding::Otlp(encoding)) => {
                let body = s.body.clone();
                let max = self.options.limits.max_records;
                let logs = blocking(move || {
                    otlp::decode_logs(&body, encoding, max)
                        .map_err(|e| Refusal::Invalid(e.to_string()).into())
                })
                .await?;
                let digest = evidence::content_digest(&s.body);
                self.otlp_logs(&s.source, s.channel, digest, logs, s.body.len())
                    .await
            }
        }
    }

    async fn ci_report(&self, s: Submission) -> Result<Summary, Rejection> {
        let permit = self.admit(&s.source, 1, s.body.len())?;
        let digest = evidence::content_digest(&s.body);
        let (options, redactor, limits) = (
            self.options.clone(),
            self.redactor.clone(),
            self.limits.clone(),
        );
        let body = s.body;
        let (report, out) = blocking(move || {
            let mut report: CiFailureReport = serde_json::from_slice(&body).map_err(|e| {
                Refusal::Invalid(format!(
                    "the body is not a CI failure report (schema 1 JSON): {e}"
                ))
            })?;
            report.check(&limits)?;
            report.redact_metadata(&redactor);
            let out = parse_ci_report(&report, &options);
            Ok((report, out))
        })
        .await?;
        let formats: BTreeMap<&String, &str> =
            out.formats.iter().map(|(k, v)| (k, v.as_str())).collect();
        // One event per report, passing ones too, once its evidence is stored.
        let received_ms =
            (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64;
        let event = ci_report_event::event(
            &report,
            &out.failures,
            &self.redact(&s.source),
            &digest,
            received_ms,
        );
        let batch = Batch {
            kind: "ci",
            source: s.source,
            channel: s.channel,
            digest,
            repository: report.repository.clone(),
            commit: report.commit.clone(),
            branch: report.branch.clone(),
            job: serde_json::to_value(&report.job).unwrap_or(Value::Null),
            formats: json!(formats),
            environment: serde_json::to_value(&report.environment).ok(),
            diagnostics: out.diagnostics.len(),
            failures: out.failures,
        };
        let summary = self.record(batch, permit).await?;
        ci_report_event::publish(self.bus.as_ref(), &event).await?;
        Ok(summary)
    }

    async fn json_lines(&self, s: Submission) -> Result<Summary, Rejection> {
        let permit = self.admit(&s.source, body::line_count(&s.body), s.body.len())?;
        let digest = evidence::content_digest(&s.body);
        let options = self.options.clone();
        let body = s.body;
        let out = blocking(move || {
            body::check_json_lines(&body)?;
            let options = ParseOptions {
                format: Some(DetectedFormat::JsonLines),
                ..(*options).clone()
            };
            Ok(parse(&body, &options))
        })
        .await?;
        let batch = Batch {
            kind: "logs",
            source: s.source,
            channel: s.channel,
            digest,
            repository: None,
            commit: None,
            branch: None,
            job: Value::Null,
            formats: json!({"body": out.format.as_str()}),
            environment: None,
            diagnostics: out.diagnostics.len(),
            failures: out.failures,
        };
        self.record(batch, permit).await
    }

    /// Decoded OTLP records (HTTP or gRPC); `size` is the encoded request size.
    pub async fn otlp_logs(
        &self,
        source: &str,
        channel: &'static str,
        digest: [u8; 32],
        logs: OtlpLogs,
        size: usize,
    ) -> Result<Summary, Rejection> {
        self.limits.check_body(size)?;
        let cost = u32::try_from(logs.records.len() + logs.dropped).unwrap_or(u32::MAX);
        let permit = self.admit(source, cost, size)?;
        let options = self.options.clone();
        let dropped = logs.dropped;
        let out = blocking(move || Ok(parse_log_records(&logs.records, &options))).await?;
        let batch = Batch {
            kind: "otlp",
            source: source.to_owned(),
            channel,
            digest,
            repository: None,
            commit: None,
            branch: None,
            job: Value::Null,
            formats: json!({"body": "otlp_logs"}),
            environment: None,
            diagnostics: out.diagnostics.len() + usize::from(dropped > 0),
            failures: out.failures,
        };
        self.record(batch, permit).await
    }

    /// Stores, triages and announces every failure of `batch`, holding `_permit`.
    async fn record(&self, batch: Batch, _permit: Permit) -> Result<Summary, Rejection> {
        let received = time::OffsetDateTime::now_utc();
        let now = received.unix_timestamp();
        let source = self.redactor.redact_text(&batch.source).into_owned();
        let mut summary = Summary {
            failures: batch.failures.len(),
            diagnostics: batch.diagnostics,
            ..Summary::default()
        };
        let topology = self.bus.topology().clone();
        for (i, failure) in batch.failures.iter().enumerate() {
            let id = evidence::evidence_id(batch.kind, &source, &batch.digest, i);
            // A log names the revision it was deployed from; a CI report's own commit wins.
            let commit = batch
                .commit
                .clone()
                .or_else(|| failure.context.get("vcs.revision").cloned());
            let occ =
                Occurrence::from_failure(failure, now, commit.as_deref(), batch.branch.as_deref())
                    .in_repository(batch.repository.as_deref());
            let row = NewEvidence {
                id: id.clone(),
                kind: batch.kind.to_owned(),
                source: source.clone(),
                repository: batch.repository.clone(),
                commit: commit.clone(),
                stack_signature: failure.stack_signature.clone(),
                error_signature: Some(failure.error_signature.clone()),
                group_key: occ.key.0.clone(),
                body: evidence::body(
                    failure,
                    json!({
                        "channel": batch.channel,
                        "branch": batch.branch,
                        "job": batch.job,
                        "formats": batch.formats,
                    }),
                ),
                received_at: received,
                environment: batch.environment.clone(),
                profile: Some(StackProfile::from_failure(failure)),
            };
            // The row, its group count and the policy's mark commit together.
            let recorded = self
                .groups
                .record_evidence(&row, &occ, &self.policy, &Trigger::Automatic, now)
                .await
                .map_err(ingest_error)?;
            // Counted in the group of its exact key or, merged, another.
            let occ = Occurrence {
                key: match &recorded {
                    EvidenceOutcome::Recorded { group, .. } => group.key.clone(),
                    EvidenceOutcome::Seen { group_key, .. } => group_key.clone(),
                },
                ..occ
            };
            let outcome = match recorded {
                EvidenceOutcome::Recorded {
                    group,
                    observation,
                    decision,
                    merged,
                } => {
                    summary.stored += 1;
                    if let Decision::Investigate { reason } = &decision {
                        self.suggest(&batch, &id, &occ, reason, group.count).await?;
                    }
                    GroupOutcome {
                        key: occ.key.0.clone(),
                        observation: observation_name(&observation),
                        decision: Some(decision),
                        merged,
                    }
                }
                EvidenceOutcome::Seen { suggested, .. } => {
                    // The first attempt may have stopped before publishing
                    // its suggestion; the message id makes a repeat harmless.
                    if let Some(s) = &suggested {
                        self.suggest(&batch, &id, &occ, &s.reason, s.count).await?;
                    }
                    GroupOutcome {
                        key: occ.key.0.clone(),
                        observation: "already_recorded",
                        decision: None,
                        merged: None,
                    }
                }
            };
            let event = EvidenceRecorded {
                evidence_id: id.clone(),
                kind: batch.kind.to_owned(),
                source: source.clone(),
                repository: batch.repository.clone().unwrap_or_default(),
                commit: commit.clone().unwrap_or_default(),
                branch: batch.branch.clone().unwrap_or_default(),
                group_key: occ.key.0.clone(),
                stack_signature: failure.stack_signature.clone().unwrap_or_default(),
                error_signature: failure.error_signature.clone(),
                title: occ.title.clone(),
                received_at_unix_ms: (received.unix_timestamp_nanos() / 1_000_000) as i64,
                failure_json: serde_json::to_vec(failure).unwrap_or_default(),
            };
            events::publish(
                self.bus.as_ref(),
                topology.evidence(batch.kind),
                format!("{id}.recorded"),
                &event,
            )
            .await?;
            summary.evidence_ids.push(id);
            summary.groups.push(outcome);
        }
        Ok(summary)
    }

    async fn suggest(
        &self,
        batch: &Batch,
        evidence_id: &str,
        occ: &Occurrence,
        reason: &Reason,
        count: u64,
    ) -> Result<(), Error> {
        let event = InvestigationSuggested {
            group_key: occ.key.0.clone(),
            reason: reason_name(reason).to_owned(),
            reason_json: serde_json::to_vec(reason).unwrap_or_default(),
            repository: batch.repository.clone().unwrap_or_default(),
            commit: occ.commit.clone().unwrap_or_default(),
            branch: batch.branch.clone().unwrap_or_default(),
            evidence_ids: vec![evidence_id.to_owned()],
            title: occ.title.clone(),
            group_count: count,
        };
        tracing::info!(group = %occ.key, reason = reason_name(reason), "investigation suggested");
        events::publish(
            self.bus.as_ref(),
            self.bus.topology().evidence("suggested"),
            format!("{evidence_id}.suggested"),
            &event,
        )
        .await?;
        Ok(())
    }
}
