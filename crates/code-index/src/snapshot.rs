//! A commit's symbol snapshot: every indexed file's definitions placed under
//! qualified names, and call edges resolved by name, import-aware where cheap.

use crate::lang::Language;
use crate::model::{
    CallEdge, CallSite, Diagnostic, ParsedFile, Resolution, Symbol, SymbolId, SymbolKind,
};
use crate::qualify;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::{Mutex, OnceLock};

/// At most this many same-named definitions are linked by name alone; more
/// means the name is too common to say anything.
const MAX_NAME_CANDIDATES: usize = 3;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileEntry {
    pub path: String,
    pub blob: String,
    pub language: Language,
    /// Range of this file's symbols in `Snapshot::symbols`.
    pub symbols: std::ops::Range<u32>,
    pub lines: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileDiagnostic {
    pub path: String,
    #[serde(flatten)]
    pub diagnostic: Diagnostic,
}

#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub commit: String,
    /// Commit time, seconds since the epoch.
    pub time: i64,
    pub files: Vec<FileEntry>,
    pub symbols: Vec<Symbol>,
    pub diagnostics: Vec<FileDiagnostic>,
    file_by_path: HashMap<String, usize>,
    /// Per file (same order as `files`): the parse and the module name, kept
    /// to resolve calls when the call graph is first asked for.
    parsed: Vec<Arc<ParsedFile>>,
    modules: Vec<String>,
    graph: OnceLock<CallGraph>,
}

/// Resolved call edges and their adjacency lists. Derived from the
/// snapshot on first use (in parallel), so an index update that only needs
/// symbols current does not pay for it.
#[derive(Debug, Clone, Default)]
struct CallGraph {
    edges: Vec<CallEdge>,
    callees: Vec<Vec<(SymbolId, u32)>>,
    callers: Vec<Vec<(SymbolId, u32)>>,
}

impl Snapshot {
    /// Places parsed files (sorted by path) into one snapshot and resolves calls.
    pub fn build(
        commit: String,
        time: i64,
        mut files: Vec<(String, String, Arc<ParsedFile>)>,
    ) -> Snapshot {
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let mut bases = Vec::with_capacity(files.len());
        let mut next = 0u32;
        for (_, _, parsed) in &files {
            bases.push(next);
            next += parsed.defs.len() as u32;
        }
        let placed: Vec<(String, Vec<Symbol>)> = files
            .par_iter()
            .zip(&bases)
            .map(|((path, _, parsed), &base)| {
                let module = qualify::module_of(parsed.language, path, parsed);
                let symbols = place(path, &module, parsed, base);
                (module, symbols)
            })
            .collect();
        let mut snap = Snapshot {
            commit,
            time,
            ..Snapshot::default()
        };
        snap.symbols.reserve(next as usize);
        for ((path, blob, parsed), (module, symbols)) in files.into_iter().zip(placed) {
            let base = snap.symbols.len() as u32;
            snap.symbols.extend(symbols);
            for d in &parsed.diagnostics {
                snap.diagnostics.push(FileDiagnostic {
                    path: path.clone(),
                    diagnostic: d.clone(),
                });
            }
            snap.file_by_path.insert(path.clone(), snap.files.len());
            snap.files.push(FileEntry {
                path,
                blob,
                language: parsed.language,
                symbols: base..snap.symbols.len() as u32,
                lines: parsed.lines,
            });
            snap.parsed.push(parsed);
            snap.modules.push(module);
        }
        snap
    }

    fn graph(&self) -> &CallGraph {
        self.graph.get_or_init(|| {
            let resolver = Resolver::new(self, &self.modules);
            let per_file: Vec<Vec<CallEdge>> = (0..self.files.len())
                .into_par_iter()
                .map(|fi| {
                    let parsed = &self.parsed[fi];
                    let base = self.files[fi].symbols.start;
                    let mut edges = Vec::new();
                    for (di, def) in parsed.defs.iter().enumerate() {
                        let caller = base + di as u32;
                        let mut seen = HashSet::new();
                        for call in &def.calls {
                            for (callee, resolution) in resolver.resolve(fi, caller, call, parsed) {
                                if callee != caller && seen.insert(callee) {
                                    edges.push(CallEdge {
                                        caller,
                                        callee,
                                        line: call.line,
                                        resolution,
                                    });
                                }
                            }
                        }
                    }
                    edges
                })
                .collect();
            let edges: Vec<CallEdge> = per_file.into_iter().flatten().collect();
            let mut callees = vec![Vec::new(); self.symbols.len()];
            let mut callers = vec![Vec::new(); self.symbols.len()];
            for e in &edges {
                callees[e.caller as usize].push((e.callee, e.line));
                callers[e.callee as usize].push((e.caller, e.line));
            }
            CallGraph {
                edges,
                callees,
                callers,
            }
        })
    }

