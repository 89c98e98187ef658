//! Commands run without a shell, and only when their program is allowlisted.
//!
//! The allowlist is a guard against mistakes, not a security boundary: an
//! allowed test runner runs the repository's code, which can do anything the
//! sandbox lets it. What it does refuse in a *requested* test command
//! ([`Allowlist::parse`]) are the ways a caller could run code of their own
//! choosing without it being in the repository at all — an interpreter's
//! inline-code flag (`python3 -c`, `node -e`, `git -c alias.x=!sh`) and a
//! program that resolves inside the checkout (`./python3`) — unless the
//! deployment allows them. The isolation is the sandbox's (docs/sandbox.md).

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Programs a sandbox may run, by base name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allowlist {
    pub programs: Vec<String>,
    /// A requested command may pass code on the command line (`-c`, `-e`, `--eval`).
    #[serde(default)]
    pub inline_code: bool,
    /// A requested command's program may be a relative path, which resolves
    /// inside the repository's checkout (`./python3`, `venv/bin/pytest`).
    #[serde(default)]
    pub repository_programs: bool,
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
            inline_code: false,
            repository_programs: false,
        }
    }
}

/// Flags that make a program run code given on its command line, by
/// program base name. Python's are short-option clusters containing `c`
/// (`-c`, `-Bc`) before the script or `-m`; the others are exact flags or
/// their `--flag=value` form.
fn inline_code_flag(program: &str, args: &[String]) -> Option<String> {
    let program = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let exact: &[&str] = match program {
        "python" => {
            let mut args = args.iter();
            while let Some(arg) = args.next() {
                if arg == "-m" || !arg.starts_with('-') || arg == "-" || arg == "--" {
                    return None;
                }
                if arg == "-W" || arg == "-X" {
                    args.next();
                    continue;
                }
                if !arg.starts_with("--") && arg[1..].contains('c') {
                    return Some(arg.clone());
                }
            }
            return None;
        }
        "node" => &["-e", "--eval", "-p", "--print", "-pe", "-ep"],
        "ruby" => &["-e"],
        "npx" => &["-c", "--call"],
        "git" => &["-c", "--config-env"],
        "make" => &["-E", "--eval"],
        _ => return None,
    };
    // npx's own options come before the package it runs (`npx jest -c x`
    // passes -c to jest); the others' flags count anywhere before `--`.
    let mut own = args
        .iter()
        .take_while(|a| a.as_str() != "--" && (program != "npx" || a.starts_with('-')));
    own.find(|a| {
        exact
            .iter()
            .any(|f| a.as_str() == *f || (f.starts_with("--") && a.starts_with(&format!("{f}="))))
    })
    .cloned()
}

/// Shell syntax that means the user expected a shell; we refuse it rather than misread it.
const SHELL_OPERATORS: [&str; 9] = ["&&", "||", "|", ";", ">", ">>", "<", "&", "2>&1"];

impl Allowlist {
    /// Splits `command` like a POSIX shell would split words (quotes, escapes),
    /// without expanding anything, and checks the program.
    /// That is for a requested test command, so it also refuses inline code
    /// and programs inside the repository unless they are allowed.
    pub fn parse(&self, command: &str) -> Result<Vec<String>> {
        let argv = shell_words::split(command)
            .map_err(|e| Error::invalid(format!("cannot parse command {command:?}: {e}")))?;
        self.check(&argv)?;
        self.check_requested(&argv)?;
        Ok(argv)
    }

    /// The rules for a command a caller asked for (see the module doc).
    fn check_requested(&self, argv: &[String]) -> Result<()> {
        let program = &argv[0];
        if !self.repository_programs && program.contains('/') && !program.starts_with('/') {
            return Err(Error::invalid(format!(
                "program {program:?} is a path inside the repository; use the system's (by name or absolute path), or allow repository programs"
            )));
        }
        let base = program.rsplit('/').next().unwrap_or(program);
        if !self.inline_code
            && let Some(flag) = inline_code_flag(base, &argv[1..])
        {
            return Err(Error::invalid(format!(
                "{base} {flag} runs code given on the command line, not the repository's tests; put it in a file in the repository, or allow inline code"
            )));
        }
        Ok(())
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
        for ok in [
            "python3 -m pytest -x -c setup.cfg",
            "python3 -B -m pytest",
            "python3 test_app.py -c config",
            "node --test",
            "npx jest -c jest.config.js",
            "tox -e py311",
            "cargo test -- -c",
            "make check",
        ] {
            assert!(Allowlist::default().parse(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn refuses_inline_code_and_programs_in_the_repository_unless_allowed() {
        let list = Allowlist::default();
        for inline in [
            "python3 -c 'import os'",
            "python -Bc 'import os'",
            "python3 -u -c pass",
            "python3 -W ignore -c pass",
            "node -e 'require(1)'",
            "node --eval=1",
            "node -p 1",
            "ruby -e 'exit'",
            "npx -c 'curl x'",
            "git -c alias.t=!sh t",
            "make --eval=x",
        ] {
            let e = list.parse(inline).unwrap_err();
            assert!(
                e.message.contains("code given on the command line"),
                "{inline}: {e}"
            );
        }
        for local in ["./python3 t.py", "venv/bin/pytest", "bin/../python3 t.py"] {
            let e = list.parse(local).unwrap_err();
            assert!(e.message.contains("inside the repository"), "{local}: {e}");
        }
        let open = Allowlist {
            inline_code: true,
            repository_programs: true,
            ..Allowlist::default()
        };
        assert!(open.parse("python3 -c 'import os'").is_ok());
        assert!(open.parse("venv/bin/pytest").is_ok());
        // Commands TraceLab builds itself are checked by `check` alone.
        assert!(
            list.check(&["python3".into(), "-c".into(), "pass".into()])
                .is_ok()
        );
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
