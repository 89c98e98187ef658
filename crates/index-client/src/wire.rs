//! Locations as `tracelab.index.v1` messages and back, losslessly: score
//! components travel as the serde names the JSON output uses, so a client
//! prints exactly what the in-process `tracelab locate` prints. The indexer
//! encodes with [`locations`]; the client decodes with [`locations_back`].

use tracelab_code_index::locate::{CommitLocation, FileLocation, Locations, SymbolLocation};
use tracelab_code_index::score::{Component, Reason};
use tracelab_proto::index::v1 as pb;

/// A unit enum's serde name (`symbol_overlap`, `function`, `test_failure`).
pub fn name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

fn reasons(r: &[Reason]) -> Vec<pb::Reason> {
    r.iter()
        .map(|r| pb::Reason {
            component: name(&r.component),
            value: r.value,
            weight: r.weight,
            contribution: r.contribution,
            detail: r.detail.clone(),
        })
        .collect()
}

/// The library's locations as the wire message.
pub fn locations(l: &Locations) -> pb::Locations {
    pb::Locations {
        files: l
            .files
            .iter()
            .map(|f| pb::FileLocation {
                path: f.path.clone(),
                score: f.score,
                reasons: reasons(&f.reasons),
            })
            .collect(),
        symbols: l
            .symbols
            .iter()
            .map(|s| pb::SymbolLocation {
                symbol: s.symbol.clone(),
                path: s.path.clone(),
                start_line: s.start_line,
                end_line: s.end_line,
                score: s.score,
                reasons: reasons(&s.reasons),
            })
            .collect(),
        commits: l
            .commits
            .iter()
            .map(|c| pb::CommitLocation {
                commit: c.commit.clone(),
                score: c.score,
                reasons: reasons(&c.reasons),
            })
            .collect(),
    }
}

fn reasons_back(r: Vec<pb::Reason>) -> Result<Vec<Reason>, String> {
    r.into_iter()
        .map(|r| {
            let component: Component =
                serde_json::from_value(serde_json::Value::String(r.component.clone()))
                    .map_err(|_| format!("unknown score component {:?}", r.component))?;
            Ok(Reason {
                component,
                value: r.value,
                weight: r.weight,
                contribution: r.contribution,
                detail: r.detail,
            })
        })
        .collect()
}

/// A `Locations` message as the library's value (what the CLI prints).
pub fn locations_back(l: pb::Locations) -> Result<Locations, String> {
    Ok(Locations {
        files: l
            .files
            .into_iter()
            .map(|f| {
                Ok(FileLocation {
                    path: f.path,
                    score: f.score,
                    reasons: reasons_back(f.reasons)?,
                })
            })
            .collect::<Result<_, String>>()?,
        symbols: l
            .symbols
            .into_iter()
            .map(|s| {
                Ok(SymbolLocation {
                    symbol: s.symbol,
                    path: s.path,
                    start_line: s.start_line,
                    end_line: s.end_line,
                    score: s.score,
                    reasons: reasons_back(s.reasons)?,
                })
            })
            .collect::<Result<_, String>>()?,
        commits: l
            .commits
            .into_iter()
            .map(|c| {
                Ok(CommitLocation {
                    commit: c.commit,
                    score: c.score,
                    reasons: reasons_back(c.reasons)?,
                })
            })
            .collect::<Result<_, String>>()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_survive_the_round_trip() {
        let reason = |c| Reason {
            component: c,
            value: 0.5,
            weight: 0.25,
            contribution: 0.125,
            detail: "stack frame #0".into(),
        };
        let l = Locations {
            files: vec![FileLocation {
                path: "a.py".into(),
                score: 0.7,
                reasons: vec![reason(Component::PathProximity)],
            }],
            symbols: vec![SymbolLocation {
                symbol: "py:a.f".into(),
                path: "a.py".into(),
                start_line: 1,
                end_line: 3,
                score: 0.9,
                reasons: Component::ALL.iter().map(|c| reason(*c)).collect(),
            }],
            commits: vec![CommitLocation {
                commit: "abc".into(),
                score: 0.1,
                reasons: vec![reason(Component::TimeDecay)],
            }],
        };
        let wire = locations(&l);
        assert_eq!(wire.symbols[0].reasons[0].component, "symbol_overlap");
        assert_eq!(locations_back(wire).unwrap(), l);
        let mut bad = locations(&l);
        bad.files[0].reasons[0].component = "vibes".into();
        assert!(locations_back(bad).unwrap_err().contains("vibes"));
    }
}
