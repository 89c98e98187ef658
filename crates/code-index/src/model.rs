//! What parsing a file yields (path-independent, so it can be cached by blob
//! id) and what a commit's snapshot holds (symbols with qualified names).

use crate::lang::Language;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SymbolKind {
    Function,
    Method,
    Class,
    Struct,
    Enum,
    Trait,
    Interface,
    Impl,
    Module,
}

impl SymbolKind {
    /// Functions and methods: the unit a fix changes and a suspect list ranks.
    pub fn is_callable(self) -> bool {
        matches!(self, SymbolKind::Function | SymbolKind::Method)
    }
}

/// A call written in a function body: `qualifier.name(...)` or `name(...)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSite {
    pub name: String,
    /// The receiver or path as written (`self`, `math`, `Store`), when simple.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qualifier: Option<String>,
    pub line: u32,
}

/// An import binding a local name: Python `from pkg.mod import f as g` is
/// `{local: g, module: pkg.mod, name: Some(f)}`; `import pkg.mod as m` is
/// `{local: m, module: pkg.mod, name: None}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Import {
    pub local: String,
    pub module: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A parse problem: the file is still indexed as far as it was understood.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub line: u32,
    pub message: String,
}

/// A definition inside one file, named relative to the file (`Class.method`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Def {
    pub name: String,
    /// Name inside the file: containers joined with the language's separator.
    pub local: String,
    pub kind: SymbolKind,
    /// Index of the enclosing definition in the same file.
    pub parent: Option<u32>,
    /// 1-based, inclusive.
    pub start_line: u32,
    pub end_line: u32,
    pub signature: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<CallSite>,
}

/// Everything parsing one blob yields. It does not depend on the path, so the
/// blob cache can share it between commits, branches and renames.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParsedFile {
    pub language: Language,
    /// Java `package`, Go `package` name: module naming that lives in the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub module_hint: Option<String>,
    pub defs: Vec<Def>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub imports: Vec<Import>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
    pub lines: u32,
}

pub type SymbolId = u32;

/// A definition placed in a commit's snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Symbol {
    pub id: SymbolId,
    /// `py:pkg.module.Class.method`, `rs:crate::module::Type::method`, ...
    /// (scheme per language in `qualify`).
    pub qualified_name: String,
    pub name: String,
    pub kind: SymbolKind,
    pub language: Language,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub signature: String,
    pub doc: Option<String>,
    pub parent: Option<SymbolId>,
}

impl Symbol {
    pub fn contains_line(&self, line: u32) -> bool {
        self.start_line <= line && line <= self.end_line
    }
}

/// How a call edge was resolved, from most to least certain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// `self.f()` / `this.f()` to a method of the same class.
    SameClass,
    /// A definition of that name in the same file.
    SameModule,
    /// Through an import (`from x import f`, `import x as m; m.f()`).
    Import,
    /// Only the name matched somewhere in the repository (few candidates).
    Name,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallEdge {
    pub caller: SymbolId,
    pub callee: SymbolId,
    pub line: u32,
    pub resolution: Resolution,
}
