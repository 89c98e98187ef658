//! Parsers never panic and stay bounded: property tests per parser (every
//! text format, log records, OTLP protobuf and JSON, CI reports, the
//! redactor), and explicit hostile inputs (binary garbage, invalid UTF-8,
//! 100 MB, 100k-deep JSON and XML, a 10,000-frame trace). Case counts are
//! fixed so the whole file runs in seconds in CI; raise them locally with
//! `PROPTEST_CASES=5000 cargo test -p tracelab-evidence --test robustness`.

use proptest::prelude::*;
use std::time::Instant;
use tracelab_evidence::ci::{LogTail, ReportFile};
use tracelab_evidence::otlp::OtlpEncoding;
use tracelab_evidence::{
    CiFailureReport, DEV_REDACTION_KEY, DetectedFormat, ErrorKind, Limits, LogRecord, ParseOptions,
    ParseOutput, Redactor, parse, parse_ci_report, parse_log_records, parse_otlp_logs,
    read_bounded,
};

fn forced(format: DetectedFormat) -> ParseOptions {
    ParseOptions {
        format: Some(format),
        ..ParseOptions::default()
    }
}

/// Output invariants that must hold for any input.
fn assert_bounded(out: &ParseOutput, opts: &ParseOptions) {
    let l = &opts.limits;
    assert!(out.failures.len() <= l.max_failures);
    assert!(out.diagnostics.len() <= l.max_diagnostics + 1);
    for f in &out.failures {
        assert!(f.frames.len() <= l.max_frames, "{} frames", f.frames.len());
        assert!(
            f.message.len() <= l.max_message_bytes * 2,
            "message {} bytes",
            f.message.len()
        );
        assert!(f.causes.len() <= l.max_causes);
        assert_eq!(f.error_signature.len(), 16);
    }
}

fn corpus_files() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        // `corpus/real/` is the labelled real corpus (tests/real_corpus.rs).
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

/// Lines that look like the formats' syntax, so random inputs reach deep parser states.
fn syntax_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Traceback (most recent call last):".to_owned()),
        "  File \"[a-z/]{0,12}\\.py\", line [0-9]{1,3}, in [a-z<>]{0,6}".prop_map(|s| s),
        "[A-Za-z.]{0,12}(Error|Exception): .{0,20}".prop_map(|s| s),
        "\tat [a-z.]{0,10}\\.[A-Z][a-z]{0,5}\\.[a-z]{1,5}\\([A-Za-z]{0,5}\\.java:[0-9]{0,3}\\)".prop_map(|s| s),
        "    at [A-Za-z.<>]{0,10} \\([a-z/:]{0,10}:[0-9]{1,3}:[0-9]{1,2}\\)".prop_map(|s| s),
        Just("panic: runtime error: index out of range".to_owned()),
        "goroutine [0-9]{1,2} \\[[a-z ]{0,8}\\]:".prop_map(|s| s),
        "[a-z./()*]{1,20}\\(0x[0-9a-f]{1,4}\\)".prop_map(|s| s),
        "\t/[a-z/]{1,12}\\.go:[0-9]{1,3} \\+0x[0-9a-f]{1,3}".prop_map(|s| s),
        "thread '[a-z:]{0,10}' panicked at [a-z/]{0,10}\\.rs:[0-9]{1,3}:[0-9]{1,2}:".prop_map(|s| s),
        Just("stack backtrace:".to_owned()),
        "  [0-9]{1,2}: [a-z:{}]{0,20}".prop_map(|s| s),
        "             at [./a-z]{0,12}\\.rs:[0-9]{1,3}:[0-9]{1,2}".prop_map(|s| s),
        "(=|_){3,10} [A-Za-z_.]{0,10} (=|_){3,10}".prop_map(|s| s),
        "E +[A-Za-z]{0,10}(Error)?: .{0,10}".prop_map(|s| s),
        "[a-z/]{1,10}\\.py:[0-9]{1,3}: (in [a-z]{1,5}|[A-Za-z]{0,10})".prop_map(|s| s),
        "(FAIL|ERROR): [a-z_]{1,8} \\([a-z.]{1,10}\\)".prop_map(|s| s),
        Just("-".repeat(70)),
        "test [a-z:]{1,10} \\.\\.\\. (FAILED|ok)".prop_map(|s| s),
        "---- [a-z:]{1,10} stdout ----".prop_map(|s| s),
        "(=== RUN|--- FAIL:|    --- FAIL:) Test[A-Za-z/]{0,8}( \\(0\\.00s\\))?".prop_map(|s| s),
        "(FAIL|ok  )\t[a-z./]{1,10}\t0\\.0[0-9]s".prop_map(|s| s),
        "  ● [A-Za-z ›]{0,15}".prop_map(|s| s),
        "(✖|▶|not ok [0-9]) [a-z ]{0,10}( \\([0-9.]{1,4}ms\\))?".prop_map(|s| s),
        "  (---|\\.\\.\\.|error: \\|-|stack: \\|-|name: 'X')".prop_map(|s| s),
        "(##\\[group\\]|##\\[error\\]|section_start:1:x|\\$ |> Task :)[a-z ]{0,10}".prop_map(|s| s),
        "error(\\[E[0-9]{4}\\])?: [a-z ]{0,10}".prop_map(|s| s),
        "  --> [a-z/]{1,10}\\.rs:[0-9]{1,3}:[0-9]{1,2}".prop_map(|s| s),
        "\\{\"level\":\"(error|info)\",\"msg\":\"[a-z ]{0,10}\"(,\"stack\":\"[a-z\\\\n]{0,20}\")?\\}".prop_map(|s| s),
        "\\{\"Action\":\"(output|fail|run)\",\"Package\":\"p\",\"Test\":\"T\",\"Output\":\"[a-z ]{0,10}\"\\}".prop_map(|s| s),
        ".{0,40}".prop_map(|s| s),
    ]
}

