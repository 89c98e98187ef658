//! Layered configuration: the service's defaults, then a TOML file, then
//! environment variables `TRACELAB__SECTION__KEY=value` (double underscore
//! separates levels), then `--set section.key=value` flags — later layers win.
//!
//! Secrets come from files, not the environment (a process of the same user
//! could read `/proc/<pid>/environ`): `TRACELAB__SECTION__KEY_FILE=<path>`
//! sets `section.key` to the file's content, read at start (a Kubernetes
//! Secret mounted as a file). Content starting with `[` or `{` is a TOML
//! value (`[{name="ci", token="…"}]`), anything else a string; one trailing
//! newline is dropped. Errors name the variable and the path, never the
//! content.

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::Path;
use tracelab_domain::{Error, Result};

/// Loads `T` from its defaults and the layers above. `overrides` are
/// `key=value` pairs (dotted keys for nested settings); values parse as TOML
/// scalars when they can (`8`, `true`, `"x"`), else as strings.
pub fn load<T: Serialize + DeserializeOwned + Default>(
    file: Option<&Path>,
    overrides: &[String],
) -> Result<T> {
    let mut figment = Figment::from(Serialized::defaults(T::default()));
    if let Some(path) = file {
        if !path.is_file() {
            return Err(Error::invalid(format!(
                "config file {} does not exist",
                path.display()
            )));
        }
        figment = figment.merge(Toml::file(path));
    }
    figment = figment.merge(
        Env::prefixed("TRACELAB__")
            .filter(|key| !is_file_key(key.as_str()))
            .split("__"),
    );
    for (key, value) in from_files(std::env::vars())? {
        figment = figment.merge(Serialized::global(&key, value));
    }
    for pair in overrides {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| Error::invalid(format!("--set {pair:?}: expected key=value")))?;
        let value: figment::value::Value = value
            .parse::<figment::value::Value>()
            .unwrap_or_else(|_| value.into());
        figment = figment.merge(Serialized::global(key.trim(), value));
    }
    figment
        .extract()
        .map_err(|e| Error::invalid(format!("configuration: {e}")))
}

/// `KEY_FILE` (after the `TRACELAB__` prefix): a setting read from a file.
fn is_file_key(key: &str) -> bool {
    key.len() > "_FILE".len() && key.to_ascii_uppercase().ends_with("_FILE")
}

/// The settings `TRACELAB__…_FILE` variables among `vars` name, as dotted
/// keys and values read from their files.
fn from_files(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<(String, figment::value::Value)>> {
    let mut out = Vec::new();
    for (name, path) in vars {
        let Some(rest) = name.strip_prefix("TRACELAB__") else {
            continue;
        };
        if !is_file_key(rest) {
            continue;
        }
        let key = rest[..rest.len() - "_FILE".len()]
            .split("__")
            .map(str::to_ascii_lowercase)
            .collect::<Vec<_>>()
            .join(".");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::invalid(format!("{name}: cannot read {path}: {e}")))?;
        let text = text
            .strip_suffix('\n')
            .map(|t| t.strip_suffix('\r').unwrap_or(t))
            .unwrap_or(&text);
        let value = if text.trim_start().starts_with(['[', '{']) {
            // figment falls back to a string for what it cannot parse; a
            // string here would fail later with the secret quoted.
            match text.parse::<figment::value::Value>() {
                Ok(v @ (figment::value::Value::Array(..) | figment::value::Value::Dict(..))) => v,
                _ => {
                    return Err(Error::invalid(format!(
                        "{name}: {path} starts like a TOML array or table but does not parse as one"
                    )));
                }
            }
        } else {
            text.into()
        };
        out.push((key, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Settings {
        listen: String,
        workers: u32,
        nested: Nested,
    }

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct Nested {
        flag: bool,
    }

    impl Default for Settings {
        fn default() -> Self {
            Self {
                listen: "127.0.0.1:1".into(),
                workers: 1,
                nested: Nested { flag: false },
            }
        }
    }

    #[test]
    fn later_layers_win() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.toml");
        std::fs::write(&file, "workers = 4\n[nested]\nflag = true\n").unwrap();
        let s: Settings = load(Some(&file), &["listen=0.0.0.0:9".into()]).unwrap();
        assert_eq!(s.workers, 4);
        assert!(s.nested.flag);
        assert_eq!(s.listen, "0.0.0.0:9");
        let s: Settings = load(
            Some(&file),
            &["workers=7".into(), "nested.flag=false".into()],
        )
        .unwrap();
        assert_eq!(s.workers, 7);
        assert!(!s.nested.flag);
    }

    #[test]
    fn secrets_come_from_files_named_by_file_variables() {
        let dir = tempfile::tempdir().unwrap();
        let url = dir.path().join("postgres-url");
        std::fs::write(&url, "postgres://u:s3cr3t@db/x\n").unwrap();
        let tokens = dir.path().join("tokens");
        std::fs::write(&tokens, "[{name = \"ci\", token = \"t0k\"}]\n").unwrap();
        let vars = [
            (
                "TRACELAB__FLEET__POSTGRES_URL_FILE".to_string(),
                url.display().to_string(),
            ),
            (
                "TRACELAB__TOKENS_FILE".to_string(),
                tokens.display().to_string(),
            ),
            (
                "TRACELAB__LISTEN".to_string(),
                "not a file variable".to_string(),
            ),
            ("OTHER_FILE".to_string(), "/nonexistent".to_string()),
        ];
        let read = from_files(vars).unwrap();
        assert_eq!(read.len(), 2, "{read:?}");
        assert_eq!(read[0].0, "fleet.postgres_url");
        assert_eq!(read[0].1.as_str(), Some("postgres://u:s3cr3t@db/x"));
        assert_eq!(read[1].0, "tokens");
        let figment = Figment::new().merge(Serialized::global(&read[1].0, read[1].1.clone()));
        let parsed: Vec<std::collections::BTreeMap<String, String>> =
            figment.extract_inner("tokens").unwrap();
        assert_eq!(parsed[0]["token"], "t0k");

        let missing = [(
            "TRACELAB__FLEET__POSTGRES_URL_FILE".to_string(),
            "/nonexistent/secret".to_string(),
        )];
        let e = from_files(missing).unwrap_err();
        assert!(
            e.message.contains("TRACELAB__FLEET__POSTGRES_URL_FILE"),
            "{e}"
        );
        assert!(e.message.contains("/nonexistent/secret"), "{e}");
        std::fs::write(&tokens, "[{name = \"ci\", token = \"leak-me\"").unwrap();
        let broken = [(
            "TRACELAB__TOKENS_FILE".to_string(),
            tokens.display().to_string(),
        )];
        let e = from_files(broken).unwrap_err();
        assert!(
            !e.message.contains("leak-me"),
            "the content is never quoted: {e}"
        );
    }

    #[test]
    fn bad_input_is_a_clear_error() {
        let e = load::<Settings>(None, &["workers".into()]).unwrap_err();
        assert!(e.message.contains("key=value"), "{e}");
        let e = load::<Settings>(None, &["workers=many".into()]).unwrap_err();
        assert!(e.message.contains("workers"), "{e}");
        let e = load::<Settings>(Some(Path::new("/nonexistent.toml")), &[]).unwrap_err();
        assert!(e.message.contains("does not exist"), "{e}");
    }
}
