//! The comment a decision leaves on the issue (pure: no IO): a few lines
//! a person reads in Jira — what happened, the verdict and culprit, who
//! decided and why, the pull request — and the link to the dashboard page
//! with everything else. Rendered as ADF for Jira Cloud (REST v3) and as
//! wiki text for Server/Data Center (REST v2).

use super::Flavor;
use serde_json::{Value, json};

/// One piece of a line: plain text, or a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span {
    Text(String),
    Strong(String),
    Link { text: String, href: String },
}

/// The comment: lines of spans.
pub type Lines = Vec<Vec<Span>>;

fn t(s: impl Into<String>) -> Span {
    Span::Text(s.into())
}

/// The comment for `event` on the investigation `view` (as the API shows
/// it), with a link to `page` when known. `None`: no comment for that event.
pub fn lines(event: &str, view: &Value, page: Option<&str>) -> Option<Lines> {
    let id = view["id"].as_str().unwrap_or_default();
    let mut out: Lines = Vec::new();
    let headline = match event {
        "created" => "TraceLab started an investigation of this issue.",
        "decided" => "TraceLab finished its diagnosis; it waits for a reviewer.",
        "approved" => "A reviewer approved TraceLab's diagnosis.",
        "rejected" => "A reviewer rejected TraceLab's diagnosis.",
        "pull_request_opened" => "TraceLab opened a draft pull request with the verified fix.",
        _ => return None,
    };
    out.push(vec![Span::Strong(headline.into())]);
    if event == "decided" {
        let state = view["state"].as_str().unwrap_or_default();
        if state != "WAITING_FOR_REVIEW" {
            out.push(vec![t(format!("It ended {state}.")), t(reason(view))]);
        }
    }
    if matches!(event, "decided" | "approved") {
        if let Some(verdict) = view["verdict"].as_str() {
            out.push(vec![
                t("Verdict: "),
                Span::Strong(verdict.replace('_', " ")),
            ]);
        }
        let culprit = &view["report"]["culprit"];
        if let Some(commit) = culprit["commit"].as_str() {
            let short: String = commit.chars().take(12).collect();
            let mut line = vec![t("Culprit: "), Span::Strong(short)];
            if let Some(summary) = culprit["summary"].as_str() {
                line.push(t(format!(" \u{201c}{summary}\u{201d}")));
            }
            if let Some(author) = culprit["author"].as_str() {
                line.push(t(format!(" by {author}")));
            }
            line.push(t(if culprit["verified"].as_bool() == Some(true) {
                " (a fix that undoes it was verified)"
            } else {
                " (no fix verified)"
            }));
            out.push(line);
        } else if event == "decided" && view["state"] == "WAITING_FOR_REVIEW" {
            out.push(vec![t("No culprit commit was found.")]);
        }
    }
    if matches!(event, "approved" | "rejected")
        && let Some(entry) = view["audit"]
            .as_array()
            .and_then(|a| a.iter().rev().find(|e| e["action"] == event))
    {
        let mut line = vec![t(format!(
            "By {}",
            entry["actor"].as_str().unwrap_or("a reviewer")
        ))];
        if let Some(reason) = entry["reason"].as_str() {
            line.push(t(format!(": {reason}")));
        }
        out.push(line);
    }
    let pr = &view["pull_request"];
    if let Some(url) = pr["url"].as_str() {
        out.push(vec![
            t("Pull request: "),
            Span::Link {
                text: format!("#{}", pr["number"].as_u64().unwrap_or_default()),
                href: url.to_string(),
            },
        ]);
    }
    match page {
        Some(page) => out.push(vec![
            t("Details: "),
            Span::Link {
                text: format!("investigation {id}"),
                href: page.to_string(),
            },
        ]),
        None => out.push(vec![t(format!("Investigation {id}."))]),
    }
    Some(out)
}

/// The comment on a labelled issue whose webhook started nothing.
pub fn refused(why: &str) -> Lines {
    vec![
        vec![Span::Strong(
            "TraceLab could not start an investigation of this issue.".into(),
        )],
        vec![t(why.to_string())],
        vec![t(
            "Add the missing lines to the description (repository: …, test: …, and optionally good: … and bad: …); the next update of the issue starts it.",
        )],
    ]
}

/// Why it FAILED or BLOCKED: the last transition's reason.
fn reason(view: &Value) -> String {
    view["transitions"]
        .as_array()
        .and_then(|t| t.last())
        .and_then(|t| t["reason"].as_str())
        .map(|r| format!(" {r}"))
        .unwrap_or_default()
}

