//! Which files under IN_DIR a batch takes: `--include` and `--exclude` globs and `--max-depth`,
//! as fd and ripgrep filter. A glob with a `/` is matched against the path relative to IN_DIR
//! (`trip/**/*.jpg`); one without is matched against the name alone, at any depth (`*.jpg`,
//! `thumbnails`). `--exclude` wins over `--include`, and an excluded folder is not walked.

use std::path::Path;

/// The checked filter; the default takes every file.
#[derive(Clone, Debug, Default)]
pub struct PathFilter {
    include: Option<Globs>,
    exclude: Option<Globs>,
    /// Files deeper than this many folders below IN_DIR are not taken (1: IN_DIR's own files).
    pub max_depth: Option<usize>,
}

/// Globs split by what they match: the whole relative path, or the name alone. `*` stays
/// within one folder, as in a shell; `**` crosses folders; `{a,b}` and `[a-z]` as in globset.
#[derive(Clone, Debug)]
struct Globs {
    paths: Vec<String>,
    names: Vec<String>,
    patterns: Vec<String>,
}

impl Globs {
    fn new(patterns: &[String], flag: &str) -> Result<Option<Globs>, String> {
        if patterns.is_empty() {
            return Ok(None);
        }
        let (mut paths, mut names) = (Vec::new(), Vec::new());
        for p in patterns {
            fast_glob::validate(p).map_err(|e| format!("{flag} '{p}': {e}"))?;
            // A leading `!` is a file name's, as in a shell, not a negation.
            let glob = match p.starts_with('!') {
                true => format!("\\{p}"),
                false => p.clone(),
            };
            match p.contains('/') {
                true => paths.push(glob.trim_start_matches("./").to_string()),
                false => names.push(glob),
            }
        }
        Ok(Some(Globs {
            paths,
            names,
            patterns: patterns.to_vec(),
        }))
    }

    fn matches(&self, rel: &Path) -> bool {
        let any =
            |globs: &[String], what: &[u8]| globs.iter().any(|g| fast_glob::glob_match(g, what));
        let name_matches = rel
            .file_name()
            .is_some_and(|n| any(&self.names, n.as_encoded_bytes()));
        name_matches || any(&self.paths, rel.as_os_str().as_encoded_bytes())
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
    fn braces_classes_and_a_leading_bang_match_as_in_a_shell() {
        let f = filter(&["*.{jpg,png}", "shot[0-9].tif", "!draft.png"], &[]);
        assert!(f.takes(Path::new("a.jpg")) && f.takes(Path::new("x/b.png")));
        assert!(f.takes(Path::new("shot7.tif")) && !f.takes(Path::new("shotA.tif")));
        assert!(f.takes(Path::new("!draft.png")) && !f.takes(Path::new("c.webp")));
    }

    #[test]
    fn a_bad_glob_is_named() {
        let e = PathFilter::new(&["a[".into()], &[], None).unwrap_err();
        assert!(
            e.starts_with("--include 'a[': unclosed character class"),
            "{e}"
        );
        let e = PathFilter::new(&[], &["*.{jpg".into()], None).unwrap_err();
        assert!(e.starts_with("--exclude '*.{jpg': unclosed brace"), "{e}");
    }
}
