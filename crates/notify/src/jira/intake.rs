//! What a Jira issue webhook asks for (pure: no IO).
//!
//! An issue starts an investigation when the webhook is an issue creation
//! or update (`webhookEvent` `jira:issue_created` / `jira:issue_updated`),
//! the issue carries the configured label, and its project is served. The
//! repository, test command and revisions come from the configured custom
//! fields, else from lines of the description:
//!
//! ```text
//! repository: https://git.example.com/acme/shop
//! test: pytest -q tests/test_cart.py
//! good: v1.4.0
//! bad: main
//! ```
//!
//! (keys case-insensitive; `repo` for `repository`; list bullets and
//! Jira's `{{monospace}}` or Markdown backticks around a value are
//! dropped), and the repository last from the project's default.
//!
//! The investigation is keyed by the issue and what it asks for, so a
//! redelivered or repeated webhook (an edit of the summary, a comment)
//! starts nothing new, while an issue whose template now names another
//! revision or test starts one for that.

use super::{IntakeSettings, is_issue_key};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// What the webhook asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Intake {
    Start(Start),
    /// Nothing to do, and why (answered 202).
    Ignored(String),
}

/// An investigation to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    pub issue_key: String,
    pub repository: String,
    pub test: String,
    pub good: Option<String>,
    pub bad: Option<String>,
    /// `jira:<the user who triggered the webhook>`, for the audit log.
    pub requested_by: String,
    /// One investigation per issue and inputs.
    pub dedupe_key: String,
}

const EVENTS: [&str; 2] = ["jira:issue_created", "jira:issue_updated"];

/// Reads a webhook's JSON. `Err` is a bad payload (400), with the reason.
pub fn read(payload: &Value, settings: &IntakeSettings) -> Result<Intake, String> {
    let Some(event) = payload.get("webhookEvent").and_then(Value::as_str) else {
        return Err("not a Jira webhook: no webhookEvent".into());
    };
    if !EVENTS.contains(&event) {
        return Ok(Intake::Ignored(format!(
            "event {event} is not an issue creation or update"
        )));
    }
    let issue = payload
        .get("issue")
        .filter(|i| i.is_object())
        .ok_or("the webhook carries no issue")?;
    let key = issue
        .get("key")
        .and_then(Value::as_str)
        .ok_or("the issue has no key")?;
    if !is_issue_key(key) {
        return Err(format!("{key:?} is not a Jira issue key"));
    }
    let fields = issue
        .get("fields")
        .filter(|f| f.is_object())
        .ok_or_else(|| format!("issue {key} has no fields"))?;
    let labels: Vec<&str> = fields
        .get("labels")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !labels.contains(&settings.label.as_str()) {
        return Ok(Intake::Ignored(format!(
            "issue {key} does not carry the label {:?}",
            settings.label
        )));
    }
    let project = fields
        .pointer("/project/key")
        .and_then(Value::as_str)
        .or_else(|| key.split_once('-').map(|(p, _)| p))
        .unwrap_or_default();
    let project_settings = settings.projects.get(project);
    if !settings.projects.is_empty() && project_settings.is_none() {
        return Ok(Intake::Ignored(format!(
            "project {project} is not served here (jira.intake.projects)"
        )));
    }
    let description = fields.get("description").map(text).unwrap_or_default();
    let template = template(&description);
    let value = |field: &str, names: &[&str]| -> Option<String> {
        let from_field = (!field.is_empty())
            .then(|| fields.get(field).map(text))
            .flatten();
        from_field
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .or_else(|| {
                names
                    .iter()
                    .find_map(|n| template.iter().find(|(k, _)| k == n))
                    .map(|(_, v)| v.clone())
            })
    };
    let missing = |what: &str, field: &str| {
        let field = if field.is_empty() {
            String::new()
        } else {
            format!("the field {field} or ")
        };
        format!("issue {key} names no {what}: set {field}a line `{what}: …` in its description")
    };
    let f = &settings.fields;
    let repository = value(&f.repository, &["repository", "repo"])
        .or_else(|| {
            project_settings
                .map(|p| p.repository.trim().to_string())
                .filter(|r| !r.is_empty())
        })
        .ok_or_else(|| missing("repository", &f.repository))?;
    let test = value(&f.test, &["test"]).ok_or_else(|| missing("test", &f.test))?;
    let good = value(&f.good, &["good"]);
    let bad = value(&f.bad, &["bad"]);
    let requested_by = ["/user/emailAddress", "/user/name", "/user/accountId"]
        .iter()
        .find_map(|p| payload.pointer(p).and_then(Value::as_str))
        .filter(|u| !u.is_empty())
        .map_or_else(|| "jira".to_string(), |u| format!("jira:{u}"));
    let dedupe_key = dedupe_key(key, &repository, &test, good.as_deref(), bad.as_deref());
    Ok(Intake::Start(Start {
        issue_key: key.to_string(),
        repository,
        test,
        good,
        bad,
        requested_by,
        dedupe_key,
    }))
}

