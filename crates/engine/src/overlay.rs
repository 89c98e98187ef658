//! What the pool lays over a probe's checkout: the oracle's test files at
//! the bad revision ([`crate::oracle`] says which). A module of its own so
//! the pool and the probes, below the oracle, do not import it.

/// Test files to lay over a probe's checkout: their content at `rev`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Overlay {
    pub rev: String,
    pub files: Vec<String>,
}
