//! `gblur batch`: blur every image under a folder into a mirrored folder. `plan` walks the
//! folder into tasks, `run` drives them (the scheduler: whole images per core on the Rust
//! path, overlapped decode, blur and encode stages with a device), and `summary` accounts for
//! every file. A file that fails is reported and
//! the batch goes on; outputs are written through temporary files, so an interrupted batch
//! leaves only complete files. `shard` picks the slice of the folder this process runs (by
//! hand or from a cluster scheduler), and `ledger` records each shard's outcome and merges
//! those records (`gblur batch-report`).

pub mod dry_run;
pub mod filter;
pub mod journal;
pub mod ledger;
pub mod made_with;
pub mod names;
pub mod naming;
pub mod plan;
pub mod record_file;
pub mod run;
pub mod shard;
pub mod stacks;
pub mod summary;

pub use run::run;

use gblur::command::job::{BlurJob, JobError};
use image::ImageFormat;
use std::path::PathBuf;
use summary::Summary;

/// A checked batch request. `blur.input`/`blur.output` are the two folders.
#[derive(Clone, Debug)]
pub struct BatchJob {
    pub blur: BlurJob,
    /// Write every output in this format instead of its input's.
    pub format: Option<ImageFormat>,
    /// Name outputs by this template instead of mirroring the input's name.
    pub name: Option<naming::NameTemplate>,
    pub overwrite: bool,
    /// Keep every existing output, also one made with other settings (counted as stale).
    pub skip_existing: bool,
    pub in_place: bool,
    /// `(k, n)`: process the k-th of n deterministic shards (1-based).
    pub shard: Option<(usize, usize)>,
    /// Write this shard's record (`ledger`) into this folder when the batch ends.
    pub summary_dir: Option<PathBuf>,
    /// Follow symbolic links (to files and folders, inside IN_DIR or not). Off: every link
    /// is skipped and named in the report.
    pub follow_links: bool,
    /// Which files under IN_DIR it takes (`--include`, `--exclude`, `--max-depth`).
    pub filter: filter::PathFilter,
    /// List what would be written, skipped and why, and write nothing.
    pub dry_run: bool,
    pub verbose: bool,
    /// No progress bar.
    pub quiet: bool,
}

/// Runs the batch, then writes its shard's record when `--summary` asked for one (shard 1/1
/// without `--shard`). The record is written even when files failed or the batch was
/// interrupted: it says so, and `gblur batch-report` reads it.
pub fn execute(job: &BatchJob) -> Result<Summary, JobError> {
    let summary = run(job)?;
    if let Some(dir) = &job.summary_dir {
        let in_dir = job
            .blur
            .input
            .canonicalize()
            .unwrap_or(job.blur.input.clone());
        let out_dir = job
            .blur
            .output
            .canonicalize()
            .unwrap_or(job.blur.output.clone());
        let shard = job.shard.unwrap_or((1, 1));
        ledger::ShardSummary::of(&summary, shard, &in_dir, &out_dir)
            .write(dir)
            .map_err(|e| JobError::Failed(e.context("cannot write the shard summary")))?;
    }
    Ok(summary)
}
