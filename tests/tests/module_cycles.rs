//! No import cycles between the top-level modules of a crate: a module
//! that reaches back into the one that uses it is two ideas in one place or
//! a type in the wrong module. The graph is read from the sources
//! (`crate::module` paths, `use crate::{module, ...}` groups), test modules
//! left out. The cycles that remain are listed below: a cycle passes while
//! its modules are all in one listed cycle (so a listed cycle may shrink,
//! never grow), and a listed cycle that is gone altogether fails the test
//! until it is taken off the list.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Cycles that exist today: (source folder, the modules in the cycle).
/// None: the three #17 named (cli args/repro, ingest's group/model/...,
/// sandbox-docker's cgroup/provider/sandbox) and the ones found after it
/// (the CLI's commands, the engine's agents and the modules they are called
/// with, the investigator's API and notifications) are gone. A new cycle
/// fails the test; list it here only with why and the issue that removes it.
const KNOWN: &[(&str, &[&str])] = &[];

/// The top-level modules of a crate: `src/x.rs` and `src/x/`.
fn modules(src: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(src).expect("read src") {
        let path = entry.expect("entry").path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            out.insert(name);
        } else if let Some(stem) = name.strip_suffix(".rs")
            && stem != "lib"
            && stem != "main"
        {
            out.insert(stem.to_string());
        }
    }
    out
}

/// Every `.rs` file of a module (its file and its folder), test files left out.
fn files_of(src: &Path, module: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let file = src.join(format!("{module}.rs"));
    if file.is_file() {
        out.push(file);
    }
    let mut stack = vec![src.join(module)];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && path.file_name().is_some_and(|n| n != "tests.rs")
            {
                out.push(path);
            }
        }
    }
    out
}

/// The source without line comments and without its inline test module.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| l.split_once("//").map_or(l, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n")
}

fn identifier(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first segment of every `crate::` path in `code`.
fn used_modules(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            out.insert(identifier(rest).to_string());
            continue;
        };
        // `use crate::{a::X, b, c::{..}}`: the first segment of each item.
        let mut depth = 0;
        let mut item_start = true;
        for (j, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => item_start = true,
                c if item_start && !c.is_whitespace() => {
                    out.insert(identifier(&group[j..]).to_string());
                    item_start = false;
                }
                _ => {}
            }
        }
    }
    out
}

/// Module → the other modules of the crate it uses.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mods = modules(src);
    mods.iter()
        .map(|m| {
            let mut uses = BTreeSet::new();
            for file in files_of(src, m) {
                let text = std::fs::read_to_string(&file).expect("read source");
                uses.extend(
                    used_modules(&code(&text))
                        .into_iter()
                        .filter(|u| u != m && mods.contains(u)),
                );
            }
            (m.clone(), uses)
        })
        .collect()
}

/// The strongly connected components with more than one module (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'g> {
        graph: &'g BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        for w in &s.graph[v] {
            if !s.index.contains_key(w.as_str()) {
                visit(s, w);
                let low = s.low[v].min(s.low[w.as_str()]);
                s.low.insert(v, low);
            } else if s.stack.contains(&w.as_str()) {
                let low = s.low[v].min(s.index[w.as_str()]);
                s.low.insert(v, low);
            }
        }
        if s.low[v] == s.index[v] {
            let at = s.stack.iter().rposition(|x| *x == v).expect("on stack");
            let mut comp: Vec<String> = s.stack.drain(at..).map(str::to_string).collect();
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Every `src` folder of the workspace's packages.
fn source_folders(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for parent in ["crates", "services"] {
        for entry in std::fs::read_dir(root.join(parent)).expect("read folder") {
            let path = entry.expect("entry").path();
            if path.join("src").is_dir() {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                out.push(format!("{parent}/{name}/src"));
            }
        }
    }
    for single in ["cli", "tests", "loadtest"] {
        if root.join(single).join("src").is_dir() {
            out.push(format!("{single}/src"));
        }
    }
    out.sort();
    out
}

#[test]
fn no_module_imports_back_into_a_module_that_imports_it() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let folders = source_folders(root);
    assert!(
        folders.iter().any(|f| f == "crates/domain/src"),
        "{folders:?}"
    );
    let mut found: BTreeSet<(String, Vec<String>)> = BTreeSet::new();
    for folder in &folders {
        for cycle in cycles(&graph(&root.join(folder))) {
            found.insert((folder.clone(), cycle));
        }
    }
    let within_known = |folder: &str, cycle: &[String]| {
        KNOWN
            .iter()
            .any(|(f, m)| *f == folder && cycle.iter().all(|c| m.contains(&c.as_str())))
    };
    let new: Vec<String> = found
        .iter()
        .filter(|(f, m)| !within_known(f, m))
        .map(|(f, m)| format!("{f}: {}", m.join(" ")))
        .collect();
    let gone: Vec<String> = KNOWN
        .iter()
        .filter(|(f, m)| {
            !found
                .iter()
                .any(|(ff, fm)| ff == f && fm.iter().any(|x| m.contains(&x.as_str())))
        })
        .map(|(f, m)| format!("{f}: {}", m.join(" ")))
        .collect();
    assert!(new.is_empty(), "import cycles:\n{}", new.join("\n"));
    assert!(
        gone.is_empty(),
        "cycles gone, remove them from KNOWN:\n{}",
        gone.join("\n")
    );
}

#[test]
fn the_reader_sees_paths_and_groups() {
    let used = used_modules(&code(
        "use crate::a::X;\nuse crate::{b, c::{D, e::F}, g::H};\nfn f() { crate::i::j(); } // crate::k\n#[cfg(test)]\nmod tests {\n use crate::l;\n}\n",
    ));
    let want: BTreeSet<String> = ["a", "b", "c", "g", "i"].map(String::from).into();
    assert_eq!(used, want);
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("a", &["b"][..]),
        ("b", &["c"][..]),
        ("c", &["a"][..]),
        ("d", &["a"][..]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
    .collect();
    assert_eq!(
        cycles(&g),
        vec![vec!["a".to_string(), "b".into(), "c".into()]]
    );
}
