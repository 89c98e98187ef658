//! TraceLab evidence ingest: turns failure evidence (test reports, build and
//! CI logs, stack traces, production log lines) into normalised, redacted,
//! signed [`Failure`]s, groups them, and decides when a group deserves an
//! investigation. Pure library: no IO besides the optional [`read_bounded`]
//! helper, no clocks, no global state beyond compiled regexes.
//!
//! # How an input travels through the crate
//!
//! ```text
//! bytes ─► input (cap: head+tail, binary check, lossy UTF-8, ANSI/CR cleanup, line cap)
//!       ─► detect (JUnit XML | go test -json | JSON lines | pytest | unittest | cargo test |
//!                  nextest | go test | jest | node --test | build log | plain text)
//!       ─► parsers::<format> (raw failures + diagnostics; stack traces found by
//!                  parsers::traces for Python, Java/Kotlin, JS/Node, Go, Rust)
//!       ─► normalize (repo-relative paths, in-app vs library, stable function names;
//!                  frames capped: outermost and innermost halves kept)
//!       ─► signature (stack_signature from the top in-app frames' file+function,
//!                  error_signature from type + masked message — both redaction-proof)
//!       ─► redact (keyed pseudonyms for secrets and personal data in every text field)
//!       ─► ParseOutput { failures, diagnostics, format }
//! ```
//!
//! Then, per failure, a caller (the CLI, an intake service) builds an
//! [`Occurrence`] with its commit, branch and time, and calls [`triage`]
//! against a [`GroupStore`] with a [`Policy`]: the group is updated (first
//! seen, last seen, count, commits, branches, regressions) and a
//! [`Decision`] says whether to start an investigation.
//!
//! Partial results are data: [`parse`] never fails and never panics; what
//! it could not understand or had to cut is reported in
//! [`ParseOutput::diagnostics`]. Memory is bounded by [`Limits`], not by
//! the input: inputs over `max_input_bytes` keep their first and last half,
//! lines over `max_line_bytes` are cut, traces keep `max_frames` frames,
//! JSON deeper than `max_json_depth` is skipped, XML nesting is capped.
//!
//! Services: an HTTP/JetStream intake calls [`parse`] on the request body
//! (after [`read_bounded`] on the stream); an OTLP logs intake calls
//! [`parse_otlp_logs`] (protobuf or OTLP/JSON); `POST /v1/ci-failures`
//! decodes a [`CiFailureReport`] and calls [`parse_ci_report`]. A request
//! over its [`RequestLimits`] is a [`Refusal`]; admission (a rate limit per
//! source, a bounded queue) is the service's.
//!
//! Redaction: [`ParseOptions::redaction_key`] defaults to
//! [`DEV_REDACTION_KEY`], a fixed, public development key. Pseudonyms made
//! with it can be confirmed by anyone who guesses the value; configure a
//! secret key in production.

pub mod ci;
mod detect;
mod error;
mod group;
mod group_page;
mod group_store;
mod input;
pub mod locations;
mod model;
mod normalize;
pub mod otlp;
mod parsers;
mod prefix;
mod redact;
pub mod request;
pub mod rerun;
mod signature;
pub mod similar;
pub mod test_run;

pub use ci::{CiFailureReport, CiParseOutput, parse_ci_report};
pub use detect::detect;
pub use error::{Error, ErrorKind, Result};
pub use group::{
    Decision, FailureGroup, GroupKey, GroupStatus, InvestigationMark, MAX_TRACKED, Observation,
    Occurrence, Policy, Reason, SkipReason, Trigger, decide,
};
pub use group_page::{GroupCursor, GroupPage, GroupQuery, GroupState, MAX_PAGE};
pub use group_store::{GroupStore, InMemoryGroupStore, triage};
pub use input::{BoundedInput, read_bounded};
pub use model::{
    Cause, DEV_REDACTION_KEY, DetectedFormat, Diagnostic, Failure, FailureKind, Frame, Language,
    Limits, ParseOptions, ParseOutput, Region, Severity,
};
pub use normalize::{Normalizer, normalize_function, signature_path};
pub use otlp::{OtlpEncoding, parse_otlp_logs};
pub use parsers::logs::{LogRecord, failure_from_record};
pub use redact::{Finding, RedactionConfig, Redactor, SecretKind, is_sensitive_key, redact_text};
pub use request::{Refusal, RequestLimits};
pub use rerun::rerun_command;
pub use signature::{error_signature, location_signature, normalize_message, stack_signature};
pub use similar::{GroupIndex, SimilarityConfig, StackProfile, similarity};

