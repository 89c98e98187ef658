pub mod real_corpus;