    /// Resolved call edges (resolved on first use).
    pub fn edges(&self) -> &[CallEdge] {
        &self.graph().edges
    }

    /// Calls written in the snapshot's functions, resolved or not.
    pub fn call_sites(&self) -> usize {
        self.parsed
            .iter()
            .flat_map(|p| &p.defs)
            .map(|d| d.calls.len())
            .sum()
    }

    pub fn file(&self, path: &str) -> Option<&FileEntry> {
        self.file_by_path.get(path).map(|&i| &self.files[i])
    }

    pub fn symbols_in(&self, path: &str) -> &[Symbol] {
        match self.file(path) {
            Some(f) => &self.symbols[f.symbols.start as usize..f.symbols.end as usize],
            None => &[],
        }
    }

    /// The innermost symbol containing `line` (callables preferred over
    /// their containers; a class line outside any method gives the class).
    pub fn innermost_at(&self, path: &str, line: u32) -> Option<&Symbol> {
        self.symbols_in(path)
            .iter()
            .filter(|s| s.contains_line(line) && s.kind != SymbolKind::Impl)
            .min_by_key(|s| (s.end_line - s.start_line, std::cmp::Reverse(s.start_line)))
    }

    /// All symbols whose line range intersects `lines` (sorted line numbers).
    pub fn symbols_touching(&self, path: &str, lines: &[u32]) -> Vec<SymbolId> {
        self.symbols_in(path)
            .iter()
            .filter(|s| {
                let i = lines.partition_point(|&l| l < s.start_line);
                i < lines.len() && lines[i] <= s.end_line
            })
            .map(|s| s.id)
            .collect()
    }

    pub fn symbol(&self, id: SymbolId) -> &Symbol {
        &self.symbols[id as usize]
    }

    pub fn by_qualified_name(&self, name: &str) -> Option<&Symbol> {
        self.symbols.iter().find(|s| s.qualified_name == name)
    }

    /// Outgoing call edges `(callee, line)`.
    pub fn callees(&self, id: SymbolId) -> &[(SymbolId, u32)] {
        &self.graph().callees[id as usize]
    }

    /// Incoming call edges `(caller, line)`.
    pub fn callers(&self, id: SymbolId) -> &[(SymbolId, u32)] {
        &self.graph().callers[id as usize]
    }
}

/// The symbols of one parsed file at `path`, with ids from `base`.
pub fn place(path: &str, module: &str, parsed: &ParsedFile, base: SymbolId) -> Vec<Symbol> {
    parsed
        .defs
        .iter()
        .enumerate()
        .map(|(i, def)| Symbol {
            id: base + i as u32,
            qualified_name: qualify::qualified_name(parsed.language, module, &def.local),
            name: def.name.clone(),
            kind: def.kind,
            language: parsed.language,
            path: path.to_string(),
            start_line: def.start_line,
            end_line: def.end_line,
            signature: def.signature.clone(),
            doc: def.doc.clone(),
            parent: def.parent.map(|p| base + p),
        })
        .collect()
}

/// The symbols of one parsed file at `path`, ids from 0.
pub fn file_symbols(path: &str, parsed: &ParsedFile) -> Vec<Symbol> {
    place(
        path,
        &qualify::module_of(parsed.language, path, parsed),
        parsed,
        0,
    )
}

/// (language, absolute module key) → the files that module names.
type ModuleMemo = HashMap<(Language, String), Arc<Vec<usize>>>;

struct Resolver<'a> {
    snap: &'a Snapshot,
    modules: &'a [String],
    /// Module name → files (a Go package directory can hold several).
    by_module: HashMap<&'a str, Vec<usize>>,
    /// Callable and class names → symbols, for the last-resort name match.
    by_name: HashMap<&'a str, Vec<SymbolId>>,
    memo: Mutex<ModuleMemo>,
}

