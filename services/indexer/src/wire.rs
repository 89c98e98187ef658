//! The library's answers as `tracelab.index.v1` messages. Locations, the one
//! answer that also travels back, are mapped in `tracelab_index_client::wire`
//! (shared with the client, so both ends agree by construction).

use tracelab_code_index::IndexSummary;
use tracelab_code_index::callgraph::{Neighbour, Neighbourhood};
use tracelab_evidence::{FailureGroup, GroupStatus};
pub use tracelab_index_client::wire::locations;
use tracelab_index_client::wire::name;
use tracelab_proto::index::v1 as pb;
use tracelab_store::GroupInvestigation;

pub fn summary(s: &IndexSummary) -> pb::IndexSummary {
    pb::IndexSummary {
        commit: s.commit.clone(),
        files: s.files as u64,
        parsed_files: s.parsed_files as u64,
        cached_files: s.cached_files as u64,
        parsed_bytes: s.parsed_bytes,
        symbols: s.symbols as u64,
        call_sites: s.call_sites as u64,
        diagnostics: s.diagnostics as u64,
        elapsed_ms: s.elapsed_ms,
        cache_dir: s
            .cache_dir
            .as_ref()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
    }
}

fn neighbours(n: &[Neighbour]) -> Vec<pb::Neighbour> {
    n.iter()
        .map(|n| pb::Neighbour {
            symbol: n.symbol.clone(),
            kind: name(&n.kind),
            path: n.path.clone(),
            start_line: n.start_line,
            end_line: n.end_line,
            distance: n.distance,
            via_line: n.via_line,
        })
        .collect()
}

pub fn neighbourhood(commit: String, n: &Neighbourhood) -> pb::NeighbourhoodReply {
    pb::NeighbourhoodReply {
        symbol: n.symbol.clone(),
        commit,
        callers: neighbours(&n.callers),
        callees: neighbours(&n.callees),
    }
}

/// A failure group with the investigations of its evidence (`all` may hold other groups').
pub fn past_failure(g: &FailureGroup, all: &[GroupInvestigation]) -> pb::PastFailure {
    let (status, fixed, resolved_at, resolved_commit) = match &g.status {
        GroupStatus::Open => ("open", false, 0, String::new()),
        GroupStatus::Resolved { at, commit } => {
            ("resolved", true, *at, commit.clone().unwrap_or_default())
        }
    };
    pb::PastFailure {
        key: g.key.0.clone(),
        title: g.title.clone(),
        kind: name(&g.kind),
        language: name(&g.language),
        first_seen: g.first_seen,
        last_seen: g.last_seen,
        count: g.count,
        commits: g.commits.iter().cloned().collect(),
        branches: g.branches.iter().cloned().collect(),
        test_ids: g.test_ids.iter().cloned().collect(),
        status: status.into(),
        fixed,
        resolved_at,
        resolved_commit,
        regressions: g.regressions,
        investigations: all
            .iter()
            .filter(|i| i.group_key == g.key.0)
            .map(|i| pb::PastInvestigation {
                id: i.id.clone(),
                state: i.state.clone(),
                verdict: i.verdict.clone().unwrap_or_default(),
                culprit: i.culprit.clone().unwrap_or_default(),
                fix_kind: i.fix_kind.clone().unwrap_or_default(),
                fix_branch: i.fix_branch.clone().unwrap_or_default(),
                created_at: i.created_at.unix_timestamp(),
            })
            .collect(),
    }
}
