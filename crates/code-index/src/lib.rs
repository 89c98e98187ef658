//! Placeholder; see the issue.
