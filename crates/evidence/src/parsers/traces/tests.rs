//! One test per shape each recogniser reads.

use super::go::go_strip_args;
use super::java::java_frame;
use super::*;

fn one(text: &str) -> Failure {
    let lines: Vec<&str> = text.lines().collect();
    let mut v = scan(&lines, 1, 10);
    assert_eq!(v.len(), 1, "{v:#?}");
    v.remove(0)
}

#[test]
fn python_chain() {
    let f = one(
        "Traceback (most recent call last):\n  File \"/app/a.py\", line 3, in load\n    d[k]\nKeyError: 'x'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"/app/a.py\", line 9, in main\n    load()\nValueError: bad config\n",
    );
    assert_eq!(f.exception_type.as_deref(), Some("ValueError"));
    assert_eq!(f.causes[0].exception_type.as_deref(), Some("KeyError"));
    assert_eq!(f.causes[0].relation, "context");
    assert_eq!(f.frames[0].function.as_deref(), Some("main"));
}

#[test]
fn python_syntax_error_without_traceback() {
    let f = one(
        "  File \"/app/x.py\", line 3\n    def f(:\n          ^\nSyntaxError: invalid syntax\n",
    );
    assert_eq!(f.exception_type.as_deref(), Some("SyntaxError"));
    assert_eq!(f.frames[0].line, Some(3));
}

#[test]
fn node_error_causes() {
    let f = one(
        "TypeError: fetch failed\n    at node:internal/deps/undici/undici:12345:11\n    at async getUser (/app/src/users.js:10:15) {\n  [cause]: Error: connect ECONNREFUSED 127.0.0.1:3000\n      at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16) {\n    errno: -111,\n    code: 'ECONNREFUSED'\n  }\n}\nnext line\n",
    );
    assert_eq!(f.exception_type.as_deref(), Some("TypeError"));
    assert_eq!(f.causes.len(), 1);
    assert_eq!(f.causes[0].exception_type.as_deref(), Some("Error"));
    assert_eq!(f.causes[0].message, "connect ECONNREFUSED 127.0.0.1:3000");
    assert_eq!(f.causes[0].frames.len(), 1);
}

#[test]
fn python_exception_group() {
    let text = "  + Exception Group Traceback (most recent call last):\n  |   File \"/app/main.py\", line 18, in <module>\n  |     asyncio.run(main())\n  |   File \"/app/main.py\", line 12, in main\n  |     async with asyncio.TaskGroup() as tg:\n  | ExceptionGroup: unhandled errors in a TaskGroup (2 sub-exceptions)\n  +-+---------------- 1 ----------------\n    | Traceback (most recent call last):\n    |   File \"/app/main.py\", line 6, in fetch\n    |     raise ValueError(f\"bad id {i}\")\n    | ValueError: bad id 1\n    +---------------- 2 ----------------\n    | Traceback (most recent call last):\n    |   File \"/app/main.py\", line 8, in fetch_more\n    |     raise KeyError(i)\n    | KeyError: 2\n    +------------------------------------\nafter\n";
    let f = one(text);
    assert_eq!(f.exception_type.as_deref(), Some("ExceptionGroup"));
    assert_eq!(f.frames.len(), 2);
    let subs: Vec<_> = f
        .causes
        .iter()
        .map(|c| {
            (
                c.relation.as_str(),
                c.exception_type.as_deref(),
                c.frames.len(),
            )
        })
        .collect();
    assert_eq!(
        subs,
        [
            ("sub_exception", Some("ValueError"), 1),
            ("sub_exception", Some("KeyError"), 1)
        ]
    );
}

#[test]
fn go_dump_without_its_panic_line() {
    let f = one(
        "goroutine 1 [running]:\nmain.f(...)\n\t/path/main.go:12 +0x1d\nmain.main()\n\t/path/main.go:20 +0x25\n",
    );
    assert_eq!(f.exception_type.as_deref(), Some("panic"));
    let funcs: Vec<_> = f.frames.iter().map(|fr| fr.function.as_deref()).collect();
    assert_eq!(funcs, [Some("main.main"), Some("main.f")]);
    assert_eq!(f.frames[1].line, Some(12));
}

#[test]
fn go_frames_with_wrapped_arguments_and_no_tabs() {
    let f = one(
        "panic: boom\n\ngoroutine 1 [running]:\nmain.(*S).f(0xc000010000,\n    {0x1, 0x2})\n/src/x/main.go:12 +0x1d\nmain.main()\n/src/x/main.go:20 +0x25\n",
    );
    let funcs: Vec<_> = f.frames.iter().map(|fr| fr.function.as_deref()).collect();
    assert_eq!(funcs, [Some("main.main"), Some("main.(*S).f")]);
}

#[test]
fn go_data_race() {
    let f = one(
        "WARNING: DATA RACE\nRead at 0x00c000012345 by goroutine 7:\n  main.get()\n      /src/m.go:9 +0x2a\n\nPrevious write at 0x00c000012345 by main goroutine:\n  main.set()\n      /src/m.go:5 +0x1a\n==================\n",
    );
    assert_eq!(f.exception_type.as_deref(), Some("data race"));
    assert_eq!(f.message, "Read at 0x00c000012345 by goroutine 7");
    assert_eq!(f.frames[0].function.as_deref(), Some("main.get"));
    assert_eq!(f.causes[0].relation, "previous_access");
    assert_eq!(f.causes[0].frames[0].function.as_deref(), Some("main.set"));
}

