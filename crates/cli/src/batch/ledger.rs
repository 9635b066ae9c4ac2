//! The record a shard leaves behind (`--summary DIR`: DIR/shard-K-of-N.json, written
//! atomically), and `gblur batch-report DIR`, which merges those records and says whether
//! the whole folder is done: every shard present, every file in exactly one of them, each
//! finished file's output on disk, no failure.

use super::names;
use super::summary::{Outcome, Summary};
use gblur::command::formats;
use gblur::command::job::JobError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One file a shard owns: its path relative to IN_DIR and what became of it. Paths are kept
/// as `names::escape` writes them: exactly, on one line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardFile {
    pub path: String,
    pub outcome: Outcome,
    /// Where its output is (empty for a file that has none).
    pub output: String,
    pub error: Option<String>,
}

/// What one shard did, as DIR/shard-K-of-N.json holds it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardSummary {
    /// K of N, 1-based.
    pub shard: usize,
    pub shards: usize,
    pub in_dir: String,
    pub out_dir: String,
    pub blurred: usize,
    pub skipped_existing: usize,
    pub skipped_not_image: usize,
    pub skipped_links: usize,
    pub failed: usize,
    /// Files planned but not started because the run was interrupted.
    pub not_started: usize,
    pub interrupted: bool,
    pub total_s: f64,
    /// Every file the shard owns, by relative path.
    pub files: Vec<ShardFile>,
}

/// The file name of shard `k` of `n`'s record.
pub fn file_name(k: usize, n: usize) -> String {
    format!("shard-{k}-of-{n}.json")
}

impl ShardSummary {
    /// Shard `(k, n)`'s record of `summary`, with paths relative to `in_dir`.
    pub fn of(summary: &Summary, (k, n): (usize, usize), in_dir: &Path, out_dir: &Path) -> Self {
        let rel = |p: &str| {
            let p = names::unescape(p);
            names::escape(p.strip_prefix(in_dir).unwrap_or(&p))
        };
        ShardSummary {
            shard: k,
            shards: n,
            in_dir: names::escape(in_dir),
            out_dir: names::escape(out_dir),
            blurred: summary.blurred,
            skipped_existing: summary.skipped_existing + summary.skipped_stale,
            skipped_not_image: summary.skipped_not_image,
            skipped_links: summary.skipped_links,
            failed: summary.failed,
            not_started: summary.not_started,
            interrupted: summary.interrupted,
            total_s: summary.total_s,
            files: summary
                .files
                .iter()
                .map(|f| ShardFile {
                    path: rel(&f.input),
                    outcome: f.outcome.clone(),
                    output: f.output.clone(),
                    error: f.error.clone(),
                })
                .collect(),
        }
    }

    /// Writes the record to DIR/shard-K-of-N.json through a temporary file and a rename, so a
    /// reader never sees half of one.
    pub fn write(&self, dir: &Path) -> anyhow::Result<PathBuf> {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", dir.display()))?;
        let path = dir.join(file_name(self.shard, self.shards));
        let text = serde_json::to_string_pretty(self).expect("shard summary serialises");
        formats::write_atomic(&path, format!("{text}\n").as_bytes(), formats::Replace::Any)?;
        Ok(path)
    }
}

/// A file that failed, and the shard that owns it.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    pub shard: usize,
    pub path: String,
    pub error: String,
}

/// One shard's share, as the merged report lists it.
#[derive(Clone, Debug, Serialize)]
pub struct ShardLine {
    /// K of N, as its record says (N differs from the report's for a record of another set).
    pub shard: usize,
    pub shards: usize,
    pub files: usize,
    pub blurred: usize,
    pub skipped_existing: usize,
    pub failed: usize,
    pub not_started: usize,
    pub interrupted: bool,
}

impl ShardLine {
    /// The table's line for this shard's record, in a set of `shards`: each record is named by
    /// its own K and N, and one written for another count says so.
    fn line(&self, shards: usize) -> String {
        let other_set = match self.shards == shards {
            true => String::new(),
            false => format!(" (not of this set of {shards})"),
        };
        let interrupted = match self.interrupted {
            true => format!(", {} not started (interrupted)", self.not_started),
            false => String::new(),
        };
        format!(
            "shard     {} of {}{other_set}: {} files, {} blurred, {} skipped (output exists), {} failed{interrupted}",
            self.shard, self.shards, self.files, self.blurred, self.skipped_existing, self.failed
        )
    }
}

