//! JUnit XML in its common dialects: pytest, Maven Surefire, Gradle,
//! jest-junit, go-junit-report, cargo-nextest.
//!
//! Streaming (quick-xml), so memory is bounded by the text kept per test
//! case, not by the document; nesting depth is capped; DTD entities are
//! never expanded. A malformed document yields the test cases read before
//! the error plus a diagnostic.

use super::{Parsed, first_trace, go_test, merge_trace, python_runners};
use crate::model::{Diagnostic, Failure, FailureKind, Language, Limits};
use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

/// Text kept per element (failure body, system-out, system-err).
const MAX_ELEMENT_TEXT: usize = 64 * 1024;
const MAX_DEPTH: usize = 64;

#[derive(Default)]
struct Case {
    name: String,
    classname: String,
    file: Option<String>,
    suite: String,
    outcome: Option<Outcome>,
    system_out: String,
    system_err: String,
    line: usize,
}

#[derive(Default)]
struct Outcome {
    element: String,
    ty: Option<String>,
    message: Option<String>,
    text: String,
}

#[derive(Clone, Copy, PartialEq)]
enum Sink {
    None,
    Outcome,
    Out,
    Err,
}

fn attr(e: &BytesStart<'_>, name: &[u8]) -> Option<String> {
    e.attributes()
        .flatten()
        .find(|a| a.key.local_name().as_ref() == name)
        .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
}

fn push_capped(buf: &mut String, s: &str) {
    if buf.len() < MAX_ELEMENT_TEXT {
        buf.push_str(crate::input::truncate_str(s, MAX_ELEMENT_TEXT - buf.len()));
    }
}

