//! Format parsers. Each turns text into raw failures (frames not yet
//! normalised, nothing redacted) plus diagnostics.

pub(crate) mod build_log;
pub(crate) mod go_test;
pub(crate) mod js_runners;
pub(crate) mod junit;
pub(crate) mod logs;
pub(crate) mod python_runners;
pub(crate) mod rust_runners;
pub(crate) mod traces;

use crate::model::{DetectedFormat, Diagnostic, Failure, Limits};

/// What a parser found before normalisation and redaction.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub failures: Vec<Failure>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Runs the parser for `format` over `text`.
pub(crate) fn dispatch(format: DetectedFormat, text: &str, limits: &Limits) -> Parsed {
    let mut parsed = Parsed::default();
    if matches!(format, DetectedFormat::JunitXml) {
        junit::parse(text, limits, &mut parsed);
        return parsed;
    }
    let lines = crate::input::lines(text, limits, &mut parsed.diagnostics);
    match format {
        DetectedFormat::GoTestJson => go_test::parse_json(&lines, limits, &mut parsed),
        DetectedFormat::JsonLines => logs::parse_json_lines(&lines, limits, &mut parsed),
        DetectedFormat::Pytest => python_runners::parse_pytest(&lines, limits, &mut parsed),
        DetectedFormat::Unittest => python_runners::parse_unittest(&lines, limits, &mut parsed),
        DetectedFormat::CargoTest => rust_runners::parse_cargo_test(&lines, limits, &mut parsed),
        DetectedFormat::Nextest => rust_runners::parse_nextest(&lines, limits, &mut parsed),
        DetectedFormat::GoTest => go_test::parse_text(&lines, limits, &mut parsed),
        DetectedFormat::Jest => js_runners::parse_jest(&lines, limits, &mut parsed),
        DetectedFormat::NodeTest => js_runners::parse_node_test(&lines, limits, &mut parsed),
        DetectedFormat::BuildLog => build_log::parse(&lines, limits, &mut parsed),
        DetectedFormat::Text => parse_text(&lines, limits, &mut parsed),
        DetectedFormat::JunitXml | DetectedFormat::Binary | DetectedFormat::Empty => {}
    }
    parsed
}

/// Plain text: every stack trace in it.
fn parse_text(lines: &[&str], limits: &Limits, parsed: &mut Parsed) {
    parsed.failures = traces::scan(lines, 1, limits.max_failures + 1);
    if parsed.failures.is_empty() {
        parsed.diagnostics.push(Diagnostic::info(
            "no_failure_found",
            "no stack trace or known failure format found in the text",
        ));
    }
}

/// The first stack trace in `text` (a test's failure output, a log field), if any.
pub(crate) fn first_trace(text: &str) -> Option<Failure> {
    let lines: Vec<&str> = text.lines().collect();
    traces::scan(&lines, 1, 1).into_iter().next()
}

/// Copies a trace's exception data and frames into a test failure.
pub(crate) fn merge_trace(target: &mut Failure, trace: Failure) {
    target.language = trace.language;
    if trace.exception_type.is_some() {
        target.exception_type = trace.exception_type;
    }
    if !trace.message.is_empty() || target.message.is_empty() {
        target.message = trace.message;
    }
    target.frames = trace.frames;
    target.causes = trace.causes;
    for (k, v) in trace.context {
        target.context.entry(k).or_insert(v);
    }
}
