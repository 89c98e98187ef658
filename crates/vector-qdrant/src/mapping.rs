//! Pure translation between the port's types and Qdrant's: payloads,
//! filters, error kinds, and the port's tie rule (equal scores ordered by
//! id), which Qdrant does not promise.

use qdrant_client::QdrantError;
use qdrant_client::qdrant::{Condition, Filter as QFilter, ScoredPoint, point_id::PointIdOptions};
use tonic::Code;
use tracelab_domain::vectors::{Filter, Hit, Payload};
use tracelab_domain::{Error, ErrorKind};

/// Payload keys. `path` carries a keyword index with prefix matching, so a
/// path prefix filter runs on the server.
pub(crate) const PATH: &str = "path";
pub(crate) const LANGUAGE: &str = "language";
pub(crate) const KIND: &str = "kind";

/// The language's name as the port serialises it (`python`, `rust`, ...).
fn language_name(l: tracelab_domain::Language) -> String {
    match serde_json::to_value(l) {
        Ok(serde_json::Value::String(s)) => s,
        _ => format!("{l:?}").to_lowercase(),
    }
}

pub(crate) fn payload(p: &Payload) -> qdrant_client::Payload {
    let mut out = qdrant_client::Payload::new();
    out.insert(PATH, p.path.clone());
    if let Some(l) = p.language {
        out.insert(LANGUAGE, language_name(l));
    }
    out.insert(KIND, p.kind.clone());
    out
}

/// The port's filter as a Qdrant filter; `None` when it matches everything.
pub(crate) fn filter(f: &Filter) -> Option<QFilter> {
    let mut must = Vec::new();
    if !f.languages.is_empty() {
        let names: Vec<String> = f.languages.iter().map(|&l| language_name(l)).collect();
        must.push(Condition::matches(LANGUAGE, names));
    }
    if let Some(prefix) = &f.path_prefix {
        must.push(Condition::matches_prefix(PATH, prefix.clone()));
    }
    if let Some(kind) = &f.kind {
        must.push(Condition::matches(KIND, kind.clone()));
    }
    (!must.is_empty()).then(|| QFilter::must(must))
}

/// A scored point as a hit; points with non-numeric ids (not written by
/// this adapter) are skipped.
pub(crate) fn hit(p: &ScoredPoint) -> Option<Hit> {
    match p.id.as_ref()?.point_id_options.as_ref()? {
        PointIdOptions::Num(id) => Some(Hit {
            id: *id,
            score: p.score,
        }),
        PointIdOptions::Uuid(_) => None,
    }
}

/// Orders hits best first, ties by id, and cuts to `k`. Returns `None` when
/// the cut may be wrong: the page is full (`fetched == page`) and the score
/// at the cut also occurs at the page's end, so an equal-scored point with a
/// smaller id may not have been fetched. The caller then fetches more.
pub(crate) fn rank(mut hits: Vec<Hit>, k: usize, page: usize) -> Option<Vec<Hit>> {
    let fetched = hits.len();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
    if fetched >= page && k > 0 && fetched > 0 {
        let last = hits[fetched - 1].score;
        let at_cut = hits[k.min(fetched) - 1].score;
        if last == at_cut {
            return None;
        }
    }
    hits.truncate(k);
    Some(hits)
}

