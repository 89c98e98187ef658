//! Hypothesis sources. Deterministic agents only; an LLM is never required.

pub mod code_path;
pub mod experience;
pub mod git_history;
pub mod test_behaviour;