pub(crate) fn parse(text: &str, limits: &Limits, parsed: &mut Parsed) {
    let mut reader = Reader::from_str(text);
    reader.config_mut().check_end_names = false;
    let mut depth = 0usize;
    let mut suites: Vec<String> = Vec::new();
    let mut case: Option<Case> = None;
    let mut sink = Sink::None;
    let mut cases = 0usize;
    // Line numbers are counted incrementally (the reader only moves forward).
    let mut lines = LineCounter::default();
    loop {
        let pos = reader.buffer_position() as usize;
        let ev = match reader.read_event() {
            Ok(ev) => ev,
            Err(e) => {
                let line = lines.line_at(text, pos);
                parsed.diagnostics.push(
                    Diagnostic::error(
                        "malformed_xml",
                        format!("JUnit XML is malformed: {e}; kept the test cases before it"),
                    )
                    .at(line),
                );
                break;
            }
        };
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(ev, Event::Empty(_));
                if !empty {
                    depth += 1;
                    if depth > MAX_DEPTH {
                        parsed.diagnostics.push(Diagnostic::error(
                            "too_deep",
                            format!("XML nesting deeper than {MAX_DEPTH} levels; stopped"),
                        ));
                        break;
                    }
                }
                match e.local_name().as_ref() {
                    b"testsuite" if !empty => suites.push(attr(e, b"name").unwrap_or_default()),
                    b"testcase" => {
                        cases += 1;
                        let c = Case {
                            name: attr(e, b"name").unwrap_or_default(),
                            classname: attr(e, b"classname")
                                .or_else(|| attr(e, b"class"))
                                .unwrap_or_default(),
                            file: attr(e, b"file"),
                            suite: suites.last().cloned().unwrap_or_default(),
                            line: lines.line_at(text, pos),
                            ..Case::default()
                        };
                        if empty {
                            continue;
                        }
                        case = Some(c);
                    }
                    name @ (b"failure" | b"error") => {
                        if let Some(c) = case.as_mut() {
                            // The first failure wins; flaky reruns (`rerunFailure`) are separate elements.
                            if c.outcome.is_none() {
                                c.outcome = Some(Outcome {
                                    element: String::from_utf8_lossy(name).into_owned(),
                                    ty: attr(e, b"type"),
                                    message: attr(e, b"message"),
                                    text: String::new(),
                                });
                                if !empty {
                                    sink = Sink::Outcome;
                                }
                            }
                        }
                    }
                    b"system-out" if !empty && case.is_some() => sink = Sink::Out,
                    b"system-err" if !empty && case.is_some() => sink = Sink::Err,
                    _ => {}
                }
            }
            Event::End(ref e) => {
                depth = depth.saturating_sub(1);
                match e.local_name().as_ref() {
                    b"testsuite" => {
                        suites.pop();
                    }
                    b"testcase" => {
                        if let Some(c) = case.take()
                            && c.outcome.is_some()
                        {
                            if parsed.failures.len() > limits.max_failures {
                                continue;
                            }
                            parsed.failures.push(case_failure(c));
                        }
                    }
                    b"failure" | b"error" | b"system-out" | b"system-err" => sink = Sink::None,
                    _ => {}
                }
            }
            Event::Text(ref t) => append(&mut case, sink, &t.xml_content().unwrap_or_default()),
            Event::CData(ref t) => append(&mut case, sink, &t.decode().unwrap_or_default()),
            Event::GeneralRef(ref r) => {
                let s = match r.resolve_char_ref() {
                    Ok(Some(ch)) => ch.to_string(),
                    _ => {
                        let name = r.decode().unwrap_or_default();
                        quick_xml::escape::resolve_predefined_entity(&name)
                            .map_or_else(|| format!("&{name};"), str::to_owned)
                    }
                };
                append(&mut case, sink, &s);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if cases == 0 {
        parsed.diagnostics.push(Diagnostic::warning(
            "no_test_cases",
            "the JUnit XML contains no <testcase> elements",
        ));
    }
}

fn append(case: &mut Option<Case>, sink: Sink, s: &str) {
    let Some(c) = case.as_mut() else { return };
    match sink {
        Sink::Outcome => {
            if let Some(o) = c.outcome.as_mut() {
                push_capped(&mut o.text, s);
            }
        }
        Sink::Out => push_capped(&mut c.system_out, s),
        Sink::Err => push_capped(&mut c.system_err, s),
        Sink::None => {}
    }
}

#[derive(Default)]
struct LineCounter {
    pos: usize,
    line: usize,
}

impl LineCounter {
    /// 1-based line of byte `pos`; the reader only moves forward, so counting
    /// from the previous position keeps this linear overall.
    fn line_at(&mut self, text: &str, pos: usize) -> usize {
        let pos = pos.min(text.len());
        if pos >= self.pos {
            self.line += text.as_bytes()[self.pos..pos]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            self.pos = pos;
        }
        self.line + 1
    }
}

/// Test types that say nothing about the error.
fn meaningful_type(ty: &str) -> bool {
    let t = ty.trim();
    !t.is_empty()
        && !matches!(
            t.to_ascii_lowercase().as_str(),
            "failure" | "failed" | "error" | "test failure" | "assertionfailure"
        )
        && !t.starts_with("test failure")
}

fn case_failure(mut c: Case) -> Failure {
    let outcome = c.outcome.take().unwrap_or_default();
    let mut f = Failure::new(FailureKind::TestFailure, Language::Unknown);
    f.line = Some(c.line);
    if outcome.element == "error" {
        f.context.insert("outcome".into(), "error".into());
    }
    if !c.suite.is_empty() {
        f.context.insert("suite".into(), c.suite.clone());
    }
    let body = outcome.text.trim_matches('\n');
    let candidates = [body, c.system_err.as_str(), c.system_out.as_str()];
    let trace = candidates.iter().find_map(|t| first_trace(t));
    let mut java_like = false;
    if let Some(t) = trace {
        java_like = t.language == Language::Java;
        merge_trace(&mut f, t);
    } else if let Some(p) = python_runners::pytest_repr(body) {
        merge_trace(&mut f, p);
    } else if let Some(g) = go_test::failure_from_output(&c.name, &body.lines().collect::<Vec<_>>())
    {
        merge_trace(&mut f, g);
    } else {
        f.exception_type = outcome.ty.clone().filter(|t| meaningful_type(t));
        f.message = outcome
            .message
            .clone()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| body.to_owned());
    }
    if f.exception_type.is_none() {
        f.exception_type = outcome.ty.clone().filter(|t| meaningful_type(t));
    }
    if f.message.is_empty() {
        f.message = outcome.message.unwrap_or_default();
    }
    if f.language == Language::Unknown {
        f.language = guess_language(&c);
    }
    java_like |= f.language == Language::Java;
    // go-junit-report: classname is the package; qualify `t.Error` frames like the runtime does.
    if f.language == Language::Go && !c.classname.is_empty() {
        for fr in &mut f.frames {
            if let Some(func) = fr.function.as_mut()
                && func.starts_with("Test")
                && !func.contains('.')
            {
                *func = format!("{}.{func}", c.classname);
            }
        }
    }
    if f.language == Language::Rust
        && (c.name.contains("::") || c.classname == c.suite)
        && !c.classname.is_empty()
    {
        f.context.insert("binary".into(), c.classname.clone());
    }
    f.test_id = Some(test_id(&c, &f, java_like));
    f
}

