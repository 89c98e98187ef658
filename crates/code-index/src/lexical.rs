//! Lexical search: a tantivy BM25 index (k1 = 1.2, b = 0.75) held in RAM,
//! one per (snapshot, revision window), over texts the caller builds —
//! symbol names, signatures, docs and bodies; commit messages; evidence.
//!
//! Text goes through the `code` tokenizer, which is [`crate::tokenize`]:
//! identifiers split on snake_case and camelCase plus the whole identifier,
//! lower-cased, stop words dropped. The query is the same tokens OR-ed
//! (each distinct term once), so a stack trace needs no query syntax and
//! nothing in it can be misread as an operator.
//!
//! Documents are numbered by insertion order; the number is stored in a
//! fast field because tantivy's own doc ids depend on how segments were
//! flushed and merged.

use crate::error::{Error, Result};
use crate::tokenize::{for_each_token, for_each_token_at};
use tantivy::collector::TopDocs;
use tantivy::columnar::Column;
use tantivy::indexer::NoMergePolicy;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{FAST, Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};
use tantivy::{Index, IndexWriter, Searcher, TantivyDocument, Term};

const TOKENIZER: &str = "code";
const TEXT: &str = "text";
const ID: &str = "id";
/// The writer's memory budget; segments are flushed when it fills up.
const WRITER_BUDGET: usize = 256 << 20;

/// A hit: the document's number (its position when added) and its BM25 score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub doc: u32,
    pub score: f32,
}

/// An immutable in-memory BM25 index over numbered texts.
pub struct LexicalIndex {
    searcher: Searcher,
    text: Field,
    /// The `id` column of each segment, by segment ordinal.
    ids: Vec<Column<u64>>,
    len: usize,
}

impl std::fmt::Debug for LexicalIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LexicalIndex")
            .field("documents", &self.len)
            .field("segments", &self.ids.len())
            .finish()
    }
}

fn engine(e: tantivy::TantivyError) -> Error {
    Error::Search(e.to_string())
}

