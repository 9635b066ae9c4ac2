//! `gblur batch`'s arguments, turned into a checked `BatchJob`.

use super::{check_sharpen_mask, parse_format, BlurSettings, SharpenFlags};
use crate::batch::filter::PathFilter;
use crate::batch::naming::NameTemplate;
use crate::batch::shard::{self, ShardRequest};
use crate::batch::BatchJob;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct BatchArgs {
    /// Folder to walk (recursively; symbolic links are not followed unless --follow-links).
    pub in_dir: PathBuf,
    /// Where the blurred images go, mirroring IN_DIR (created if missing).
    pub out_dir: PathBuf,
    #[command(flatten)]
    pub settings: BlurSettings,
    /// Write every output in this format (by extension name: png, jpg, tif, webp, ...)
    /// instead of its input's.
    #[arg(long, value_parser = parse_format)]
    pub format: Option<image::ImageFormat>,
    /// Name each output by this template instead of mirroring its input's name: the fields
    /// {dir} (the input's folder under IN_DIR), {stem} (its name without extension), {ext}
    /// (its extension, or --format's) and {sigma}, e.g. '{dir}/{stem}_blur.{ext}'. Without
    /// --format, an extension the template names decides the format. Checked for two inputs
    /// with one output before any file is written.
    #[arg(long, value_name = "TEMPLATE", value_parser = NameTemplate::parse)]
    pub name: Option<NameTemplate>,
    /// Replace every output that already exists. Without it, an output an earlier batch made
    /// with other settings, or from an input changed since, is redone (OUT_DIR/.gblur.settings-K-of-N.log records what made
    /// each output), and every other existing output is kept: one made with these settings,
    /// another tool's, and one another writer puts there while the batch runs.
    #[arg(long)]
    pub overwrite: bool,
    /// Keep every existing output, also one an earlier batch made with other settings (the
    /// report counts those as stale).
    #[arg(long, conflicts_with_all = ["overwrite", "in_place"])]
    pub skip_existing: bool,
    /// Allow IN_DIR = OUT_DIR: replace the originals (each through a temporary file). Each
    /// file replaced is first recorded in IN_DIR/.gblur.in-place-K-of-N.journal, so that a
    /// second run (after an interruption, say) never blurs a file twice; delete the journal
    /// to blur the folder again.
    #[arg(long)]
    pub in_place: bool,
    /// Process only shard K of N (e.g. 3/8): a deterministic split by path, for running one
    /// folder on several machines with no coordination. `auto`: the shard of this task of a
    /// Slurm job array (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN;
    /// ids contiguous with step 1, e.g. --array=0-7; or --shard-count) or of a Kubernetes Indexed Job
    /// (JOB_COMPLETION_INDEX, with --shard-count or GBLUR_SHARD_COUNT); see docs/CLUSTER.md.
    #[arg(long, value_parser = parse_shard, value_name = "K/N|auto")]
    pub shard: Option<ShardRequest>,
    /// With --shard auto: the number of shards (else GBLUR_SHARD_COUNT). A Kubernetes Indexed
    /// Job needs it (its completions); under Slurm, task id i then runs shard i+1 of N whatever
    /// the array, so a task submitted again alone (--array=2) keeps its shard.
    #[arg(long, value_name = "N", requires = "shard", value_parser = clap::value_parser!(u64).range(1..))]
    pub shard_count: Option<u64>,
    /// Write this shard's record (every file it owns, with its outcome) to
    /// DIR/shard-K-of-N.json when the batch ends; `gblur batch-report DIR` merges them.
    #[arg(long, value_name = "DIR")]
    pub summary: Option<PathBuf>,
    /// Follow symbolic links to files and folders, also where they lead out of IN_DIR (loops
    /// are detected and skipped). Without it every link is skipped and named in the report.
    #[arg(long)]
    pub follow_links: bool,
    /// Take only files that match GLOB (repeatable: any of them). A glob with a '/' is matched
    /// against the path under IN_DIR ('trip/**/*.jpg'); one without, against the file's name
    /// at any depth ('*.jpg').
    #[arg(long, value_name = "GLOB", help_heading = "Choosing files")]
    pub include: Vec<String>,
    /// Leave out files and folders that match GLOB (repeatable; as --include; wins over it):
    /// '--exclude thumbnails' skips every folder of that name.
    #[arg(long, value_name = "GLOB", help_heading = "Choosing files")]
    pub exclude: Vec<String>,
    /// Take files at most N folders deep (1: IN_DIR's own files only).
    #[arg(long, value_name = "N", help_heading = "Choosing files", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_depth: Option<u32>,
    /// List every file with what the batch would do with it (write, redo, skip, and why), and
    /// write nothing; with --json, as JSON.
    #[arg(long)]
    pub dry_run: bool,
    /// Sharpen every image (the unsharp mask of `gblur sharpen`) instead of blurring it.
    #[arg(long, help_heading = "Sharpening")]
    pub sharpen: bool,
    #[command(flatten)]
    pub sharpen_flags: SharpenFlags,
}

fn parse_shard(s: &str) -> Result<ShardRequest, String> {
    if s == "auto" {
        return Ok(ShardRequest::Auto { count: None });
    }
    let bad = || format!("'{s}' is not K/N with 1 <= K <= N, or auto");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (usize, usize) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k >= 1 && k <= n {
        Ok(ShardRequest::Fixed(k, n))
    } else {
        Err(bad())
    }
}

impl BatchArgs {
    /// The checked job. `--shard auto` is resolved here, once, from the process's
    /// environment; a scheduler that says nothing usable is a usage error.
    pub fn to_job(&self, verbose: bool, quiet: bool) -> Result<BatchJob, String> {
        let shard = match (self.shard, self.shard_count) {
            (Some(ShardRequest::Auto { .. }), count) => {
                let count = count.map(|n| n as usize);
                let request = ShardRequest::Auto { count };
                Some(shard::resolve(request, |name| std::env::var(name).ok())?)
            }
            (Some(ShardRequest::Fixed(..)), Some(_)) => {
                return Err("--shard-count goes with --shard auto; --shard K/N says N".into())
            }
            (Some(ShardRequest::Fixed(k, n)), None) => Some((k, n)),
            (None, _) => None,
        };
        self.settings.check_encoder_options(self.format)?;
        if self.settings.sigma_z.is_some() {
            return Err("--sigma-z: gblur batch blurs a TIFF stack's pages one by one; blur a stack as a volume with the main command (gblur STACK.tif OUT.tif --sigma-z S)".into());
        }
        let mut blur = self
            .settings
            .to_job(self.in_dir.clone(), self.out_dir.clone())?;
        blur.sharpen = self.sharpen_flags.sharpen(self.sharpen)?;
        check_sharpen_mask(&blur)?;
        Ok(BatchJob {
            blur,
            format: self.format,
            name: self.name.clone(),
            overwrite: self.overwrite,
            skip_existing: self.skip_existing,
            in_place: self.in_place,
            shard,
            summary_dir: self.summary.clone(),
            follow_links: self.follow_links,
            filter: PathFilter::new(
                &self.include,
                &self.exclude,
                self.max_depth.map(|d| d as usize),
            )?,
            dry_run: self.dry_run,
            verbose,
            quiet,
        })
    }
}