/// The key of an issue that carries the label, when the webhook names one:
/// whom to tell why a refused webhook started nothing (an issue without
/// the label is none of TraceLab's business).
pub fn labelled_issue(payload: &Value, settings: &IntakeSettings) -> Option<String> {
    let issue = payload.get("issue")?;
    let key = issue.get("key").and_then(Value::as_str)?;
    let labelled = issue
        .pointer("/fields/labels")
        .and_then(Value::as_array)?
        .iter()
        .any(|l| l.as_str() == Some(settings.label.as_str()));
    (labelled && is_issue_key(key)).then(|| key.to_string())
}

/// `jira:<KEY>:<digest of the inputs>`.
pub fn dedupe_key(
    key: &str,
    repository: &str,
    test: &str,
    good: Option<&str>,
    bad: Option<&str>,
) -> String {
    let mut h = Sha256::new();
    for part in [
        repository,
        test,
        good.unwrap_or_default(),
        bad.unwrap_or_default(),
    ] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    let digest: String = h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("jira:{key}:{digest}")
}

/// A field's text: a string, an option (`{"value": …}`), a user or
/// version (`name`), or an ADF document (Cloud's rich text).
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("doc") => {
            let mut out = String::new();
            adf_text(v, &mut out);
            out
        }
        Value::Object(o) => o
            .get("value")
            .or_else(|| o.get("name"))
            .map(text)
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// ADF's text, a line per block and per hard break.
fn adf_text(node: &Value, out: &mut String) {
    match node.get("type").and_then(Value::as_str) {
        Some("text") => out.push_str(node.get("text").and_then(Value::as_str).unwrap_or("")),
        Some("hardBreak") => out.push('\n'),
        _ => {}
    }
    if let Some(children) = node.get("content").and_then(Value::as_array) {
        for c in children {
            adf_text(c, out);
        }
        let block = matches!(
            node.get("type").and_then(Value::as_str),
            Some("paragraph" | "codeBlock" | "heading" | "listItem")
        );
        if block && !out.ends_with('\n') {
            out.push('\n');
        }
    }
}

