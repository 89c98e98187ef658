//! The REST API described as OpenAPI 3.1, generated from the handlers'
//! `#[utoipa::path]` attributes: `rest::table` registers every route through
//! `utoipa_axum::routes!`, which takes the method and path from the same
//! attribute the document does, so the router and the document cannot
//! disagree. Served at `GET /api/openapi.json` for client generators.
//!
//! Domain values the API returns as they are (the report, hypotheses,
//! experiments) are `object`s here: their contract is the Report JSON of
//! docs/investigation.md. The few domain shapes inside an investigation
//! (transitions, the hand-off) are mirrored in `crate::schema`; a test
//! here checks each mirror against the real type's JSON.

use crate::api::{CreateRequest, InvestigationView};
use crate::pull_request::PullRequestView;
use crate::schema::{
    AuditEntryDoc, ErrorBody, ErrorDetail, HandOffDoc, JiraWebhookAnswer, PullRequestLinkDoc,
    TransitionDoc,
};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "TraceLab investigator API",
        description = "Start investigations, read their diagnoses, review them and open the draft pull request. Every operation but this document needs `Authorization: Bearer TOKEN`; roles: viewer reads, reviewer reviews and opens pull requests, admin starts investigations too (see docs/review.md).",
    ),
    components(schemas(
        CreateRequest,
        InvestigationView,
        PullRequestView,
        ErrorBody,
        ErrorDetail,
        TransitionDoc,
        HandOffDoc,
        AuditEntryDoc,
        PullRequestLinkDoc,
        JiraWebhookAnswer
    )),
    modifiers(&BearerAuth),
    tags(
        (name = "investigations", description = "Investigations and their review"),
        (name = "jira", description = "Jira's issue webhook: a labelled issue starts an investigation")
    )
)]
pub struct ApiDoc;

