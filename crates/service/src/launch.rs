//! The whole `main` of a service: flags, layered settings, telemetry, signal
//! handling, then the service's `run(settings, shutdown)`. Exit codes: 0
//! after a clean shutdown, 2 for bad configuration, 1 when `run` fails.

use crate::{Shutdown, config, telemetry};
use clap::Parser;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;

/// Flags every service binary takes.
#[derive(Parser, Debug)]
#[command(version)]
pub struct Args {
    /// TOML settings file (see deploy/local/fleet.toml for every setting).
    #[arg(long, env = "TRACELAB_CONFIG")]
    pub config: Option<PathBuf>,
    /// Overrides one setting, e.g. `--set fleet.nats_url=nats://host:4222` (repeatable).
    /// Environment variables `TRACELAB__FLEET__NATS_URL=…` work too.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Prints the effective settings as TOML-like JSON, secrets redacted, and exits.
    #[arg(long)]
    pub print_config: bool,
}

/// Makes this process non-dumpable: its `/proc/<pid>/environ`, `mem` and
/// file descriptors become root's, and ptrace attaches are refused, so a
/// test that runs as the service's own uid (the hardened runner in a
/// non-root pod, where no uid switch is possible) cannot read the tokens
/// and database URL the service holds. Children start dumpable again after
/// `execve`, and their environment is built from scratch by the sandbox.
/// Also: no core dumps with secrets in them.
pub fn protect_process(service: &str) {
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        eprintln!(
            "{service}: cannot mark the process non-dumpable ({e}); its /proc files stay readable by its own uid"
        );
    }
}

/// Runs `service` to completion.
pub fn launch<S, F, Fut>(service: &'static str, otlp: fn(&S) -> Option<&str>, run: F) -> ExitCode
where
    S: Serialize + DeserializeOwned + Default,
    F: FnOnce(S, Shutdown) -> Fut,
    Fut: Future<Output = anyhow::Result<()>>,
{
    let args = Args::parse();
    let settings: S = match config::load(args.config.as_deref(), &args.set) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{service}: {e}");
            return ExitCode::from(2);
        }
    };
    protect_process(service);
    if args.print_config {
        let mut shown = serde_json::to_value(&settings).unwrap_or_default();
        redact(&mut shown);
        println!(
            "{}",
            serde_json::to_string_pretty(&shown).unwrap_or_default()
        );
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{service}: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let _telemetry = match telemetry::init(service, otlp(&settings)) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{service}: {e}");
                return ExitCode::from(2);
            }
        };
        match run(settings, Shutdown::on_signals()).await {
            Ok(()) => {
                tracing::info!("{service} stopped");
                ExitCode::SUCCESS
            }
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "{service} failed");
                ExitCode::FAILURE
            }
        }
    })
}

/// What `--print-config` shows instead of a secret.
pub const REDACTED: &str = "<redacted>";

/// Replaces every secret in printed settings: a non-empty string under a
/// key that names one (`token`, `secret`, `password`, `api_key`, or ending
/// in `_token`, `_secret`, `_password`; not the `_file` that holds one, nor
/// the header or query parameter that carries it), and the password in a
/// URL's user info (`postgres://user:pw@host`). Settings are printed to be
/// read and pasted, so they must not carry what they protect.
pub fn redact(value: &mut serde_json::Value) {
    use serde_json::Value;
    fn secret_key(key: &str) -> bool {
        let k = key.to_ascii_lowercase();
        ["token", "secret", "password", "api_key"].contains(&k.as_str())
            || ["_token", "_secret", "_password", "_api_key"]
                .iter()
                .any(|s| k.ends_with(s))
    }
    fn url_password(s: &str) -> Option<String> {
        let (scheme, rest) = s.split_once("://")?;
        let (userinfo, host) = rest.split_once('@')?;
        let (user, _) = userinfo.split_once(':')?;
        (!host.contains('@')).then(|| format!("{scheme}://{user}:{REDACTED}@{host}"))
    }
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match v {
                    Value::String(s) if secret_key(key) && !s.is_empty() => {
                        *s = REDACTED.into();
                    }
                    Value::String(s) => {
                        if let Some(masked) = url_password(s) {
                            *s = masked;
                        }
                    }
                    other => redact(other),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        Value::String(s) => {
            if let Some(masked) = url_password(s) {
                *s = masked;
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn printed_settings_carry_no_secret() {
        let mut v = serde_json::json!({
            "tokens": [{"name": "ci", "token": "tk-123", "role": "admin"}],
            "webhooks": {"secret": "whsec", "secret_file": "/run/secrets/w", "urls": ["https://h"]},
            "jira": {"token": "", "intake": {"secret": "s", "secret_header": "x-tracelab-secret", "secret_query": "secret"}},
            "llm": {"api_key": "sk"},
            "pull_requests": {"hosts": [{"github_token": "ghp"}]},
            "fleet": {"postgres_url": "postgres://tl:pw@db:5432/tl", "nats_url": "nats://n:4222"},
        });
        super::redact(&mut v);
        let r = super::REDACTED;
        assert_eq!(v["tokens"][0]["token"], r);
        assert_eq!(v["tokens"][0]["name"], "ci");
        assert_eq!(v["webhooks"]["secret"], r);
        assert_eq!(
            v["webhooks"]["secret_file"], "/run/secrets/w",
            "where, not what"
        );
        assert_eq!(v["jira"]["token"], "", "nothing set stays visible as such");
        assert_eq!(v["jira"]["intake"]["secret"], r);
        assert_eq!(v["jira"]["intake"]["secret_header"], "x-tracelab-secret");
        assert_eq!(v["jira"]["intake"]["secret_query"], "secret");
        assert_eq!(v["llm"]["api_key"], r);
        assert_eq!(v["pull_requests"]["hosts"][0]["github_token"], r);
        assert_eq!(
            v["fleet"]["postgres_url"],
            format!("postgres://tl:{r}@db:5432/tl")
        );
        assert_eq!(v["fleet"]["nats_url"], "nats://n:4222");
    }

    #[test]
    fn a_protected_process_is_not_dumpable() {
        super::protect_process("test");
        assert!(!nix::sys::prctl::get_dumpable().expect("prctl"));
    }
}
