//! The OpenCL C sources bundled into the binary, and the kernel names Rust calls in them.

/// One `kernels/*.cl` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelSource {
    pub file: &'static str,
    pub text: &'static str,
}

pub const RECURSIVE: KernelSource = KernelSource {
    file: "recursive_gaussian.cl",
    text: include_str!("../../../kernels/recursive_gaussian.cl"),
};

pub const TRANSPOSE: KernelSource = KernelSource {
    file: "transpose.cl",
    text: include_str!("../../../kernels/transpose.cl"),
};

pub const CONVOLUTION: KernelSource = KernelSource {
    file: "convolution.cl",
    text: include_str!("../../../kernels/convolution.cl"),
};

pub const BLOCKS: KernelSource = KernelSource {
    file: "recursive_blocks.cl",
    text: include_str!("../../../kernels/recursive_blocks.cl"),
};

pub const EDGES: KernelSource = KernelSource {
    file: "edges.cl",
    text: include_str!("../../../kernels/edges.cl"),
};

pub const FINITE: KernelSource = KernelSource {
    file: "finite.cl",
    text: include_str!("../../../kernels/finite.cl"),
};

#[cfg(test)]
pub const ALL_SOURCES: [KernelSource; 6] =
    [RECURSIVE, TRANSPOSE, CONVOLUTION, BLOCKS, EDGES, FINITE];

/// Every (source, kernel) pair the Rust side enqueues.
#[cfg(test)]
pub const KERNELS: &[(KernelSource, &str)] = &[
    (RECURSIVE, "recursive_line"),
    (BLOCKS, "block_summary"),
    (BLOCKS, "block_carry"),
    (BLOCKS, "block_final"),
    (BLOCKS, "block_overlap"),
    (CONVOLUTION, "fir_x"),
    (CONVOLUTION, "fir_y"),
    (EDGES, "constant_edges"),
    (FINITE, "flag_non_finite"),
    (TRANSPOSE, "transpose_naive"),
    (TRANSPOSE, "transpose_local"),
    (TRANSPOSE, "transpose_skewed"),
    (TRANSPOSE, "transpose_padded"),
    (TRANSPOSE, "transpose_padded_skewed"),
    (TRANSPOSE, "transpose_tile32"),
    (TRANSPOSE, "transpose_tile32_skewed"),
];

/// Build options every program gets. No fast-math flags: the accuracy figures are for IEEE f32.
pub const BASE_OPTIONS: &str = "-cl-std=CL1.2";

/// The identifier at the start of `s`, after any whitespace.
#[cfg(any(test, feature = "unstable-internals"))]
pub fn ident(s: &str) -> &str {
    let s = s.trim_start();
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The kernels `text` defines: the name after `void` in each `__kernel` declaration or,
/// where the declaration is a macro's (`void NAME(`), the first argument of each line that
/// uses the macro. For the tests that hold the kernels' names to their sources.
#[cfg(any(test, feature = "unstable-internals"))]
pub fn kernels_in(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    for (at, _) in text.match_indices("__kernel") {
        let void = text[at..].find("void").expect("__kernel without void");
        let name = ident(&text[at + void + "void".len()..]);
        if !name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
            names.push(name);
            continue;
        }
        let define = text[..at]
            .rfind("#define ")
            .expect("a macro parameter outside a macro");
        let mac = ident(&text[define + "#define ".len()..]);
        for (line, _) in text.match_indices(&format!("\n{mac}(")) {
            names.push(ident(&text[line + mac.len() + 2..]));
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The kernel `name` from whichever source defines it.
    fn source_of(name: &str) -> Option<KernelSource> {
        ALL_SOURCES
            .into_iter()
            .find(|src| kernels_in(src.text).contains(&name))
    }

    /// Every Rust file under `dir`, with its text, read at test time so that new files count.
    fn rust_files(dir: &Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).expect("reading src/") {
            let path = entry.expect("reading src/").path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("reading a Rust file");
                out.push((path.display().to_string(), text));
            }
        }
    }

    /// Every product source under src/: the cross-module tests of src/tests/ call kernels
    /// that do not exist on purpose (a broken build's report).
    fn crate_sources() -> Vec<(String, String)> {
        let mut files = Vec::new();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        rust_files(&src, &mut files);
        let tests = src.join("tests");
        files.retain(|(file, _)| !Path::new(file).starts_with(&tests));
        assert!(!files.is_empty());
        files
    }

    /// The text between each pair of neighbouring quotes that is a bare identifier: every
    /// string literal such as `"block_final"` (the code between two literals is never one).
    fn identifier_literals(text: &str) -> impl Iterator<Item = &str> {
        text.split('"').filter(|s| {
            !s.is_empty() && ident(s) == *s && !s.starts_with(|c: char| c.is_ascii_digit())
        })
    }

    #[test]
    fn every_kernel_rust_calls_exists_in_its_source() {
        for (src, name) in KERNELS {
            assert!(
                kernels_in(src.text).contains(name),
                "{name} not in {}",
                src.file
            );
        }
    }

    #[test]
    fn sources_are_listed() {
        for (src, _) in KERNELS {
            assert!(ALL_SOURCES.contains(src));
        }
    }

    /// A kernel that Rust names anywhere under src/ (enqueued directly, through a match such as
    /// `TransposeKind::kernel_name`, or from a table) is in `KERNELS`, so the check above
    /// covers it.
    #[test]
    fn every_kernel_named_in_rust_is_listed() {
        for (file, text) in crate_sources() {
            for name in identifier_literals(&text) {
                if let Some(src) = source_of(name) {
                    assert!(
                        KERNELS.contains(&(src, name)),
                        "{file} names {name} of {}, which KERNELS lacks",
                        src.file
                    );
                }
            }
        }
    }

    /// A name written as a literal into a `ClContext::kernel` call is a kernel of some source:
    /// a misspelt one would otherwise pass the check above unseen.
    #[test]
    fn every_literal_kernel_call_names_a_kernel() {
        for (file, text) in crate_sources() {
            for (at, _) in text.match_indices(".kernel(") {
                let args = &text[at + ".kernel(".len()..];
                let source = ident(args);
                let rest = args.trim_start()[source.len()..].trim_start();
                let Some(rest) = rest.strip_prefix(',') else {
                    continue;
                };
                let Some(literal) = rest.trim_start().strip_prefix('"') else {
                    continue;
                };
                let name = &literal[..literal.find('"').expect("an unclosed literal")];
                assert!(
                    source_of(name).is_some(),
                    "{file} calls {name}, which no source defines"
                );
            }
        }
    }

    /// The list holds no kernel that Rust no longer names (outside the list itself).
    #[test]
    fn every_listed_kernel_is_named_in_rust() {
        let mut files = crate_sources();
        files.retain(|(file, _)| !file.ends_with("program.rs"));
        for (_, name) in KERNELS {
            assert!(
                files
                    .iter()
                    .any(|(_, text)| identifier_literals(text).any(|s| s == *name)),
                "{name} is listed but no Rust file names it"
            );
        }
    }
}
