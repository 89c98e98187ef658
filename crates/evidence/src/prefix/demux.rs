//! Interleaved output of parallel jobs split into one stream per job.

/// One job's lines, when the log interleaves several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stream {
    /// The job label (`job-1`); empty for lines before any label.
    pub label: String,
    /// The job's lines, cleaned, joined with `\n`.
    pub text: String,
    /// The input line number (1-based) of each of `text`'s lines.
    pub lines: Vec<usize>,
}

/// Splits interleaved job output into one stream per job; a line without a
/// label continues the job of the line before it. One label: no streams.
pub(super) fn demultiplex(
    text: &str,
    labels: &[Option<usize>],
    names: &[String],
    work: &mut u64,
) -> Vec<Stream> {
    if names.len() < 2 {
        return Vec::new();
    }
    let new_stream = |label: &str| Stream {
        label: label.to_owned(),
        text: String::new(),
        lines: Vec::new(),
    };
    // Streams in order of first appearance; a preamble before any label is its own.
    let mut streams: Vec<Stream> = Vec::new();
    let mut of_name: Vec<Option<usize>> = vec![None; names.len()];
    let mut current: Option<usize> = None;
    for (i, line) in text.split('\n').enumerate() {
        let idx = match (labels.get(i).copied().flatten(), current) {
            (Some(n), _) => *of_name[n].get_or_insert_with(|| {
                streams.push(new_stream(&names[n]));
                streams.len() - 1
            }),
            (None, Some(c)) => c,
            (None, None) => {
                streams.push(new_stream(""));
                streams.len() - 1
            }
        };
        current = Some(idx);
        let s = &mut streams[idx];
        if !s.lines.is_empty() {
            s.text.push('\n');
        }
        s.text.push_str(line);
        s.lines.push(i + 1);
        *work += line.len() as u64;
    }
    streams
}
