//! The Repro Pack: everything needed to make a failure happen again on
//! another machine — the revision, the base command, the failing tests with
//! their seeds and flags, the environment delta, and the files and line
//! ranges worth reading first. `tracelab locate --test CMD --repro-pack FILE`
//! writes one; `tracelab repro --pack FILE` materialises and runs it.
//! Pure data and rendering; running it is the CLI's job.

use crate::contexts::same_test;
use crate::error::{Error, Result};
use crate::suite::{FailingTest, PythonCommand, Spectrum, failing_tests};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tracelab_code_index::Locations;

/// Bumped when a field changes meaning; older packs are refused clearly.
pub const FORMAT: u32 = 1;
/// Bytes of the failing output kept, so a person can compare by eye.
const EXCERPT: usize = 4000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReproTest {
    /// What the runner reruns it by (`tests/t.py::T::test_x`).
    pub id: String,
    /// The dotted name (`tests.t.T.test_x`).
    pub name: String,
    /// A random-order or property-test seed the failing run printed.
    pub seed: Option<String>,
    /// Runner flags that pin that seed (`--randomly-seed=N`).
    pub flags: Vec<String>,
}

/// A file region worth reading first, best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interest {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub symbol: Option<String>,
    pub score: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReproPack {
    pub format: u32,
    /// The full commit sha the failure was observed at.
    pub revision: String,
    /// The test command as given (argv, run without a shell).
    pub base_command: Vec<String>,
    /// The Python runner it was understood as, when it is one.
    pub python: Option<PythonCommand>,
    pub failing_tests: Vec<ReproTest>,
    /// Variables set on top of the sandbox's minimal environment.
    pub env: BTreeMap<String, String>,
    pub interest: Vec<Interest>,
    /// The tail of the failing run's output.
    pub failure_excerpt: String,
}

/// `--randomly-seed=N` (pytest-randomly) and `--hypothesis-seed=N` as printed.
fn seeds(output: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (marker, flag) in [
        ("--randomly-seed=", "--randomly-seed"),
        ("--hypothesis-seed=", "--hypothesis-seed"),
    ] {
        if let Some(at) = output.find(marker) {
            let seed: String = output[at + marker.len()..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if !seed.is_empty() {
                out.push((seed.clone(), format!("{flag}={seed}")));
            }
        }
    }
    out
}

fn excerpt(s: &str) -> String {
    let mut start = s.len().saturating_sub(EXCERPT);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].to_string()
}

impl ReproPack {
    /// A pack from a suite run under coverage and what `locate` ranked.
    pub fn from_spectrum(
        revision: &str,
        test: &PythonCommand,
        spectrum: &Spectrum,
        found: &Locations,
    ) -> Self {
        let seeds = seeds(&spectrum.output);
        let seed = seeds.first().map(|(s, _)| s.clone());
        let flags: Vec<String> = seeds.into_iter().map(|(_, f)| f).collect();
        let mut interest: Vec<Interest> = found
            .symbols
            .iter()
            .map(|s| Interest {
                path: s.path.clone(),
                start_line: s.start_line,
                end_line: s.end_line,
                symbol: Some(s.symbol.clone()),
                score: s.score,
            })
            .collect();
        // Files without a ranked function (module-level code) still count.
        for f in &found.files {
            if !interest.iter().any(|i| i.path == f.path) {
                interest.push(Interest {
                    path: f.path.clone(),
                    start_line: 1,
                    end_line: 0,
                    symbol: None,
                    score: f.score,
                });
            }
        }
        Self {
            format: FORMAT,
            revision: revision.to_string(),
            base_command: test.argv(),
            python: Some(test.clone()),
            failing_tests: spectrum
                .failing
                .iter()
                .map(|t| ReproTest {
                    id: t.id.clone(),
                    name: t.name.clone(),
                    seed: seed.clone(),
                    flags: flags.clone(),
                })
                .collect(),
            env: spectrum.env.iter().cloned().collect(),
            interest,
            failure_excerpt: excerpt(&spectrum.output),
        }
    }

    /// Reads a pack, refusing other formats and packs that cannot run.
    pub fn from_json(text: &str) -> Result<Self> {
        let pack: Self = serde_json::from_str(text)
            .map_err(|e| Error::InvalidArgument(format!("not a Repro Pack: {e}")))?;
        if pack.format != FORMAT {
            return Err(Error::InvalidArgument(format!(
                "Repro Pack format {} is not supported (this tracelab reads format {FORMAT})",
                pack.format
            )));
        }
        if pack.revision.is_empty() || pack.base_command.is_empty() {
            return Err(Error::InvalidArgument(
                "the Repro Pack has no revision or no base command".into(),
            ));
        }
        if let Some((k, _)) = pack.env.iter().find(|(k, _)| {
            k.is_empty() || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }) {
            return Err(Error::InvalidArgument(format!(
                "the Repro Pack sets an invalid environment variable name {k:?}"
            )));
        }
        Ok(pack)
    }

