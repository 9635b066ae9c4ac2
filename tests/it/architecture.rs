//! The source layout's rules, checked on the tree itself, in each of the workspace's crates
//! (the library in `src/`, the command in `crates/cli/src/`, the tutorial suite in
//! `crates/bench/src/`): no import cycle between the top-level modules of a crate or between
//! the files of one folder, no file over 800 lines, nothing below the command line that knows
//! clap, a library that carries neither the command line nor the tutorial suite, a library
//! root that exports the API alone, an API that neither prints, exits nor hands out `anyhow`
//! errors, and a command that uses that API alone.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 800;

/// The crates' source folders, from the workspace's root.
pub(crate) const CRATES: [&str; 3] = ["src", "crates/cli/src", "crates/bench/src"];

/// The workspace's root (this suite belongs to the `gblur-cli` package, in crates/cli).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `dir` (one crate's source folder, from the root), as (module path,
/// text): `src/job/plan.rs` is `["job", "plan"]`, `src/job/mod.rs` is `["job"]`.
pub(crate) fn crate_sources(dir: &str) -> Vec<(Vec<String>, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let src = root().join(dir);
    let mut files = Vec::new();
    walk(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let rel = path.strip_prefix(&src).unwrap().with_extension("");
            let mut module: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            (module, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

/// Every crate's sources (`crate_sources`), with the crate's folder.
fn all_sources() -> Vec<(&'static str, Vec<String>, String)> {
    CRATES
        .iter()
        .flat_map(|dir| {
            crate_sources(dir)
                .into_iter()
                .map(move |(m, t)| (*dir, m, t))
        })
        .collect()
}

/// The code of `text` without its comments (line comments and doc comments), so that a module
/// named in prose is no dependency.
fn code(text: &str) -> String {
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) if !line[..at].contains('"') => &line[..at],
            _ => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths `text` names as `crate::a::b::...` (every prefix: a name may be an item).
fn crate_paths(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &text[at + "crate::".len()..];
        // `crate::{a, b::c}`: each top-level name in the braces.
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            for name in inner.split(',') {
                let ident: String = name
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !ident.is_empty() {
                    out.push(vec![ident]);
                }
            }
            continue;
        }
        let mut path = Vec::new();
        for part in rest.split("::") {
            let ident: String = part
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if ident.is_empty() {
                break;
            }
            let whole = ident.len() == part.len();
            path.push(ident);
            if !whole {
                break;
            }
        }
        if !path.is_empty() {
            out.push(path);
        }
    }
    out
}

/// A cycle in `graph`, if there is one, as the nodes along it.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(node.into(), 1);
        stack.push(node.into());
        for next in graph.get(node).into_iter().flatten() {
            match state.get(next.as_str()) {
                Some(1) => {
                    let from = stack.iter().position(|n| n == next).unwrap();
                    let mut cycle = stack[from..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(next, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(node.into(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in graph.keys() {
        if !state.contains_key(node.as_str()) {
            if let Some(c) = visit(node, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn top_level_modules_import_no_cycle() {
    for dir in CRATES {
        top_level_modules_of_a_crate_import_no_cycle(dir);
    }
}

fn top_level_modules_of_a_crate_import_no_cycle(dir: &str) {
    let graph = top_level_graph(&crate_sources(dir));
    assert!(
        !graph.is_empty(),
        "{dir}: the scan found no dependency: {graph:?}"
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!("{dir}: import cycle between modules: {}", cycle.join(" → "));
    }
}

/// Which top-level module imports which, over `files` (one crate's `crate_sources`). A name the
/// crate's root re-exports (`crate::Gaussian`, from `pub use api::{Gaussian, ...}`) counts as
/// an import of the module it comes from.
fn top_level_graph(files: &[(Vec<String>, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let top: BTreeSet<String> = files
        .iter()
        .filter_map(|(m, _)| m.first().cloned())
        .filter(|m| m != "main" && m != "lib")
        .collect();
    let roots = files
        .iter()
        .filter(|(m, _)| m.len() == 1 && (m[0] == "lib" || m[0] == "main"));
    let reexported: BTreeMap<String, String> = roots
        .flat_map(|(_, text)| root_reexports(&code(text)))
        .filter(|(_, module)| top.contains(module))
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in files {
        let Some(from) = module.first().filter(|m| top.contains(*m)) else {
            continue;
        };
        for path in crate_paths(&code(text)) {
            let to = match top.contains(&path[0]) {
                true => &path[0],
                false => match reexported.get(&path[0]) {
                    Some(module) => module,
                    None => continue,
                },
            };
            if to != from {
                graph.entry(from.clone()).or_default().insert(to.clone());
            }
        }
    }
    graph
}

/// The names a crate root's `pub use module::{a, b};` / `pub use module::a;` lines re-export,
/// each with the top-level module it comes from.
fn root_reexports(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("pub use ") {
        let rest = &text[at + "pub use ".len()..];
        let statement = &rest[..rest.find(';').unwrap_or(rest.len())];
        let Some((module, names)) = statement.split_once("::") else {
            continue;
        };
        let names = names.trim().trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            // `a::b` re-exports b; `a as b` re-exports b.
            let name = name.trim().rsplit("::").next().unwrap_or("");
            let name = name.rsplit(" as ").next().unwrap_or("").trim();
            if !name.is_empty() && name != "*" && name != "self" {
                out.push((name.to_string(), module.trim().to_string()));
            }
        }
    }
    out
}

#[test]
fn the_files_of_a_folder_import_no_cycle() {
    for dir in CRATES {
        the_files_of_a_folder_of_a_crate_import_no_cycle(dir);
    }
}

fn the_files_of_a_folder_of_a_crate_import_no_cycle(dir: &str) {
    let files = crate_sources(dir);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(m, _)| m.clone()).collect();
    // Edges between siblings: files of one folder other than its mod.rs.
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in &files {
        if module.len() < 2 {
            continue;
        }
        let parent = &module[..module.len() - 1];
        let text = code(text);
        let mut named = crate_paths(&text);
        // `super::x` from a file of a folder names its sibling x.
        for (at, _) in text.match_indices("super::") {
            let ident: String = text[at + "super::".len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let mut path = parent.to_vec();
            path.push(ident);
            named.push(path);
        }
        for path in named {
            let sibling = path.len() > parent.len()
                && path[..parent.len()] == *parent
                && path[parent.len()] != module[parent.len()]
                && modules.contains(&path[..parent.len() + 1]);
            if sibling {
                graph
                    .entry(module.join("::"))
                    .or_default()
                    .insert(path[..parent.len() + 1].join("::"));
            }
        }
    }
    if let Some(cycle) = find_cycle(&graph) {
        panic!("{dir}: import cycle inside a folder: {}", cycle.join(" → "));
    }
}

#[test]
fn no_source_or_test_file_is_over_800_lines() {
    let tests = crate_sources("tests")
        .into_iter()
        .map(|(m, t)| ("tests", m, t));
    let long: Vec<String> = all_sources()
        .into_iter()
        .chain(tests)
        .filter(|(_, _, text)| text.lines().count() > MAX_LINES)
        .map(|(dir, m, text)| format!("{dir}: {} ({} lines)", m.join("::"), text.lines().count()))
        .collect();
    assert!(long.is_empty(), "split these files: {long:?}");
}

#[test]
fn only_the_command_line_layer_knows_clap() {
    let knowing: Vec<String> = all_sources()
        .iter()
        .filter(|(dir, m, _)| !(*dir == "crates/cli/src" && (m[0] == "cli" || m[0] == "main")))
        .filter(|(_, _, text)| code(text).contains("clap::"))
        .map(|(dir, m, _)| format!("{dir}: {}", m.join("::")))
        .collect();
    assert!(knowing.is_empty(), "clap used below cli: {knowing:?}");
}

/// The library's package names none of the command line's or the tutorial suite's
/// dependencies, bundles none of the suite's kernels or its font, and its code names neither
/// crate.
#[test]
fn the_library_carries_neither_the_command_line_nor_the_tutorial_suite() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let start = manifest.find("\n[dependencies]").expect("[dependencies]");
    let deps = &manifest[start + 1..];
    let deps = &deps[..deps[1..].find("\n[").map_or(deps.len(), |e| e + 1)];
    for name in [
        "clap",
        "clap_complete",
        "clap_mangen",
        "fast-glob",
        "ctrlc",
        "csv",
        "plotters",
    ] {
        assert!(
            !deps.lines().any(|l| l.starts_with(&format!("{name} ="))),
            "the library depends on {name}"
        );
    }
    for file in [
        "kernels/matmul.cl",
        "kernels/reduce.cl",
        "kernels/copy.cl",
        "assets",
    ] {
        assert!(
            !root().join(file).exists(),
            "{file} is the tutorial suite's"
        );
    }
    for (_, m, text) in all_sources().iter().filter(|(dir, _, _)| *dir == "src") {
        let code = code(text);
        assert!(
            !code.contains("gblur_bench") && !code.contains("gblur_cli"),
            "{}",
            m.join("::")
        );
    }
}

/// Everything `src/lib.rs` makes public: the API (`src/api/`), the edge modes and methods;
/// the internal modules are `pub(crate)` (public only under the `unstable-internals` feature,
/// for the tutorial suite, the fuzz targets and the benchmark programs).
#[test]
fn the_library_root_exports_the_api_alone() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let code = code(&lib);
    let mut public: Vec<String> = Vec::new();
    // An internal module is public only under `unstable-internals`, hidden from the docs.
    let internal = "#[cfg(feature = \"unstable-internals\")]\n#[doc(hidden)]\n";
    let mut internals = 0;
    for (at, _) in code.match_indices("pub ") {
        let before = &code[..at];
        if before.ends_with("(crate) ") || !before.ends_with(|c: char| c.is_whitespace()) {
            continue;
        }
        let item: String = code[at..]
            .chars()
            .take_while(|&c| c != '{' && c != ';')
            .collect();
        let item = item.split_whitespace().collect::<Vec<_>>().join(" ");
        if item.starts_with("pub mod ") && before.ends_with(internal) {
            internals += 1;
            continue;
        }
        public.push(item);
    }
    let allowed = |item: &str| item.starts_with("pub use api::") || item == "pub use filter::";
    let others: Vec<&String> = public.iter().filter(|i| !allowed(i)).collect();
    assert!(
        public.len() >= 2 && internals >= 10,
        "the scan found {public:?} and {internals} internal modules"
    );
    assert!(
        others.is_empty(),
        "src/lib.rs exports more than the API: {others:?}"
    );
}

#[test]
fn the_api_never_prints_exits_or_returns_anyhow() {
    for (m, text) in crate_sources("src").iter().filter(|(m, _)| m[0] == "api") {
        let code = code(text);
        for banned in [
            "println!",
            "eprintln!",
            "process::exit",
            "anyhow::Result",
            "-> anyhow::",
        ] {
            assert!(
                !code.contains(banned),
                "api::{} uses {banned}",
                m.join("::")
            );
        }
    }
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.into(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        find_cycle(&graph).map(|c| c.len()),
        Some(4),
        "a → b → c → a"
    );
    let text = "use crate::batch::run::{x};\nlet y = crate::job::run(); // crate::bench\n\
                use crate::{cpu, gpu::pipeline};";
    let paths = crate_paths(&code(text));
    assert_eq!(paths.len(), 4, "{paths:?}");
    assert_eq!(paths[0], ["batch", "run"]);
    assert_eq!(paths[3], ["gpu"]);
}

#[test]
fn a_name_the_root_re_exports_is_an_import_of_its_module() {
    let file = |m: &str, t: &str| (vec![m.to_string()], t.to_string());
    let files = [
        file(
            "lib",
            "mod api;\npub use api::{\n    run, Gaussian as G,\n};\npub use filter::Mode;",
        ),
        file("api", "pub fn run() { crate::job::go() }"),
        file("job", "use crate::G;\npub fn go() {}"),
        file("filter", "pub enum Mode {}"),
    ];
    let graph = top_level_graph(&files);
    assert_eq!(
        graph["job"],
        BTreeSet::from(["api".to_string()]),
        "{graph:?}"
    );
    assert!(find_cycle(&graph).is_some(), "api → job → api: {graph:?}");
}

/// The names `src/lib.rs` makes public: those its `pub use` lines list.
fn public_root_names(lib: &str) -> BTreeSet<String> {
    let code = code(lib);
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("pub use ") {
        let rest = &code[at..];
        let item = &rest[..rest.find(';').unwrap_or(rest.len())];
        let listed = match item.find('{') {
            Some(open) => &item[open + 1..item.rfind('}').unwrap_or(item.len())],
            None => &item[item.rfind("::").map_or(0, |c| c + 2)..],
        };
        for name in listed.split(',') {
            // `a as b` makes `b` public.
            let name = name.split(" as ").last().unwrap_or("").trim();
            if !name.is_empty() {
                names.insert(name.to_string());
            }
        }
    }
    names
}

/// The first name after each `gblur::` in `code` (each top-level name of a `gblur::{a, b::{c,
/// d}}` group).
fn library_names(code: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = Vec::new();
    for (at, _) in code.match_indices("gblur::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &code[at + "gblur::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            out.push(ident(rest));
            continue;
        };
        // The names at the group's own depth: each after its opening brace or a comma there.
        let (mut depth, mut start) = (0usize, 0usize);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.push(ident(&group[start..i]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(ident(&group[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
    }
    out.retain(|n| !n.is_empty());
    out
}

/// The command is a user of the library: every `gblur::` path in `crates/cli/src` starts with
/// a name the library's root makes public, and the command's manifest does not turn on
/// `unstable-internals` (`gblur bench` reaches them through the `gblur-bench` crate alone).
/// `cargo check -p gblur-cli --no-default-features` builds the command without them.
#[test]
fn the_command_uses_the_public_api_alone() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let public = public_root_names(&lib);
    assert!(
        ["command", "blur_file", "nd", "Gaussian", "EdgeMode"]
            .iter()
            .all(|n| public.contains(*n)),
        "the scan of src/lib.rs found {public:?}"
    );
    let mut internal = Vec::new();
    for (m, text) in crate_sources("crates/cli/src") {
        for name in library_names(&code(&text)) {
            if !public.contains(&name) {
                internal.push(format!("{}: gblur::{name}", m.join("::")));
            }
        }
    }
    assert!(
        internal.is_empty(),
        "the command names the library's internals: {internal:?}"
    );
    // Anywhere in the manifest but its comments: a dependency's features, a table of its own,
    // a feature of the command's that names `gblur/unstable-internals`.
    let manifest = std::fs::read_to_string(root().join("crates/cli/Cargo.toml")).unwrap();
    let enabling: Vec<&str> = manifest
        .lines()
        .map(|l| l.split('#').next().unwrap_or(""))
        .filter(|l| l.contains("unstable-internals"))
        .collect();
    assert!(enabling.is_empty(), "crates/cli/Cargo.toml: {enabling:?}");
}

#[test]
fn the_public_api_check_sees_an_internal_path() {
    let lib = "pub use api::{\n    blur_file, command,\n    Gaussian as G,\n};\npub use filter::EdgeMode;";
    let public = public_root_names(lib);
    assert_eq!(
        public,
        BTreeSet::from(["blur_file", "command", "G", "EdgeMode"].map(String::from))
    );
    let text = "use gblur::command::job::BlurJob;\nuse gblur::{G, EdgeMode};\n\
                let r = gblur::job::run(&j); // gblur::report\nlet x = ungblur::y;\n\
                use gblur::{command::{job, stages::{a, b}}, work::load};";
    let names = library_names(&code(text));
    assert_eq!(
        names,
        ["command", "G", "EdgeMode", "job", "command", "work"]
    );
    assert!(
        names.iter().any(|n| !public.contains(n)),
        "gblur::job is internal"
    );
}
