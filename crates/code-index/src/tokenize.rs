//! Tokens for lexical search: words split on non-identifier characters, then
//! identifiers split on snake_case and camelCase (`parseHTTPResponse` →
//! `parse`, `http`, `response`, plus the whole `parsehttpresponse`), lower-cased.

/// Tokens shorter than this, pure numbers and a few stop words are dropped.
const MIN_LEN: usize = 2;

const STOP: &[&str] = &[
    "the", "and", "or", "of", "to", "in", "is", "it", "at", "on", "for", "be", "by", "an", "as",
    "if", "no", "not", "self", "this", "return", "def", "fn", "func", "function", "let", "const",
    "var", "pub", "new", "none", "null", "true", "false", "nil", "line", "file", "py", "rs", "js",
    "ts", "go", "java", "src", "lib",
];

pub use tracelab_domain::identifier::split_identifier;

/// Calls `f` for each token of `text` (an identifier's parts and, when it
/// has several, the whole identifier too).
pub fn for_each_token(text: &str, mut f: impl FnMut(&str)) {
    for_each_token_at(text, |t, _| f(t));
}

/// Like [`for_each_token`], with the byte range of the word each token came
/// from (what a full-text engine records as the token's offsets).
pub fn for_each_token_at(text: &str, mut f: impl FnMut(&str, std::ops::Range<usize>)) {
    let mut start = 0;
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$')) {
        let at = start..start + word.len();
        // The separator is one char; find where the next word starts.
        start = at.end + text[at.end..].chars().next().map_or(0, char::len_utf8);
        if word.is_empty() || word.len() > 80 {
            continue;
        }
        let mut keep = |t: &str| {
            if t.len() >= MIN_LEN && !t.bytes().all(|b| b.is_ascii_digit()) && !STOP.contains(&t) {
                f(t, at.clone());
            }
        };
        let parts = split_identifier(word);
        if parts.len() > 1 {
            keep(&parts.concat());
        }
        for p in &parts {
            keep(p);
        }
    }
}

pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_string()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: &[&str]) {
        assert_eq!(tokens(input), expected, "{input}");
    }

    #[test]
    fn splits_identifiers() {
        check(
            "parseHTTPResponse",
            &["parsehttpresponse", "parse", "http", "response"],
        );
        check(
            "snake_case_name",
            &["snakecasename", "snake", "case", "name"],
        );
        check("Cart.total()", &["cart", "total"]);
        check("utf8Decode v2", &["utf8decode", "utf", "decode", "v2"]);
        check("x = 42 and the", &[]);
        check("KeyError: 'sku'", &["keyerror", "key", "error", "sku"]);
    }

    #[test]
    fn offsets_point_at_the_word() {
        let text = "→ x.parseUrl(y_ok)";
        let mut seen = Vec::new();
        for_each_token_at(text, |t, r| seen.push((t.to_string(), &text[r])));
        assert_eq!(
            seen,
            [
                ("parseurl".to_string(), "parseUrl"),
                ("parse".to_string(), "parseUrl"),
                ("url".to_string(), "parseUrl"),
                ("yok".to_string(), "y_ok"),
                ("ok".to_string(), "y_ok"),
            ]
        );
    }
}
