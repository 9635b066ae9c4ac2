//! Which files under IN_DIR a batch takes: `--include` and `--exclude` globs and `--max-depth`,
//! as fd and ripgrep filter. A glob with a `/` is matched against the path relative to IN_DIR
//! (`trip/**/*.jpg`); one without is matched against the name alone, at any depth (`*.jpg`,
//! `thumbnails`). `--exclude` wins over `--include`, and an excluded folder is not walked.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use std::path::Path;

/// The checked filter; the default takes every file.
#[derive(Clone, Debug, Default)]
pub struct PathFilter {
    include: Option<Globs>,
    exclude: Option<Globs>,
    /// Files deeper than this many folders below IN_DIR are not taken (1: IN_DIR's own files).
    pub max_depth: Option<usize>,
}

/// Globs split by what they match: the whole relative path, or the name alone.
#[derive(Clone, Debug)]
struct Globs {
    paths: GlobSet,
    names: GlobSet,
    patterns: Vec<String>,
}

impl Globs {
    fn new(patterns: &[String], flag: &str) -> Result<Option<Globs>, String> {
        if patterns.is_empty() {
            return Ok(None);
        }
        let (mut paths, mut names) = (GlobSetBuilder::new(), GlobSetBuilder::new());
        for p in patterns {
            let bad = |e: globset::Error| format!("{flag} '{p}': {}", e.kind());
            if p.contains('/') {
                // `*` stays within one folder, as in a shell; `**` crosses folders.
                let glob = GlobBuilder::new(p.trim_start_matches("./"))
                    .literal_separator(true)
                    .build();
                paths.add(glob.map_err(bad)?);
            } else {
                names.add(Glob::new(p).map_err(bad)?);
            }
        }
        let build = |b: GlobSetBuilder| b.build().map_err(|e| format!("{flag}: {e}"));
        Ok(Some(Globs {
            paths: build(paths)?,
            names: build(names)?,
            patterns: patterns.to_vec(),
        }))
    }

    fn matches(&self, rel: &Path) -> bool {
        let name_matches = rel.file_name().is_some_and(|n| self.names.is_match(n));
        name_matches || self.paths.is_match(rel)
    }
}

impl PathFilter {
    /// The filter for these `--include` and `--exclude` globs and `--max-depth`; a glob that does
    /// not parse is a usage error naming it.
    pub fn new(
        include: &[String],
        exclude: &[String],
        max_depth: Option<usize>,
    ) -> Result<PathFilter, String> {
        Ok(PathFilter {
            include: Globs::new(include, "--include")?,
            exclude: Globs::new(exclude, "--exclude")?,
            max_depth,
        })
    }

    /// Whether the walk enters the folder `rel` (relative to IN_DIR).
    pub fn enters(&self, rel: &Path) -> bool {
        !self.exclude.as_ref().is_some_and(|g| g.matches(rel))
    }

    /// Whether the file `rel` (relative to IN_DIR) is taken.
    pub fn takes(&self, rel: &Path) -> bool {
        self.enters(rel) && self.include.as_ref().is_none_or(|g| g.matches(rel))
    }

    /// The filter in words, for a report (None: it takes every file).
    pub fn describe(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let Some(g) = &self.include {
            parts.push(format!("including {}", g.patterns.join(", ")));
        }
        if let Some(g) = &self.exclude {
            parts.push(format!("excluding {}", g.patterns.join(", ")));
        }
        if let Some(d) = self.max_depth {
            parts.push(format!("--max-depth {d}"));
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(include: &[&str], exclude: &[&str]) -> PathFilter {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        PathFilter::new(&owned(include), &owned(exclude), None).unwrap()
    }

    #[test]
    fn names_match_at_any_depth_and_paths_from_the_root() {
        let f = filter(&["*.jpg", "raw/**/*.png"], &["thumbs", "*_small.*"]);
        assert!(f.takes(Path::new("a.jpg")) && f.takes(Path::new("trip/day2/a.jpg")));
        assert!(f.takes(Path::new("raw/x/y.png")) && f.takes(Path::new("raw/y.png")));
        assert!(
            !f.takes(Path::new("trip/y.png")),
            "a path glob is anchored at IN_DIR"
        );
        assert!(!f.takes(Path::new("a_small.jpg")), "exclude wins");
        assert!(!f.enters(Path::new("trip/thumbs")) && f.enters(Path::new("trip")));
        let stars = filter(&["trip/*.jpg"], &[]);
        assert!(stars.takes(Path::new("trip/a.jpg")));
        assert!(
            !stars.takes(Path::new("trip/day2/a.jpg")),
            "* stays in one folder"
        );
        assert!(filter(&[], &[]).takes(Path::new("any/thing.txt")));
    }

    #[test]
    fn a_bad_glob_is_named() {
        let e = PathFilter::new(&["a[".into()], &[], None).unwrap_err();
        assert!(e.starts_with("--include 'a['"), "{e}");
    }
}
