//! What this binary was built without. A flag whose backend a Cargo feature
//! left out stays in `--help` and says which feature it needs, instead of
//! vanishing or failing with a parse error.

/// The error for `what` (a flag or command) when `feature` was left out.
pub fn without(feature: &str, what: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{what} needs the `{feature}` feature, which this tracelab was built without \
         (cargo build --release -p tracelab --features {feature})"
    )
}
