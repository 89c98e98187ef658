//! A commit's symbol snapshot: every indexed file's definitions placed under
//! qualified names, and call edges resolved by name, import-aware where cheap.

use crate::lang::Language;
use crate::model::{
    CallEdge, CallSite, Diagnostic, ParsedFile, Resolution, Symbol, SymbolId, SymbolKind,
};
use crate::qualify;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

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
    pub edges: Vec<CallEdge>,
    pub diagnostics: Vec<FileDiagnostic>,
    file_by_path: HashMap<String, usize>,
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
        let mut snap = Snapshot {
            commit,
            time,
            ..Snapshot::default()
        };
        let mut modules = Vec::with_capacity(files.len());
        for (path, blob, parsed) in &files {
            let module = qualify::module_of(parsed.language, path, parsed);
            let base = snap.symbols.len() as u32;
            snap.symbols.extend(place(path, &module, parsed, base));
            for d in &parsed.diagnostics {
                snap.diagnostics.push(FileDiagnostic {
                    path: path.clone(),
                    diagnostic: d.clone(),
                });
            }
            snap.file_by_path.insert(path.clone(), snap.files.len());
            snap.files.push(FileEntry {
                path: path.clone(),
                blob: blob.clone(),
                language: parsed.language,
                symbols: base..snap.symbols.len() as u32,
                lines: parsed.lines,
            });
            modules.push(module);
        }
        let resolver = Resolver::new(&snap, &modules);
        let mut edges = Vec::new();
        for (fi, (_, _, parsed)) in files.iter().enumerate() {
            let base = snap.files[fi].symbols.start;
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
        }
        snap.edges = edges;
        snap.index_edges();
        snap
    }

    fn index_edges(&mut self) {
        self.callees = vec![Vec::new(); self.symbols.len()];
        self.callers = vec![Vec::new(); self.symbols.len()];
        for e in &self.edges {
            self.callees[e.caller as usize].push((e.callee, e.line));
            self.callers[e.callee as usize].push((e.caller, e.line));
        }
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
        &self.callees[id as usize]
    }

    /// Incoming call edges `(caller, line)`.
    pub fn callers(&self, id: SymbolId) -> &[(SymbolId, u32)] {
        &self.callers[id as usize]
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

struct Resolver<'a> {
    snap: &'a Snapshot,
    modules: &'a [String],
    /// Module name → files (a Go package directory can hold several).
    by_module: HashMap<&'a str, Vec<usize>>,
    /// Callable and class names → symbols, for the last-resort name match.
    by_name: HashMap<&'a str, Vec<SymbolId>>,
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
    fn module_files(&self, fi: usize, module: &str) -> Vec<usize> {
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
            Language::JavaScript | Language::TypeScript if module.starts_with('.') => {
                let dir = self.snap.files[fi]
                    .path
                    .rsplit_once('/')
                    .map_or("", |(d, _)| d);
                normalise_path(&format!("{dir}/{module}"))
            }
            _ => module.to_string(),
        };
        if let Some(files) = self.by_module.get(key.as_str()) {
            return files.clone();
        }
        match lang {
            Language::JavaScript | Language::TypeScript => self
                .by_module
                .get(format!("{key}/index").as_str())
                .cloned()
                .unwrap_or_default(),
            // `import example.com/app/store` names the directory `store`;
            // Python packages may live under a prefix we dropped or kept.
            Language::Go | Language::Python => {
                let sep = if lang == Language::Go { '/' } else { '.' };
                let last = key.rsplit(sep).next().unwrap_or(&key);
                let mut out: Vec<usize> = self
                    .by_module
                    .iter()
                    .filter(|(m, _)| {
                        m.ends_with(&key)
                            || (lang == Language::Go && m.rsplit('/').next() == Some(last))
                    })
                    .flat_map(|(_, f)| f.iter().copied())
                    .filter(|&f| self.snap.files[f].language == lang)
                    .collect();
                out.sort_unstable();
                out
            }
            _ => Vec::new(),
        }
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
                self.by_name_only(name, None)
            }
            None => {
                if let Some(id) = self.in_file(fi, name) {
                    return vec![(id, Resolution::SameModule)];
                }
                for imp in parsed.imports.iter().filter(|i| i.local == name) {
                    let target = imp.name.as_deref().unwrap_or(name);
                    for f in self.module_files(fi, &imp.module) {
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
                self.by_name_only(name, None)
            }
            Some(q) => {
                for imp in parsed.imports.iter().filter(|i| i.local == q) {
                    let mut modules = vec![imp.module.clone()];
                    if let Some(n) = &imp.name {
                        // `from pkg import mod; mod.f()`
                        modules.insert(0, format!("{}.{n}", imp.module));
                    }
                    for m in modules {
                        for f in self.module_files(fi, &m) {
                            if let Some(id) = self.in_file(f, name) {
                                return vec![(id, Resolution::Import)];
                            }
                        }
                    }
                }
                self.by_name_only(name, Some(q))
            }
        }
    }

    fn by_name_only(&self, name: &str, qualifier: Option<&str>) -> Vec<(SymbolId, Resolution)> {
        let Some(cands) = self.by_name.get(name) else {
            return Vec::new();
        };
        let last = qualifier.map(|q| q.rsplit(['.', ':']).next().unwrap_or(q));
        if let Some(q) = last {
            // `Type::new()`, `Foo.bar()` (static): prefer members of that type.
            let typed: Vec<_> = cands
                .iter()
                .filter(|&&c| {
                    let s = &self.snap.symbols[c as usize];
                    s.parent
                        .is_some_and(|p| self.snap.symbols[p as usize].name == q)
                        || s.qualified_name.contains(&format!("{q}."))
                        || s.qualified_name.contains(&format!("{q}::"))
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
