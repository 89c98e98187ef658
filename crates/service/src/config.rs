//! Layered configuration: the service's defaults, then a TOML file, then
//! environment variables `TRACELAB__SECTION__KEY=value` (double underscore
//! separates levels), then `--set section.key=value` flags — later layers win.

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
    figment = figment.merge(Env::prefixed("TRACELAB__").split("__"));
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
    fn bad_input_is_a_clear_error() {
        let e = load::<Settings>(None, &["workers".into()]).unwrap_err();
        assert!(e.message.contains("key=value"), "{e}");
        let e = load::<Settings>(None, &["workers=many".into()]).unwrap_err();
        assert!(e.message.contains("workers"), "{e}");
        let e = load::<Settings>(Some(Path::new("/nonexistent.toml")), &[]).unwrap_err();
        assert!(e.message.contains("does not exist"), "{e}");
    }
}