/// `gblur batch-report`: every shard's record merged.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// N, as the records say it (the largest one where they disagree).
    pub shards: usize,
    pub present: Vec<ShardLine>,
    /// Shards in 1..=N with no record.
    pub missing: Vec<usize>,
    /// Files every shard owns, counted once.
    pub files: usize,
    pub blurred: usize,
    pub skipped_existing: usize,
    pub skipped_not_image: usize,
    pub skipped_links: usize,
    pub failed: Vec<Failure>,
    /// Files in the records of more than one shard, with those shards ("K/N": shard K of N).
    pub duplicated: Vec<(String, Vec<String>)>,
    /// Finished files whose output is not on disk.
    pub outputs_missing: Vec<String>,
    /// Everything else that is wrong: records that disagree on N or on the folders,
    /// interrupted shards.
    pub problems: Vec<String>,
    /// Nothing missing, duplicated, failed or unfinished.
    pub complete: bool,
}

/// Reads every `shard-*-of-*.json` in `dir`. An unreadable folder or record, or no record at
/// all, is an error: there is nothing to merge.
pub fn read_all(dir: &Path) -> anyhow::Result<Vec<ShardSummary>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", dir.display()))?;
    let mut names: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("shard-") && name.ends_with(".json")
        })
        .collect();
    names.sort();
    anyhow::ensure!(
        !names.is_empty(),
        "{}: no shard summaries (shard-K-of-N.json, written by gblur batch --summary {})",
        dir.display(),
        dir.display()
    );
    names
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p)
                .map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", p.display()))?;
            serde_json::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{}: not a shard summary: {e}", p.display()))
        })
        .collect()
}

/// Where the records of a set disagree with each other: on the shard count `n` or on IN_DIR.
fn disagreements(records: &[ShardSummary], n: usize) -> Vec<String> {
    let mut problems = Vec::new();
    for r in records.iter().filter(|r| r.shards != n) {
        problems.push(format!(
            "shard {} of {}: written for {} shards, the others for {n}",
            r.shard, r.shards, r.shards
        ));
    }
    for r in records.iter().filter(|r| r.in_dir != records[0].in_dir) {
        problems.push(format!(
            "shard {} of {}: IN_DIR {} differs from shard {} of {}'s {}",
            r.shard, r.shards, r.in_dir, records[0].shard, records[0].shards, records[0].in_dir
        ));
    }
    problems
}

/// Merges the records of every shard.
pub fn merge(records: &[ShardSummary]) -> Report {
    let n = records.iter().map(|r| r.shards).max().unwrap_or(0);
    let mut problems = disagreements(records, n);
    let mut owners: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut report = Report {
        shards: n,
        present: Vec::new(),
        missing: Vec::new(),
        files: 0,
        blurred: 0,
        skipped_existing: 0,
        skipped_not_image: 0,
        skipped_links: 0,
        failed: Vec::new(),
        duplicated: Vec::new(),
        outputs_missing: Vec::new(),
        problems: Vec::new(),
        complete: false,
    };
    for r in records {
        if r.interrupted || r.not_started > 0 {
            problems.push(format!(
                "shard {} of {}: interrupted, {} files not started; run it again",
                r.shard, r.shards, r.not_started
            ));
        }
        report.present.push(ShardLine::of(r));
        for f in &r.files {
            let shards = owners.entry(&f.path).or_default();
            shards.push(format!("{}/{}", r.shard, r.shards));
            if shards.len() > 1 {
                continue;
            }
            report.count(r.shard, f);
        }
    }
    report.files = owners.len();
    report.duplicated = owners
        .into_iter()
        .filter(|(_, s)| s.len() > 1)
        .map(|(p, s)| (p.to_string(), s))
        .collect();
    report.missing = (1..=n)
        .filter(|k| !records.iter().any(|r| r.shard == *k && r.shards == n))
        .collect();
    // The shards of the set first, then any record written for another count.
    report
        .present
        .sort_by_key(|l| (l.shards != n, l.shard, l.shards));
    report.problems = problems;
    report.complete = report.missing.is_empty()
        && report.duplicated.is_empty()
        && report.failed.is_empty()
        && report.outputs_missing.is_empty()
        && report.problems.is_empty();
    report
}

