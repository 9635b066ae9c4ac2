//! What a batch reports: a record for every file, a summary per device worker and for the
//! whole batch, as a table on stderr and as JSON on stdout.

use gblur::command::job::JobError;
use gblur::command::report::{self, Backend, Pass, Stage};
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Blurred,
    SkippedExisting,
    /// The output exists, made by an earlier batch with other settings, and `--skip-existing`
    /// kept it.
    SkippedStale,
    SkippedNotImage,
    SkippedLink,
    Failed,
}

#[derive(Clone, Debug, Serialize)]
pub struct FileRecord {
    pub input: String,
    pub output: String,
    pub outcome: Outcome,
    pub error: Option<String>,
    pub megapixels: f64,
    pub decode_ms: f64,
    pub blur_ms: f64,
    pub encode_ms: f64,
    pub notes: Vec<String>,
    /// What blurred the file: the device's name, or the Rust path's where the device failed
    /// on it or the codec lanes blurred it while the device was looked for and opened. Null
    /// for a file that was not blurred.
    pub device: Option<String>,
    /// The device worker that took the file: its position in `--device` (0 for one device).
    /// Null where none did: a TIFF stack's or CMYK file's record, or an image the codec lanes
    /// blurred themselves while the device was looked for and opened.
    pub worker: Option<usize>,
    /// Whether its planes went to the device and back through pinned memory.
    pub pinned: bool,
    /// Whether it replaced an output an earlier batch made with other settings.
    pub replaced_stale: bool,
}

/// What one device worker did.
#[derive(Clone, Debug, Serialize)]
pub struct WorkerSummary {
    /// Its position in `--device` (0 for one device).
    pub worker: usize,
    /// Its device, named as reports name it.
    pub device: String,
    pub backend: Backend,
    /// Files it blurred that were written, and their megapixels.
    pub images: usize,
    pub megapixels: f64,
    /// Of those, how many the Rust path blurred because the device failed on them.
    pub rust_fallbacks: usize,
    /// Its blur time, summed over those files.
    pub blur_s: f64,
    /// Of those, how many went to the device and back through pinned memory.
    pub pinned: usize,
    /// Why its device stopped blurring before the end, if it did, and what the worker did then.
    pub stopped: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// The device's name; with several workers, their names joined by " + ".
    pub device: String,
    pub blurred: usize,
    /// Outputs that exist and were kept: made with these settings, or by something else.
    pub skipped_existing: usize,
    /// Outputs that exist, made by an earlier batch with other settings, kept by
    /// `--skip-existing`.
    pub skipped_stale: usize,
    /// Of the files blurred, those whose output replaced one made with other settings.
    pub replaced_stale: usize,
    pub skipped_not_image: usize,
    /// Symbolic links not followed, loops and dangling links.
    pub skipped_links: usize,
    pub failed: usize,
    /// Files not started because the batch was interrupted.
    pub not_started: usize,
    pub interrupted: bool,
    pub total_s: f64,
    pub images_per_s: f64,
    pub megapixels_per_s: f64,
    /// Time summed over the worker threads of each stage.
    pub decode_s: f64,
    pub blur_s: f64,
    pub encode_s: f64,
    /// One entry per device worker, in `--device` order.
    pub devices: Vec<WorkerSummary>,
    /// What the report says of the batch as a whole (what `--device all` ran without a GPU).
    pub notes: Vec<String>,
    pub files: Vec<FileRecord>,
}

impl FileRecord {
    /// A record of `input` with `outcome` and nothing measured yet.
    pub fn new(input: &Path, outcome: Outcome, output: &Path) -> FileRecord {
        FileRecord {
            input: super::names::escape(input),
            output: super::names::escape(output),
            outcome,
            error: None,
            megapixels: 0.0,
            decode_ms: 0.0,
            blur_ms: 0.0,
            encode_ms: 0.0,
            notes: Vec::new(),
            device: None,
            worker: None,
            pinned: false,
            replaced_stale: false,
        }
    }

    /// The record of `input` (to be written to `output`) that failed with `err` after
    /// `passes`.
    pub fn failed(input: &Path, output: &Path, err: String, passes: &[Pass]) -> FileRecord {
        let mut r = FileRecord::new(input, Outcome::Failed, output);
        r.error = Some(report::one_line(&err));
        r.decode_ms = report::stage_ms(passes, Stage::Decode);
        r
    }
}

/// The sum of `values`, 0.0 where there are none (an empty f64 sum is -0.0, which would print
/// as "-0.0").
fn total(values: impl Iterator<Item = f64>) -> f64 {
    values.sum::<f64>() + 0.0
}

impl WorkerSummary {
    /// What worker `k` on `device` did, from the records of `files`.
    pub fn of(
        k: usize,
        device: String,
        backend: Backend,
        stopped: Option<String>,
        files: &[FileRecord],
    ) -> WorkerSummary {
        let mine: Vec<&FileRecord> = files
            .iter()
            .filter(|r| r.outcome == Outcome::Blurred && r.worker == Some(k))
            .collect();
        WorkerSummary {
            worker: k,
            backend,
            images: mine.len(),
            megapixels: total(mine.iter().map(|r| r.megapixels)),
            rust_fallbacks: mine
                .iter()
                .filter(|r| r.device.as_ref() != Some(&device))
                .count(),
            blur_s: total(mine.iter().map(|r| r.blur_ms)) * 1e-3,
            pinned: mine.iter().filter(|r| r.pinned).count(),
            stopped,
            device,
        }
    }
}