/// The request body for `POST …/issue/{key}/comment`.
pub fn body(flavor: Flavor, lines: &Lines) -> Value {
    match flavor {
        Flavor::Cloud => json!({"body": adf(lines)}),
        Flavor::Server => json!({"body": wiki(lines)}),
    }
}

/// Atlassian Document Format: a paragraph per line.
pub fn adf(lines: &Lines) -> Value {
    let paragraphs: Vec<Value> = lines
        .iter()
        .map(|line| {
            let content: Vec<Value> = line
                .iter()
                .map(|span| match span {
                    Span::Text(s) => json!({"type": "text", "text": s}),
                    Span::Strong(s) => {
                        json!({"type": "text", "text": s, "marks": [{"type": "strong"}]})
                    }
                    Span::Link { text, href } => json!({"type": "text", "text": text,
                        "marks": [{"type": "link", "attrs": {"href": href}}]}),
                })
                .collect();
            json!({"type": "paragraph", "content": content})
        })
        .collect();
    json!({"type": "doc", "version": 1, "content": paragraphs})
}

/// Jira wiki markup (Server / Data Center), with markup characters in the
/// text escaped so a commit summary cannot format or link anything (`#`
/// and `-` mark up only at a line's start, where our own labels stand).
pub fn wiki(lines: &Lines) -> String {
    lines
        .iter()
        .map(|line| {
            line.iter()
                .map(|span| match span {
                    Span::Text(s) => escape(s),
                    Span::Strong(s) => format!("*{}*", escape(s)),
                    Span::Link { text, href } => {
                        format!("[{}|{}]", escape(text), href.replace(['|', ']'], ""))
                    }
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(
            c,
            '*' | '_' | '[' | ']' | '{' | '}' | '|' | '!' | '^' | '~' | '+'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decided() -> Value {
        json!({
            "id": "inv-7", "state": "WAITING_FOR_REVIEW", "verdict": "regression",
            "report": {"culprit": {"commit": "0123456789abcdef0123", "summary": "Round *totals*",
                "author": "Bo", "verified": true}},
            "audit": [], "transitions": []
        })
    }

    #[test]
    fn a_decision_reads_as_verdict_culprit_and_link() {
        let l = lines(
            "decided",
            &decided(),
            Some("https://t.example/investigations/inv-7"),
        )
        .unwrap();
        assert_eq!(
            wiki(&l),
            "*TraceLab finished its diagnosis; it waits for a reviewer.*\n\
             Verdict: *regression*\n\
             Culprit: *0123456789ab* \u{201c}Round \\*totals\\*\u{201d} by Bo (a fix that undoes it was verified)\n\
             Details: [investigation inv-7|https://t.example/investigations/inv-7]"
        );
        let doc = adf(&l);
        assert_eq!(doc["type"], "doc");
        assert_eq!(doc["content"].as_array().unwrap().len(), 4);
        assert_eq!(
            doc["content"][3]["content"][1]["marks"][0]["attrs"]["href"],
            "https://t.example/investigations/inv-7"
        );
        assert_eq!(doc["content"][2]["content"][1]["text"], "0123456789ab");
    }

    #[test]
    fn reviews_name_the_reviewer_and_the_pull_request_its_link() {
        let mut v = decided();
        v["state"] = json!("APPROVED");
        v["audit"] = json!([{"action": "started", "actor": "jira"},
            {"action": "approved", "actor": "rita", "reason": "looks right"}]);
        let text = wiki(&lines("approved", &v, None).unwrap());
        assert!(text.contains("By rita: looks right"), "{text}");
        assert!(text.ends_with("Investigation inv-7."), "{text}");
        v["pull_request"] = json!({"url": "https://github.example/acme/shop/pull/3", "number": 3});
        let text = wiki(&lines("pull_request_opened", &v, None).unwrap());
        assert!(
            text.contains("Pull request: [#3|https://github.example/acme/shop/pull/3]"),
            "{text}"
        );
        assert!(!text.contains("Verdict"), "{text}");
    }

    #[test]
    fn a_failed_investigation_says_why_and_unknown_events_say_nothing() {
        let v = json!({"id": "inv-8", "state": "FAILED",
            "transitions": [{"to": "FAILED", "reason": "the test never failed"}]});
        let text = wiki(&lines("decided", &v, None).unwrap());
        assert!(
            text.contains("It ended FAILED. the test never failed"),
            "{text}"
        );
        assert_eq!(lines("rebased", &v, None), None);
    }

    #[test]
    fn bodies_per_flavor() {
        let l = vec![vec![t("x")]];
        assert_eq!(body(Flavor::Server, &l), json!({"body": "x"}));
        assert_eq!(body(Flavor::Cloud, &l)["body"]["version"], 1);
    }
}
