//! Java and Kotlin exceptions: `Caused by:`, `Suppressed:`, `... N more`,
//! and the Kotlin compiler's `e: ` lines.

use super::javascript::JS_FRAME;
use super::python::Exc;
use super::{MAX_MESSAGE_LINES, frame};
use crate::model::{Cause, Failure, FailureKind, Frame, Language};
use regex::Regex;
use std::sync::LazyLock;

static JAVA_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"^\s*(?:Exception in thread "[^"]*"\s+|Caused by:\s+|Suppressed:\s+|\[CIRCULAR REFERENCE:\s*|e:\s+)?((?:[a-zA-Z_$][\w$]*\.)+[a-zA-Z_$][\w$]*)(?::\s?(.*))?$"#,
    )
    .unwrap()
});
static JAVA_FRAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*at\s+([\w$.<>@/\[\]-]+?)\(([^()]*)\)(?:\s*~?\[[^\]]*\])?\s*$").unwrap()
});
static JAVA_MORE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*\.\.\. \d+ (?:more|common frames omitted)\s*$").unwrap());

pub(super) fn java_frame(line: &str) -> Option<Frame> {
    let c = JAVA_FRAME.captures(line)?;
    let full = &c[1];
    // `java.base/java.lang.Thread.run`, `app//com.acme.X.y`, `java.base@17/...`.
    let func = full.rsplit('/').next().unwrap_or(full);
    if !func.contains('.') {
        return None;
    }
    let loc = &c[2];
    let (file_name, line) = match loc.rsplit_once(':') {
        Some((f, l)) => (Some(f), l.trim().parse().ok()),
        None if loc.ends_with(".java")
            || loc.ends_with(".kt")
            || loc.ends_with(".scala")
            || loc.ends_with(".groovy") =>
        {
            (Some(loc), None)
        }
        None => (None, None),
    };
    // The class's package gives the path: com.acme.Foo$Inner -> com/acme/Foo.java.
    let class = func.rsplit_once('.').map_or(func, |(c, _)| c);
    let package: Vec<&str> = class
        .split('.')
        .take_while(|s| s.chars().next().is_some_and(|ch| ch.is_ascii_lowercase()))
        .collect();
    let file = file_name.map(|name| {
        if package.is_empty() || package.len() == class.split('.').count() {
            name.to_owned()
        } else {
            format!("{}/{}", package.join("/"), name)
        }
    });
    Some(frame(file.as_deref(), Some(func), line))
}

fn java_header(line: &str) -> Option<(String, String)> {
    // Groovy's internal error prints no class name: `BUG! exception in phase …`
    // (Gradle's build-script compiler on a JDK newer than it reads).
    let t = line.trim_start();
    let t = t.strip_prefix("Caused by:").map_or(t, str::trim_start);
    if let Some(msg) = t.strip_prefix("BUG! ") {
        return Some(("GroovyBugError".into(), msg.trim_end().to_owned()));
    }
    let c = JAVA_HEADER.captures(line)?;
    let ty = c[1].to_owned();
    // A dotted name whose last part is not capitalised is a path or a call, not a class.
    let last = ty.rsplit('.').next().unwrap_or("");
    if !last
        .chars()
        .next()
        .is_some_and(|ch| ch.is_ascii_uppercase())
    {
        return None;
    }
    Some((
        ty,
        c.get(2).map_or(String::new(), |m| m.as_str().to_owned()),
    ))
}

pub(super) fn java(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    java_from(lines, start, lines[start])
}

/// A qualified exception class after a lead-in on its line (`error message:
/// java.lang.IllegalAccessError: …`, a logger's own prefix).
static JAVA_EMBEDDED_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s:])((?:[a-z][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable))(?::|$)")
        .unwrap()
});

pub(super) fn java_embedded(lines: &[&str], start: usize) -> Option<(Failure, usize)> {
    let c = JAVA_EMBEDDED_HEADER.captures(lines[start])?;
    let at = c.get(1)?.start();
    if at == 0 {
        return None;
    }
    java_from(lines, start, &lines[start][at..])
}

fn java_from(lines: &[&str], start: usize, header: &str) -> Option<(Failure, usize)> {
    let (ty, msg) = java_header(header)?;
    let mut i = start + 1;
    let mut message = msg;
    // Message lines up to the first frame.
    let mut extra = 0;
    while i < lines.len() && java_frame(lines[i]).is_none() {
        if extra >= MAX_MESSAGE_LINES || JS_FRAME.is_match(lines[i]) {
            return None;
        }
        message.push('\n');
        message.push_str(lines[i]);
        i += 1;
        extra += 1;
    }
    if i >= lines.len() {
        return None;
    }
    let mut chain = vec![Exc {
        relation: String::new(),
        exception_type: Some(ty),
        message,
        frames: Vec::new(),
        subs: Vec::new(),
    }];
    while i < lines.len() {
        let l = lines[i];
        if let Some(fr) = java_frame(l) {
            chain
                .last_mut()
                .expect("chain starts non-empty")
                .frames
                .push(fr);
            i += 1;
        } else if JAVA_MORE.is_match(l) {
            i += 1;
        } else if let Some(rest) = l
            .trim_start()
            .strip_prefix("Caused by:")
            .or_else(|| l.trim_start().strip_prefix("Suppressed:"))
        {
            let relation = if l.trim_start().starts_with("Caused") {
                "cause"
            } else {
                "suppressed"
            };
            let (t, m) =
                java_header(rest.trim_start()).unwrap_or((String::new(), rest.trim().to_owned()));
            let mut message = m;
            i += 1;
            let mut extra = 0;
            while i < lines.len()
                && java_frame(lines[i]).is_none()
                && !JAVA_MORE.is_match(lines[i])
                && extra < MAX_MESSAGE_LINES
            {
                let t = lines[i].trim_start();
                if t.starts_with("Caused by:") || t.starts_with("Suppressed:") || t.is_empty() {
                    break;
                }
                message.push('\n');
                message.push_str(lines[i]);
                i += 1;
                extra += 1;
            }
            chain.push(Exc {
                relation: relation.into(),
                exception_type: (!t.is_empty()).then_some(t),
                message,
                frames: Vec::new(),
                subs: Vec::new(),
            });
        } else {
            break;
        }
    }
    let mut chain = chain.into_iter();
    let first = chain.next()?;
    let mut f = Failure::new(FailureKind::Exception, Language::Java);
    f.exception_type = first.exception_type;
    f.message = first.message;
    f.frames = first.frames.into_iter().rev().collect();
    for e in chain {
        f.causes.push(Cause {
            relation: e.relation,
            exception_type: e.exception_type,
            message: e.message,
            frames: e.frames.into_iter().rev().collect(),
        });
    }
    Some((f, i))
}
