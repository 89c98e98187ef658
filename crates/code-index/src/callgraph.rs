//! A symbol's call-graph neighbourhood: callers and callees up to a depth,
//! breadth first, each with its distance and the edge that reached it.

use crate::model::{SymbolId, SymbolKind};
use crate::snapshot::Snapshot;
use serde::{Deserialize, Serialize};
use std::collections::{HashSet, VecDeque};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbour {
    pub symbol: String,
    pub kind: SymbolKind,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    /// Hops from the centre (1 = direct).
    pub distance: u32,
    /// The call's line (in the caller's file).
    pub via_line: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Neighbourhood {
    pub symbol: String,
    pub callers: Vec<Neighbour>,
    pub callees: Vec<Neighbour>,
}

/// Callers and callees of `id` up to `depth` hops.
pub fn neighbourhood(snap: &Snapshot, id: SymbolId, depth: u32) -> Neighbourhood {
    Neighbourhood {
        symbol: snap.symbol(id).qualified_name.clone(),
        callers: bfs(snap, id, depth, |s| snap.callers(s)),
        callees: bfs(snap, id, depth, |s| snap.callees(s)),
    }
}

/// Ids and distances reachable from `id` along `next`, nearest first.
pub fn reachable<'s>(
    id: SymbolId,
    depth: u32,
    next: impl Fn(SymbolId) -> &'s [(SymbolId, u32)],
) -> Vec<(SymbolId, u32, u32)> {
    let mut seen = HashSet::from([id]);
    let mut queue = VecDeque::from([(id, 0u32)]);
    let mut out = Vec::new();
    while let Some((s, d)) = queue.pop_front() {
        if d == depth {
            continue;
        }
        for &(n, line) in next(s) {
            if seen.insert(n) {
                out.push((n, d + 1, line));
                queue.push_back((n, d + 1));
            }
        }
    }
    out
}

fn bfs<'s>(
    snap: &'s Snapshot,
    id: SymbolId,
    depth: u32,
    next: impl Fn(SymbolId) -> &'s [(SymbolId, u32)],
) -> Vec<Neighbour> {
    reachable(id, depth, next)
        .into_iter()
        .map(|(n, distance, via_line)| {
            let s = snap.symbol(n);
            Neighbour {
                symbol: s.qualified_name.clone(),
                kind: s.kind,
                path: s.path.clone(),
                start_line: s.start_line,
                end_line: s.end_line,
                distance,
                via_line,
            }
        })
        .collect()
}