impl Summary {
    /// The batch's counts and times from its records (sorted here by input path), with
    /// `not_started` planned files that have none (the batch was interrupted before them) and
    /// `total_s` seconds of wall time. The devices, their joined name and the batch's notes are
    /// left for the caller.
    pub fn of(
        mut records: Vec<FileRecord>,
        not_started: usize,
        total_s: f64,
        interrupted: bool,
    ) -> Summary {
        records.sort_by(|a, b| a.input.cmp(&b.input));
        let count = |o: Outcome| records.iter().filter(|r| r.outcome == o).count();
        let blurred = count(Outcome::Blurred);
        let failed = count(Outcome::Failed);
        let megapixels = total(records.iter().map(|r| r.megapixels));
        let sum = |f: fn(&FileRecord) -> f64| total(records.iter().map(f)) * 1e-3;
        Summary {
            device: String::new(),
            blurred,
            skipped_existing: count(Outcome::SkippedExisting),
            skipped_stale: count(Outcome::SkippedStale),
            replaced_stale: records
                .iter()
                .filter(|r| r.outcome == Outcome::Blurred && r.replaced_stale)
                .count(),
            skipped_not_image: count(Outcome::SkippedNotImage),
            skipped_links: count(Outcome::SkippedLink),
            failed,
            not_started,
            interrupted,
            total_s,
            images_per_s: blurred as f64 / total_s,
            megapixels_per_s: megapixels / total_s,
            decode_s: sum(|r| r.decode_ms),
            blur_s: sum(|r| r.blur_ms),
            encode_s: sum(|r| r.encode_ms),
            devices: Vec::new(),
            notes: Vec::new(),
            files: records,
        }
    }

    /// The table's device lines: the one device, with the images that went through pinned
    /// memory, or each worker's device with its images, megapixels, blur time, fallbacks and
    /// why it stopped.
    fn device_lines(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        if let [d] = &self.devices[..] {
            let _ = write!(s, "device    {}", self.device);
            if d.pinned > 0 {
                let _ = write!(
                    s,
                    "; {} of {} images through pinned memory",
                    d.pinned, d.images
                );
            }
            let _ = writeln!(s);
        } else {
            for d in &self.devices {
                let _ = write!(
                    s,
                    "device    #{} {}: {} image{}, {:.1} MP, blur {:.2} s",
                    d.worker,
                    d.device,
                    d.images,
                    if d.images == 1 { "" } else { "s" },
                    d.megapixels,
                    d.blur_s
                );
                if d.rust_fallbacks > 0 {
                    let _ = write!(
                        s,
                        ", {} on the Rust path after a device failure",
                        d.rust_fallbacks
                    );
                }
                if let Some(why) = &d.stopped {
                    let _ = write!(s, "; {why}");
                }
                let _ = writeln!(s);
            }
        }
        s
    }

    /// The end-of-batch report for stderr.
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        s += &self.device_lines();
        for n in &self.notes {
            let _ = writeln!(s, "note      {n}");
        }
        let _ = writeln!(
            s,
            "files     {} blurred{}, {} skipped (output exists), {}{} skipped (not images), {}{} failed{}",
            self.blurred,
            match self.replaced_stale {
                0 => String::new(),
                n => format!(" ({n} replacing stale outputs: other settings or a changed input)"),
            },
            self.skipped_existing,
            match self.skipped_stale {
                0 => String::new(),
                n => format!(
                    "{n} skipped (stale: other settings or a changed input; kept by --skip-existing), "
                ),
            },
            self.skipped_not_image,
            if self.skipped_links > 0 {
                format!("{} skipped (symbolic links), ", self.skipped_links)
            } else {
                String::new()
            },
            self.failed,
            if self.interrupted {
                format!(", {} not started (interrupted)", self.not_started)
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            s,
            "time      {:.2} s wall, {:.1} images/s, {:.1} MP/s",
            self.total_s, self.images_per_s, self.megapixels_per_s
        );
        let _ = writeln!(
            s,
            "stages    decode {:.2} s, blur {:.2} s, encode {:.2} s (summed over threads)",
            self.decode_s, self.blur_s, self.encode_s
        );
        s += &self.failures();
        for f in &self.files {
            for n in &f.notes {
                let _ = writeln!(s, "note      {}: {n}", f.input);
            }
        }
        s
    }
}

impl Summary {
    /// A line for each file that failed, naming it and the cause.
    fn failures(&self) -> String {
        self.files
            .iter()
            .filter(|f| f.outcome == Outcome::Failed)
            .map(|f| format!("failed    {}\n", f.error.as_deref().unwrap_or("?")))
            .collect()
    }
}

/// Prints the summary (JSON on stdout when asked, the table on stderr; quiet, only the files
/// that failed, which are errors) and turns failures into the exit status: 1 when any file
/// failed or the batch was interrupted.
pub fn emit(summary: &Summary, json: bool, quiet: bool) -> Result<(), JobError> {
    let json = json.then(|| serde_json::to_string_pretty(summary).expect("summary serialises"));
    let table = match quiet {
        false => Some(summary.table()),
        true => Some(summary.failures()).filter(|f| !f.is_empty()),
    };
    gblur::command::report::write_out(json.as_deref(), table.as_deref())
        .map_err(|e| JobError::Failed(anyhow::anyhow!("cannot write the summary: {e}")))?;
    if summary.interrupted {
        return Err(JobError::Failed(anyhow::anyhow!(
            "interrupted: {} files not started; every finished output is complete",
            summary.not_started
        )));
    }
    if summary.failed > 0 {
        return Err(JobError::Failed(anyhow::anyhow!(
            "{} of the files failed (listed above)",
            summary.failed
        )));
    }
    Ok(())
}
