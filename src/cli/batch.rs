//! `gblur batch`'s arguments, turned into a checked `BatchJob`.

use super::BlurSettings;
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
    /// Replace outputs that already exist (they are skipped otherwise).
    #[arg(long)]
    pub overwrite: bool,
    /// Allow IN_DIR = OUT_DIR: replace the originals (each through a temporary file).
    #[arg(long)]
    pub in_place: bool,
    /// Process only shard K of N (e.g. 3/8): a deterministic split by path, for running one
    /// folder on several machines with no coordination.
    #[arg(long, value_parser = parse_shard, value_name = "K/N")]
    pub shard: Option<(usize, usize)>,
    /// Follow symbolic links to files and folders, also where they lead out of IN_DIR (loops
    /// are detected and skipped). Without it every link is skipped and named in the report.
    #[arg(long)]
    pub follow_links: bool,
}

fn parse_format(s: &str) -> Result<image::ImageFormat, String> {
    image::ImageFormat::from_extension(s)
        .filter(|f| crate::codec::can_write(*f))
        .ok_or_else(|| format!("'{s}' is not a format gblur writes (png, jpg, tif, webp, bmp, tga, gif, qoi, exr, hdr)"))
}

fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("'{s}' is not K/N with 1 <= K <= N");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let (k, n): (usize, usize) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k >= 1 && k <= n {
        Ok((k, n))
    } else {
        Err(bad())
    }
}

impl BatchArgs {
    pub fn to_job(&self, verbose: bool, quiet: bool) -> BatchJob {
        BatchJob {
            blur: self
                .settings
                .to_job(self.in_dir.clone(), self.out_dir.clone()),
            format: self.format,
            overwrite: self.overwrite,
            in_place: self.in_place,
            shard: self.shard,
            follow_links: self.follow_links,
            verbose,
            quiet,
        }
    }
}
