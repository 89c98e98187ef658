//! The ingest service in-process against real NATS JetStream and PostgreSQL
//! (`TRACELAB_TEST_NATS`, `TRACELAB_TEST_POSTGRES`): each test runs
//! `serve(settings, listeners, shutdown)` with its own subject prefix, schema
//! and port-0 listeners, talks HTTP, gRPC or JetStream to it, and checks the
//! evidence table, the failure groups and the events.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_client::LogsServiceClient;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message as _;
use serde_json::{Value, json};
use sqlx::{PgPool, Row};
use std::io::Write;
use std::time::Duration;
use tracelab_bus::{Bus, ConsumerSpec, DeadLetter, Message};
use tracelab_ingest::auth::TokenSetting;
use tracelab_proto::events::v1::EvidenceRecorded;

const JUNIT: &str = include_str!("../../../crates/evidence/tests/corpus/junit_pytest.xml");

mod common;

use common::Service;

fn ci_report(commit: &str, branch: &str) -> Value {
    json!({
        "schema": 1,
        "repository": "https://deploy:hunter2@github.com/acme/shop",
        "commit": commit,
        "branch": branch,
        "job": {"provider": "github_actions", "id": "9001/1", "name": "test"},
        "reports": [{"path": "reports/junit.xml", "content": JUNIT}],
        "environment": {"os": "linux", "arch": "x86_64", "env_names": ["CI", "GITHUB_TOKEN", "PATH"]},
        "created_at": 1_715_710_200
    })
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ci_failure_is_stored_grouped_and_announced_once() {
    let Some(s) = Service::start(|_| {}).await else {
        return;
    };
    let body = ci_report("3f2a9c0d", "main").to_string();
    let (status, _, first) = s
        .post("/v1/ci-failures", "application/json", body.clone(), &[])
        .await;
    assert_eq!(status, 202, "{first}");
    let ids: Vec<String> = serde_json::from_value(first["evidence_ids"].clone()).unwrap();
    assert_eq!(
        first["failures"], 2,
        "the JUnit file has two failures: {first}"
    );
    assert_eq!(ids.len(), 2);
    assert_eq!(first["stored"], 2);
    let groups = first["groups"].as_array().unwrap();
    assert!(groups.iter().all(|g| g["observation"] == "new"), "{first}");
    // New on a protected branch: the policy asks for an investigation.
    assert_eq!(groups[0]["decision"]["decision"], "investigate", "{first}");
    let key = groups[0]["key"].as_str().unwrap().to_string();
    assert_eq!(s.evidence_count().await, 2);
    assert_eq!(s.group_count(&key).await, 1);
    let row = sqlx::query(
        "SELECT kind, source, repository, commit_sha, group_key, body FROM evidence WHERE id = $1",
    )
    .bind(&ids[0])
    .fetch_one(&s.pool)
    .await
    .unwrap();
    assert_eq!(row.get::<String, _>("kind"), "ci");
    // No header, no token: the peer address (loopback is not redacted).
    assert_eq!(row.get::<String, _>("source"), "127.0.0.1");
    assert_eq!(
        row.get::<Option<String>, _>("repository").as_deref(),
        Some("https://github.com/acme/shop"),
        "credentials are removed from the repository URL"
    );
    assert_eq!(
        row.get::<Option<String>, _>("commit_sha").as_deref(),
        Some("3f2a9c0d")
    );
    assert_eq!(row.get::<String, _>("group_key"), key);
    let stored: Value = row.get::<sqlx::types::Json<Value>, _>("body").0;
    assert_eq!(stored["kind"], "test_failure", "{stored}");
    assert!(
        stored["test_id"].as_str().unwrap().contains("test_"),
        "{stored}"
    );
    assert_eq!(stored["intake"]["branch"], "main");
    assert_eq!(stored["intake"]["channel"], "http");

    // The client retries the same POST: same ids, nothing stored or counted twice.
    let (status, _, again) = s
        .post("/v1/ci-failures", "application/json", body, &[])
        .await;
    assert_eq!(status, 202, "{again}");
    assert_eq!(again["evidence_ids"], first["evidence_ids"]);
    assert_eq!(again["stored"], 0);
    assert_eq!(again["groups"][0]["observation"], "already_recorded");
    assert_eq!(s.evidence_count().await, 2);
    assert_eq!(
        s.group_count(&key).await,
        1,
        "the retry is not a recurrence"
    );

    // One EvidenceRecorded per failure (the retry's publish was de-duplicated).
    let events = s.events(&s.topology.evidence("ci"), 2).await;
    assert_eq!(events.len(), 2, "{events:?}");
    let recorded = EvidenceRecorded::decode(events[0].payload.as_ref()).unwrap();
    assert_eq!(recorded.evidence_id, ids[0]);
    assert_eq!(events[0].id, format!("{}.recorded", ids[0]));
    assert_eq!(recorded.group_key, key);
    assert_eq!(recorded.commit, "3f2a9c0d");
    let suggested = s.events(&s.topology.evidence("suggested"), 1).await;
    assert_eq!(suggested.len(), 2, "both new groups on main are suggested");

    // A new commit on main: the same groups recur (counted), ids differ.
    let (status, _, next) = s
        .post(
            "/v1/ci-failures",
            "application/json",
            ci_report("77aa01", "main").to_string(),
            &[],
        )
        .await;
    assert_eq!(status, 202, "{next}");
    assert_ne!(next["evidence_ids"], first["evidence_ids"]);
    assert_eq!(next["groups"][0]["observation"], "recurrence");
    assert_eq!(s.group_count(&key).await, 2);
    // Counted for Prometheus (the recorder is per process: other tests in
    // this binary count too, so at least these two).
    let metrics = s
        .client
        .get(format!("{}/metrics", s.http))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let accepted = metrics
        .lines()
        .find(|l| {
            l.starts_with("tracelab_ingest_requests_total{")
                && l.contains("endpoint=\"ci-failures\"")
                && l.contains("outcome=\"accepted\"")
        })
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
    assert!(accepted.is_some_and(|n| n >= 2.0), "{metrics}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_log_lines_are_parsed_and_secrets_never_reach_the_table() {
    let Some(s) = Service::start(|_| {}).await else {
        return;
    };
    let aws = "AKIAQ3EGRT5YEXAMPL3Z";
    let email = "maria.lopez@example.org";
    let traceback = format!(
        "Traceback (most recent call last):\n  File \"/app/checkout/handlers.py\", line 41, in handle\n    return reserve(payload)\n  File \"/app/checkout/domain.py\", line 17, in reserve\n    stock = inventory[sku]\nKeyError: 'sku-{email}'"
    );
    let lines = [
        json!({"level": "info", "msg": "started"}),
        json!({"level": "error", "service": "checkout", "service.version": "3.1.0", "vcs.revision": "9fceb02d0ae5", "msg": format!("reserve failed for {email} with key {aws}"), "exc_info": traceback}),
    ]
    .map(|v| v.to_string())
    .join("\n");
    let (status, _, answer) = s
        .post(
            "/v1/logs",
            "application/x-ndjson",
            lines,
            &[("x-tracelab-source", "billing-prod")],
        )
        .await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["failures"], 1, "{answer}");
    let text = s.evidence_text().await;
    assert!(text.contains("KeyError"), "{text}");
    assert!(text.contains("reserve"), "the frames are stored: {text}");
    // The deployed version stays with the evidence, and its revision is the commit.
    let row =
        sqlx::query("SELECT commit_sha, body->'context'->>'service.version' AS v FROM evidence")
            .fetch_one(&s.pool)
            .await
            .unwrap();
    assert_eq!(
        (
            row.get::<Option<String>, _>("commit_sha"),
            row.get::<Option<String>, _>("v")
        ),
        (Some("9fceb02d0ae5".into()), Some("3.1.0".into())),
        "{text}"
    );
    assert!(
        text.contains("billing-prod"),
        "the source is stored: {text}"
    );
    assert!(!text.contains(aws), "the AWS key leaked: {text}");
    assert!(!text.contains(email), "the email leaked: {text}");
    assert!(!text.contains("maria.lopez"), "the email leaked: {text}");
    let events = s.events(&s.topology.evidence("logs"), 1).await;
    assert_eq!(events.len(), 1);
    let payload = String::from_utf8_lossy(&events[0].payload).to_string();
    assert!(
        !payload.contains(aws) && !payload.contains(email),
        "{payload}"
    );
    s.stop().await;
}

fn otlp_request(marker: &str) -> ExportLogsServiceRequest {
    let kv = |k: &str, v: &str| KeyValue {
        key: k.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v.into())),
        }),
        ..Default::default()
    };
    let stack = format!(
        "Traceback (most recent call last):\n  File \"/srv/api/orders/views.py\", line 30, in create\n    total = price_of(items)\n  File \"/srv/api/orders/pricing.py\", line 12, in price_of\n    return sum(i.price for i in items) / len(items)\nZeroDivisionError: division by zero {marker}"
    );
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(Resource {
                attributes: vec![kv("service.name", "orders-api")],
                ..Default::default()
            }),
            scope_logs: vec![ScopeLogs {
                log_records: vec![LogRecord {
                    time_unix_nano: 1_715_710_200_000_000_000,
                    severity_number: 17,
                    severity_text: "ERROR".into(),
                    body: Some(AnyValue {
                        value: Some(any_value::Value::StringValue(format!(
                            "order failed {marker}"
                        ))),
                    }),
                    attributes: vec![
                        kv("exception.type", "ZeroDivisionError"),
                        kv("exception.message", "division by zero"),
                        kv("exception.stacktrace", &stack),
                    ],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_logs_over_http_protobuf_json_and_grpc() {
    let Some(s) = Service::start(|_| {}).await else {
        return;
    };
    let (status, _, answer) = s
        .post(
            "/v1/logs",
            "application/x-protobuf",
            otlp_request("http").encode_to_vec(),
            &[],
        )
        .await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["failures"], 1, "{answer}");
    let otlp_json = serde_json::to_string(&otlp_request("json")).unwrap();
    let (status, _, answer) = s.post("/v1/logs", "application/json", otlp_json, &[]).await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(
        answer["failures"], 1,
        "OTLP/JSON is told from JSON lines: {answer}"
    );

    let mut client = LogsServiceClient::connect(s.grpc.clone())
        .await
        .expect("connect to the gRPC receiver");
    client
        .export(otlp_request("grpc"))
        .await
        .expect("gRPC export accepted");
    // A retried export stores nothing new.
    client.export(otlp_request("grpc")).await.expect("retry");
    assert_eq!(s.evidence_count().await, 3);
    let text = s.evidence_text().await;
    assert!(text.contains("ZeroDivisionError"), "{text}");
    assert!(
        text.contains("price_of"),
        "frames from exception.stacktrace: {text}"
    );
    assert!(
        text.contains("\"channel\": \"grpc\"") || text.contains("\"channel\":\"grpc\""),
        "{text}"
    );
    let events = s.events(&s.topology.evidence("otlp"), 3).await;
    assert_eq!(events.len(), 3);

    // A damaged protobuf body is a 400 / INVALID_ARGUMENT with the decoder's reason.
    let (status, _, answer) = s
        .post(
            "/v1/logs",
            "application/x-protobuf",
            vec![0xff, 0xff, 0x01],
            &[],
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("OTLP logs protobuf"),
        "{answer}"
    );
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_and_oversized_bodies_are_refused_with_their_answer() {
    let Some(s) = Service::start(|settings| {
        settings.limits.body_bytes = 64 * 1024;
        settings.limits.rate_per_second = 1;
        settings.limits.rate_burst = 3;
    })
    .await
    else {
        return;
    };
    // Oversized, as sent.
    let (status, _, answer) = s
        .post(
            "/v1/logs",
            "application/x-ndjson",
            vec![b'x'; 70 * 1024],
            &[],
        )
        .await;
    assert_eq!(status, 413, "{answer}");
    assert_eq!(answer["error"]["kind"], "too_large");
    // A gzip bomb: 16 MiB of zeros in ~16 KiB; refused after 64 KiB of output.
    let bomb = gzip(&vec![b'0'; 16 << 20]);
    assert!(bomb.len() < 64 * 1024, "{}", bomb.len());
    let (status, _, answer) = s
        .post(
            "/v1/logs",
            "application/x-ndjson",
            bomb,
            &[
                ("content-encoding", "gzip"),
                ("x-tracelab-source", "bomber"),
            ],
        )
        .await;
    assert_eq!(status, 413, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("decompressed"),
        "{answer}"
    );
    // A gzip body within the limit is accepted.
    let line = json!({"level": "error", "msg": "boom", "exc_info": "Traceback (most recent call last):\n  File \"/app/x/y.py\", line 3, in f\n    g()\nValueError: bad"}).to_string();
    let (status, _, answer) = s
        .post(
            "/v1/logs",
            "application/x-ndjson",
            gzip(line.as_bytes()),
            &[
                ("content-encoding", "gzip"),
                ("x-tracelab-source", "zipper"),
            ],
        )
        .await;
    assert_eq!(status, 202, "{answer}");
    // Malformed JSON: 400 with serde's reason.
    let (status, _, answer) = s
        .post(
            "/v1/ci-failures",
            "application/json",
            "{\"schema\": 1, \"commit\": ",
            &[("x-tracelab-source", "broken")],
        )
        .await;
    assert_eq!(status, 400, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("CI failure report") && message.contains("EOF"),
        "{message}"
    );
    let (status, _, answer) = s
        .post(
            "/v1/logs",
            "image/png",
            "x",
            &[("x-tracelab-source", "png")],
        )
        .await;
    assert_eq!(status, 415, "{answer}");
    // A tiny quota (burst 3, 1/s): six requests at once. The burst admits
    // three; a token refills per second while they arrive, so some
    // are answered 429 with Retry-After (a very slow machine spreading the
    // six over two seconds refills two).
    let answers = futures::future::join_all((0..6).map(|_| {
        s.post(
            "/v1/logs",
            "application/x-ndjson",
            line.clone(),
            &[("x-tracelab-source", "chatty")],
        )
    }))
    .await;
    let statuses: Vec<u16> = answers.iter().map(|(status, _, _)| *status).collect();
    let accepted = statuses.iter().filter(|s| **s == 202).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert!(
        (3..=5).contains(&accepted) && accepted + refused == 6,
        "{statuses:?}"
    );
    let retry_after = answers
        .iter()
        .find(|(status, _, _)| *status == 429)
        .and_then(|(_, headers, _)| headers.get("retry-after"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    assert_eq!(retry_after.as_deref(), Some("1"));
    // Another source is not affected.
    let (status, _, _) = s
        .post(
            "/v1/logs",
            "application/x-ndjson",
            line,
            &[("x-tracelab-source", "quiet")],
        )
        .await;
    assert_eq!(status, 202);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_required_when_configured() {
    let token = "ci-token-0123456789abcdef";
    let Some(s) = Service::start(|settings| {
        settings.tokens = vec![TokenSetting {
            name: "github-actions".into(),
            token: token.into(),
        }];
    })
    .await
    else {
        return;
    };
    let body = ci_report("abc123", "feature/x").to_string();
    let (status, headers, answer) = s
        .post("/v1/ci-failures", "application/json", body.clone(), &[])
        .await;
    assert_eq!(status, 401, "{answer}");
    assert_eq!(headers.get("www-authenticate").unwrap(), "Bearer");
    let (status, _, _) = s
        .post(
            "/v1/ci-failures",
            "application/json",
            body.clone(),
            &[("authorization", "Bearer wrong-token-0123456789")],
        )
        .await;
    assert_eq!(status, 401);
    assert_eq!(s.evidence_count().await, 0);
    let bearer = format!("Bearer {token}");
    let (status, _, answer) = s
        .post(
            "/v1/ci-failures",
            "application/json",
            body,
            &[("authorization", &bearer)],
        )
        .await;
    assert_eq!(status, 202, "{answer}");
    // Not a protected branch and new: recorded, not investigated.
    assert_eq!(
        answer["groups"][0]["decision"]["decision"], "skip",
        "{answer}"
    );
    let source: String = sqlx::query("SELECT DISTINCT source FROM evidence")
        .fetch_one(&s.pool)
        .await
        .unwrap()
        .get("source");
    assert_eq!(source, "github-actions");
    let mut grpc = LogsServiceClient::connect(s.grpc.clone()).await.unwrap();
    let refused = grpc.export(otlp_request("no-token")).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_intake_is_processed_and_poison_is_dead_lettered() {
    let Some(s) = Service::start(|_| {}).await else {
        return;
    };
    let report = ci_report("feedbeef", "main").to_string();
    s.bus
        .publish(
            Message::new(s.topology.intake("ci-failures"), "ci-1", report.clone())
                .with_header("X-TraceLab-Source", "jenkins"),
        )
        .await
        .unwrap();
    let line = json!({"level": "error", "msg": "boom", "exc_info": "Traceback (most recent call last):\n  File \"/app/x/y.py\", line 3, in f\n    g()\nValueError: bad"}).to_string();
    s.bus
        .publish(
            Message::new(s.topology.intake("logs"), "logs-1", gzip(line.as_bytes()))
                .with_header("Content-Encoding", "gzip"),
        )
        .await
        .unwrap();
    s.bus
        .publish(Message::new(
            s.topology.intake("ci-failures"),
            "poison-1",
            &b"{\"schema\": 1, \"reports\": 42}"[..],
        ))
        .await
        .unwrap();
    let mut dlq = s
        .bus
        .consumer(
            ConsumerSpec::new(s.topology.dead_letter_stream(), "test-dlq")
                .filter(s.topology.dead_letters()),
        )
        .await
        .unwrap();
    let letter = dlq
        .next(Duration::from_secs(30))
        .await
        .unwrap()
        .expect("the poison message is dead-lettered");
    let meta = DeadLetter::read(&letter.message).expect("dead-letter headers");
    assert_eq!(meta.original_id, "poison-1");
    assert_eq!(meta.original_subject, s.topology.intake("ci-failures"));
    assert!(
        meta.error.contains("CI failure report") && meta.error.contains("invalid type"),
        "{}",
        meta.error
    );
    letter.ack().await.unwrap();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while s.evidence_count().await < 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "intake not processed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let sources: Vec<String> = sqlx::query("SELECT source FROM evidence ORDER BY source")
        .fetch_all(&s.pool)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get("source"))
        .collect();
    assert_eq!(sources, ["jenkins", "jenkins", "jetstream"]);
    // The same report published again (a new message id): same evidence ids, not stored twice.
    s.bus
        .publish(
            Message::new(s.topology.intake("ci-failures"), "ci-2", report)
                .with_header("X-TraceLab-Source", "jenkins"),
        )
        .await
        .unwrap();
    let events = s.events(&s.topology.evidence("ci"), 2).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(s.evidence_count().await, 3);
    assert_eq!(events.len(), 2, "{events:?}");
    s.stop().await;
}

/// A publisher faster than its rate quota is slowed down, not dead-lettered:
/// the intake consumer waits for admission while progress-acking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jetstream_intake_over_its_rate_waits_instead_of_dead_lettering() {
    let Some(s) = Service::start(|settings| {
        settings.limits.rate_per_second = 1;
        settings.limits.rate_burst = 2;
        settings.max_deliveries = 1;
        // Progress acks come every third of the ack wait: 6 s tolerates a
        // 4 s stall, and the last of 10 reports at 1/s waits longer than that.
        settings.ack_wait_seconds = 6;
    })
    .await
    else {
        return;
    };
    let reports = 10;
    for i in 0..reports {
        let report = ci_report(&format!("c0ffee{i:02}"), "main").to_string();
        s.bus
            .publish(Message::new(
                s.topology.intake("ci-failures"),
                format!("burst-{i}"),
                report,
            ))
            .await
            .unwrap();
    }
    // 10 reports at 1 per second after a burst of 2: about 8 s of waiting,
    // more than the ack wait, with a single delivery allowed.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while s.evidence_count().await < reports {
        assert!(
            tokio::time::Instant::now() < deadline,
            "only {} of {reports} intake messages stored",
            s.evidence_count().await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut dlq = s
        .bus
        .consumer(
            ConsumerSpec::new(s.topology.dead_letter_stream(), "test-dlq-rate")
                .filter(s.topology.dead_letters()),
        )
        .await
        .unwrap();
    assert!(
        dlq.next(Duration::from_secs(1)).await.unwrap().is_none(),
        "nothing is dead-lettered for arriving early"
    );
    s.stop().await;
}

/// Every string in a JSON value (keys too), so an escaped secret (a PEM key's
/// newlines, a quote) is compared as the text it is.
fn strings_of(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Array(items) => items.iter().for_each(|i| strings_of(i, out)),
        Value::Object(map) => map.iter().for_each(|(k, i)| {
            out.push_str(k);
            out.push('\n');
            strings_of(i, out);
        }),
        other => {
            out.push_str(&other.to_string());
            out.push('\n');
        }
    }
}

async fn table_strings(pool: &PgPool, query: &'static str) -> String {
    let rows = sqlx::query(query)
        .fetch_all(pool)
        .await
        .expect("read table");
    let mut out = String::new();
    for r in rows {
        let row: Value = serde_json::from_str(&r.get::<String, _>("t")).unwrap();
        strings_of(&row, &mut out);
        // JSONB columns arrive as nested JSON; text columns holding JSON are parsed too.
        if let Some(body) = row.get("body").and_then(Value::as_str)
            && let Ok(inner) = serde_json::from_str::<Value>(body)
        {
            strings_of(&inner, &mut out);
        }
    }
    out
}

/// The redaction corpus (117 planted values of 20 kinds) through the
/// service: as JSON log lines with tracebacks and as a CI report's log. No
/// planted value may reach the evidence table, the failure groups or the
/// published events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_planted_secret_reaches_the_tables_or_the_events() {
    let Some(s) = Service::start(|_| {}).await else {
        return;
    };
    let corpus = tracelab_testkit::secrets::planted();
    assert!(corpus.len() >= 100);
    let lines: Vec<String> = corpus
        .iter()
        .enumerate()
        .map(|(i, (_, value, ctx))| {
            let line = ctx.replace("{}", value);
            json!({
                "level": "error",
                "service": "payments",
                "msg": line,
                "exc_info": format!(
                    "Traceback (most recent call last):\n  File \"/app/payments/step{i}.py\", line 9, in run_{i}\n    charge()\nValueError: {line}"
                ),
            })
            .to_string()
        })
        .collect();
    let (status, _, answer) = s
        .post("/v1/logs", "application/x-ndjson", lines.join("\n"), &[])
        .await;
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["failures"], corpus.len(), "{answer}");

    let log: String = corpus
        .iter()
        .enumerate()
        .map(|(i, (_, value, ctx))| {
            format!(
                "Traceback (most recent call last):\n  File \"/home/runner/work/shop/shop/jobs/task{i}.py\", line 3, in task_{i}\n    run()\nRuntimeError: {}\n",
                ctx.replace("{}", value)
            )
        })
        .collect();
    let mut report = ci_report("5eed5eed", "main");
    report["reports"] = json!([]);
    report["log"] = json!({"path": "ci.log", "content": log, "truncated_bytes": 0});
    let (status, _, answer) = s
        .post(
            "/v1/ci-failures",
            "application/json",
            report.to_string(),
            &[],
        )
        .await;
    assert_eq!(status, 202, "{answer}");
    assert!(
        answer["failures"].as_u64().unwrap() >= corpus.len() as u64 / 2,
        "{answer}"
    );

    let mut stored =
        table_strings(&s.pool, "SELECT row_to_json(t)::text AS t FROM evidence t").await;
    stored.push_str(
        &table_strings(
            &s.pool,
            "SELECT row_to_json(t)::text AS t FROM failure_groups t",
        )
        .await,
    );
    let stored_rows = s.evidence_count().await;
    let mut published = String::new();
    for kind in ["logs", "ci"] {
        for event in s.events(&s.topology.evidence(kind), 1).await {
            let e = EvidenceRecorded::decode(event.payload.as_ref()).unwrap();
            published.push_str(&format!("{} {} {}\n", e.title, e.source, e.repository));
            strings_of(
                &serde_json::from_slice(&e.failure_json).unwrap(),
                &mut published,
            );
        }
    }
    let mut leaks = Vec::new();
    for (kind, value, _) in &corpus {
        for secret in tracelab_testkit::secrets::secrets_of(kind, value) {
            if stored.contains(&secret) {
                leaks.push(format!("{kind} in the tables: {secret:?}"));
            }
            if published.contains(&secret) {
                leaks.push(format!("{kind} in the events: {secret:?}"));
            }
        }
    }
    assert!(stored.contains("ValueError"), "the failures are stored");
    // The values were there: stored as their pseudonyms, which still correlate.
    for pseudonym in ["<email:", "<card:", "<jwt:"] {
        assert!(stored.contains(pseudonym), "no {pseudonym}…> stored");
    }
    assert!(stored_rows >= corpus.len() as i64);
    assert!(
        leaks.is_empty(),
        "{} leaks:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
    s.stop().await;
}

/// Room for a body is reserved before it is read: while one large upload
/// is still arriving, another request that would not fit is told to retry
/// (429 Busy with Retry-After) rather than buffered; once the first upload
/// ends, requests are admitted again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_are_admitted_before_their_bodies_are_buffered() {
    use tokio::io::AsyncWriteExt;
    let Some(s) = Service::start(|settings| {
        settings.limits.body_bytes = 1_000_000;
        settings.limits.admission_bytes = 1_000_000;
    })
    .await
    else {
        return;
    };
    // A slow client: declares the largest body and sends its first bytes
    // only. (Should one of our own requests be in flight when its headers
    // arrive, the slow upload is the one refused: then it tries again.)
    let addr = s.http.trim_start_matches("http://").to_string();
    let body = ci_report("0123456789abcdef0123456789abcdef01234567", "main").to_string();
    let mut refused = None;
    let mut slow = None;
    for _attempt in 0..5 {
        let mut upload = tokio::net::TcpStream::connect(&addr).await.unwrap();
        upload
            .write_all(
                format!(
                    "POST /v1/logs HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/x-ndjson\r\ncontent-length: 1000000\r\n\r\n{{\"msg\": \"first"
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        upload.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let (status, headers, answer) = s
            .post("/v1/ci-failures", "application/json", body.clone(), &[])
            .await;
        if status == 429 {
            refused = Some((headers, answer));
            slow = Some(upload);
            break;
        }
        assert_eq!(status, 202, "{answer}");
    }
    let (headers, answer) =
        refused.expect("a request that does not fit beside the upload is refused");
    assert!(headers.contains_key("retry-after"), "{headers:?}");
    assert!(answer.to_string().contains("busy"), "{answer}");
    // The upload gives up: its room is free again.
    drop(slow);
    let mut admitted = false;
    for _ in 0..50 {
        let (status, _, _) = s
            .post("/v1/ci-failures", "application/json", body.clone(), &[])
            .await;
        if status == 202 {
            admitted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(admitted, "requests are admitted once the upload is gone");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_are_listed_for_viewers_filtered_and_paged() {
    let intake = "ci-token-0123456789abcdef";
    let viewer = "viewer-token-0123456789abcdef";
    let Some(s) = Service::start(|settings| {
        settings.tokens = vec![TokenSetting {
            name: "github-actions".into(),
            token: intake.into(),
        }];
        settings.viewer_tokens = vec![TokenSetting {
            name: "dashboard".into(),
            token: viewer.into(),
        }];
    })
    .await
    else {
        return;
    };
    let send = format!("Bearer {intake}");
    let mut other = ci_report("def456", "main");
    other["repository"] = json!("acme/billing");
    other["environment"]["locale"] = json!("de_DE.UTF-8");
    other["environment"]["timezone"] = json!("Europe/Berlin");
    other["environment"]["container_image"] = json!("python:3.12-slim@sha256:0123abcd");
    other["environment"]["lockfiles"] = json!({"poetry.lock": "sha256:feed"});
    for body in [ci_report("abc123", "feature/x"), other] {
        let (status, _, answer) = s
            .post(
                "/v1/ci-failures",
                "application/json",
                body.to_string(),
                &[("authorization", &send)],
            )
            .await;
        assert_eq!(status, 202, "{answer}");
    }
    let get = |query: &str, token: Option<&str>| {
        let mut r = s.client.get(format!("{}/v1/groups{query}", s.http));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        async move {
            let response = r.send().await.expect("the service answers");
            let status = response.status().as_u16();
            (
                status,
                response.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    // The environment fingerprint is kept on each evidence row, and the
    // latest on its group.
    let rows = sqlx::query(
        "SELECT e.environment AS e, g.environment AS g FROM evidence e \
         JOIN failure_groups g USING (group_key) WHERE e.repository = 'acme/billing'",
    )
    .fetch_all(&s.pool)
    .await
    .unwrap();
    assert!(!rows.is_empty());
    for r in &rows {
        let e: Value = r.get::<sqlx::types::Json<Value>, _>("e").0;
        assert_eq!(
            (
                &e["os"],
                &e["locale"],
                &e["timezone"],
                &e["container_image"]
            ),
            (
                &json!("linux"),
                &json!("de_DE.UTF-8"),
                &json!("Europe/Berlin"),
                &json!("python:3.12-slim@sha256:0123abcd")
            ),
            "{e}"
        );
        assert_eq!(e["lockfiles"]["poetry.lock"], "sha256:feed", "{e}");
        assert_eq!(
            r.get::<sqlx::types::Json<Value>, _>("g").0,
            e,
            "the group's latest"
        );
    }
    // Only viewers read; an intake token sends and cannot read.
    assert_eq!(get("", None).await.0, 401);
    assert_eq!(get("", Some(intake)).await.0, 401);
    let (status, all) = get("?limit=500", Some(viewer)).await;
    assert_eq!(status, 200, "{all}");
    let groups = all["groups"].as_array().expect("groups").clone();
    assert!(groups.len() >= 2, "{all}");
    assert!(all["next"].is_null(), "one page holds them all: {all}");
    let stored: i64 = sqlx::query("SELECT count(*) AS n FROM failure_groups")
        .fetch_one(&s.pool)
        .await
        .unwrap()
        .get("n");
    assert_eq!(groups.len() as i64, stored, "every stored group is listed");
    // Each report's repository (credentials dropped) is kept on its groups
    // and filters them: both reports hold the same failures.
    for g in &groups {
        assert_eq!(
            g["repositories"],
            json!(["acme/billing", "https://github.com/acme/shop"]),
            "{g}"
        );
    }
    let (_, only) = get("?repository=acme/billing&limit=500", Some(viewer)).await;
    assert_eq!(
        only["groups"].as_array().unwrap().len(),
        groups.len(),
        "{only}"
    );
    let (_, none) = get("?repository=acme/other", Some(viewer)).await;
    assert_eq!(none["groups"], json!([]), "{none}");
    // One at a time, the cursor walks every group once, in the same order.
    let mut walked = Vec::new();
    let mut query = "?limit=1".to_owned();
    loop {
        let (status, page) = get(&query, Some(viewer)).await;
        assert_eq!(status, 200, "{page}");
        assert_eq!(page["groups"].as_array().unwrap().len(), 1, "{page}");
        walked.push(page["groups"][0]["key"].clone());
        match page["next"].as_str() {
            Some(next) => {
                let encoded: String = next
                    .bytes()
                    .map(|b| match b {
                        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                            (b as char).to_string()
                        }
                        _ => format!("%{b:02X}"),
                    })
                    .collect();
                query = format!("?limit=1&cursor={encoded}");
            }
            None => break,
        }
        assert!(walked.len() <= groups.len(), "the cursor never ends");
    }
    let keys: Vec<Value> = groups.iter().map(|g| g["key"].clone()).collect();
    assert_eq!(walked, keys);
    // Filters on state, language and time.
    let (_, resolved) = get("?state=resolved", Some(viewer)).await;
    assert_eq!(resolved["groups"], json!([]), "{resolved}");
    let (_, open) = get("?state=open&language=python&limit=500", Some(viewer)).await;
    assert_eq!(
        open["groups"].as_array().unwrap().len(),
        groups.len(),
        "{open}"
    );
    let (_, future) = get("?since=99999999999", Some(viewer)).await;
    assert_eq!(future["groups"], json!([]), "{future}");
    // Bad parameters are answered, each with what is wrong.
    for bad in [
        "?limit=0",
        "?limit=501",
        "?state=closed",
        "?language=cobol",
        "?cursor=nonsense",
        "?since=yesterday",
        "?colour=red",
    ] {
        let (status, answer) = get(bad, Some(viewer)).await;
        assert_eq!(status, 400, "{bad}: {answer}");
        assert!(
            answer["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{bad}: {answer}"
        );
    }
    s.stop().await;
}