use std::borrow::Cow;

/// Parses evidence of any supported format. Never panics, never fails:
/// unknown or damaged input yields diagnostics.
pub fn parse(input: &[u8], options: &ParseOptions) -> ParseOutput {
    let limits = &options.limits;
    let mut diagnostics = Vec::new();
    let (bytes, dropped) = input::cap_slice(input, limits);
    if dropped > 0 {
        diagnostics.push(Diagnostic::warning(
            "input_truncated",
            format!(
                "input is {} bytes; kept the first and last {} bytes, dropped {dropped} from the middle",
                input.len(),
                limits.max_input_bytes / 2
            ),
        ));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return ParseOutput {
            failures: Vec::new(),
            diagnostics,
            format: DetectedFormat::Empty,
        };
    }
    if let Some(why) = input::looks_binary(&bytes) {
        diagnostics.push(Diagnostic::error("binary_input", why));
        return ParseOutput {
            failures: Vec::new(),
            diagnostics,
            format: DetectedFormat::Binary,
        };
    }
    let text = input::to_text(&bytes, &mut diagnostics);
    drop(bytes);
    let cleaned = prefix::clean(&text);
    report_prefixes(&cleaned, &mut diagnostics);
    let format = options.format.unwrap_or_else(|| detect(&cleaned.text));
    let parsed = if cleaned.streams.is_empty() {
        parsers::dispatch(format, &cleaned.text, limits)
    } else {
        parse_streams(&cleaned.streams, options.format, limits)
    };
    diagnostics.extend(parsed.diagnostics);
    finish(parsed.failures, diagnostics, format, options)
}

/// Says what the prefix layer removed (an info each), so a reader of the
/// output knows the line contents differ from the input's.
fn report_prefixes(cleaned: &prefix::Cleaned<'_>, diagnostics: &mut Vec<Diagnostic>) {
    if cleaned.shapes.contains(&prefix::Shape::IsoTimestamp) {
        diagnostics.push(Diagnostic::info(
            "timestamps_removed",
            "a timestamp prefix on every line was removed before parsing",
        ));
    }
    let others: Vec<&str> = cleaned
        .shapes
        .iter()
        .filter(|s| **s != prefix::Shape::IsoTimestamp)
        .map(|s| s.describe())
        .collect();
    if !others.is_empty() {
        diagnostics.push(Diagnostic::info(
            "prefix_removed",
            format!(
                "line prefixes on most lines were removed before parsing: {}",
                others.join(", ")
            ),
        ));
    }
    if !cleaned.streams.is_empty() {
        let labels: Vec<&str> = cleaned
            .streams
            .iter()
            .map(|s| s.label.as_str())
            .filter(|l| !l.is_empty())
            .collect();
        diagnostics.push(Diagnostic::info(
            "jobs_interleaved",
            format!(
                "{} interleaved jobs were parsed one by one: {}",
                labels.len(),
                labels.join(", ")
            ),
        ));
    }
}

/// Parses each job's stream alone (its own format unless one is forced) and
/// maps line numbers back to the input's.
fn parse_streams(
    streams: &[prefix::Stream],
    forced: Option<DetectedFormat>,
    limits: &Limits,
) -> parsers::Parsed {
    let mut all = parsers::Parsed::default();
    let original = |s: &prefix::Stream, line: usize| {
        line.checked_sub(1)
            .and_then(|i| s.lines.get(i))
            .copied()
            .unwrap_or(line)
    };
    for s in streams {
        let format = forced.unwrap_or_else(|| detect(&s.text));
        let mut p = parsers::dispatch(format, &s.text, limits);
        for f in &mut p.failures {
            f.line = f.line.map(|l| original(s, l));
            if let Some(r) = &mut f.region {
                r.start_line = original(s, r.start_line);
                r.end_line = original(s, r.end_line);
            }
            if !s.label.is_empty() {
                f.context
                    .entry("job".into())
                    .or_insert_with(|| s.label.clone());
            }
        }
        for d in &mut p.diagnostics {
            d.line = d.line.map(|l| original(s, l));
        }
        // A stream with nothing in it is not worth a note of its own.
        p.diagnostics.retain(|d| d.code != "no_failure_found");
        all.failures.extend(p.failures);
        all.diagnostics.extend(p.diagnostics);
    }
    all.failures.sort_by_key(|f| f.line.unwrap_or(0));
    if all.failures.is_empty() {
        all.diagnostics.push(Diagnostic::info(
            "no_failure_found",
            "no stack trace or known failure format found in any job's output",
        ));
    }
    all
}

