//! Function length: product code's functions stay within 60 lines, but for those listed in
//! `long_functions.txt` with their reason, and none passes 100. A function over 60 lines that is
//! not listed, or listed and no longer over 60, fails: the list only shrinks.

use crate::architecture::{crate_sources, CRATES};
use std::collections::BTreeSet;

/// The listed functions: (file, function, why).
fn long_functions() -> Vec<(&'static str, &'static str, &'static str)> {
    include_str!("long_functions.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (file, rest) = l.split_once(' ').expect("FILE FUNCTION: WHY");
            let (name, why) = rest.split_once(": ").expect("FILE FUNCTION: WHY");
            (file, name, why)
        })
        .collect()
}

/// Lines a function may have without a place in `long_functions.txt`, and that none may pass.
const FUNCTION_LINES: (usize, usize) = (60, 100);

/// Every function (or method) in `text` with its name and its length in lines, from its `fn`
/// line to its closing brace; a declaration without a body is none.
fn functions(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = fn_name(line) else {
            continue;
        };
        let mut depth = 0i32;
        let mut opened = false;
        for (j, line) in lines.iter().enumerate().skip(i) {
            let code = strip_literals(line);
            for c in code.chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    _ => {}
                }
            }
            if opened && depth <= 0 {
                out.push((name.clone(), j - i + 1));
                break;
            }
            if !opened && code.trim_end().ends_with(';') {
                break;
            }
        }
    }
    out
}

/// The name of the function `line` starts, if it starts one.
fn fn_name(line: &str) -> Option<String> {
    let mut rest = line.trim_start();
    if rest.starts_with("//") {
        return None;
    }
    loop {
        let before = rest;
        for prefix in [
            "pub(crate) ",
            "pub(super) ",
            "pub ",
            "const ",
            "async ",
            "unsafe ",
            "extern \"C\" ",
        ] {
            rest = rest.strip_prefix(prefix).unwrap_or(rest);
        }
        if rest == before {
            break;
        }
    }
    let name: String = rest
        .strip_prefix("fn ")?
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// `line` without its comment and with its string and character literals emptied, so that
/// the braces left are code's.
fn strip_literals(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\'' => {
                // A character literal ('x', '\n', '{'), or a lifetime ('a), which stays.
                let mut ahead = chars.clone();
                let literal = match ahead.next() {
                    Some('\\') => true,
                    Some(_) => ahead.next() == Some('\''),
                    None => false,
                };
                if literal {
                    for c in chars.by_ref() {
                        if c == '\'' {
                            break;
                        }
                    }
                    // '\'' closes after its escape: skip to the real end.
                }
            }
            _ => out.push(c),
        }
    }
    out
}

#[test]
fn functions_stay_short() {
    let (most, never) = FUNCTION_LINES;
    let listed = long_functions();
    let mut unlisted = Vec::new();
    let mut too_long = Vec::new();
    let mut listed_long = BTreeSet::new();
    for dir in CRATES {
        for (module, text) in crate_sources(dir) {
            if module.contains(&"tests".to_string()) {
                continue;
            }
            let file = format!("{dir}/{}.rs", module.join("/"));
            // The product code: a file's test module is its last item.
            let product = text
                .split("\n#[cfg(test)]\nmod tests {")
                .next()
                .unwrap_or("");
            for (name, lines) in functions(product) {
                let at = format!("{dir}: {} fn {name} ({lines} lines)", module.join("::"));
                if lines > never {
                    too_long.push(at.clone());
                }
                if lines <= most {
                    continue;
                }
                match listed
                    .iter()
                    .find(|(f, n, _)| file_is(&file, f) && *n == name)
                {
                    Some(entry) => {
                        listed_long.insert(*entry);
                    }
                    None => unlisted.push(at),
                }
            }
        }
    }
    assert!(
        too_long.is_empty(),
        "over {never} lines: split {too_long:#?}"
    );
    assert!(
        unlisted.is_empty(),
        "over {most} lines: split {unlisted:#?}"
    );
    let shorter: Vec<_> = listed
        .iter()
        .filter(|e| !listed_long.contains(*e))
        .collect();
    assert!(
        shorter.is_empty(),
        "no longer over {most} lines: take off long_functions.txt: {shorter:?}"
    );
}

/// Whether `file` (a crate's folder and module path) is the listed `path`, where a module's
/// folder file is `mod.rs`.
fn file_is(file: &str, path: &str) -> bool {
    file == path || file.replace(".rs", "/mod.rs") == path
}

#[test]
fn the_function_finder_measures_bodies_and_skips_literals() {
    let text = "pub(crate) fn a() {\n    let s = \"}\";\n    let c = '{';\n}\n\
                fn b<'a>(x: &'a str) -> &'a str { x }\n    fn c();\n// fn d() {}\n";
    assert_eq!(
        functions(text),
        [("a".to_string(), 4), ("b".to_string(), 1)]
    );
}
