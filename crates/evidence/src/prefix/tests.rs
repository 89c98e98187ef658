//! The prefix layer's tests: shapes, detection, cleaning, job streams and bounded work.

use super::*;

fn cleaned(text: &str) -> (String, Vec<Shape>) {
    let c = clean(text);
    (c.text.into_owned(), c.shapes)
}

#[test]
fn github_actions_timestamps_and_markers() {
    let (t, s) = cleaned(
        "2024-05-01T12:00:00.1234567Z ##[group]Run pytest\r\n2024-05-01T12:00:00.2234567Z   File \"a.py\", line 3, in f\r\n2024-05-01T12:00:00.3234567Z\r\n2024-05-01T12:00:01.0000000Z ::endgroup::\r\n",
    );
    assert_eq!(s, [Shape::IsoTimestamp]);
    assert_eq!(
        t,
        "##[group]Run pytest\n  File \"a.py\", line 3, in f\n\n##[endgroup]\n"
    );
}

#[test]
fn each_ci_prefix_shape_is_recognised() {
    let cases: &[(&str, Shape)] = &[
        ("2024-05-01T12:00:00+02:00 x", Shape::IsoTimestamp),
        ("2024-05-01T12:00:00.123456Z 00O x", Shape::IsoTimestamp),
        ("2024-05-01T12:00:00.123456Z 01E+ x", Shape::IsoTimestamp),
        ("[2024-05-01T12:00:00.123Z] x", Shape::BracketedTimestamp),
        ("[2024-05-01 12:00:00] x", Shape::BracketedTimestamp),
        ("12:00:00 x", Shape::ClockTime),
        ("[12:00:00.250] x", Shape::ClockTime),
        ("[    7s] x", Shape::Elapsed),
        ("[ 12.5s] x", Shape::Elapsed),
        ("2016/03/11 13:08:48 x", Shape::GoLog),
        ("2016/03/11 13:08:48.123456 x", Shape::GoLog),
        (
            "2016/03/11 13:08:48 [DEBUG] terraform-provider-digitalocean: x",
            Shape::GoLog,
        ),
        ("[job-1] x", Shape::Job),
        ("web_1     | x", Shape::Job),
    ];
    for (line, shape) in cases {
        let m = shape.matches(line).unwrap_or_else(|| panic!("{line}"));
        let rest = &line[m.len..];
        assert_eq!(rest, "x", "{line:?}");
    }
    for (line, want) in [
        ("  12 | x", "x"),
        ("12 │ x", "x"),
        ("12\tx", "x"),
        ("  7 |", ""),
    ] {
        let m = Shape::Gutter.matches(line).unwrap();
        assert_eq!(&line[m.len..], want, "{line:?}");
    }
    // A level without a plugin name keeps what follows it: `panic: ` stays.
    let line = "2016/03/11 13:08:48 [DEBUG] panic: x";
    let m = Shape::GoLog.matches(line).unwrap();
    assert_eq!(&line[m.len..], "panic: x");
    for not_job in ["[INFO] x", "[ERROR] x", "[100%] x", "[12:00:00] x", "[] x"] {
        assert!(Shape::Job.matches(not_job).is_none(), "{not_job}");
    }
    assert!(
        Shape::Gutter
            .matches("   3: core::panicking::panic")
            .is_none()
    );
}

#[test]
fn a_time_at_the_start_of_one_line_is_not_a_prefix() {
    let text = "Traceback (most recent call last):\n  File \"/app/clock.py\", line 3, in tick\n12:00:00 is not a valid alarm\nValueError: 12:00:00 out of range\n";
    let (t, s) = cleaned(text);
    assert!(s.is_empty());
    assert_eq!(t, text);
}

#[test]
fn obs_and_gutter_layers_stack() {
    let mut text = String::new();
    for i in 1..=20 {
        text += &format!("[   {i}s] {i:>4} | line {i}\n");
    }
    let (t, s) = cleaned(&text);
    assert_eq!(s, [Shape::Elapsed, Shape::Gutter]);
    assert!(t.starts_with("line 1\nline 2\n"), "{t}");
}

#[test]
fn a_quoted_trace_loses_its_quote_markers() {
    let text = "> $ sdkmanager --licenses\n> Exception in thread \"main\" java.lang.Error: x\n> \tat a.B.c(B.java:1)\n>\n";
    let (t, s) = cleaned(text);
    assert_eq!(s, [Shape::Quote]);
    assert_eq!(
        t,
        "$ sdkmanager --licenses\nException in thread \"main\" java.lang.Error: x\n\tat a.B.c(B.java:1)\n\n"
    );
}