    /// The command that reruns only the failing tests with their flags (the
    /// base command when there is no failing test or no known runner).
    pub fn command(&self) -> Vec<String> {
        match &self.python {
            Some(py) if !self.failing_tests.is_empty() => {
                let ids: Vec<String> = self.failing_tests.iter().map(|t| t.id.clone()).collect();
                let mut cmd = py.only(&ids);
                for t in &self.failing_tests {
                    for f in &t.flags {
                        if !cmd.options.contains(f) {
                            cmd.options.push(f.clone());
                        }
                    }
                }
                cmd.reporting_argv()
            }
            Some(py) => py.reporting_argv(),
            None => self.base_command.clone(),
        }
    }

    /// A bash script a person can run from the pack's directory: enters the
    /// worktree, sets the environment delta, runs [`Self::command`].
    pub fn script(&self, worktree_dir: &str) -> String {
        let mut s = String::from("#!/usr/bin/env bash\n");
        s.push_str(&format!(
            "# Repro Pack for {} ({} failing test(s)); written by tracelab.\nset -u\n",
            self.revision,
            self.failing_tests.len()
        ));
        s.push_str(&format!(
            "cd \"$(dirname \"$0\")\"/{}\n",
            shell_words::quote(worktree_dir)
        ));
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(k, v)| format!("{k}={}", shell_words::quote(v)))
            .collect();
        let cmd = shell_words::join(self.command());
        if env.is_empty() {
            s.push_str(&format!("exec {cmd}\n"));
        } else {
            s.push_str(&format!("exec env {} {cmd}\n", env.join(" ")));
        }
        s
    }

    /// Which of the pack's failing tests failed again in `output` of
    /// [`Self::command`]. `None` when the pack has no runner to read
    /// failures with; then the exit code is all there is.
    pub fn failed_again(&self, output: &str) -> Option<Vec<FailingTest>> {
        let py = self.python.as_ref()?;
        let now = failing_tests(py.runner, output);
        Some(
            self.failing_tests
                .iter()
                .filter(|t| now.iter().any(|n| same_test(&n.name, &t.name)))
                .map(|t| FailingTest {
                    id: t.id.clone(),
                    name: t.name.clone(),
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Runner;

    fn pack() -> ReproPack {
        let test = PythonCommand::parse(
            &"python3 -m pytest -x tests/test_cart.py"
                .split(' ')
                .map(String::from)
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let spectrum = Spectrum {
            command: test.whole_suite().argv(),
            runner: Runner::Pytest,
            runs: Vec::new(),
            failing: vec![FailingTest {
                id: "tests/test_cart.py::test_three".into(),
                name: "tests.test_cart.test_three".into(),
            }],
            env: vec![("PYTHONHASHSEED".into(), "0".into())],
            output: "Using --randomly-seed=1234\nFAILED tests/test_cart.py::test_three - assert 5 == 6\n".into(),
            exit_code: Some(1),
        };
        ReproPack::from_spectrum("abc123", &test, &spectrum, &Locations::default())
    }

    #[test]
    fn reruns_only_the_failing_tests_with_their_seed() {
        let p = pack();
        assert_eq!(p.failing_tests[0].seed.as_deref(), Some("1234"));
        assert_eq!(
            p.command(),
            [
                "python3",
                "-m",
                "pytest",
                "-rfE",
                "-p",
                "no:cacheprovider",
                "-x",
                "--randomly-seed=1234",
                "tests/test_cart.py::test_three"
            ]
        );
        let script = p.script("worktree");
        assert!(
            script.contains("cd \"$(dirname \"$0\")\"/worktree\n"),
            "{script}"
        );
        assert!(
            script.contains("exec env PYTHONHASHSEED=0 python3 -m pytest -rfE"),
            "{script}"
        );
    }

    #[test]
    fn round_trips_and_refuses_bad_packs() {
        let p = pack();
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(ReproPack::from_json(&json).unwrap(), p);
        let mut other = p.clone();
        other.format = 99;
        let e = ReproPack::from_json(&serde_json::to_string(&other).unwrap()).unwrap_err();
        assert!(e.to_string().contains("format 99"), "{e}");
        let mut bad_env = p.clone();
        bad_env.env.insert("A B".into(), "x".into());
        assert!(ReproPack::from_json(&serde_json::to_string(&bad_env).unwrap()).is_err());
        assert!(ReproPack::from_json("{}").is_err());
    }

    #[test]
    fn tells_which_failures_came_back() {
        let p = pack();
        let again = p
            .failed_again("=== short test summary info ===\nFAILED tests/test_cart.py::test_three - assert 5 == 6\n")
            .unwrap();
        assert_eq!(again.len(), 1);
        assert!(p.failed_again("1 passed\n").unwrap().is_empty());
    }
}
