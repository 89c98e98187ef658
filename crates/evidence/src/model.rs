//! The data a parse produces: failures, frames, diagnostics, and the options
//! and limits that bound it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What kind of failure evidence a [`Failure`] came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// A failed (or errored) test case from a test report or runner output.
    TestFailure,
    /// A stack trace found outside a test report.
    Exception,
    /// An error-level production log record.
    LogError,
    /// A compiler diagnostic or failing build/CI step.
    BuildError,
}

/// The language (runtime) a failure belongs to, as far as the parser could
/// tell: the domain's one language vocabulary (the parsers never say
/// `Typescript`; a Node trace is `Javascript`).
pub use tracelab_domain::Language;

/// The input format `parse` detected (or was told to use).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DetectedFormat {
    /// JUnit XML in any common dialect.
    JunitXml,
    /// `go test -json` event stream.
    GoTestJson,
    /// One JSON object per line (application logs).
    JsonLines,
    /// pytest terminal output.
    Pytest,
    /// Python `unittest` terminal output.
    Unittest,
    /// `cargo test` terminal output.
    CargoTest,
    /// `cargo nextest run` terminal output.
    Nextest,
    /// `go test` (plain, `-v`) terminal output.
    GoTest,
    /// jest terminal output.
    Jest,
    /// `node --test` (spec or TAP reporter) output.
    NodeTest,
    /// A build or CI log (compiler diagnostics, failing steps).
    BuildLog,
    /// Plain text that may contain stack traces (Python, Java, JS, Go, Rust).
    Text,
    /// Input that is not text.
    Binary,
    /// Nothing but whitespace.
    Empty,
}

impl DetectedFormat {
    /// Every format, for CLIs that accept `--input-format`.
    pub const ALL: [DetectedFormat; 14] = [
        Self::JunitXml,
        Self::GoTestJson,
        Self::JsonLines,
        Self::Pytest,
        Self::Unittest,
        Self::CargoTest,
        Self::Nextest,
        Self::GoTest,
        Self::Jest,
        Self::NodeTest,
        Self::BuildLog,
        Self::Text,
        Self::Binary,
        Self::Empty,
    ];

    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::JunitXml => "junit_xml",
            Self::GoTestJson => "go_test_json",
            Self::JsonLines => "json_lines",
            Self::Pytest => "pytest",
            Self::Unittest => "unittest",
            Self::CargoTest => "cargo_test",
            Self::Nextest => "nextest",
            Self::GoTest => "go_test",
            Self::Jest => "jest",
            Self::NodeTest => "node_test",
            Self::BuildLog => "build_log",
            Self::Text => "text",
            Self::Binary => "binary",
            Self::Empty => "empty",
        }
    }
}

impl std::str::FromStr for DetectedFormat {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Self> {
        Self::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| crate::Error::InvalidArgument(format!("unknown input format `{s}`")))
    }
}

/// One stack frame, normalised: the domain's one frame type, innermost
/// LAST in every list (`tracelab_domain::frame`), whatever order the
/// runtime printed them in.
pub use tracelab_domain::frame::Frame;

/// A link in an exception chain (`Caused by:`, `During handling of ...`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    /// How this exception relates to the next one: `cause`, `context`, `suppressed`.
    pub relation: String,
    pub exception_type: Option<String>,
    pub message: String,
    pub frames: Vec<Frame>,
}

/// For build logs: where in the log the failure is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    /// The CI step (GitHub Actions group, GitLab section, Gradle task) containing it.
    pub step: Option<String>,
    /// 1-based line numbers in the (possibly truncated) input.
    pub start_line: usize,
    pub end_line: usize,
    /// The region's text, redacted and capped.
    pub excerpt: String,
}

/// One failure found in the input. Serialises to the JSON object the CLI prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub kind: FailureKind,
    pub language: Language,
    /// Test identifier when the failure came from a test report, else null.
    pub test_id: Option<String>,
    pub exception_type: Option<String>,
    /// The error message, redacted.
    pub message: String,
    /// Innermost frame last.
    pub frames: Vec<Frame>,
    /// Frames dropped by the per-trace cap (the middle of the trace).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub frames_omitted: usize,
    /// The rest of the exception chain, nearest first (this failure is the
    /// exception raised last / reported on top).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<Cause>,
    pub stack_signature: Option<String>,
    pub error_signature: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<Region>,
    /// 1-based line in the input where the failure starts, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// Correlation fields (trace_id, span_id, service, logger, level, ...), redacted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub context: BTreeMap<String, String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Failure {
    /// A failure with no frames or signatures yet; the pipeline fills them.
    pub fn new(kind: FailureKind, language: Language) -> Self {
        Self {
            kind,
            language,
            test_id: None,
            exception_type: None,
            message: String::new(),
            frames: Vec::new(),
            frames_omitted: 0,
            causes: Vec::new(),
            stack_signature: None,
            error_signature: String::new(),
            region: None,
            line: None,
            context: BTreeMap::new(),
        }
    }
}