#[test]
fn a_block_indented_with_its_header_is_dedented() {
    // A CI annotation: a first line at the margin, then the indented panic.
    let text = "run golangci-lint\n  panic: boom\n\n  goroutine 1 [running]:\n  main.f()\n  \t/src/m.go:4 +0x1\n";
    let (t, s) = cleaned(text);
    assert_eq!(s, [Shape::Indent(2)]);
    assert_eq!(
        t,
        "run golangci-lint\npanic: boom\n\ngoroutine 1 [running]:\nmain.f()\n\t/src/m.go:4 +0x1\n"
    );
    // Frames indented as printed, without an indented header: kept.
    let frames = "    at f (/a.js:1:2)\n    at g (/a.js:3:4)\n";
    assert_eq!(cleaned(frames), (frames.to_owned(), Vec::new()));
    // A Python traceback's own indentation is not a block's.
    let py = "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\n    g()\n  File \"b.py\", line 2, in g\n    h()\n  File \"c.py\", line 3, in h\n    1/0\nZeroDivisionError: division by zero\n";
    assert_eq!(cleaned(py).0, py);
}

#[test]
fn rustc_snippet_gutters_are_not_a_log_gutter() {
    let text = "error[E0425]: cannot find value `x`\n  --> src/a.rs:3:5\n   |\n 3 |     x\n   |     ^\n\nerror: aborting\n";
    assert_eq!(cleaned(text).0, text);
}

#[test]
fn escapes_and_overwrites_are_removed() {
    let (t, _) = cleaned(
        "\x1b[31mFAILED\x1b[0m x\r\n50%\r100%\n\x1b]0;title\x07ok\n\x1b_bk;t=1714564800123\x07+++ tests\nsection_start:1715695205:step_script\r\x1b[0Kheader\n\x1b(Bdone\n",
    );
    assert_eq!(
        t,
        "FAILED x\n100%\nok\n+++ tests\nsection_start:1715695205:step_script\ndone\n"
    );
}

#[test]
fn workflow_commands_become_runner_markers() {
    let (t, _) = cleaned("::group::Run tests\n::error file=a.py,line=3::boom\n::endgroup::\n");
    assert_eq!(t, "##[group]Run tests\n##[error]boom\n##[endgroup]\n");
}

#[test]
fn interleaved_jobs_become_streams_with_their_line_numbers() {
    let text = "[job-1] Traceback (most recent call last):\n[job-2] starting\n[job-1]   File \"a.py\", line 1, in f\n[job-2] panic: boom\n[job-1] ValueError: x\n";
    let c = clean(text);
    assert_eq!(c.shapes, [Shape::Job]);
    assert_eq!(c.streams.len(), 2);
    assert_eq!(c.streams[0].label, "job-1");
    assert_eq!(
        c.streams[0].text,
        "Traceback (most recent call last):\n  File \"a.py\", line 1, in f\nValueError: x\n"
    );
    // The empty last line continues the job before it.
    assert_eq!(c.streams[0].lines, [1, 3, 5, 6]);
    assert_eq!(c.streams[1].text, "starting\npanic: boom");
    assert_eq!(c.streams[1].lines, [2, 4]);
}

#[test]
fn many_distinct_labels_are_ids_not_jobs() {
    let text: String = (0..5000)
        .map(|i| format!("[req-{i:x}] handled in {i} ms\n"))
        .collect();
    let c = clean(&text);
    assert!(c.shapes.is_empty() && c.streams.is_empty());
    // Jobs that only appear after the sample stay within the bound.
    let mut text: String = (0..400)
        .map(|i| format!("[job-{}] step {i}\n", i % 2))
        .collect();
    text += &(0..5000)
        .map(|i| format!("[late-{i}] x\n"))
        .collect::<String>();
    text += &(0..400)
        .map(|i| format!("[job-{}] step {i}\n", i % 2))
        .collect::<String>();
    let c = clean(&text);
    assert!(c.streams.len() <= MAX_JOBS, "{}", c.streams.len());
    assert!(c.work <= 8 * text.len() as u64, "{}", c.work);
}

#[test]
fn maven_levels_are_not_jobs() {
    let text = "[INFO] Building\n[INFO] ---\n[ERROR] Failed\n[INFO] done\n";
    let c = clean(text);
    assert!(c.shapes.is_empty());
    assert_eq!(c.text, text);
}