/// Qdrant's errors in the house's closed set of kinds.
pub(crate) fn error(context: &str, e: QdrantError) -> Error {
    let kind = match &e {
        QdrantError::ResponseError { status } => match status.code() {
            Code::InvalidArgument | Code::FailedPrecondition => ErrorKind::InvalidArgument,
            Code::NotFound => ErrorKind::NotFound,
            Code::AlreadyExists | Code::Aborted => ErrorKind::Conflict,
            Code::DeadlineExceeded => ErrorKind::Timeout,
            Code::Unavailable | Code::ResourceExhausted | Code::Cancelled => ErrorKind::Unavailable,
            // qdrant-client reports a failed connection as `internal`
            // ("Failed to connect to …", channel_pool.rs): the server is
            // unreachable, not broken.
            Code::Internal if status.message().starts_with("Failed to connect") => {
                ErrorKind::Unavailable
            }
            _ => ErrorKind::Internal,
        },
        QdrantError::ResourceExhaustedError { .. } => ErrorKind::Unavailable,
        QdrantError::InvalidUri(_) => ErrorKind::InvalidArgument,
        _ => ErrorKind::Internal,
    };
    let message = format!("vector store: {context}: {e}");
    Error::new(kind, message).with_source(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qdrant_client::qdrant::{condition::ConditionOneOf, r#match::MatchValue};
    use tracelab_domain::Language;

    fn h(id: u64, score: f32) -> Hit {
        Hit { id, score }
    }

    fn ids(v: &[Hit]) -> Vec<u64> {
        v.iter().map(|h| h.id).collect()
    }

    #[test]
    fn ranks_ties_by_id_and_asks_for_more_when_the_cut_is_a_tie() {
        // Not a full page: everything was fetched, ties ordered by id.
        let r = rank(vec![h(9, 0.5), h(3, 0.9), h(5, 0.5)], 2, 10).unwrap();
        assert_eq!(ids(&r), vec![3, 5]);
        // Full page whose last score equals the score at the cut: unsafe.
        assert!(rank(vec![h(9, 0.5), h(3, 0.9), h(5, 0.5)], 2, 3).is_none());
        // Full page, but the cut is above the page's lowest score: safe.
        let r = rank(vec![h(9, 0.4), h(3, 0.9), h(5, 0.5)], 2, 3).unwrap();
        assert_eq!(ids(&r), vec![3, 5]);
        assert!(rank(Vec::new(), 3, 3).unwrap().is_empty());
        assert!(rank(vec![h(1, 0.1)], 0, 1).unwrap().is_empty());
    }

    fn field_values(f: &QFilter) -> Vec<(String, MatchValue)> {
        f.must
            .iter()
            .map(|c| match c.condition_one_of.as_ref().unwrap() {
                ConditionOneOf::Field(fc) => (
                    fc.key.clone(),
                    fc.r#match.clone().unwrap().match_value.unwrap(),
                ),
                other => panic!("unexpected condition {other:?}"),
            })
            .collect()
    }

    #[test]
    fn filters_map_to_must_conditions() {
        assert!(filter(&Filter::default()).is_none());
        let f = filter(&Filter {
            languages: vec![Language::Python, Language::Typescript],
            path_prefix: Some("src/a".into()),
            kind: Some("symbol".into()),
        })
        .unwrap();
        let got = field_values(&f);
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].0, LANGUAGE);
        match &got[0].1 {
            MatchValue::Keywords(k) => assert_eq!(k.strings, vec!["python", "typescript"]),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            got[1],
            (PATH.to_string(), MatchValue::Prefix("src/a".into()))
        );
        assert_eq!(
            got[2],
            (KIND.to_string(), MatchValue::Keyword("symbol".into()))
        );
    }

    #[test]
    fn payload_carries_what_filters_read() {
        let p = payload(&Payload {
            path: "pkg/a.go".into(),
            language: Some(Language::Go),
            kind: "commit".into(),
        });
        let json: serde_json::Value = p.into();
        assert_eq!(
            json,
            serde_json::json!({"path": "pkg/a.go", "language": "go", "kind": "commit"})
        );
        let no_lang: serde_json::Value = payload(&Payload::default()).into();
        assert!(no_lang.get(LANGUAGE).is_none(), "no language, no key");
    }

    #[test]
    fn errors_keep_their_kind() {
        let status = |code| QdrantError::ResponseError {
            status: tonic::Status::new(code, "x"),
        };
        assert_eq!(
            error("search", status(Code::Unavailable)).kind,
            ErrorKind::Unavailable
        );
        assert_eq!(
            error("upsert", status(Code::InvalidArgument)).kind,
            ErrorKind::InvalidArgument
        );
        assert_eq!(
            error("get", status(Code::NotFound)).kind,
            ErrorKind::NotFound
        );
        assert!(
            error("get", status(Code::Internal))
                .to_string()
                .starts_with("vector store: get: ")
        );
        assert_eq!(
            error("get", status(Code::Internal)).kind,
            ErrorKind::Internal
        );
        let refused = QdrantError::ResponseError {
            status: tonic::Status::internal("Failed to connect to http://127.0.0.1:9/: refused"),
        };
        assert_eq!(error("get", refused).kind, ErrorKind::Unavailable);
    }
}
