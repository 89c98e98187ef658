//! The engine's side of the probe journal ([`tracelab_domain::journal`]):
//! what an earlier process of the same investigation already judged (the
//! search's probes, the classification at the bad revision), and a place
//! to write new judgements.

use crate::classification::Classification;
use std::collections::HashMap;
use std::sync::Arc;
use tracelab_domain::Result;
use tracelab_domain::bisect::ProbeResult;
use tracelab_domain::ids::InvestigationId;
use tracelab_domain::journal::{JournaledProbe, ProbeJournal};
use tracelab_domain::report::OracleMode;

/// What probing one revision found: the search's judgement and the runs it took.
#[derive(Debug, Clone, Copy)]
pub struct ProbeReport {
    pub result: ProbeResult,
    pub runs: u32,
    pub passes: u32,
}

pub struct SearchJournal {
    id: InvestigationId,
    port: Arc<dyn ProbeJournal>,
    /// Loaded once, when the session opened.
    prior: Vec<JournaledProbe>,
    /// The classification an earlier attempt decided, if any.
    classified: Option<Classification>,
}

impl SearchJournal {
    /// Loads what was journaled for `id` so far.
    pub async fn open(id: InvestigationId, port: Arc<dyn ProbeJournal>) -> Result<Self> {
        let prior = port.load(&id).await?;
        // A classification that no longer reads (an older engine wrote it)
        // is classified again, not an error.
        let classified = port
            .classification(&id)
            .await?
            .and_then(|value| serde_json::from_value(value).ok());
        Ok(Self {
            id,
            port,
            prior,
            classified,
        })
    }

    /// The classification an earlier attempt of this investigation decided.
    pub fn classified(&self) -> Option<&Classification> {
        self.classified.as_ref()
    }

    /// Keeps the decided classification (logged on failure, like a probe).
    pub async fn record_classification(&self, classification: &Classification) {
        let value = match serde_json::to_value(classification) {
            Ok(v) => v,
            Err(e) => {
                tracing::warn!(investigation = %self.id, error = %e, "cannot encode the classification for the journal");
                return;
            }
        };
        if let Err(e) = self.port.record_classification(&self.id, &value).await {
            tracing::warn!(investigation = %self.id, error = %e, "cannot journal the classification");
        }
    }

    /// Judgements from before this process that a search under `oracle`
    /// (without a background rate) takes as they are.
    pub fn reusable(&self, oracle: OracleMode) -> HashMap<String, ProbeReport> {
        self.prior
            .iter()
            .filter(|p| p.reusable_under(oracle))
            .map(|p| {
                (
                    p.revision.clone(),
                    ProbeReport {
                        result: p.result,
                        runs: p.runs,
                        passes: p.passes,
                    },
                )
            })
            .collect()
    }

    /// How many judgements were loaded (the classification counts as one).
    pub fn loaded(&self) -> usize {
        self.prior.len() + usize::from(self.classified.is_some())
    }

    /// Records a fresh judgement. The journal only saves work: a failure to
    /// write is logged, never the investigation's failure.
    pub async fn record(&self, revision: &str, oracle: OracleMode, report: ProbeReport) {
        let probe = JournaledProbe {
            revision: revision.to_string(),
            oracle,
            result: report.result,
            runs: report.runs,
            passes: report.passes,
        };
        if let Err(e) = self.port.record(&self.id, &probe).await {
            tracing::warn!(investigation = %self.id, revision, error = %e, "cannot journal a probe judgement");
        }
    }
}