/// The security schemes the operations name: `bearer` (API tokens) and
/// `jira_secret` (the Jira intake's shared secret).
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
        components.add_security_scheme(
            "jira_secret",
            SecurityScheme::ApiKey(ApiKey::Query(ApiKeyValue::new("secret"))),
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use std::collections::BTreeSet;

    fn document() -> Value {
        serde_json::to_value(crate::rest::openapi()).unwrap()
    }

    /// `(method, path, operationId)` of every operation in the document.
    fn operations(doc: &Value) -> BTreeSet<(String, String, String)> {
        let mut ops = BTreeSet::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                ops.insert((
                    method.clone(),
                    path.clone(),
                    op["operationId"].as_str().unwrap().to_string(),
                ));
            }
        }
        ops
    }

    /// The handler names inside every `routes!(…)` of rest.rs: what the router serves.
    fn registered(source: &str) -> BTreeSet<String> {
        source
            .split("routes!(")
            .skip(1)
            .flat_map(|rest| rest[..rest.find(')').unwrap()].split(','))
            .map(|name| name.trim().to_string())
            .filter(|name| !name.is_empty())
            .collect()
    }

    /// The functions rest.rs annotates with `#[utoipa::path]`.
    fn annotated(source: &str) -> BTreeSet<String> {
        source
            .split("#[utoipa::path(")
            .skip(1)
            .map(|rest| {
                let f = &rest[rest.find("async fn ").unwrap() + "async fn ".len()..];
                f[..f.find('(').unwrap()].to_string()
            })
            .collect()
    }

    #[test]
    fn every_served_route_is_documented_and_every_documented_one_served() {
        let rest = include_str!("rest.rs");
        let doc = document();
        let ops = operations(&doc);
        let ids: BTreeSet<String> = ops.iter().map(|(_, _, id)| id.clone()).collect();
        // The router is built only from `routes!`, each from its handler's
        // attribute (method and path): nothing bypasses the table.
        assert!(
            !rest.contains(".route("),
            "a route registered outside routes!"
        );
        for host in [include_str!("lib.rs"), include_str!("dashboard.rs")] {
            assert!(
                !host.contains(".route(\"/api"),
                "an /api route outside rest.rs"
            );
        }
        assert_eq!(registered(rest), ids, "served ≠ documented");
        assert_eq!(annotated(rest), ids, "annotated ≠ documented");
        let expected: BTreeSet<(String, String, String)> = [
            ("post", "/api/investigations", "create"),
            ("get", "/api/investigations", "list"),
            ("get", "/api/investigations/{id}", "show"),
            ("get", "/api/investigations/{id}/hypotheses", "hypotheses"),
            ("post", "/api/investigations/{id}/approve", "approve"),
            ("post", "/api/investigations/{id}/reject", "reject"),
            (
                "post",
                "/api/investigations/{id}/pull-request",
                "pull_request",
            ),
            ("get", "/api/hypotheses/{id}/evidence", "evidence"),
            ("get", "/api/openapi.json", "openapi_json"),
            ("post", "/v1/jira/webhook", "jira_webhook"),
        ]
        .into_iter()
        .map(|(m, p, i)| (m.to_string(), p.to_string(), i.to_string()))
        .collect();
        assert_eq!(ops, expected);
    }

    #[test]
    fn every_operation_but_the_document_needs_a_token_and_says_how_it_fails() {
        let doc = document();
        assert_eq!(doc["openapi"], "3.1.0");
        assert_eq!(
            doc["components"]["securitySchemes"]["bearer"],
            json!({"type": "http", "scheme": "bearer"})
        );
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                if path == "/v1/jira/webhook" {
                    // Jira holds no token: the shared secret instead.
                    assert_eq!(op["security"], json!([{"jira_secret": []}]));
                    for status in ["200", "201", "202", "400", "401", "404", "413", "503"] {
                        assert!(op["responses"].get(status).is_some(), "jira {status}");
                    }
                    continue;
                }
                let public = path == "/api/openapi.json";
                assert_eq!(
                    op["security"] == json!([{"bearer": []}]),
                    !public,
                    "{method} {path}"
                );
                for status in ["401", "403"] {
                    assert_eq!(
                        op["responses"].get(status).is_some(),
                        !public,
                        "{method} {path} {status}"
                    );
                }
                if path.contains("{id}") {
                    assert!(op["responses"].get("404").is_some(), "{method} {path}");
                }
            }
        }
        let pr = &doc["paths"]["/api/investigations/{id}/pull-request"]["post"]["responses"];
        for status in ["200", "400", "404", "409", "503"] {
            assert!(pr.get(status).is_some(), "pull-request {status}");
        }
    }

    fn properties(doc: &Value, schema: &str) -> BTreeSet<String> {
        let s = &doc["components"]["schemas"][schema];
        let parts: Vec<&Value> = match s.get("allOf") {
            Some(all) => all.as_array().unwrap().iter().collect(),
            None => vec![s],
        };
        parts
            .into_iter()
            .flat_map(|part| match part.get("$ref").and_then(Value::as_str) {
                Some(r) => properties(doc, r.rsplit('/').next().unwrap()),
                None => part["properties"]
                    .as_object()
                    .map(|p| p.keys().cloned().collect())
                    .unwrap_or_default(),
            })
            .collect()
    }

    fn keys(v: &Value) -> BTreeSet<String> {
        v.as_object().unwrap().keys().cloned().collect()
    }

    /// The mirrored domain shapes and the views say what the real types
    /// serialize to, key for key.
    #[test]
    fn the_schemas_match_what_the_api_serializes() {
        use tracelab_domain::audit::{AuditAction, AuditEntry, HandOff, PullRequestLink};
        use tracelab_domain::state::{InvestigationState, Transition};
        let at = time::OffsetDateTime::UNIX_EPOCH;
        let view = crate::api::InvestigationView {
            id: "i".into(),
            state: "APPROVED".into(),
            verdict: Some("regression".into()),
            repository: "r".into(),
            test_command: "t".into(),
            culprit: Some("c".into()),
            created_at: at,
            updated_at: at,
            report: Some(json!({})),
            transitions: vec![Transition {
                from: InvestigationState::WaitingForReview,
                to: InvestigationState::Approved,
                at,
                reason: Some("ok".into()),
            }],
            hand_off: HandOff {
                started_by: Some("ci".into()),
                audit: vec![AuditEntry {
                    action: AuditAction::Approved,
                    actor: "rita".into(),
                    role: "reviewer".into(),
                    reason: None,
                    at,
                }],
                pull_request: Some(PullRequestLink {
                    url: "u".into(),
                    number: 1,
                    host: "github".into(),
                }),
                pull_request_error: None,
            },
        };
        let json = serde_json::to_value(&view).unwrap();
        let doc = document();
        assert_eq!(keys(&json), properties(&doc, "InvestigationView"));
        assert_eq!(
            keys(&json["transitions"][0]),
            properties(&doc, "Transition")
        );
        assert_eq!(keys(&json["audit"][0]), properties(&doc, "AuditEntry"));
        assert_eq!(
            keys(&json["pull_request"]),
            properties(&doc, "PullRequestLink")
        );
        let pr = crate::pull_request::PullRequestView {
            url: "u".into(),
            number: 1,
        };
        assert_eq!(
            keys(&serde_json::to_value(pr).unwrap()),
            properties(&doc, "PullRequestView")
        );
        let request = serde_json::to_value(crate::api::CreateRequest::default()).unwrap();
        assert_eq!(keys(&request), properties(&doc, "CreateRequest"));
    }

    #[tokio::test]
    async fn the_document_is_served_as_json() {
        use axum::response::IntoResponse;
        let res = crate::rest::openapi_json().await.into_response();
        assert_eq!(res.headers()["content-type"], "application/json");
        let body = axum::body::to_bytes(res.into_body(), 1 << 22)
            .await
            .unwrap();
        let served: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(served, document());
    }
}
