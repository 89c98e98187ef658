//! The crate against real git over smart HTTP with Basic auth and fake
//! GitHub and GitLab APIs that check what they are sent. One test binary
//! (one link) for all of it.

mod body;
mod fixtures;
mod github;
mod gitlab;
mod push;