/// 10k-frame traces, long lines, garbage and a large input: linear work.
#[test]
fn work_is_linear_in_the_input() {
    let mut trace = String::from("2024-05-01T12:00:00.1Z Traceback (most recent call last):\n");
    for i in 0..10_000 {
        trace += &format!("2024-05-01T12:00:00.1Z   File \"/app/m{i}.py\", line {i}, in f{i}\n");
    }
    let long = format!(
        "[job-1] {}\n[job-2] {}\n",
        "x\x1b[1m".repeat(200_000),
        "\r".repeat(100_000)
    );
    let mut garbage = String::new();
    let mut x = 0x9e3779b97f4a7c15u64;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        garbage.push(char::from_u32((x % 0x2fff) as u32).unwrap_or('\u{1b}'));
    }
    for input in [trace.as_str(), long.as_str(), garbage.as_str()] {
        let c = clean(input);
        assert!(
            c.work <= 8 * input.len() as u64 + 4096,
            "{} for {}",
            c.work,
            input.len()
        );
    }
    assert_eq!(clean(&trace).shapes, [Shape::IsoTimestamp]);
}

fn prefix() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        Just(String::new()),
        Just("2024-05-01T12:00:00.1234567Z ".to_owned()),
        Just("2024-05-01T12:00:00.123456Z 00O ".to_owned()),
        Just("[2024-05-01 12:00:00] ".to_owned()),
        Just("12:00:00 ".to_owned()),
        Just("[    7s] ".to_owned()),
        Just("2016/03/11 13:08:48 [DEBUG] plugin-x: ".to_owned()),
        Just("   12 | ".to_owned()),
        Just("[job-1] ".to_owned()),
        Just("[job-2] ".to_owned()),
        Just("web_1  | ".to_owned()),
        Just("> ".to_owned()),
        Just("\x1b[31m".to_owned()),
        Just("\x1b_bk;t=1714564800123\x07".to_owned()),
        "[\\[\\]0-9:TZ. |>a-z\x1b\r-]{0,14}",
    ]
}

fn body() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        Just("Traceback (most recent call last):".to_owned()),
        Just("  File \"/app/a.py\", line 3, in f".to_owned()),
        Just("ValueError: x".to_owned()),
        Just("panic: boom".to_owned()),
        Just("goroutine 1 [running]:".to_owned()),
        Just("\tat a.B.c(B.java:1)".to_owned()),
        Just("thread 'main' panicked at src/main.rs:2:5:".to_owned()),
        Just("##[group]Run pytest".to_owned()),
        Just("::endgroup::".to_owned()),
        Just("section_start:1715695205:step\r\x1b[0Kheader".to_owned()),
        ".{0,40}",
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 96, ..Default::default() })]

    /// Any mix of prefixes, escapes, line ends and interleaved jobs:
    /// no panic, linear work, every stream line mapped to an input line.
    #[test]
    fn any_prefixed_log_is_cleaned_in_linear_work(
        lines in proptest::collection::vec((prefix(), body(), 0..3usize), 0..80),
    ) {
        let mut text = String::new();
        for (p, b, end) in &lines {
            text.push_str(p);
            text.push_str(b);
            text.push_str(["\n", "\r\n", "\r"][*end]);
        }
        // Linear in the input, plus detection's fixed cost: each layer
        // tries every shape on at most 64 bytes of each sampled line.
        let detection = (2 * SAMPLE_LINES * MAX_PREFIX * Shape::ALL.len() * (MAX_LAYERS + 1)) as u64;
        let c = clean(&text);
        proptest::prop_assert!(c.work <= 8 * text.len() as u64 + detection, "{} for {}", c.work, text.len());
        let input_lines = text.split('\n').count();
        for s in &c.streams {
            proptest::prop_assert_eq!(s.lines.len(), s.text.split('\n').count());
            proptest::prop_assert!(s.lines.iter().all(|&l| l >= 1 && l <= input_lines), "{:?}", s.lines);
        }
        // Cleaning what is clean removes no more prefixes.
        let again = clean(&c.text);
        proptest::prop_assert!(again.work <= 8 * c.text.len() as u64 + detection);
    }
}

#[test]
fn a_hundred_megabytes_is_cleaned_in_linear_work() {
    let line = "2024-05-01T12:00:00.1234567Z [job-1] \x1b[32mok\x1b[0m step 12 of 99 done\r\n";
    let big = line.repeat(100 * 1024 * 1024 / line.len());
    let c = clean(&big);
    assert_eq!(c.shapes, [Shape::IsoTimestamp, Shape::Job]);
    assert!(c.work <= 8 * big.len() as u64, "{}", c.work);
    assert!(c.text.starts_with("ok step 12 of 99 done\n"));
}
