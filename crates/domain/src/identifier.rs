//! Identifiers split into their words, one way for every reader of code:
//! the code index's lexical search and the culprit search's prior.

/// Splits one identifier into lower-case parts.
pub fn split_identifier(word: &str) -> Vec<String> {
    let mut parts = Vec::new();
    for chunk in word.split(['_', '$', '-']) {
        let chars: Vec<char> = chunk.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1], chars[i]);
            let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            let boundary = (prev.is_lowercase() && cur.is_uppercase())
                || (prev.is_uppercase() && cur.is_uppercase() && next_lower)
                || (prev.is_alphabetic() && cur.is_ascii_digit())
                || (prev.is_ascii_digit() && cur.is_alphabetic());
            if boundary {
                parts.push(chars[start..i].iter().collect::<String>().to_lowercase());
                start = i;
            }
        }
        if start < chars.len() {
            parts.push(chars[start..].iter().collect::<String>().to_lowercase());
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_camel_acronyms_and_digits_split() {
        assert_eq!(split_identifier("matches_greater"), ["matches", "greater"]);
        assert_eq!(
            split_identifier("parseHTTPResponse"),
            ["parse", "http", "response"]
        );
        assert_eq!(split_identifier("uts46_remap"), ["uts", "46", "remap"]);
        assert_eq!(split_identifier("first"), ["first"]);
    }
}
