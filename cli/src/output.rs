//! Rendering reports and listings.

use crate::args::Format;
use std::io::Write;
use std::path::Path;
use tracelab_domain::report::{InvestigationSummary, Report};

pub fn write_report(report: &Report, format: Format, out: Option<&Path>) -> anyhow::Result<()> {
    let text = match format {
        Format::Json => serde_json::to_string_pretty(report)? + "\n",
        Format::Markdown => report.to_markdown(),
    };
    match out {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    Ok(())
}

pub fn list_table(list: &[InvestigationSummary]) -> String {
    let mut out = String::from(
        "| id | created | state | verdict | culprit | test |\n|---|---|---|---|---|---|\n",
    );
    for s in list {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | `{}` |\n",
            s.id,
            s.created_at.date(),
            s.state,
            s.verdict.map(|v| v.as_str()).unwrap_or("-"),
            s.culprit
                .as_deref()
                .map(|c| &c[..c.len().min(12)])
                .unwrap_or("-"),
            s.test_command
        ));
    }
    out
}