impl LexicalIndex {
    /// Indexes `texts`; the i-th text is document `i`.
    pub fn build<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> Result<Self> {
        let mut schema = Schema::builder();
        let indexing = TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            // Term frequencies and field norms are all BM25 needs; no positions.
            .set_index_option(IndexRecordOption::WithFreqs)
            .set_fieldnorms(true);
        let text =
            schema.add_text_field(TEXT, TextOptions::default().set_indexing_options(indexing));
        let id = schema.add_u64_field(ID, FAST);
        let index = Index::create_in_ram(schema.build());
        index
            .tokenizers()
            .register(TOKENIZER, CodeTokenizer::default());
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        let mut writer: IndexWriter = index
            .writer_with_num_threads(threads, WRITER_BUDGET)
            .map_err(engine)?;
        // Built once, never updated: merging the few flushed segments
        // cost more build time (+40% at 1M documents) than it saved per
        // query (within this machine's noise), see docs/benchmarks/code-index.md.
        writer.set_merge_policy(Box::new(NoMergePolicy));
        let mut len = 0usize;
        for (i, t) in texts.into_iter().enumerate() {
            let mut doc = TantivyDocument::new();
            doc.add_text(text, t.as_ref());
            doc.add_u64(id, i as u64);
            writer.add_document(doc).map_err(engine)?;
            len = i + 1;
        }
        writer.commit().map_err(engine)?;
        writer.wait_merging_threads().map_err(engine)?;
        let reader = index.reader().map_err(engine)?;
        let searcher = reader.searcher();
        let ids = searcher
            .segment_readers()
            .iter()
            .map(|s| s.fast_fields().u64(ID).map_err(engine))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            searcher,
            text,
            ids,
            len,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Documents matching at least one token of `text`, best first (ties by
    /// document number), at most `limit`.
    pub fn search_text(&self, text: &str, limit: usize) -> Result<Vec<Hit>> {
        let mut terms = Vec::new();
        for_each_token(text, |t| terms.push(t.to_string()));
        self.search(&terms, limit)
    }

    /// Documents matching at least one of `terms` (already tokenised), best
    /// first (ties by document number). Each distinct term counts once.
    pub fn search(&self, terms: &[String], limit: usize) -> Result<Vec<Hit>> {
        let mut terms: Vec<&str> = terms.iter().map(String::as_str).collect();
        terms.sort_unstable();
        terms.dedup();
        if terms.is_empty() || limit == 0 || self.len == 0 {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .into_iter()
            .map(|t| {
                let q = TermQuery::new(
                    Term::from_field_text(self.text, t),
                    IndexRecordOption::WithFreqs,
                );
                (Occur::Should, Box::new(q) as Box<dyn Query>)
            })
            .collect();
        let query = BooleanQuery::new(clauses);
        let top = self
            .searcher
            .search(&query, &TopDocs::with_limit(limit).order_by_score())
            .map_err(engine)?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let column = &self.ids[addr.segment_ord as usize];
            let doc = column
                .first(addr.doc_id)
                .ok_or_else(|| Error::Search(format!("document {addr:?} has no id")))?;
            hits.push(Hit {
                doc: doc as u32,
                score,
            });
        }
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        Ok(hits)
    }
}

/// tantivy's side of [`crate::tokenize`]: the same tokens, so indexing and
/// querying can never disagree on how an identifier splits.
#[derive(Debug, Clone, Default)]
struct CodeTokenizer {
    tokens: Vec<Token>,
}

struct CodeTokenStream<'a> {
    tokens: &'a mut [Token],
    next: usize,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        self.tokens.clear();
        let tokens = &mut self.tokens;
        for_each_token_at(text, |t, range| {
            tokens.push(Token {
                offset_from: range.start,
                offset_to: range.end,
                position: tokens.len(),
                text: t.to_string(),
                position_length: 1,
            });
        });
        CodeTokenStream {
            tokens: &mut self.tokens,
            next: 0,
        }
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        self.next += 1;
        self.next <= self.tokens.len()
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(hits: &[Hit]) -> Vec<u32> {
        hits.iter().map(|h| h.doc).collect()
    }

    #[test]
    fn ranks_rare_terms_and_short_documents_higher() {
        let idx = LexicalIndex::build([
            "parse config file",
            "parse parse header",
            "render page file file file file file file",
        ])
        .unwrap();
        assert_eq!(idx.len(), 3);
        assert_eq!(docs(&idx.search_text("config", 10).unwrap()), vec![0]);
        assert_eq!(idx.search_text("parse header", 10).unwrap()[0].doc, 1);
        // "file" is a stop word of the code tokenizer; "page" is not.
        assert_eq!(docs(&idx.search_text("render page", 10).unwrap()), vec![2]);
        assert_eq!(docs(&idx.search_text("parse", 10).unwrap()), vec![1, 0]);
        assert_eq!(idx.search_text("config parse", 1).unwrap().len(), 1);
        assert!(idx.search_text("absent", 10).unwrap().is_empty());
        assert!(idx.search_text("", 10).unwrap().is_empty());
    }

    #[test]
    fn identifiers_split_on_both_sides() {
        let idx = LexicalIndex::build([
            "def unit_price(item, qty): return item.price",
            "def parseHttpResponse(raw): pass",
            "class Cart: total",
        ])
        .unwrap();
        assert_eq!(idx.search_text("UnitPrice", 5).unwrap()[0].doc, 0);
        assert_eq!(idx.search_text("http_response", 5).unwrap()[0].doc, 1);
        // The whole identifier is a term too: an exact name beats its parts.
        let hits = idx.search_text("parse_http_response unit", 5).unwrap();
        assert_eq!(docs(&hits), vec![1, 0]);
    }

    #[test]
    fn matches_the_okapi_formula_within_fieldnorm_rounding() {
        // Two documents: "alpha beta" and "alpha gamma gamma gamma".
        let idx = LexicalIndex::build(["alpha beta", "alpha gamma gamma gamma"]).unwrap();
        let hits = idx.search_text("beta", 5).unwrap();
        let (n, df, avg, len, tf) = (2.0f32, 1.0f32, 3.0f32, 2.0f32, 1.0f32);
        let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
        let expected = idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len / avg));
        assert!(
            (hits[0].score - expected).abs() < 1e-3,
            "{hits:?} vs {expected}"
        );
    }

    #[test]
    fn many_documents_keep_their_numbers_across_segments() {
        let texts: Vec<String> = (0..5000).map(|i| format!("word{i} common")).collect();
        let idx = LexicalIndex::build(&texts).unwrap();
        for i in [0, 1, 2499, 4999] {
            let hits = idx.search_text(&format!("word{i}"), 3).unwrap();
            assert_eq!(hits[0].doc, i, "word{i}");
            assert!(hits[0].score > hits[1].score);
        }
        let all = idx.search_text("common", 10_000).unwrap();
        assert_eq!(all.len(), 5000);
        assert_eq!(all[0].doc, 0, "equal scores: lowest number first");
    }
}