fn syntax_text() -> impl Strategy<Value = String> {
    prop::collection::vec(syntax_line(), 0..40).prop_map(|v| v.join("\n"))
}

/// What CI systems put in front of lines, well-formed and damaged, so the
/// prefix layer meets every shape, layered and interleaved.
fn ci_prefix() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,9})?(Z|[+-][0-9]{2}:?[0-9]{2})? ( ?[0-9a-f]{2}[OE]\\+? )?",
        "\\[20[0-9]{2}-[01][0-9]-[0-3][0-9][T ][0-2][0-9]:[0-5][0-9]:[0-5][0-9](\\.[0-9]{1,3})?Z?\\] ",
        "\\[?[0-2][0-9]:[0-5][0-9]:[0-5][0-9]\\]? ",
        "\\[ {0,4}[0-9]{1,5}(\\.[0-9])?s\\] ",
        "\\[[a-z]{1,6}-[0-9]\\] ",
        "[a-z]{1,6}_[0-9] {1,4}\\| ",
        " {0,4}[0-9]{1,4}( \\| |\\t| │ )",
        prop_oneof![
            Just("\x1b[31m"),
            Just("\x1b]0;title\x07"),
            Just("\x1b_bk;t=1714564800123\x07"),
            Just("::group::"),
            Just("::endgroup::"),
            Just("::error file=a.py,line=3::"),
            Just("##[group]"),
            Just("section_start:1714564800:step\r\x1b[0K"),
            Just("\r"),
            Just("2024-13-99T"),
            Just("[  "),
            Just("\x1b["),
            Just("\x1b]8;;"),
            Just("\u{1b}_"),
        ]
        .prop_map(str::to_owned),
    ]
}

