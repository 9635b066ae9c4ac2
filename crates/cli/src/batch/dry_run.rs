//! `gblur batch --dry-run`: the batch's plan, file by file (what would be written, redone or
//! skipped, and why), with nothing created, written or opened on a device.

use super::journal::Journal;
use super::made_with::{self, SettingsLog};
use super::names;
use super::plan;
use super::summary::{FileRecord, Outcome};
use super::BatchJob;
use gblur::command::job::JobError;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What the batch would do with one file.
#[derive(Debug, Serialize)]
pub struct Planned {
    pub input: String,
    /// Empty where no output is planned (not an image, a link).
    pub output: String,
    /// `write`, `redo` (replaces an output made with other settings), `skip` or `fail`.
    pub action: &'static str,
    /// Why it is skipped, redone or would fail; empty for a plain write.
    pub reason: String,
}

/// The whole plan, as `--json` prints it.
#[derive(Debug, Serialize)]
pub struct DryRun {
    pub dry_run: bool,
    pub write: usize,
    pub redo: usize,
    pub skip: usize,
    pub fail: usize,
    /// Which files `--include`, `--exclude` and `--max-depth` take, in words.
    pub filter: Option<String>,
    pub files: Vec<Planned>,
}

/// The folders as the batch would use them: OUT_DIR need not exist yet.
fn folders(job: &BatchJob) -> anyhow::Result<(PathBuf, PathBuf)> {
    let (in_dir, out_dir) = (&job.blur.input, &job.blur.output);
    anyhow::ensure!(in_dir.is_dir(), "{}: not a folder", in_dir.display());
    let in_dir = in_dir.canonicalize()?;
    let out_dir = match out_dir.canonicalize() {
        Ok(dir) => dir,
        Err(_) => std::path::absolute(out_dir)?,
    };
    plan::check_folders(job, (&in_dir, &out_dir))?;
    Ok((in_dir, out_dir))
}

/// What the batch does with a file its plan set aside (`r`: skipped, or failed already),
/// its input shown by `shown`.
fn skipped_file(r: FileRecord, shown: &impl Fn(&str) -> String) -> Planned {
    let (action, why) = match r.outcome {
        Outcome::Failed => ("fail", r.error.clone().unwrap_or_default()),
        Outcome::SkippedExisting => ("skip", "its output exists".into()),
        Outcome::SkippedStale => (
            "skip",
            "its output exists but is stale (--skip-existing keeps it)".into(),
        ),
        Outcome::SkippedNotImage => ("skip", "not an image".into()),
        Outcome::SkippedLink => ("skip", "symbolic link".into()),
        Outcome::Blurred => ("write", String::new()),
    };
    let reason = r.notes.first().cloned().unwrap_or(why);
    Planned {
        input: shown(&r.input),
        output: r.output,
        action,
        reason,
    }
}

/// Plans the batch and returns what it would do with every file.
pub fn plan(job: &BatchJob) -> Result<DryRun, JobError> {
    let setup = |e: anyhow::Error| JobError::Setup(e);
    let (in_dir, out_dir) = folders(job).map_err(setup)?;
    if job.name.is_some() || job.format.is_some() {
        plan::check_names(job, &in_dir, &out_dir).map_err(|e| setup(anyhow::anyhow!(e)))?;
    }
    let shard = job.shard.unwrap_or((1, 1));
    let journal = match job.in_place {
        true => Some(Journal::read(&in_dir, shard).map_err(|e| setup(e.into()))?),
        false => None,
    };
    let made = match (job.in_place, out_dir.is_dir()) {
        (false, true) => {
            let log = SettingsLog::open(&out_dir, shard, made_with::fingerprint(job));
            Some(log.map_err(|e| setup(e.into()))?)
        }
        _ => None,
    };
    let (tasks, skipped) = plan::plan(job, (&in_dir, &out_dir), journal.as_ref(), made.as_ref());
    let shown = |path: &str| shorter(path, &in_dir);
    let mut files: Vec<Planned> = tasks
        .iter()
        .map(|t| Planned {
            input: shown(&names::escape(&t.input)),
            output: names::escape(&t.output),
            action: if t.replaces_stale { "redo" } else { "write" },
            reason: match t.replaces_stale {
                true => {
                    "its output is stale: made with other settings or from an input changed since"
                        .into()
                }
                false => String::new(),
            },
        })
        .collect();
    files.extend(skipped.into_iter().map(|r| skipped_file(r, &shown)));
    files.sort_by(|a, b| a.input.cmp(&b.input));
    let count = |action: &str| files.iter().filter(|f| f.action == action).count();
    Ok(DryRun {
        dry_run: true,
        write: count("write"),
        redo: count("redo"),
        skip: count("skip"),
        fail: count("fail"),
        filter: job.filter.describe(),
        files,
    })
}

/// `path` (an escaped record path) relative to IN_DIR, where it lies inside.
fn shorter(path: &str, in_dir: &Path) -> String {
    let prefix = format!("{}/", names::escape(in_dir));
    path.strip_prefix(&prefix).unwrap_or(path).to_string()
}

impl DryRun {
    /// The plan as a table: a line per file, then the counts.
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        for f in &self.files {
            let _ = write!(s, "{:<6} {}", f.action, f.input);
            if !f.output.is_empty() && matches!(f.action, "write" | "redo") {
                let _ = write!(s, " → {}", f.output);
            }
            if !f.reason.is_empty() {
                let _ = write!(s, " ({})", f.reason);
            }
            let _ = writeln!(s);
        }
        if let Some(filter) = &self.filter {
            let _ = writeln!(s, "filter {filter}");
        }
        let _ = writeln!(
            s,
            "dry run: {} to write, {} to redo, {} to skip, {} would fail; nothing was written",
            self.write, self.redo, self.skip, self.fail
        );
        s
    }
}

/// Prints the plan: the table on stdout (it is the command's answer), or JSON with `--json`.
pub fn emit(plan: &DryRun, json: bool) -> Result<(), JobError> {
    let text = match json {
        true => serde_json::to_string_pretty(plan).expect("the plan serialises"),
        false => plan.table().trim_end().to_string(),
    };
    gblur::command::report::write_out(Some(&text), None)
        .map_err(|e| JobError::Failed(anyhow::anyhow!("cannot write the plan: {e}")))
}