/// How serious a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// Something the parser did not understand or had to cut.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub severity: Severity,
    /// A stable machine-readable code, e.g. `input_truncated`, `binary_input`.
    pub code: String,
    pub message: String,
    /// 1-based input line, when relevant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
}

impl Diagnostic {
    pub fn new(severity: Severity, code: &str, message: impl Into<String>) -> Self {
        Self {
            severity,
            code: code.to_owned(),
            message: message.into(),
            line: None,
        }
    }
    pub fn warning(code: &str, message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, code, message)
    }
    pub fn error(code: &str, message: impl Into<String>) -> Self {
        Self::new(Severity::Error, code, message)
    }
    pub fn info(code: &str, message: impl Into<String>) -> Self {
        Self::new(Severity::Info, code, message)
    }
    pub fn at(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }
}

/// Bounds that keep memory and time proportional to the caps, not the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    /// Bytes of input considered. Larger inputs keep the first and the last half.
    pub max_input_bytes: usize,
    /// Longer lines are cut (lossily, on a character boundary).
    pub max_line_bytes: usize,
    /// Frames kept per trace: the outermost half and the innermost half.
    pub max_frames: usize,
    /// Failures reported per input; the rest are counted in a diagnostic.
    pub max_failures: usize,
    /// JSON nesting deeper than this is rejected per line.
    pub max_json_depth: usize,
    /// Messages are cut to this many bytes.
    pub max_message_bytes: usize,
    /// Exception chain links kept per failure.
    pub max_causes: usize,
    /// Diagnostics kept; the rest are counted.
    pub max_diagnostics: usize,
    /// Log records read from one OTLP request or log batch; the rest are counted.
    pub max_records: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_input_bytes: 32 * 1024 * 1024,
            max_line_bytes: 16 * 1024,
            max_frames: 256,
            max_failures: 1000,
            max_json_depth: 64,
            max_message_bytes: 4096,
            max_causes: 8,
            max_diagnostics: 100,
            max_records: 100_000,
        }
    }
}

/// The key used when no redaction key is configured. It is public and fixed,
/// so pseudonyms made with it are NOT secret: configure your own key in
/// production (`ParseOptions::redaction_key`).
pub const DEV_REDACTION_KEY: &[u8] = b"tracelab-dev-redaction-key-not-secret";

/// What `parse` needs to know besides the bytes. `Debug` never prints the key.
#[derive(Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct ParseOptions {
    /// HMAC key for pseudonyms. Defaults to [`DEV_REDACTION_KEY`] (development only).
    #[serde(skip_serializing)]
    pub redaction_key: Vec<u8>,
    /// Known repository roots on the machines that produced the input
    /// (`/home/ci/work/proj`, `/builds/org/repo`); tried before the built-in heuristics.
    pub repo_roots: Vec<String>,
    /// Module/package prefixes that are application code (`com.acme.`, `github.com/acme/`).
    pub in_app_prefixes: Vec<String>,
    /// Force a format instead of detecting it.
    pub format: Option<DetectedFormat>,
    /// Number of in-app frames in the stack signature.
    pub signature_frames: usize,
    /// Turn redaction off (tests and local debugging only).
    pub redact: bool,
    pub limits: Limits,
}

impl std::fmt::Debug for ParseOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = if self.redaction_key == DEV_REDACTION_KEY {
            "<dev key>"
        } else {
            "<redacted>"
        };
        f.debug_struct("ParseOptions")
            .field("redaction_key", &key)
            .field("repo_roots", &self.repo_roots)
            .field("in_app_prefixes", &self.in_app_prefixes)
            .field("format", &self.format)
            .field("signature_frames", &self.signature_frames)
            .field("redact", &self.redact)
            .field("limits", &self.limits)
            .finish()
    }
}

impl Default for ParseOptions {
    fn default() -> Self {
        Self {
            redaction_key: DEV_REDACTION_KEY.to_vec(),
            repo_roots: Vec::new(),
            in_app_prefixes: Vec::new(),
            format: None,
            signature_frames: 5,
            redact: true,
            limits: Limits::default(),
        }
    }
}

/// Everything `parse` found: failures, what it could not understand, and the format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseOutput {
    pub failures: Vec<Failure>,
    pub diagnostics: Vec<Diagnostic>,
    pub format: DetectedFormat,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_the_key() {
        let o = ParseOptions {
            redaction_key: b"s3cret-key-material".to_vec(),
            ..ParseOptions::default()
        };
        let d = format!("{o:?}");
        assert!(
            !d.contains("s3cret") && !d.contains("115, 51") && d.contains("<redacted>"),
            "{d}"
        );
    }
}