/// Fixed case counts keep CI bounded; `PROPTEST_CASES` overrides them for longer local runs.
fn config(cases: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(cases);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Every corpus file cut at every line end: a CI log cut off mid-report is
/// the most common damaged input. Deterministic, unlike the sampled cuts
/// below (which found a unittest header cut before its body).
#[test]
fn corpus_files_cut_at_every_line_never_panic() {
    let opts = ParseOptions::default();
    for file in corpus_files() {
        for (at, _) in file.iter().enumerate().filter(|(_, b)| **b == b'\n') {
            assert_bounded(&parse(&file[..at], &opts), &opts);
            assert_bounded(&parse(&file[..=at], &opts), &opts);
        }
    }
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let opts = ParseOptions::default();
        assert_bounded(&parse(&bytes, &opts), &opts);
    }

    #[test]
    fn prefixed_soup_never_panics(lines in prop::collection::vec((ci_prefix(), ci_prefix(), syntax_line(), any::<bool>()), 0..40)) {
        let text: String = lines
            .iter()
            .map(|(outer, inner, l, crlf)| format!("{outer}{inner}{l}{}\n", if *crlf { "\r" } else { "" }))
            .collect();
        let auto = ParseOptions::default();
        assert_bounded(&parse(text.as_bytes(), &auto), &auto);
    }

    #[test]
    fn auto_detection_survives_syntax_soup(text in syntax_text()) {
        let auto = ParseOptions::default();
        assert_bounded(&parse(text.as_bytes(), &auto), &auto);
    }

    #[test]
    fn truncated_and_mutated_corpus_files_never_panic(idx in 0usize..64, cut in 0.0f64..1.0, noise in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..16)) {
        let files = corpus_files();
        let mut input = files[idx % files.len()].clone();
        input.truncate((input.len() as f64 * cut) as usize);
        for (at, byte) in noise {
            if !input.is_empty() {
                let i = at.index(input.len());
                input[i] = byte;
            }
        }
        let opts = ParseOptions::default();
        assert_bounded(&parse(&input, &opts), &opts);
    }

    #[test]
    fn junit_xml_soup_never_panics(parts in prop::collection::vec(prop_oneof![
        Just("<testsuites>".to_owned()), Just("<testsuite name=\"s\">".to_owned()), Just("<testcase name=\"t\" classname=\"c\">".to_owned()),
        Just("<failure message=\"m\" type=\"T\">".to_owned()), Just("</failure>".to_owned()), Just("</testcase>".to_owned()),
        Just("<error/>".to_owned()), Just("<system-err>".to_owned()), Just("</system-err>".to_owned()), Just("&amp;&#10;&bogus;".to_owned()),
        Just("<![CDATA[x]]>".to_owned()), Just("<!DOCTYPE x [<!ENTITY a \"aaaa\">]>".to_owned()), "[<>/a-z\"= ]{0,12}".prop_map(|s| s),
    ], 0..60)) {
        let text = parts.concat();
        let opts = forced(DetectedFormat::JunitXml);
        assert_bounded(&parse(text.as_bytes(), &opts), &opts);
    }
}

/// One property per parser: format-syntax soup forced through it.
macro_rules! soup_per_parser {
    ($($name:ident => $format:expr),* $(,)?) => {
        proptest! {
            #![proptest_config(config(24))]
            $(
                #[test]
                fn $name(text in syntax_text()) {
                    let opts = forced($format);
                    assert_bounded(&parse(text.as_bytes(), &opts), &opts);
                }
            )*
        }
    };
}

soup_per_parser! {
    go_test_json_parser_survives_soup => DetectedFormat::GoTestJson,
    json_lines_parser_survives_soup => DetectedFormat::JsonLines,
    pytest_parser_survives_soup => DetectedFormat::Pytest,
    unittest_parser_survives_soup => DetectedFormat::Unittest,
    cargo_test_parser_survives_soup => DetectedFormat::CargoTest,
    nextest_parser_survives_soup => DetectedFormat::Nextest,
    go_test_parser_survives_soup => DetectedFormat::GoTest,
    jest_parser_survives_soup => DetectedFormat::Jest,
    node_test_parser_survives_soup => DetectedFormat::NodeTest,
    build_log_parser_survives_soup => DetectedFormat::BuildLog,
    trace_parser_survives_soup => DetectedFormat::Text,
    junit_parser_survives_soup => DetectedFormat::JunitXml,
}