impl<'a> Resolver<'a> {
    fn new(snap: &'a Snapshot, modules: &'a [String]) -> Self {
        let mut by_module: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, m) in modules.iter().enumerate() {
            by_module.entry(m.as_str()).or_default().push(i);
        }
        let mut by_name: HashMap<&str, Vec<SymbolId>> = HashMap::new();
        for s in &snap.symbols {
            if s.kind.is_callable() || matches!(s.kind, SymbolKind::Class | SymbolKind::Struct) {
                by_name.entry(s.name.as_str()).or_default().push(s.id);
            }
        }
        Self {
            snap,
            modules,
            by_module,
            by_name,
            memo: Mutex::new(HashMap::new()),
        }
    }

    fn file_symbols(&self, fi: usize) -> &'a [Symbol] {
        let r = &self.snap.files[fi].symbols;
        &self.snap.symbols[r.start as usize..r.end as usize]
    }

    /// Top-level (or, failing that, any) definition called `name` in file `fi`.
    fn in_file(&self, fi: usize, name: &str) -> Option<SymbolId> {
        let syms = self.file_symbols(fi);
        let named = || {
            syms.iter()
                .filter(|s| s.name == name && s.kind != SymbolKind::Impl)
        };
        named()
            .find(|s| s.parent.is_none())
            .or_else(|| named().next())
            .map(|s| s.id)
    }

    /// Files of a module named as an import writes it, relative to file `fi`.
    fn module_files(&self, fi: usize, module: &str) -> Arc<Vec<usize>> {
        let lang = self.snap.files[fi].language;
        let key: String = match lang {
            Language::Python if module.starts_with('.') => {
                let dots = module.chars().take_while(|&c| c == '.').count();
                let mut base: Vec<&str> = self.modules[fi].split('.').collect();
                let is_package = self.snap.files[fi].path.ends_with("__init__.py");
                let drop = if is_package { dots - 1 } else { dots };
                base.truncate(base.len().saturating_sub(drop));
                let rest = &module[dots..];
                if !rest.is_empty() {
                    base.push(rest);
                }
                base.join(".")
            }
            Language::Javascript | Language::Typescript if module.starts_with('.') => {
                let dir = self.snap.files[fi]
                    .path
                    .rsplit_once('/')
                    .map_or("", |(d, _)| d);
                normalise_path(&format!("{dir}/{module}"))
            }
            _ => module.to_string(),
        };
        self.files_for_key(lang, key)
    }

    /// Files of an absolute module key; memoised, since the same imports
    /// recur in every file and a miss scans all modules.
    fn files_for_key(&self, lang: Language, key: String) -> Arc<Vec<usize>> {
        let cached = self
            .memo
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(lang, key.clone()))
            .cloned();
        if let Some(hit) = cached {
            return hit;
        }
        let found: Vec<usize> = match self.by_module.get(key.as_str()) {
            Some(files) => files.clone(),
            None => match lang {
                Language::Javascript | Language::Typescript => self
                    .by_module
                    .get(format!("{key}/index").as_str())
                    .cloned()
                    .unwrap_or_default(),
                // `import example.com/app/store` names the directory `store`;
                // Python packages may live under a prefix we dropped or kept.
                Language::Go | Language::Python => {
                    let sep = if lang == Language::Go { '/' } else { '.' };
                    let suffix = format!("{sep}{key}");
                    let last = key.rsplit(sep).next().unwrap_or(&key);
                    let mut out: Vec<usize> = self
                        .by_module
                        .iter()
                        .filter(|(m, _)| {
                            m.ends_with(&suffix)
                                || (lang == Language::Go && m.rsplit('/').next() == Some(last))
                        })
                        .flat_map(|(_, f)| f.iter().copied())
                        .filter(|&f| self.snap.files[f].language == lang)
                        .collect();
                    out.sort_unstable();
                    out
                }
                _ => Vec::new(),
            },
        };
        let found = Arc::new(found);
        self.memo
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((lang, key), found.clone());
        found
    }

    fn resolve(
        &self,
        fi: usize,
        caller: SymbolId,
        call: &CallSite,
        parsed: &ParsedFile,
    ) -> Vec<(SymbolId, Resolution)> {
        let name = call.name.as_str();
        let snap = self.snap;
        let caller_sym = &snap.symbols[caller as usize];
        match call.qualifier.as_deref() {
            Some("self" | "this" | "cls" | "Self" | "super") => {
                // Siblings share the caller's qualified prefix: methods of one
                // class, of every `impl` of one Rust type, of one Go receiver.
                let sep = if caller_sym.language == Language::Rust {
                    "::"
                } else {
                    "."
                };
                if let Some((recv, _)) = caller_sym.qualified_name.rsplit_once(sep) {
                    let want = format!("{recv}{sep}{name}");
                    if let Some(s) = self
                        .file_symbols(fi)
                        .iter()
                        .find(|s| s.qualified_name == want)
                    {
                        return vec![(s.id, Resolution::SameClass)];
                    }
                }
                self.by_name_only(caller_sym, name, None)
            }
            None => {
                if let Some(id) = self.in_file(fi, name) {
                    return vec![(id, Resolution::SameModule)];
                }
                for imp in parsed.imports.iter().filter(|i| i.local == name) {
                    let target = imp.name.as_deref().unwrap_or(name);
                    for &f in self.module_files(fi, &imp.module).iter() {
                        if let Some(id) = self.in_file(f, target) {
                            return vec![(id, Resolution::Import)];
                        }
                    }
                }
                // Same Go package: sibling files share a namespace.
                if snap.files[fi].language == Language::Go {
                    for f in self
                        .by_module
                        .get(self.modules[fi].as_str())
                        .into_iter()
                        .flatten()
                    {
                        if let Some(id) = self.in_file(*f, name) {
                            return vec![(id, Resolution::SameModule)];
                        }
                    }
                }
                self.by_name_only(caller_sym, name, None)
            }
            Some(q) => {
                for imp in parsed.imports.iter().filter(|i| i.local == q) {
                    let mut modules = vec![imp.module.clone()];
                    if let Some(n) = &imp.name {
                        // `from pkg import mod; mod.f()`
                        modules.insert(0, format!("{}.{n}", imp.module));
                    }
                    for m in modules {
                        for &f in self.module_files(fi, &m).iter() {
                            if let Some(id) = self.in_file(f, name) {
                                return vec![(id, Resolution::Import)];
                            }
                        }
                    }
                }
                self.by_name_only(caller_sym, name, Some(q))
            }
        }
    }

    fn by_name_only(
        &self,
        caller: &Symbol,
        name: &str,
        qualifier: Option<&str>,
    ) -> Vec<(SymbolId, Resolution)> {
        let Some(all) = self.by_name.get(name) else {
            return Vec::new();
        };
        // Same language only; and within the caller's own package (Rust
        // crate, top directory) when the name exists there.
        let same_lang: Vec<SymbolId> = all
            .iter()
            .copied()
            .filter(|&c| self.snap.symbols[c as usize].language == caller.language)
            .collect();
        let root = package_root(caller);
        let local: Vec<SymbolId> = same_lang
            .iter()
            .copied()
            .filter(|&c| package_root(&self.snap.symbols[c as usize]) == root)
            .collect();
        let cands = if local.is_empty() { &same_lang } else { &local };
        let last = qualifier.map(|q| q.rsplit(['.', ':']).next().unwrap_or(q));
        if let Some(q) = last {
            // `Type::new()`, `Foo.bar()` (static): prefer members of that type
            // (Go methods have no parent: match `Type.Method` at the end).
            let (dot, colons) = (format!("{q}.{name}"), format!("{q}::{name}"));
            let typed: Vec<_> = cands
                .iter()
                .filter(|&&c| {
                    let s = &self.snap.symbols[c as usize];
                    s.parent
                        .is_some_and(|p| self.snap.symbols[p as usize].name == q)
                        || s.qualified_name.ends_with(&dot)
                        || s.qualified_name.ends_with(&colons)
                })
                .map(|&c| (c, Resolution::Name))
                .collect();
            if !typed.is_empty() && typed.len() <= MAX_NAME_CANDIDATES {
                return typed;
            }
        }
        if cands.len() <= MAX_NAME_CANDIDATES {
            cands.iter().map(|&c| (c, Resolution::Name)).collect()
        } else {
            Vec::new()
        }
    }
}

/// The package a symbol lives in, for preferring local name matches: the
/// Rust crate from the qualified name, else the first path component.
fn package_root(s: &Symbol) -> &str {
    if s.language == Language::Rust {
        let q = s
            .qualified_name
            .strip_prefix("rs:")
            .unwrap_or(&s.qualified_name);
        return q.split("::").next().unwrap_or(q);
    }
    s.path.split('/').next().unwrap_or(&s.path)
}

fn normalise_path(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            _ => out.push(part),
        }
    }
    let joined = out.join("/");
    match joined.rsplit_once('.') {
        Some((stem, "js" | "ts" | "mjs" | "jsx" | "tsx")) => stem.to_string(),
        _ => joined,
    }
}
