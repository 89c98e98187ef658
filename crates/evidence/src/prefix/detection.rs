//! Which prefix shapes a log has: the sampled lines, each shape's dominance,
//! and a common indentation.

use super::{MAX_JOBS, MAX_LAYERS, MAX_PREFIX, SAMPLE_LINES, Shape, control_free};

/// The sampled lines: the first and last [`SAMPLE_LINES`] non-empty ones
/// (the tail taken after the head, so no line counts twice), free of
/// control characters.
fn sample(text: &str, work: &mut u64) -> Vec<String> {
    let mut scratch = String::new();
    let mut keep = |line: &str, out: &mut Vec<String>, work: &mut u64| {
        *work += line.len() as u64;
        let clean = control_free(line, &mut scratch, work);
        if !clean.trim().is_empty() {
            out.push(clean.to_owned());
        }
    };
    let mut head = Vec::new();
    let mut head_end = 0;
    let mut taken = 0;
    for line in text.split_inclusive('\n') {
        head_end += line.len();
        let line = line.strip_suffix('\n').unwrap_or(line);
        if line.trim().is_empty() {
            continue;
        }
        keep(line, &mut head, work);
        taken += 1;
        if taken == SAMPLE_LINES {
            break;
        }
    }
    let mut tail = Vec::new();
    let non_empty = text[head_end..]
        .rsplit('\n')
        .filter(|l| !l.trim().is_empty());
    for line in non_empty.take(SAMPLE_LINES) {
        keep(line, &mut tail, work);
    }
    tail.reverse();
    head.extend(tail);
    head
}

/// Which shapes start most lines, outermost first.
pub(super) fn detect(text: &str, work: &mut u64) -> Vec<Shape> {
    let sample = sample(text, work);
    let mut views: Vec<&str> = sample.iter().map(String::as_str).collect();
    let mut shapes = Vec::new();
    while shapes.len() < MAX_LAYERS {
        let lines = views.iter().filter(|l| !l.trim().is_empty()).count();
        if lines == 0 {
            break;
        }
        // A shape may come twice (a Jenkins timestamp on a log that already
        // had one, a job label inside a job label).
        let best = Shape::ALL
            .iter()
            .map(|&s| (s, dominance(s, &views, work)))
            .max_by_key(|&(_, n)| n);
        let Some((shape, n)) = best else { break };
        if n == 0 || n * 10 < lines * 8 {
            break;
        }
        for v in &mut views {
            if let Some(m) = shape.matches(v) {
                *v = &v[m.len..];
            }
        }
        shapes.push(shape);
    }
    if shapes.len() < MAX_LAYERS
        && let Some(n) = indent(&views)
    {
        shapes.push(Shape::Indent(n));
    }
    shapes
}

/// Failure headers a parser looks for at the start of a line; a common
/// indentation is removed only when one of them is indented with the rest,
/// so an indented list of frames (`    at f (a.js:1:2)`) is left as printed.
const HEADERS: &[&str] = &[
    "panic: ",
    "thread '",
    "Traceback (most recent call last)",
    "Exception in thread ",
    "fatal error: ",
    "goroutine ",
    "Caused by: ",
];

/// The indentation (spaces) shared by at least 80 % of the sampled lines,
/// when a failure header is among them.
pub(super) fn indent(views: &[&str]) -> Option<u8> {
    let lines: Vec<&str> = views
        .iter()
        .copied()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let width = |l: &str| {
        l.bytes()
            .take(MAX_PREFIX)
            .take_while(|&b| b == b' ')
            .count()
    };
    let n = lines.iter().map(|l| width(l)).filter(|&w| w > 0).min()?;
    let indented: Vec<&str> = lines.iter().copied().filter(|l| width(l) >= n).collect();
    let header = indented
        .iter()
        .any(|l| HEADERS.iter().any(|h| l[n..].starts_with(h)));
    (header && indented.len() * 10 >= lines.len() * 8).then(|| u8::try_from(n).unwrap_or(u8::MAX))
}

/// How many sampled lines the shape starts (0 when it does not qualify: a
/// gutter's numbers must count up; job labels must be few).
fn dominance(shape: Shape, views: &[&str], work: &mut u64) -> usize {
    let mut n = 0;
    let mut numbers = Vec::new();
    let mut labels: Vec<&str> = Vec::new();
    for v in views.iter().filter(|l| !l.trim().is_empty()) {
        *work += v.len().min(MAX_PREFIX) as u64;
        if let Some(m) = shape.matches(v) {
            n += 1;
            if let Some(x) = m.number {
                numbers.push(x);
            }
            if let Some(l) = m.label
                && !labels.contains(&l)
            {
                if labels.len() == MAX_JOBS {
                    return 0;
                }
                labels.push(l);
            }
        }
    }
    if shape == Shape::Gutter {
        let pairs = numbers.len().saturating_sub(1);
        let counting = numbers.windows(2).filter(|w| w[1] == w[0] + 1).count();
        if pairs == 0 || counting * 10 < pairs * 8 {
            return 0;
        }
    }
    n
}