/// Benchmark support: parsing (the prefix layer, detection, the format's
/// parser) without normalisation, signatures or redaction, the baseline the
/// throughput benchmark compares against.
#[doc(hidden)]
pub fn parse_unprocessed(input: &[u8], options: &ParseOptions) -> ParseOutput {
    let (bytes, _) = input::cap_slice(input, &options.limits);
    let mut diagnostics = Vec::new();
    let text = input::to_text(&bytes, &mut diagnostics);
    let cleaned = prefix::clean(&text);
    let format = options.format.unwrap_or_else(|| detect(&cleaned.text));
    let parsed = if cleaned.streams.is_empty() {
        parsers::dispatch(format, &cleaned.text, &options.limits)
    } else {
        parse_streams(&cleaned.streams, options.format, &options.limits)
    };
    diagnostics.extend(parsed.diagnostics);
    ParseOutput {
        failures: parsed.failures,
        diagnostics,
        format,
    }
}

/// Benchmark support: the prefix layer alone over decoded text; the length
/// of what it hands the parsers.
#[doc(hidden)]
pub fn prefix_layer_len(text: &str) -> usize {
    prefix::clean(text).text.len()
}

/// Turns log records (from an OTLP logs intake, or already-decoded JSON) into failures.
pub fn parse_log_records(records: &[LogRecord], options: &ParseOptions) -> ParseOutput {
    let failures = records
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let mut f = failure_from_record(r)?;
            f.line = Some(i + 1);
            Some(f)
        })
        .take(options.limits.max_failures + 1)
        .collect();
    finish(failures, Vec::new(), DetectedFormat::JsonLines, options)
}

/// Normalises, caps, signs and redacts raw failures; caps counts.
fn finish(
    raw: Vec<Failure>,
    mut diagnostics: Vec<Diagnostic>,
    format: DetectedFormat,
    options: &ParseOptions,
) -> ParseOutput {
    let limits = &options.limits;
    let redactor = if options.redact {
        match Redactor::new(&options.redaction_key) {
            Ok(r) => Some(r),
            Err(e) => {
                diagnostics.push(Diagnostic::error(
                    "redaction_key",
                    format!("{e}; using the development key"),
                ));
                Redactor::new(DEV_REDACTION_KEY).ok()
            }
        }
    } else {
        None
    };
    let normalizer = Normalizer::new(&options.repo_roots, &options.in_app_prefixes);
    let total = raw.len();
    let mut failures = Vec::with_capacity(total.min(limits.max_failures));
    for mut f in raw.into_iter().take(limits.max_failures) {
        normalize_failure(
            &mut f,
            &normalizer,
            limits,
            options.signature_frames,
            &mut diagnostics,
        );
        if let Some(r) = &redactor {
            redact_failure(&mut f, r);
        }
        failures.push(f);
    }
    if total > limits.max_failures {
        diagnostics.push(Diagnostic::warning(
            "failures_capped",
            format!(
                "more than {} failures; the rest were dropped",
                limits.max_failures
            ),
        ));
    }
    if diagnostics.len() > limits.max_diagnostics {
        let extra = diagnostics.len() - limits.max_diagnostics;
        diagnostics.truncate(limits.max_diagnostics);
        diagnostics.push(Diagnostic::info(
            "diagnostics_capped",
            format!("{extra} more diagnostics omitted"),
        ));
    }
    ParseOutput {
        failures,
        diagnostics,
        format,
    }
}