/// JSON values of bounded size and depth, with the keys log parsers look for.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        syntax_line().prop_map(Value::String),
        prop::collection::vec(syntax_line(), 0..8).prop_map(|l| Value::String(l.join("\n"))),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            prop::collection::vec((json_key(), inner), 0..6)
                .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn json_key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("exception.stacktrace".to_owned()),
        Just("exception.type".to_owned()),
        Just("exception.message".to_owned()),
        Just("stack".to_owned()),
        Just("error".to_owned()),
        Just("level".to_owned()),
        Just("msg".to_owned()),
        Just("service.name".to_owned()),
        Just("trace_id".to_owned()),
        "[a-z_.]{1,12}".prop_map(|s| s),
    ]
}

fn json_map() -> impl Strategy<Value = serde_json::Map<String, serde_json::Value>> {
    prop::collection::vec((json_key(), json_value()), 0..8).prop_map(|kv| kv.into_iter().collect())
}

fn log_record() -> impl Strategy<Value = LogRecord> {
    (
        prop::option::of("[A-Za-z]{0,8}"),
        prop::option::of(-5i32..30),
        prop::collection::vec(syntax_line(), 0..10),
        json_map(),
        json_map(),
        prop::option::of("[0-9a-f]{0,40}"),
    )
        .prop_map(
            |(severity_text, severity_number, body, attributes, resource, trace_id)| LogRecord {
                timestamp: None,
                severity_text,
                severity_number,
                body: body.join("\n"),
                attributes,
                resource,
                trace_id,
                span_id: None,
            },
        )
}

/// The OTLP sample request, as protobuf.
fn otlp_protobuf() -> Vec<u8> {
    use prost::Message as _;
    let json = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/otlp/export_logs.json"
    ))
    .unwrap();
    let request: opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest =
        serde_json::from_slice(&json).unwrap();
    request.encode_to_vec()
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn log_records_never_panic(records in prop::collection::vec(log_record(), 0..6)) {
        let opts = ParseOptions::default();
        assert_bounded(&parse_log_records(&records, &opts), &opts);
    }

    #[test]
    fn redaction_never_panics_and_is_idempotent(text in syntax_text(), noise in ".{0,60}") {
        let r = Redactor::new(DEV_REDACTION_KEY).unwrap();
        let input = format!("{text}\n{noise}");
        let once = r.redact_text(&input).into_owned();
        prop_assert_eq!(r.redact_text(&once).into_owned(), once);
    }

    #[test]
    fn otlp_decoders_give_records_or_a_clear_error(bytes in prop::collection::vec(any::<u8>(), 0..1024)) {
        for enc in [OtlpEncoding::Protobuf, OtlpEncoding::Json] {
            match parse_otlp_logs(&bytes, enc, &ParseOptions::default()) {
                Ok(out) => assert_bounded(&out, &ParseOptions::default()),
                Err(e) => prop_assert_eq!(e.kind(), ErrorKind::InvalidArgument),
            }
        }
    }

    #[test]
    fn mutated_otlp_protobuf_never_panics(cut in 0.0f64..1.0, noise in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..12)) {
        let mut body = otlp_protobuf();
        body.truncate((body.len() as f64 * cut) as usize + 1);
        for (at, byte) in noise {
            let i = at.index(body.len());
            body[i] = byte;
        }
        let opts = ParseOptions::default();
        if let Ok(out) = parse_otlp_logs(&body, OtlpEncoding::Protobuf, &opts) {
            assert_bounded(&out, &opts);
        }
    }

    #[test]
    fn ci_reports_never_panic(files in prop::collection::vec(syntax_text(), 0..4), log in prop::option::of(syntax_text()), raw in prop::collection::vec(any::<u8>(), 0..256)) {
        let mut report = CiFailureReport::new();
        report.reports = files
            .into_iter()
            .enumerate()
            .map(|(i, content)| ReportFile { path: format!("r{i}.txt"), content, truncated_bytes: 0 })
            .collect();
        report.log = log.map(|content| LogTail { path: "ci.log".into(), content, truncated_bytes: 0 });
        let opts = ParseOptions::default();
        let out = parse_ci_report(&report, &opts);
        prop_assert!(out.failures.len() <= opts.limits.max_failures * (report.reports.len() + 1));
        // Arbitrary bytes as a request body: a report or a decode error, never a panic.
        let _ = serde_json::from_slice::<CiFailureReport>(&raw);
    }
}

