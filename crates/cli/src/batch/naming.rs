//! Where each batch output goes: OUT_DIR plus the input's path relative to IN_DIR, or a
//! `--name` template of it. Every name is checked before any file is written, so two inputs
//! never write the same output and no output leaves OUT_DIR.

use std::path::{Component, Path, PathBuf};

/// The placeholders a template may use.
const FIELDS: [&str; 4] = ["dir", "stem", "ext", "sigma"];

/// A parsed `--name` template such as `{dir}/{stem}_blur.{ext}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameTemplate {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(String),
    Field(&'static str),
}

impl NameTemplate {
    /// Parses `text`: literal text and `{dir}`, `{stem}`, `{ext}`, `{sigma}`; `{{` and `}}` are
    /// literal braces. Refuses unknown fields, unbalanced braces, absolute paths and `..`.
    pub fn parse(text: &str) -> Result<NameTemplate, String> {
        if text.starts_with('/') {
            return Err(format!(
                "'{text}': outputs stay inside OUT_DIR: no absolute path and no '..'"
            ));
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    literal.push('}');
                }
                '{' => {
                    let name: String = chars.by_ref().take_while(|&c| c != '}').collect();
                    let field = FIELDS.iter().find(|f| **f == name).ok_or_else(|| {
                        format!(
                            "'{text}': unknown field {{{name}}} (the fields are {{dir}}, {{stem}}, \
                             {{ext}} and {{sigma}}; {{{{ and }}}} are literal braces)"
                        )
                    })?;
                    if !literal.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Field(field));
                }
                '}' => return Err(format!("'{text}': a '}}' without its '{{'")),
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        let template = NameTemplate { parts };
        if !template.parts.contains(&Part::Field("stem")) {
            return Err(format!(
                "'{text}': the name must contain {{stem}}, or every file of a folder would get \
                 the same name"
            ));
        }
        let probe = template.expand(Path::new("a/b.png"), "png", "1");
        if probe.is_absolute() || probe.components().any(|c| c == Component::ParentDir) {
            return Err(format!(
                "'{text}': outputs stay inside OUT_DIR: no absolute path and no '..'"
            ));
        }
        Ok(template)
    }

    /// The output path, relative to OUT_DIR, of `rel` (the input's path relative to IN_DIR)
    /// written with extension `ext`, blurred at `sigma`.
    pub fn expand(&self, rel: &Path, ext: &str, sigma: &str) -> PathBuf {
        let dir = rel.parent().unwrap_or(Path::new(""));
        let stem = rel.file_stem().unwrap_or_default().to_string_lossy();
        let mut name = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => name.push_str(t),
                Part::Field("dir") => name.push_str(&dir.to_string_lossy()),
                Part::Field("stem") => name.push_str(&stem),
                Part::Field("ext") => name.push_str(ext),
                Part::Field(_) => name.push_str(sigma),
            }
        }
        // `{dir}/...` for a file at the top of IN_DIR leaves a leading '/': the name is
        // relative to OUT_DIR all the same.
        PathBuf::from(name.trim_start_matches('/'))
    }
}

/// `{sigma}` as it reads in a name: `5`, `2.5`, or `8x2` where the axes differ.
pub fn sigma_text(sigma_x: f64, sigma_y: f64) -> String {
    if sigma_x == sigma_y {
        format!("{sigma_x}")
    } else {
        format!("{sigma_x}x{sigma_y}")
    }
}

/// The first pair of inputs in `outputs` (input, output) that would write the same output.
pub fn first_collision(outputs: &[(PathBuf, PathBuf)]) -> Option<(&Path, &Path, &Path)> {
    let mut seen = std::collections::HashMap::new();
    for (input, output) in outputs {
        if let Some(first) = seen.insert(output.as_path(), input.as_path()) {
            return Some((first, input.as_path(), output.as_path()));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_expand_their_fields() {
        let t = NameTemplate::parse("{dir}/{stem}_blur{sigma}.{ext}").unwrap();
        assert_eq!(
            t.expand(Path::new("a/b/c.jpeg"), "jpg", "2.5"),
            PathBuf::from("a/b/c_blur2.5.jpg")
        );
        assert_eq!(
            t.expand(Path::new("top.png"), "png", "5"),
            PathBuf::from("top_blur5.png")
        );
        let braces = NameTemplate::parse("{{{stem}}}.{ext}").unwrap();
        assert_eq!(
            braces.expand(Path::new("x.tif"), "tif", "1"),
            PathBuf::from("{x}.tif")
        );
        assert_eq!(sigma_text(3.0, 3.0), "3");
        assert_eq!(sigma_text(8.0, 2.0), "8x2");
    }

    #[test]
    fn bad_templates_are_refused_with_the_reason() {
        for (bad, says) in [
            ("{stem}.{extension}", "unknown field {extension}"),
            ("{stem}}.png", "without its"),
            ("blurred.{ext}", "must contain {stem}"),
            ("/tmp/{stem}.{ext}", "inside OUT_DIR"),
            ("../{stem}.{ext}", "inside OUT_DIR"),
            ("{dir}/../../{stem}.{ext}", "inside OUT_DIR"),
        ] {
            let err = NameTemplate::parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn collisions_name_both_inputs() {
        let o = |i: &str, o: &str| (PathBuf::from(i), PathBuf::from(o));
        let outputs = [
            o("a.png", "a.jpg"),
            o("b.png", "b.jpg"),
            o("a.tif", "a.jpg"),
        ];
        let (first, second, out) = first_collision(&outputs).unwrap();
        assert_eq!(
            (first, second, out),
            (Path::new("a.png"), Path::new("a.tif"), Path::new("a.jpg"))
        );
        assert!(first_collision(&outputs[..2]).is_none());
    }
}
