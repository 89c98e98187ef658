//! Where failure groups are kept: the [`GroupStore`] port, the in-memory
//! store of the embedded mode, and [`triage`], the one call an intake makes
//! per failure. The logic stays in the model ([`crate::group`]); a store
//! only loads and saves under a lock or transaction.

use crate::group::{
    Decision, FailureGroup, GroupKey, Observation, Occurrence, Policy, Reason, Trigger, decide,
};
use crate::group_page::{GroupPage, GroupQuery};
use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::Mutex;

/// Persistence for groups. Implementations keep the model's semantics by
/// calling [`FailureGroup::observe`]/[`FailureGroup::resolve`] under a lock
/// or transaction.
#[async_trait::async_trait]
pub trait GroupStore: Send + Sync {
    /// Adds an occurrence to its group (creating it) and says what it meant.
    async fn record(&self, occ: &Occurrence) -> Result<(FailureGroup, Observation)>;
    async fn get(&self, key: &GroupKey) -> Result<Option<FailureGroup>>;
    /// Marks a group fixed.
    async fn resolve(
        &self,
        key: &GroupKey,
        at: i64,
        commit: Option<String>,
    ) -> Result<FailureGroup>;
    /// Records that an investigation was requested.
    async fn mark_investigation(
        &self,
        key: &GroupKey,
        at: i64,
        reason: Reason,
    ) -> Result<FailureGroup>;
    /// One page of the groups [`GroupQuery`] asks for, in its order
    /// (exactly [`GroupQuery::apply`] over every stored group).
    async fn page(&self, query: &GroupQuery) -> Result<GroupPage>;
    /// The first `limit` groups ordered by last sighting, newest first.
    async fn list(&self, limit: usize) -> Result<Vec<FailureGroup>> {
        Ok(self.page(&GroupQuery::first(limit)).await?.groups)
    }
}

/// A [`GroupStore`] in process memory (the embedded mode and tests).
#[derive(Debug, Default)]
pub struct InMemoryGroupStore {
    groups: Mutex<HashMap<GroupKey, FailureGroup>>,
}

impl InMemoryGroupStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(
        &self,
        f: impl FnOnce(&mut HashMap<GroupKey, FailureGroup>) -> Result<T>,
    ) -> Result<T> {
        let mut g = self
            .groups
            .lock()
            .map_err(|_| Error::Unavailable("group store lock poisoned".into()))?;
        f(&mut g)
    }
}

#[async_trait::async_trait]
impl GroupStore for InMemoryGroupStore {
    async fn record(&self, occ: &Occurrence) -> Result<(FailureGroup, Observation)> {
        self.with(|groups| {
            Ok(match groups.get_mut(&occ.key) {
                Some(g) => {
                    let obs = g.observe(occ);
                    (g.clone(), obs)
                }
                None => {
                    let g = FailureGroup::new(occ);
                    groups.insert(occ.key.clone(), g.clone());
                    (g, Observation::New)
                }
            })
        })
    }

    async fn get(&self, key: &GroupKey) -> Result<Option<FailureGroup>> {
        self.with(|groups| Ok(groups.get(key).cloned()))
    }

    async fn resolve(
        &self,
        key: &GroupKey,
        at: i64,
        commit: Option<String>,
    ) -> Result<FailureGroup> {
        self.with(|groups| {
            let g = groups
                .get_mut(key)
                .ok_or_else(|| Error::NotFound(format!("failure group {key}")))?;
            g.resolve(at, commit);
            Ok(g.clone())
        })
    }

    async fn mark_investigation(
        &self,
        key: &GroupKey,
        at: i64,
        reason: Reason,
    ) -> Result<FailureGroup> {
        self.with(|groups| {
            let g = groups
                .get_mut(key)
                .ok_or_else(|| Error::NotFound(format!("failure group {key}")))?;
            g.mark_investigation(at, reason);
            Ok(g.clone())
        })
    }

    async fn page(&self, query: &GroupQuery) -> Result<GroupPage> {
        self.with(|groups| Ok(query.apply(groups.values())))
    }
}

/// Records an occurrence and decides; when the decision is to investigate,
/// the request is recorded too, so the next occurrence does not trigger again.
/// This is the one call an intake service makes per failure.
pub async fn triage(
    store: &dyn GroupStore,
    policy: &Policy,
    occ: &Occurrence,
    trigger: &Trigger,
    now: i64,
) -> Result<(FailureGroup, Observation, Decision)> {
    let (mut group, obs) = store.record(occ).await?;
    let decision = decide(policy, &group, &obs, occ, trigger, now);
    if let Decision::Investigate { reason } = &decision {
        group = store
            .mark_investigation(&group.key, now, reason.clone())
            .await?;
    }
    Ok((group, obs, decision))
}