/// Keeps the outermost and innermost halves of an over-long trace.
fn cap_frames(frames: &mut Vec<Frame>, max: usize) -> usize {
    if frames.len() <= max {
        return 0;
    }
    let drop = frames.len() - max;
    let keep_outer = max / 2;
    frames.drain(keep_outer..keep_outer + drop);
    drop
}

fn normalize_failure(
    f: &mut Failure,
    n: &Normalizer,
    limits: &Limits,
    sig_frames: usize,
    diags: &mut Vec<Diagnostic>,
) {
    let lang = f.language;
    let omitted = cap_frames(&mut f.frames, limits.max_frames);
    if omitted > 0 {
        f.frames_omitted += omitted;
        diags.push(
            Diagnostic::warning(
                "frames_capped",
                format!(
                    "trace has {} frames; kept the outermost and innermost {}",
                    omitted + limits.max_frames,
                    limits.max_frames
                ),
            )
            .at(f.line.unwrap_or(0)),
        );
    }
    for fr in &mut f.frames {
        n.frame(fr, lang);
    }
    // A panic location (`/home/u/app/src/main.rs:2:5`) is a path like a frame's.
    if let Some(loc) = f.context.get_mut("location") {
        let (path, rest) = group::split_location(loc);
        let relative = format!("{}{rest}", n.relativize(path).0);
        *loc = relative;
    }
    if f.causes.len() > limits.max_causes {
        f.causes.truncate(limits.max_causes);
        diags.push(Diagnostic::info(
            "causes_capped",
            format!(
                "exception chain longer than {} links was cut",
                limits.max_causes
            ),
        ));
    }
    for c in &mut f.causes {
        f.frames_omitted += cap_frames(&mut c.frames, limits.max_frames);
        for fr in &mut c.frames {
            n.frame(fr, lang);
        }
    }
    // The primary exception's in-app frames; a wrapper without any (a
    // framework exception) defers to the first cause that has some. An
    // exception group's own frames are only where it was awaited: its first
    // sub-exception signs it.
    let group = f
        .exception_type
        .as_deref()
        .is_some_and(|t| t.ends_with("ExceptionGroup"));
    let own = stack_signature(&f.frames, sig_frames);
    let from_causes = f
        .causes
        .iter()
        .find_map(|c| stack_signature(&c.frames, sig_frames));
    f.stack_signature = if group {
        from_causes.or(own)
    } else {
        own.or(from_causes)
    };
    f.error_signature = error_signature(f.exception_type.as_deref(), &f.message);
    if f.message.len() > limits.max_message_bytes {
        f.message = input::truncate_str(&f.message, limits.max_message_bytes).to_owned();
    }
    for c in &mut f.causes {
        if c.message.len() > limits.max_message_bytes {
            c.message = input::truncate_str(&c.message, limits.max_message_bytes).to_owned();
        }
    }
}

fn redact_in_place(s: &mut String, r: &Redactor) {
    if let Cow::Owned(o) = r.redact_text(s) {
        *s = o;
    }
}

fn redact_opt(s: &mut Option<String>, r: &Redactor) {
    if let Some(s) = s {
        redact_in_place(s, r);
    }
}

/// Redacts every free-text field of a failure. Signatures were computed
/// from masked text and are unaffected.
fn redact_failure(f: &mut Failure, r: &Redactor) {
    redact_in_place(&mut f.message, r);
    redact_opt(&mut f.test_id, r);
    redact_opt(&mut f.exception_type, r);
    for fr in &mut f.frames {
        redact_opt(&mut fr.file, r);
        redact_opt(&mut fr.function, r);
    }
    for c in &mut f.causes {
        redact_in_place(&mut c.message, r);
        redact_opt(&mut c.exception_type, r);
        for fr in &mut c.frames {
            redact_opt(&mut fr.file, r);
            redact_opt(&mut fr.function, r);
        }
    }
    for (k, v) in f.context.iter_mut() {
        if redact::is_sensitive_key(k) {
            *v = r.pseudonym(SecretKind::Secret, v);
        } else {
            redact_in_place(v, r);
        }
    }
    if let Some(region) = &mut f.region {
        redact_in_place(&mut region.excerpt, r);
        redact_opt(&mut region.step, r);
    }
}