impl ShardLine {
    /// The line of shard summary `r`.
    fn of(r: &ShardSummary) -> ShardLine {
        ShardLine {
            shard: r.shard,
            shards: r.shards,
            files: r.files.len(),
            blurred: r.blurred,
            skipped_existing: r.skipped_existing,
            failed: r.failed,
            not_started: r.not_started,
            interrupted: r.interrupted,
        }
    }
}

impl Report {
    /// Counts file `f`'s outcome, as shard `shard` recorded it, and its output where it should
    /// be there and is not.
    fn count(&mut self, shard: usize, f: &ShardFile) {
        match f.outcome {
            Outcome::Blurred => self.blurred += 1,
            Outcome::SkippedExisting | Outcome::SkippedStale => self.skipped_existing += 1,
            Outcome::SkippedNotImage => self.skipped_not_image += 1,
            Outcome::SkippedLink => self.skipped_links += 1,
            Outcome::Failed => self.failed.push(Failure {
                shard,
                path: f.path.clone(),
                error: f.error.clone().unwrap_or_default(),
            }),
        }
        let finished = matches!(
            f.outcome,
            Outcome::Blurred | Outcome::SkippedExisting | Outcome::SkippedStale
        );
        if finished && !names::unescape(&f.output).is_file() {
            self.outputs_missing.push(f.output.clone());
        }
    }

    /// The merged report for stderr.
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        // Records written for another shard count are problems (listed below), not shards
        // of this set.
        let of_this_set = self.shards - self.missing.len();
        let _ = writeln!(s, "shards    {of_this_set} of {} present", self.shards);
        for l in &self.present {
            let _ = writeln!(s, "{}", l.line(self.shards));
        }
        let _ = writeln!(
            s,
            "files     {} accounted for: {} blurred, {} skipped (output exists), {} skipped (not \
             images), {} skipped (symbolic links), {} failed",
            self.files,
            self.blurred,
            self.skipped_existing,
            self.skipped_not_image,
            self.skipped_links,
            self.failed.len()
        );
        for k in &self.missing {
            let _ = writeln!(
                s,
                "missing   shard {k} of {} (no {})",
                self.shards,
                file_name(*k, self.shards)
            );
        }
        for (path, shards) in &self.duplicated {
            let shards: Vec<String> = shards.iter().map(|k| k.replacen('/', " of ", 1)).collect();
            let _ = writeln!(s, "twice     {path}: in shards {}", shards.join(", "));
        }
        for f in &self.failed {
            let _ = writeln!(s, "failed    shard {}: {}", f.shard, f.error);
        }
        for o in &self.outputs_missing {
            let _ = writeln!(s, "no output {o}");
        }
        for p in &self.problems {
            let _ = writeln!(s, "problem   {p}");
        }
        s
    }
}

/// `gblur batch-report DIR`: merges, prints (JSON on stdout when asked, the table on stderr
/// unless quiet), and fails (exit 1) unless the folder is complete.
pub fn report(dir: &Path, json: bool, quiet: bool) -> Result<(), JobError> {
    let records = read_all(dir).map_err(JobError::Setup)?;
    let report = merge(&records);
    let json = json.then(|| serde_json::to_string_pretty(&report).expect("report serialises"));
    let table = (!quiet).then(|| report.table());
    gblur::command::report::write_out(json.as_deref(), table.as_deref())
        .map_err(|e| JobError::Failed(anyhow::anyhow!("cannot write the report: {e}")))?;
    if report.complete {
        return Ok(());
    }
    let mut why = Vec::new();
    if !report.missing.is_empty() {
        let list: Vec<String> = report
            .missing
            .iter()
            .map(|k| format!("{k} of {}", report.shards))
            .collect();
        why.push(format!("shard {} missing", list.join(", ")));
    }
    if !report.duplicated.is_empty() {
        why.push(format!("{} files in two shards", report.duplicated.len()));
    }
    if !report.failed.is_empty() {
        why.push(format!("{} files failed", report.failed.len()));
    }
    if !report.outputs_missing.is_empty() {
        why.push(format!(
            "{} outputs not on disk",
            report.outputs_missing.len()
        ));
    }
    if !report.problems.is_empty() {
        why.push(match report.problems.len() {
            1 => "1 problem".to_string(),
            n => format!("{n} problems"),
        });
    }
    Err(JobError::Failed(anyhow::anyhow!(
        "not complete: {} (listed above)",
        why.join("; ")
    )))
}
