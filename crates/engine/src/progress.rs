//! Progress lines for long work (bisect rounds, re-runs). The CLI prints them
//! on stderr so `--format json` keeps stdout pure.

/// Receives human-readable progress lines.
pub trait Progress: Send + Sync {
    fn report(&self, line: &str);
}

/// Discards progress.
#[derive(Debug, Default)]
pub struct Silent;

impl Progress for Silent {
    fn report(&self, _line: &str) {}
}
