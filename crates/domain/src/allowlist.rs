//! Commands run without a shell, and only when their program is allowlisted.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Programs a sandbox may run, by base name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allowlist {
    pub programs: Vec<String>,
}

impl Default for Allowlist {
    fn default() -> Self {
        let programs = [
            "git",
            "python",
            "python3",
            "pytest",
            "py.test",
            "tox",
            "cargo",
            "cargo-nextest",
            "go",
            "node",
            "npm",
            "npx",
            "yarn",
            "pnpm",
            "jest",
            "mvn",
            "gradle",
            "make",
            "ctest",
            "dotnet",
            "ruby",
            "bundle",
            "rspec",
        ];
        Self {
            programs: programs.into_iter().map(String::from).collect(),
        }
    }
}

/// Shell syntax that means the user expected a shell; we refuse it rather than misread it.
const SHELL_OPERATORS: [&str; 9] = ["&&", "||", "|", ";", ">", ">>", "<", "&", "2>&1"];

impl Allowlist {
    /// Splits `command` like a POSIX shell would split words (quotes, escapes),
    /// without expanding anything, and checks the program.
    pub fn parse(&self, command: &str) -> Result<Vec<String>> {
        let argv = shell_words::split(command)
            .map_err(|e| Error::invalid(format!("cannot parse command {command:?}: {e}")))?;
        self.check(&argv)?;
        Ok(argv)
    }

    pub fn check(&self, argv: &[String]) -> Result<()> {
        let program = argv
            .first()
            .ok_or_else(|| Error::invalid("empty command"))?;
        if let Some(op) = argv
            .iter()
            .find(|a| SHELL_OPERATORS.contains(&a.as_str()) || a.contains("$(") || a.contains('`'))
        {
            return Err(Error::invalid(format!(
                "commands run without a shell; {op:?} is shell syntax (wrap the steps in a script and allowlist its runner)"
            )));
        }
        let base = program.rsplit('/').next().unwrap_or(program);
        if !self.programs.iter().any(|p| p == base) {
            return Err(Error::invalid(format!(
                "program {base:?} is not allowlisted (allowed: {})",
                self.programs.join(", ")
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allows_test_runners_with_quoted_arguments() {
        let argv = Allowlist::default()
            .parse("python3 -m pytest -k 'add and not slow' tests")
            .unwrap();
        assert_eq!(
            argv,
            ["python3", "-m", "pytest", "-k", "add and not slow", "tests"]
        );
        assert!(Allowlist::default().parse("/usr/bin/python3 t.py").is_ok());
    }

    #[test]
    fn refuses_shells_and_unknown_programs() {
        let list = Allowlist::default();
        assert!(
            list.parse("bash -c 'rm -rf /'")
                .unwrap_err()
                .message
                .contains("not allowlisted")
        );
        assert!(
            list.parse("pytest && curl x")
                .unwrap_err()
                .message
                .contains("shell syntax")
        );
        assert!(
            list.parse("pytest $(whoami)")
                .unwrap_err()
                .message
                .contains("shell syntax")
        );
        assert!(list.parse("").unwrap_err().message.contains("empty"));
        assert!(
            list.parse("pytest 'unterminated")
                .unwrap_err()
                .message
                .contains("cannot parse")
        );
    }
}