fn guess_language(c: &Case) -> Language {
    let file = c.file.as_deref().unwrap_or("");
    let ext = file.rsplit('.').next().unwrap_or("");
    match ext {
        "py" => return Language::Python,
        "java" | "kt" | "scala" | "groovy" => return Language::Java,
        "js" | "ts" | "jsx" | "tsx" | "mjs" | "cjs" => return Language::Javascript,
        "go" => return Language::Go,
        "rs" => return Language::Rust,
        _ => {}
    }
    if c.suite == "pytest" {
        Language::Python
    } else if c.classname.contains('/') && c.name.starts_with("Test") {
        Language::Go
    } else if c.name.contains("::") || c.suite.starts_with("nextest") {
        Language::Rust
    } else {
        Language::Unknown
    }
}

/// The test id in the form the runner's own output uses, so ids from a
/// JUnit report and from the console agree: pytest node ids
/// (`tests/test_x.py::TestC::test_y`), Go `pkg.TestX/sub`, Rust/nextest
/// `module::test` (binary in context), Java `pkg.Class.method`.
fn test_id(c: &Case, f: &Failure, java_like: bool) -> String {
    if c.classname.is_empty() || c.name.starts_with(&c.classname) {
        return c.name.clone();
    }
    // jest-junit repeats the describe block in the title; so does `{classname} {title}`.
    if c.classname.contains(' ') && c.classname.ends_with(&c.name) {
        return c.classname.clone();
    }
    match f.language {
        Language::Python => {
            // classname `tests.test_orders.TestCheckout` + the test file seen in the trace.
            let file = f
                .frames
                .first()
                .and_then(|fr| fr.file.as_deref())
                .filter(|p| p.ends_with(".py"));
            if let Some(file) = file {
                let module = file.trim_end_matches(".py").replace('/', ".");
                if let Some(rest) = c.classname.strip_prefix(&module) {
                    let classes: Vec<&str> = rest.split('.').filter(|p| !p.is_empty()).collect();
                    let mut id = file.to_owned();
                    for part in classes.iter().copied().chain([c.name.as_str()]) {
                        id.push_str("::");
                        id.push_str(part);
                    }
                    return id;
                }
            }
            format!("{}::{}", c.classname, c.name)
        }
        Language::Go => format!("{}.{}", c.classname, c.name),
        // nextest: classname is the binary id, which is kept in context.
        Language::Rust if c.name.contains("::") || c.classname == c.suite => c.name.clone(),
        // Gradle's JUnit 5 names carry `()`; the console and Surefire do not.
        _ if java_like => format!("{}.{}", c.classname, c.name.trim_end_matches("()")),
        _ => format!("{}::{}", c.classname, c.name),
    }
}
