//! The hybrid score: `0.35·symbol_overlap + 0.2·path_proximity + 0.2·bm25 +
//! 0.2·embedding + 0.05·time_decay`, plus `0.4·spectrum` (Ochiai over
//! per-test coverage) when a coverage run is given. A component that is
//! unavailable for a query (no embedder, no commits in the window, no frame
//! to be near, no coverage) drops out and the remaining weights are
//! renormalised to sum to 1. Every
//! component is reported with its value, effective weight and contribution.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Component {
    SymbolOverlap,
    PathProximity,
    Bm25,
    Embedding,
    TimeDecay,
    /// Ochiai suspiciousness from per-test coverage.
    Spectrum,
}

impl Component {
    pub const ALL: [Component; 6] = [
        Component::SymbolOverlap,
        Component::PathProximity,
        Component::Bm25,
        Component::Embedding,
        Component::TimeDecay,
        Component::Spectrum,
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Weights {
    pub symbol_overlap: f64,
    pub path_proximity: f64,
    pub bm25: f64,
    pub embedding: f64,
    pub time_decay: f64,
    /// Executed-by-failing-tests evidence is the strongest single signal
    /// when it exists, so it outweighs symbol overlap.
    pub spectrum: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Self {
            symbol_overlap: 0.35,
            path_proximity: 0.2,
            bm25: 0.2,
            embedding: 0.2,
            time_decay: 0.05,
            spectrum: 0.4,
        }
    }
}

impl Weights {
    pub fn get(&self, c: Component) -> f64 {
        match c {
            Component::SymbolOverlap => self.symbol_overlap,
            Component::PathProximity => self.path_proximity,
            Component::Bm25 => self.bm25,
            Component::Embedding => self.embedding,
            Component::TimeDecay => self.time_decay,
            Component::Spectrum => self.spectrum,
        }
    }

    /// Weights of the available components, scaled to sum to 1.
    pub fn effective(&self, available: &[Component]) -> Vec<(Component, f64)> {
        let total: f64 = available.iter().map(|&c| self.get(c)).sum();
        available
            .iter()
            .map(|&c| {
                (
                    c,
                    if total > 0.0 {
                        self.get(c) / total
                    } else {
                        0.0
                    },
                )
            })
            .collect()
    }
}

/// One component's part in a result's score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reason {
    pub component: Component,
    /// In [0, 1].
    pub value: f64,
    /// Effective (renormalised) weight.
    pub weight: f64,
    pub contribution: f64,
    /// Why the value is what it is, for a person.
    pub detail: String,
}

/// Weighs component values `(component, value, detail)` with the effective
/// weights; returns the score and the reasons, biggest contribution first.
pub fn combine(
    effective: &[(Component, f64)],
    values: Vec<(Component, f64, String)>,
) -> (f64, Vec<Reason>) {
    let mut reasons: Vec<Reason> = effective
        .iter()
        .map(|&(component, weight)| {
            let (value, detail) = values
                .iter()
                .find(|(c, _, _)| *c == component)
                .map(|(_, v, d)| (v.clamp(0.0, 1.0), d.clone()))
                .unwrap_or((0.0, String::new()));
            Reason {
                component,
                value,
                weight,
                contribution: value * weight,
                detail,
            }
        })
        .collect();
    reasons.sort_by(|a, b| b.contribution.total_cmp(&a.contribution));
    let score = reasons.iter().map(|r| r.contribution).sum();
    (score, reasons)
}

/// How near path `a` is to `b`: 1 for the same file, 0.8 for a test and the
/// file it tests (`tests/test_cart.py` ~ `shop/cart.py`), otherwise the share
/// of leading directories they have in common (≤ 0.6).
pub fn path_proximity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    if stem_of_tested(a) == stem_of_tested(b) && !stem_of_tested(a).is_empty() {
        return 0.8;
    }
    let da: Vec<&str> = a.split('/').collect();
    let db: Vec<&str> = b.split('/').collect();
    let (da, db) = (&da[..da.len() - 1], &db[..db.len() - 1]);
    let deepest = da.len().max(db.len());
    if deepest == 0 {
        return 0.3; // both at the root
    }
    let common = da.iter().zip(db).take_while(|(x, y)| x == y).count();
    0.6 * common as f64 / deepest as f64
}

/// `tests/test_cart.py` → `cart`, `cart_test.go` → `cart`, `Cart.test.ts` →
/// `cart`, `CartTest.java` → `cart`.
fn stem_of_tested(path: &str) -> String {
    let file = path.rsplit('/').next().unwrap_or(path);
    let stem = file.split('.').next().unwrap_or(file);
    let stem = stem.strip_prefix("test_").unwrap_or(stem);
    let stem = stem.strip_suffix("_test").unwrap_or(stem);
    let stem = stem
        .strip_suffix("Tests")
        .or_else(|| stem.strip_suffix("Test"))
        .unwrap_or(stem);
    stem.to_lowercase()
}

/// `exp(-ln 2 · age / half_life)`: 1 for a change at the reference time,
/// 0.5 one half-life earlier.
pub fn time_decay(age_seconds: i64, half_life_days: f64) -> f64 {
    let age_days = age_seconds.max(0) as f64 / 86_400.0;
    (-(std::f64::consts::LN_2) * age_days / half_life_days.max(1e-9)).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_renormalise_without_embedding() {
        let w = Weights::default();
        let all = w.effective(&Component::ALL);
        assert!((all.iter().map(|(_, x)| x).sum::<f64>() - 1.0).abs() < 1e-12);
        let no_embed = w.effective(&[
            Component::SymbolOverlap,
            Component::PathProximity,
            Component::Bm25,
            Component::TimeDecay,
        ]);
        assert!((no_embed[0].1 - 0.35 / 0.8).abs() < 1e-12);
        let (score, reasons) = combine(
            &no_embed,
            vec![
                (Component::SymbolOverlap, 1.0, "frame".into()),
                (Component::Bm25, 0.5, String::new()),
            ],
        );
        assert!((score - (0.35 + 0.1) / 0.8).abs() < 1e-12);
        assert_eq!(reasons.len(), 4);
        assert_eq!(reasons[0].component, Component::SymbolOverlap);
    }

    #[test]
    fn proximity_and_decay() {
        assert_eq!(path_proximity("a/b.py", "a/b.py"), 1.0);
        assert_eq!(path_proximity("tests/test_cart.py", "shop/cart.py"), 0.8);
        assert_eq!(path_proximity("src/a/x.go", "src/a/y.go"), 0.6);
        assert_eq!(path_proximity("src/a/x.go", "src/b/y.go"), 0.3);
        assert_eq!(path_proximity("x/a.py", "y/b.py"), 0.0);
        assert!((time_decay(86_400 * 30, 30.0) - 0.5).abs() < 1e-9);
        assert_eq!(time_decay(-5, 30.0), 1.0);
    }
}
