//! The parts every TraceLab service shares, so each service binary is thin
//! wiring: `main` parses flags, [`config::load`]s its settings, starts
//! [`telemetry`], and calls its library's `run(config, shutdown)`.
//!
//! - [`config`]: defaults → TOML file → `TRACELAB__…` environment → flags.
//! - [`shutdown`]: one token cancelled by SIGINT/SIGTERM; services stop taking
//!   work, drain what is in flight, then return.
//! - [`health`]: `/healthz` (the process answers) and `/readyz` (its
//!   dependencies answer), served beside the service's own routes.
//! - [`telemetry`]: tracing to stderr, OTLP export when an endpoint is set,
//!   and W3C `traceparent` in and out of messages and requests.

pub mod config;
pub mod grpc;
pub mod health;
pub mod http;
pub mod launch;
pub mod metrics;
pub mod shutdown;
pub mod telemetry;
pub mod tokens;

pub use launch::launch;
pub use shutdown::Shutdown;