/// `key: value` lines, keys lower-cased, in order.
fn template(description: &str) -> Vec<(String, String)> {
    description
        .lines()
        .filter_map(|line| {
            let line = line.trim().trim_start_matches(['*', '-', '#', ' ']).trim();
            let (k, v) = line.split_once(':')?;
            let k = k
                .trim()
                .trim_matches(['*', '_'])
                .trim()
                .to_ascii_lowercase();
            if !["repository", "repo", "test", "good", "bad"].contains(&k.as_str()) {
                return None;
            }
            let v = v.trim();
            let v = v
                .strip_prefix("{{")
                .and_then(|v| v.strip_suffix("}}"))
                .or_else(|| v.strip_prefix('`').and_then(|v| v.strip_suffix('`')))
                .unwrap_or(v)
                .trim();
            (!v.is_empty()).then(|| (k, v.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jira::{FieldSettings, ProjectSettings};
    use serde_json::json;

    fn settings() -> IntakeSettings {
        IntakeSettings {
            label: "tracelab".into(),
            ..IntakeSettings::default()
        }
    }

    fn issue(labels: &[&str], description: Value) -> Value {
        json!({
            "webhookEvent": "jira:issue_created",
            "user": {"accountId": "5b10a2844c20165700ede21g", "emailAddress": "ada@example.com"},
            "issue": {"key": "PVS-421", "fields": {
                "project": {"key": "PVS"},
                "labels": labels,
                "description": description,
                "customfield_10050": {"value": "https://git.example.com/acme/field"},
            }}
        })
    }

    fn start(v: Result<Intake, String>) -> Start {
        match v {
            Ok(Intake::Start(s)) => s,
            other => panic!("{other:?}"),
        }
    }

    const TEMPLATE: &str = "The cart total is wrong.\n\n* repository: https://git.example.com/acme/shop\n* Test: {{pytest -q tests/test_cart.py}}\n- good: `v1.4.0`\nbad: main\nnotes: none";

    #[test]
    fn the_description_template_is_read() {
        let s = start(read(&issue(&["tracelab"], json!(TEMPLATE)), &settings()));
        assert_eq!(s.issue_key, "PVS-421");
        assert_eq!(s.repository, "https://git.example.com/acme/shop");
        assert_eq!(s.test, "pytest -q tests/test_cart.py");
        assert_eq!(s.good.as_deref(), Some("v1.4.0"));
        assert_eq!(s.bad.as_deref(), Some("main"));
        assert_eq!(s.requested_by, "jira:ada@example.com");
        assert!(
            s.dedupe_key.starts_with("jira:PVS-421:"),
            "{}",
            s.dedupe_key
        );
    }

    #[test]
    fn an_adf_description_reads_the_same() {
        let adf = json!({"type": "doc", "version": 1, "content": [
            {"type": "paragraph", "content": [
                {"type": "text", "text": "repository: https://git.example.com/acme/shop"},
                {"type": "hardBreak"},
                {"type": "text", "text": "test: pytest -q"}]},
            {"type": "paragraph", "content": [{"type": "text", "text": "bad: main"}]}
        ]});
        let s = start(read(&issue(&["tracelab"], adf), &settings()));
        assert_eq!(s.repository, "https://git.example.com/acme/shop");
        assert_eq!(s.test, "pytest -q");
        assert_eq!(s.bad.as_deref(), Some("main"));
        assert_eq!(s.good, None);
    }

    #[test]
    fn configured_fields_win_over_the_template() {
        let mut c = settings();
        c.fields = FieldSettings {
            repository: "customfield_10050".into(),
            ..FieldSettings::default()
        };
        let s = start(read(&issue(&["tracelab"], json!(TEMPLATE)), &c));
        assert_eq!(s.repository, "https://git.example.com/acme/field");
        assert_eq!(s.test, "pytest -q tests/test_cart.py");
    }

    #[test]
    fn the_same_inputs_give_the_same_key_and_others_another() {
        let a = start(read(&issue(&["tracelab"], json!(TEMPLATE)), &settings()));
        let mut edited = issue(&["tracelab", "backend"], json!(TEMPLATE));
        edited["webhookEvent"] = json!("jira:issue_updated");
        let b = start(read(&edited, &settings()));
        assert_eq!(a.dedupe_key, b.dedupe_key);
        let other = start(read(
            &issue(&["tracelab"], json!(TEMPLATE.replace("main", "release"))),
            &settings(),
        ));
        assert_ne!(a.dedupe_key, other.dedupe_key);
    }

    #[test]
    fn what_is_ignored_and_what_is_refused() {
        let ignored = |v: Result<Intake, String>| match v {
            Ok(Intake::Ignored(why)) => why,
            other => panic!("{other:?}"),
        };
        let why = ignored(read(&issue(&["backend"], json!(TEMPLATE)), &settings()));
        assert!(why.contains("label \"tracelab\""), "{why}");
        let mut comment = issue(&["tracelab"], json!(TEMPLATE));
        comment["webhookEvent"] = json!("comment_created");
        assert!(ignored(read(&comment, &settings())).contains("comment_created"));
        let mut c = settings();
        c.projects.insert("OPS".into(), ProjectSettings::default());
        assert!(ignored(read(&issue(&["tracelab"], json!(TEMPLATE)), &c)).contains("project PVS"));

        let refused = |v: Result<Intake, String>| v.expect_err("refused");
        assert!(refused(read(&json!({"issue": {}}), &settings())).contains("webhookEvent"));
        let mut no_key = issue(&["tracelab"], json!(TEMPLATE));
        no_key["issue"]["key"] = json!("../../etc");
        assert!(refused(read(&no_key, &settings())).contains("not a Jira issue key"));
        let why = refused(read(
            &issue(&["tracelab"], json!("test: pytest -q")),
            &settings(),
        ));
        assert!(why.contains("names no repository"), "{why}");
        let why = refused(read(
            &issue(&["tracelab"], json!("repo: https://x.example/a")),
            &settings(),
        ));
        assert!(why.contains("names no test"), "{why}");
    }

    #[test]
    fn only_labelled_issues_are_told_why() {
        let c = settings();
        let p = issue(&["tracelab"], json!("test: pytest -q"));
        assert_eq!(labelled_issue(&p, &c).as_deref(), Some("PVS-421"));
        assert_eq!(labelled_issue(&issue(&["web"], json!("")), &c), None);
        assert_eq!(labelled_issue(&json!({"issue": {"key": "x"}}), &c), None);
    }

    #[test]
    fn a_project_default_repository_fills_in() {
        let mut c = settings();
        c.projects.insert(
            "PVS".into(),
            ProjectSettings {
                repository: "https://git.example.com/acme/default".into(),
            },
        );
        let s = start(read(&issue(&["tracelab"], json!("test: pytest -q")), &c));
        assert_eq!(s.repository, "https://git.example.com/acme/default");
    }
}
