//! Backend gating shared by these tests lives in `tracelab-testkit`.

#![allow(unused_imports)]

pub use tracelab_testkit::backends::{backend, unique_name as unique_prefix};