#[test]
fn binary_garbage_gets_a_clear_diagnostic() {
    let mut elf =
        b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00\x3e\x00".to_vec();
    elf.extend((0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    for input in [
        elf.as_slice(),
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xed\xbd\x07\x60",
        "\u{feff}".as_bytes(),
    ] {
        let out = parse(input, &ParseOptions::default());
        assert!(out.failures.is_empty());
        if out.format == DetectedFormat::Binary {
            assert_eq!(
                out.diagnostics[0].code, "binary_input",
                "{:?}",
                out.diagnostics
            );
        }
    }
    let out = parse(&elf, &ParseOptions::default());
    assert_eq!(out.format, DetectedFormat::Binary);
    let utf16: Vec<u8> = "\u{feff}Traceback"
        .encode_utf16()
        .flat_map(u16::to_le_bytes)
        .collect();
    let out = parse(&utf16, &ParseOptions::default());
    assert_eq!(out.format, DetectedFormat::Binary);
    assert!(out.diagnostics[0].message.contains("UTF-16"));
}

#[test]
fn invalid_utf8_is_replaced_and_parsed() {
    let mut input = b"Traceback (most recent call last):\n  File \"/app/x\xff\xfe.py\", line 3, in f\n    g()\nValueError: bad byte \xc3\x28 here\n".to_vec();
    input.extend_from_slice(b"\x80\x81 trailing junk\n");
    let out = parse(&input, &ParseOptions::default());
    assert_eq!(out.failures.len(), 1);
    assert_eq!(
        out.failures[0].exception_type.as_deref(),
        Some("ValueError")
    );
    assert!(out.failures[0].message.contains('\u{FFFD}'));
    assert!(out.diagnostics.iter().any(|d| d.code == "invalid_utf8"));
}

/// A CI log of `mb` megabytes: noise lines, one Python failure in the middle
/// (dropped by the cap) and one at the end (kept).
fn huge_log(mb: usize) -> Vec<u8> {
    let line = b"2024-05-14T10:00:01.118Z INFO  [worker-3] processed batch 4411 in 12ms, 512 rows, queue depth 3\n";
    let mut v = Vec::with_capacity(mb << 20);
    let trace = b"Traceback (most recent call last):\n  File \"/app/shop/jobs.py\", line 112, in run_job\n    sync()\nshop.errors.InventoryUnavailable: warehouse down\n";
    while v.len() < (mb << 20) / 2 {
        v.extend_from_slice(line);
    }
    v.extend_from_slice(b"Traceback (most recent call last):\n  File \"/app/shop/middle.py\", line 1, in lost\n    x()\nMiddleError: dropped by the cap\n");
    while v.len() < (mb << 20) - trace.len() {
        v.extend_from_slice(line);
    }
    v.extend_from_slice(trace);
    v
}

#[test]
fn a_100_mb_input_is_capped_and_the_tail_failure_found() {
    let input = huge_log(100);
    let opts = ParseOptions::default();
    let start = Instant::now();
    let out = parse(&input, &opts);
    let took = start.elapsed();
    assert!(
        out.diagnostics.iter().any(|d| d.code == "input_truncated"),
        "{:?}",
        out.diagnostics
    );
    assert_eq!(out.failures.len(), 1, "{:?}", out.failures);
    assert_eq!(
        out.failures[0].exception_type.as_deref(),
        Some("shop.errors.InventoryUnavailable")
    );
    assert_bounded(&out, &opts);
    // Speed belongs to the benchmarks (crates/evidence/benches); a wall-clock
    // bound here would fail on a loaded machine, not on slow code.
    println!("100 MB input parsed in {took:?}");
}

#[test]
fn streaming_reader_keeps_memory_at_the_cap() {
    // 100 MB streamed through a reader that never holds more than the cap.
    struct Gen {
        left: usize,
    }
    impl std::io::Read for Gen {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(self.left);
            buf[..n].fill(b'x');
            if n > 0 {
                buf[n - 1] = b'\n';
            }
            self.left -= n;
            Ok(n)
        }
    }
    let limits = Limits {
        max_input_bytes: 4 << 20,
        ..Limits::default()
    };
    let got = read_bounded(Gen { left: 100 << 20 }, &limits).unwrap();
    assert_eq!(got.bytes.len(), 4 << 20);
    assert!(
        got.bytes.capacity() <= 8 << 20,
        "capacity {}",
        got.bytes.capacity()
    );
    assert_eq!(got.dropped, (100 << 20) - (4 << 20));
}

#[test]
fn json_nested_100k_levels_is_rejected_per_line() {
    let deep = format!("{}1{}", "{\"a\":".repeat(100_000), "}".repeat(100_000));
    let input = format!(
        "{{\"level\":\"error\",\"msg\":\"before\"}}\n{deep}\n{{\"level\":\"error\",\"msg\":\"after\"}}\n"
    );
    let out = parse(input.as_bytes(), &ParseOptions::default());
    assert_eq!(out.format, DetectedFormat::JsonLines);
    assert!(
        out.diagnostics
            .iter()
            .any(|d| d.code == "json_too_deep" && d.line == Some(2)),
        "{:?}",
        out.diagnostics
    );
    let msgs: Vec<&str> = out.failures.iter().map(|f| f.message.as_str()).collect();
    assert_eq!(msgs, ["before", "after"]);
    // Arrays too, and as a go test -json stream.
    let arrays = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let out = parse(
        format!("{{\"Action\":\"run\",\"Package\":\"p\"}}\n{arrays}\n").as_bytes(),
        &ParseOptions::default(),
    );
    assert!(out.diagnostics.iter().any(|d| d.code == "json_too_deep"));
}

#[test]
fn xml_nested_100k_levels_stops_with_a_diagnostic() {
    let input = format!(
        "<testsuites>{}{}</testsuites>",
        "<x>".repeat(100_000),
        "</x>".repeat(100_000)
    );
    let out = parse(input.as_bytes(), &ParseOptions::default());
    assert_eq!(out.format, DetectedFormat::JunitXml);
    assert!(
        out.diagnostics.iter().any(|d| d.code == "too_deep"),
        "{:?}",
        out.diagnostics
    );
}

#[test]
fn ten_thousand_frames_keep_both_ends() {
    let mut py = String::from(
        "Traceback (most recent call last):\n  File \"/app/main.py\", line 3, in <module>\n    main()\n",
    );
    for i in 0..10_000 {
        py.push_str(&format!(
            "  File \"/app/rec.py\", line {}, in walk_{i}\n    walk(n - 1)\n",
            10 + i % 7
        ));
    }
    py.push_str("  File \"/app/leaf.py\", line 9, in leaf\n    raise RecursionError('maximum recursion depth exceeded')\nRecursionError: maximum recursion depth exceeded\n");
    let opts = ParseOptions::default();
    let out = parse(py.as_bytes(), &opts);
    assert_eq!(out.failures.len(), 1);
    let f = &out.failures[0];
    assert_eq!(f.frames.len(), opts.limits.max_frames);
    assert_eq!(f.frames_omitted, 10_002 - opts.limits.max_frames);
    assert_eq!(
        f.frames.first().unwrap().function.as_deref(),
        Some("<module>")
    );
    assert_eq!(f.frames.last().unwrap().function.as_deref(), Some("leaf"));
    assert!(out.diagnostics.iter().any(|d| d.code == "frames_capped"));

    let mut java = String::from("java.lang.StackOverflowError\n");
    for i in 0..10_000 {
        java.push_str(&format!(
            "\tat com.acme.Tree.visit(Tree.java:{})\n",
            40 + i % 3
        ));
    }
    let out = parse(java.as_bytes(), &opts);
    assert_eq!(out.failures[0].frames.len(), opts.limits.max_frames);
    assert_bounded(&out, &opts);
}

/// The same 10,000-frame trace behind GitHub Actions timestamps and job
/// labels, one line of it a megabyte long: the prefix layer hands the parser
/// what the unprefixed trace gives.
#[test]
fn ten_thousand_prefixed_frames_and_long_lines_parse_as_without_prefixes() {
    let mut py = String::from("Traceback (most recent call last):\n");
    for i in 0..10_000 {
        py.push_str(&format!(
            "  File \"/app/rec.py\", line {}, in walk_{i}\n    walk(n - 1)\n",
            10 + i % 7
        ));
    }
    py.push_str(&format!(
        "  File \"/app/leaf.py\", line 9, in leaf\n    {}\n",
        "x".repeat(1 << 20)
    ));
    py.push_str("RecursionError: maximum recursion depth exceeded\n");
    let prefixed: String = py
        .lines()
        .enumerate()
        .map(|(i, l)| format!("2024-05-01T12:00:00.{i:07}Z [job-{}] {l}\n", 1 + i / 30_000))
        .collect();
    let opts = ParseOptions::default();
    let plain = parse(py.as_bytes(), &opts);
    let out = parse(prefixed.as_bytes(), &opts);
    assert_bounded(&out, &opts);
    assert_eq!(out.failures.len(), 1);
    assert_eq!(out.failures[0].frames, plain.failures[0].frames);
    assert_eq!(
        out.failures[0].frames_omitted,
        10_001 - opts.limits.max_frames
    );
    assert!(out.diagnostics.iter().any(|d| d.code == "line_truncated"));
}

#[test]
fn too_many_failures_are_capped() {
    let one = "Traceback (most recent call last):\n  File \"/app/a.py\", line 1, in f\n    g()\nValueError: x\n";
    let opts = ParseOptions {
        limits: Limits {
            max_failures: 10,
            ..Limits::default()
        },
        ..ParseOptions::default()
    };
    let out = parse(one.repeat(50).as_bytes(), &opts);
    assert_eq!(out.failures.len(), 10);
    assert!(out.diagnostics.iter().any(|d| d.code == "failures_capped"));
}

#[test]
fn very_long_lines_are_cut() {
    let input = format!(
        "ValueError: {}\n    at x (/app/a.js:1:1)\n",
        "y".repeat(1 << 20)
    );
    let out = parse(input.as_bytes(), &ParseOptions::default());
    assert!(out.diagnostics.iter().any(|d| d.code == "line_truncated"));
    assert_bounded(&out, &ParseOptions::default());
}

/// The recognisers of pasted shapes (frames without a header, a pytest
/// short traceback without its `E` line, a logger-prefixed goroutine line,
/// zellij's report) read a long run once, not once per line: 100,000 lines
/// of each parse in bounded time.
#[test]
fn long_runs_of_headerless_shapes_are_read_once() {
    let shapes: [&dyn Fn(usize) -> String; 4] = [
        &|i| format!("    at f{i} (/srv/app/a.js:{i}:1)\n"),
        &|i| format!("/srv/app/m{i}.py:{i}: in f\n    g()\n"),
        &|i| format!("10:54AM ERR goroutine {i} [running]:\nmain.f()\n\tmain.go:{i} +0x1\n"),
        &|i| format!("  × Thread 'screen' panicked.\n  │ {i}\n"),
    ];
    for shape in shapes {
        let text: String = (0..100_000).map(shape).collect();
        let start = Instant::now();
        parse(text.as_bytes(), &ParseOptions::default());
        assert!(
            start.elapsed().as_secs() < 60,
            "{:?} for {} bytes",
            start.elapsed(),
            text.len()
        );
    }
}