#[test]
fn firefox_and_safari_frames() {
    let f = one(
        "TypeError: x is undefined\nasync*load@http://localhost/src/a.js:3:9\n@http://localhost/src/main.js:1:1\nf@[native code]\n",
    );
    assert_eq!(f.exception_type.as_deref(), Some("TypeError"));
    let frames: Vec<_> = f
        .frames
        .iter()
        .map(|fr| (fr.function.as_deref(), fr.line))
        .collect();
    assert_eq!(
        frames,
        [
            (Some("f"), None),
            (Some("<anonymous>"), Some(1)),
            (Some("load"), Some(3))
        ]
    );
    assert!(gecko_frame("mail me at ann@example.com").is_none());
}

#[test]
fn exception_groups_in_chains() {
    let group = "  + Exception Group Traceback (most recent call last):\n  |   File \"/app/m.py\", line 5, in main\n  |     raise ExceptionGroup(\"x\", errs)\n  | ExceptionGroup: x (1 sub-exception)\n  +-+---------------- 1 ----------------\n    | Traceback (most recent call last):\n    |   File \"/app/m.py\", line 2, in f\n    |     raise KeyError(1)\n    | KeyError: 1\n    +------------------------------------\n";
    let first = format!(
        "Traceback (most recent call last):\n  File \"/app/m.py\", line 9, in g\n    open(p)\nOSError: gone\n\nDuring handling of the above exception, another exception occurred:\n\n{group}"
    );
    let f = one(&first);
    assert_eq!(f.exception_type.as_deref(), Some("ExceptionGroup"));
    let rels: Vec<_> = f
        .causes
        .iter()
        .map(|c| (c.relation.as_str(), c.exception_type.as_deref()))
        .collect();
    assert_eq!(
        rels,
        [
            ("sub_exception", Some("KeyError")),
            ("context", Some("OSError"))
        ]
    );
    let last = format!(
        "{group}\nThe above exception was the direct cause of the following exception:\n\nTraceback (most recent call last):\n  File \"/app/m.py\", line 12, in <module>\n    raise SystemExit(1) from eg\nSystemExit: 1\n"
    );
    let f = one(&last);
    assert_eq!(f.exception_type.as_deref(), Some("SystemExit"));
    let rels: Vec<_> = f
        .causes
        .iter()
        .map(|c| (c.relation.as_str(), c.exception_type.as_deref()))
        .collect();
    assert_eq!(
        rels,
        [
            ("cause", Some("ExceptionGroup")),
            ("sub_exception", Some("KeyError"))
        ]
    );
}

#[test]
fn python_traceback_pasted_without_its_header() {
    let f = one(
        "   File \"/usr/lib/python3.9/site-packages/jinja2/filters.py\", line 13, in <module>\n     from markupsafe import soft_unicode\n ImportError: cannot import name 'soft_unicode' from 'markupsafe'\n",
    );
    assert_eq!(f.exception_type.as_deref(), Some("ImportError"));
    assert_eq!(f.frames.len(), 1);
    assert_eq!(f.context.get("header").map(String::as_str), Some("missing"));
    // Frames that end in no exception line are not a failure.
    let out = scan(&["  File \"a.py\", line 1, in f", "    g()"], 1, 10);
    assert!(out.is_empty());
}

#[test]
fn old_rust_panics_without_a_column_and_kotlin_compiler_errors() {
    let f = one(
        "thread 'pty reader' panicked at 'cursor fell off grid', src/term/mod.rs:634\nnote: Run with `RUST_BACKTRACE=1` for a backtrace.\n",
    );
    assert_eq!(
        f.context.get("location").map(String::as_str),
        Some("src/term/mod.rs:634")
    );
    assert_eq!(f.frames[0].line, Some(634));
    let f = one(
        "e: java.lang.IllegalAccessError: superclass access check failed\n\tat java.base/java.lang.ClassLoader.defineClass1(Native Method)\n\tat org.jetbrains.kotlin.kapt3.base.KaptContext.<init>(KaptContext.kt:55)\n",
    );
    assert_eq!(
        f.exception_type.as_deref(),
        Some("java.lang.IllegalAccessError")
    );
    assert_eq!(f.frames.len(), 2);
}

#[test]
fn go_frames_of_old_runtimes_without_pc() {
    let f = one(
        "fatal error: concurrent map writes\n\ngoroutine 419 [running]:\nruntime.throw(0xa802e0, 0x15)\n        /usr/local/go/src/runtime/panic.go:530 +0x90 fp=0xc8260edcf0 sp=0xc8260edcd8\nktkr.us/pkg/airlift/thumb.(*Cache).getThumb.func1(0xc82018a7e0)\n        /home/u/go/src/ktkr.us/pkg/airlift/thumb/thumb.go:302 +0xdbd fp=0xc8260edf90 sp=0xc8260edd98\n",
    );
    assert_eq!(f.frames.len(), 2, "{:?}", f.frames);
}

#[test]
fn go_args_are_stripped() {
    assert_eq!(go_strip_args("main.(*S).h(0x0, {0x1, 0x2})"), "main.(*S).h");
    assert_eq!(go_strip_args("main.main()"), "main.main");
}

#[test]
fn js_and_java_frames_do_not_mix() {
    assert!(java_frame("    at Object.<anonymous> (/app/x.js:1:2)").is_none());
    assert!(js_frame("\tat com.acme.A.b(A.java:3)").is_none());
    let f = js_frame("    at async Promise.all (index 0)").unwrap();
    assert_eq!(f.file, None);
    let j = java_frame("\tat java.base/java.lang.Thread.run(Thread.java:1583)").unwrap();
    assert_eq!(j.file.as_deref(), Some("java/lang/Thread.java"));
    assert_eq!(j.function.as_deref(), Some("java.lang.Thread.run"));
}
