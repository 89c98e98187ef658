//! sqlx/PostgreSQL errors onto the domain's error kinds, in one place.

use tracelab_domain::{Error, ErrorKind};

/// SQLSTATE classes and codes that mean "try again later": connection
/// exceptions (08), operator intervention such as a shutting-down server
/// (57P01-57P03), serialization failures and deadlocks (40001, 40P01),
/// insufficient resources (53).
fn transient(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("53")
        || matches!(code, "57P01" | "57P02" | "57P03" | "40001" | "40P01")
}

pub(crate) fn db_error(e: sqlx::Error) -> Error {
    match &e {
        sqlx::Error::RowNotFound => Error::not_found("not found"),
        sqlx::Error::PoolTimedOut => {
            Error::new(ErrorKind::Timeout, format!("store busy or down: {e}"))
        }
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolClosed
        | sqlx::Error::Protocol(_) => Error::unavailable(format!("store unavailable: {e}")),
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            Error::conflict(format!("already exists: {e}"))
        }
        // The audit log's append-only trigger (and any missing grant).
        sqlx::Error::Database(db) if db.code().as_deref() == Some("42501") => Error::new(
            ErrorKind::PermissionDenied,
            format!("refused by the database: {}", db.message()),
        ),
        sqlx::Error::Database(db) if db.code().is_some_and(|c| transient(&c)) => {
            Error::unavailable(format!("store unavailable: {e}"))
        }
        _ => Error::internal(format!("store error: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_codes() {
        for code in ["08006", "08001", "57P01", "40001", "40P01", "53300"] {
            assert!(transient(code), "{code}");
        }
        for code in ["23505", "42P01", "22P02"] {
            assert!(!transient(code), "{code}");
        }
        assert_eq!(db_error(sqlx::Error::PoolTimedOut).kind, ErrorKind::Timeout);
        assert_eq!(
            db_error(sqlx::Error::PoolClosed).kind,
            ErrorKind::Unavailable
        );
        assert_eq!(db_error(sqlx::Error::RowNotFound).kind, ErrorKind::NotFound);
    }
}
