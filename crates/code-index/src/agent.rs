//! The code-path agent's deterministic core: stack frames → symbols →
//! call-graph neighbourhood, optionally combined with spectrum-based fault
//! localisation, into a ranked list of suspect functions with reasons.
//! (Running coverage in a sandbox, and patches from an LLM, live elsewhere.)

use crate::callgraph::{Neighbourhood, neighbourhood};
use crate::error::Result;
use crate::locate::Locator;
use crate::sbfl::{TestRun, ochiai, rank_functions};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// With coverage, a suspect's score is this share Ochiai and the rest the
/// locator's (normalised) hybrid score: executed-by-failing-tests evidence
/// is stronger than textual proximity.
const SPECTRUM_SHARE: f64 = 0.75;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrameSymbol {
    pub frame: usize,
    pub path: String,
    pub line: Option<u32>,
    pub symbol: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suspect {
    pub symbol: String,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub score: f64,
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodePathReport {
    /// In-repository frames, innermost first, with their symbols.
    pub frames: Vec<FrameSymbol>,
    /// Neighbourhood (depth 2) of the innermost frame's symbol, if any.
    pub neighbourhood: Option<Neighbourhood>,
    pub suspects: Vec<Suspect>,
}

/// Ranks suspect functions for `evidence`, using per-test coverage when given.
pub fn code_path(
    locator: &Locator,
    evidence: &str,
    spectrum: Option<&[TestRun]>,
    top: usize,
) -> Result<CodePathReport> {
    let snap = &locator.snapshot;
    let frames = locator.repo_frames(evidence);
    let frame_symbols = frames
        .iter()
        .map(|f| FrameSymbol {
            frame: f.index,
            path: f.path.clone(),
            line: f.line,
            symbol: f.symbol.map(|s| snap.symbol(s).qualified_name.clone()),
        })
        .collect();
    let hood = frames
        .iter()
        .find_map(|f| f.symbol)
        .map(|s| neighbourhood(snap, s, 2));

    let located = locator.locate(evidence)?;
    let max = located.symbols.first().map_or(1.0, |s| s.score).max(1e-9);
    let mut suspects: HashMap<String, Suspect> = HashMap::new();
    for s in located.symbols {
        let why: Vec<String> = s
            .reasons
            .iter()
            .filter(|r| r.contribution > 0.0)
            .map(|r| format!("{:?} {:.2}: {}", r.component, r.value, r.detail))
            .collect();
        let base = if spectrum.is_some() {
            (1.0 - SPECTRUM_SHARE) * s.score / max
        } else {
            s.score
        };
        suspects.insert(
            s.symbol.clone(),
            Suspect {
                symbol: s.symbol,
                path: s.path,
                start_line: s.start_line,
                end_line: s.end_line,
                score: base,
                reasons: why,
            },
        );
    }
    if let Some(runs) = spectrum {
        let failed = runs.iter().filter(|r| !r.passed).count();
        for f in rank_functions(snap, &ochiai(runs)) {
            let s = snap.symbol(f.symbol);
            if !locator.passes(s) {
                continue;
            }
            let e = suspects
                .entry(s.qualified_name.clone())
                .or_insert_with(|| Suspect {
                    symbol: s.qualified_name.clone(),
                    path: s.path.clone(),
                    start_line: s.start_line,
                    end_line: s.end_line,
                    score: 0.0,
                    reasons: Vec::new(),
                });
            e.score += SPECTRUM_SHARE * f.score;
            e.reasons.insert(
                0,
                format!(
                    "Ochiai {:.2} at line {}: covered by {}/{failed} failing and {} passing tests",
                    f.score, f.line, f.failed, f.passed
                ),
            );
        }
    }
    let mut suspects: Vec<Suspect> = suspects.into_values().collect();
    suspects.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.symbol.cmp(&b.symbol)));
    suspects.truncate(top);
    Ok(CodePathReport {
        frames: frame_symbols,
        neighbourhood: hood,
        suspects,
    })
}
