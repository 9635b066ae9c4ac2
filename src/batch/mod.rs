//! `gblur batch`: blur every image under a folder into a mirrored folder. `plan` walks the
//! folder into tasks, `run` drives them through overlapped decode, blur and encode stages
//! (the scheduler), and `summary` accounts for every file. A file that fails is reported and
//! the batch goes on; outputs are written through temporary files, so an interrupted batch
//! leaves only complete files.

pub mod plan;
pub mod run;
pub mod summary;

pub use run::run;

use crate::job::BlurJob;
use image::ImageFormat;

/// A checked batch request. `blur.input`/`blur.output` are the two folders.
#[derive(Clone, Debug)]
pub struct BatchJob {
    pub blur: BlurJob,
    /// Write every output in this format instead of its input's.
    pub format: Option<ImageFormat>,
    pub overwrite: bool,
    pub in_place: bool,
    /// `(k, n)`: process the k-th of n deterministic shards (1-based).
    pub shard: Option<(usize, usize)>,
    /// Follow symbolic links (to files and folders, inside IN_DIR or not). Off: every link
    /// is skipped and named in the report.
    pub follow_links: bool,
    pub verbose: bool,
    /// No progress bar.
    pub quiet: bool,
}
