//! The probe journal: the culprit search's judgements, kept outside the
//! process that made them. In the fleet an investigation's `requested`
//! event is redelivered when its investigator dies; the next one loads the
//! journal and does not probe again what was already judged (the costly
//! part of an investigation is the search, minutes on a real project).
//!
//! Only judgements that stay true under a later model are reused (the
//! engine's rule for seeding a search): a revision where the failure was
//! seen (bad) or could not be tested, under the same oracle, and never under
//! a flakiness-rate model. A "good" is journaled for the record but probed
//! again, since a stricter model may need more passes. The classification
//! at the bad revision is journaled once decided, so the re-runs that made
//! it are not made again either.

use crate::Result;
use crate::bisect::ProbeResult;
use crate::ids::InvestigationId;
use crate::report::OracleMode;

/// One probe's judgement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournaledProbe {
    pub revision: String,
    /// Which tests judged it (the bad revision's, or the probe's own).
    pub oracle: OracleMode,
    pub result: ProbeResult,
    pub runs: u32,
    pub passes: u32,
}

impl JournaledProbe {
    /// Whether a later search under `oracle` (without a background rate)
    /// may take this judgement as it is.
    pub fn reusable_under(&self, oracle: OracleMode) -> bool {
        self.oracle == oracle && self.result != ProbeResult::Good
    }
}

/// Where the judgements are kept.
#[async_trait::async_trait]
pub trait ProbeJournal: Send + Sync {
    /// Every judgement recorded for `id`, in no particular order.
    async fn load(&self, id: &InvestigationId) -> Result<Vec<JournaledProbe>>;
    /// Records one judgement; a later judgement of the same revision under
    /// the same oracle replaces the earlier one.
    async fn record(&self, id: &InvestigationId, probe: &JournaledProbe) -> Result<()>;
    /// The failure's classification at the bad revision (the engine's
    /// `Classification` as JSON), once an attempt had decided it.
    async fn classification(&self, id: &InvestigationId) -> Result<Option<serde_json::Value>>;
    /// Keeps the decided classification; a later one replaces it.
    async fn record_classification(
        &self,
        id: &InvestigationId,
        classification: &serde_json::Value,
    ) -> Result<()>;
}

/// The journal in memory: for tests of the logic, and for a process that
/// resumes itself.
#[derive(Debug, Default)]
pub struct MemoryJournal {
    probes: std::sync::Mutex<Vec<(InvestigationId, JournaledProbe)>>,
    classifications: std::sync::Mutex<Vec<(InvestigationId, serde_json::Value)>>,
}

#[async_trait::async_trait]
impl ProbeJournal for MemoryJournal {
    async fn load(&self, id: &InvestigationId) -> Result<Vec<JournaledProbe>> {
        let probes = self.probes.lock().expect("journal lock");
        Ok(probes
            .iter()
            .filter(|(i, _)| i == id)
            .map(|(_, p)| p.clone())
            .collect())
    }

    async fn record(&self, id: &InvestigationId, probe: &JournaledProbe) -> Result<()> {
        let mut probes = self.probes.lock().expect("journal lock");
        probes.retain(|(i, p)| {
            !(i == id && p.revision == probe.revision && p.oracle == probe.oracle)
        });
        probes.push((id.clone(), probe.clone()));
        Ok(())
    }

    async fn classification(&self, id: &InvestigationId) -> Result<Option<serde_json::Value>> {
        let stored = self.classifications.lock().expect("journal lock");
        Ok(stored.iter().find(|(i, _)| i == id).map(|(_, c)| c.clone()))
    }

    async fn record_classification(
        &self,
        id: &InvestigationId,
        classification: &serde_json::Value,
    ) -> Result<()> {
        let mut stored = self.classifications.lock().expect("journal lock");
        stored.retain(|(i, _)| i != id);
        stored.push((id.clone(), classification.clone()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bad_and_untestable_under_the_same_oracle_are_reused() {
        let probe = |result| JournaledProbe {
            revision: "abc".into(),
            oracle: OracleMode::TestsAtBad,
            result,
            runs: 1,
            passes: 0,
        };
        assert!(probe(ProbeResult::Bad).reusable_under(OracleMode::TestsAtBad));
        assert!(probe(ProbeResult::Untestable).reusable_under(OracleMode::TestsAtBad));
        assert!(!probe(ProbeResult::Good).reusable_under(OracleMode::TestsAtBad));
        assert!(!probe(ProbeResult::Bad).reusable_under(OracleMode::TestsAtRevision));
    }
}
