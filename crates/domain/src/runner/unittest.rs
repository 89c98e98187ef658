//! Running one unittest failure alone: a test by its id, or a module that
//! did not import by the names of the command that load it.

use super::{UNITTEST_OPTIONS, keep_options, unittest_failed_import};

/// `discover`'s options whose value is the next argument.
const DISCOVER_WITH_VALUE: &[&str] = &[
    "-s",
    "--start-directory",
    "-p",
    "--pattern",
    "-t",
    "--top-level-directory",
];

/// The argv (`python -m unittest …`) that runs only `test_id`.
pub(super) fn isolate(argv: &[String], test_id: &str) -> Option<Vec<String>> {
    let program = argv.get(..3)?.to_vec();
    let rest = &argv[3..];
    if rest.iter().any(|a| a == "discover") {
        return discover(program, rest, test_id);
    }
    let mut out = program;
    out.extend(keep_options(rest, &UNITTEST_OPTIONS));
    match unittest_failed_import(test_id) {
        Some(module) => out.extend(loading(&names(rest), module)),
        None => out.push(test_id.to_string()),
    }
    Some(out)
}

/// The names (positional arguments) of a non-`discover` command.
fn names(args: &[String]) -> Vec<String> {
    let mut names = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg.starts_with('-') {
            let takes_value = UNITTEST_OPTIONS.with_value.contains(&arg.as_str())
                || UNITTEST_OPTIONS.selecting.contains(&arg.as_str());
            if takes_value {
                iter.next();
            }
        } else {
            names.push(arg.clone());
        }
    }
    names
}

/// The command's names that load `module` (the module unittest could not
/// import: the whole dotted name under discovery, else the part of a name
/// after the package that did import), or the module itself when none does.
///
/// Loading `tests.test_more.FirstTests` imports `tests.test_more` first, so
/// re-running that name fails the same way while the module does not import
/// and runs the tests the command chose once it does.
fn loading(names: &[String], module: &str) -> Vec<String> {
    let wanted: Vec<&str> = module.split('.').collect();
    let chosen: Vec<String> = names
        .iter()
        .filter(|name| {
            let parts = dotted(name);
            parts.windows(wanted.len()).any(|w| w == wanted.as_slice())
        })
        .cloned()
        .collect();
    if chosen.is_empty() {
        vec![module.to_string()]
    } else {
        chosen
    }
}

/// A name's dotted parts; a path (`tests/test_more.py`) is the module it names.
fn dotted(name: &str) -> Vec<&str> {
    let name = name.strip_suffix(".py").unwrap_or(name);
    name.split(['.', '/']).filter(|p| !p.is_empty()).collect()
}

/// `discover` from the working directory names the test or module (its ids
/// are importable there); elsewhere it keeps where it looks (start and
/// top-level directories), the pattern becomes the module's file, and a
/// test is chosen with `-k` (a leading `*`: the id matches at its end).
fn discover(mut out: Vec<String>, rest: &[String], test_id: &str) -> Option<Vec<String>> {
    let mut options = Vec::new();
    let mut start: Option<String> = None;
    let mut top: Option<String> = None;
    let mut pattern: Option<String> = None;
    let mut positional = Vec::new();
    let mut iter = rest.iter();
    while let Some(arg) = iter.next() {
        let (name, attached) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        if DISCOVER_WITH_VALUE.contains(&name) {
            let value = attached.or_else(|| iter.next().cloned())?;
            match name {
                "-s" | "--start-directory" => start = Some(value),
                "-t" | "--top-level-directory" => top = Some(value),
                _ => pattern = Some(value),
            }
        } else if name == "-k" {
            // The command's own selection gives way to the one test.
            iter.next();
        } else if arg.starts_with('-') {
            let attached_k = arg.starts_with("-k") && !arg.starts_with("--");
            if !attached_k {
                options.push(arg.clone());
                if UNITTEST_OPTIONS.with_value.contains(&arg.as_str()) {
                    options.extend(iter.next().cloned());
                }
            }
        } else if arg != "discover" {
            positional.push(arg.clone());
        }
    }
    // `discover [start [pattern [top]]]`, when not given as options.
    let mut positional = positional.into_iter();
    start = start.or_else(|| positional.next());
    pattern = pattern.or_else(|| positional.next());
    top = top.or_else(|| positional.next());

    if start.is_none() && top.is_none() {
        // Discovery from the working directory: ids are importable names.
        out.extend(options);
        out.push(
            unittest_failed_import(test_id)
                .unwrap_or(test_id)
                .to_string(),
        );
        return Some(out);
    }
    out.push("discover".to_string());
    out.extend(options);
    if let Some(s) = start {
        out.extend(["-s".to_string(), s]);
    }
    if let Some(t) = top {
        out.extend(["-t".to_string(), t]);
    }
    match unittest_failed_import(test_id) {
        Some(module) => {
            let file = module.rsplit('.').next().unwrap_or(module);
            out.extend(["-p".to_string(), format!("{file}.py")]);
        }
        None => {
            // `module.Class.test`: the module's file narrows what is imported.
            let parts: Vec<&str> = test_id.split('.').collect();
            match parts.len().checked_sub(3).map(|i| parts[i]) {
                Some(file) => out.extend(["-p".to_string(), format!("{file}.py")]),
                None => out.extend(pattern.map(|p| ["-p".to_string(), p]).into_iter().flatten()),
            }
            out.extend(["-k".to_string(), format!("*{test_id}")]);
        }
    }
    Some(out)
}
