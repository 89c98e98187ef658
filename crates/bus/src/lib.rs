//! Placeholder; see issue 3.
