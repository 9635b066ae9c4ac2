//! A request to blur one file (`BlurJob`, with every option of the command line) and why
//! one failed (`JobError`).

use crate::backend::DeviceSet;
use crate::codec::metadata::KeepMetadata;
use crate::codec::{self, EncodeOptions};
use crate::filter::Blur2d;
use crate::gpu::plan::PipelineChoice;
use crate::mask::MaskOptions;
use crate::stream::Engine;
use crate::work::edges::Edges;
use crate::work::sharpen::Sharpen;
use image::ImageFormat;
use std::path::PathBuf;

/// A checked request to blur one file.
#[derive(Clone, Debug)]
pub struct BlurJob {
    /// `-`: stdin, read fully into memory.
    pub input: PathBuf,
    /// `-`: stdout, written once the image is fully encoded (needs `output_format`).
    pub output: PathBuf,
    /// The output format; None: OUT's extension's.
    pub output_format: Option<ImageFormat>,
    /// The filter, made once where the blur is asked for and not checked again: a
    /// `Gaussian`'s (sigmas checked), or `Blur2d::checked` from sigmas already checked
    /// (`check_sigma`), which refuses a FIR over `FIR_MAX_SIGMA`. `Blur2d::new` checks
    /// nothing.
    pub filter: Blur2d,
    /// The GPU pipeline (`--pipeline`).
    pub pipeline: PipelineChoice,
    /// One device here; `gblur batch` also takes `all` and lists.
    pub device: DeviceSet,
    /// Blur in linear light (`--linear`).
    pub linear: bool,
    /// Convert the input from its ICC profile to sRGB before the blur (`--to-srgb`).
    pub to_srgb: bool,
    /// A JPEG → JPEG job on the Rust path blurs the YCbCr planes where it can
    /// (`ImagePlan::with_planes`); false: always RGB (`--jpeg-path rgb`).
    pub jpeg_planes: bool,
    /// How the output is encoded.
    pub encode: EncodeOptions,
    /// The memory budget, MiB; larger images stream through the strip engine.
    pub max_memory_mib: u64,
    /// Which of the input's ICC profile, EXIF and XMP the output gets.
    pub metadata: KeepMetadata,
    /// The part of the image to blur and how (`--region`, `--mask`, `--feather`,
    /// `--mask-mode`), and `--nan`; the default blurs the whole image.
    pub mask: MaskOptions,
    /// What lies beyond each edge (`work::edges`); clamp adds nothing.
    pub edges: Edges,
    /// Print on stderr why the path was chosen, with the cost model's prediction.
    pub explain: bool,
    /// The whole-image path or the strip engine (`stream`).
    pub engine: Engine,
    /// A progress bar on stderr for one long image (the strip engine's rows); off with
    /// `--quiet`.
    pub progress: bool,
    /// A program's own progress callback (`with_progress_callback`).
    pub on_progress: Option<crate::progress::OnProgress>,
    /// Sharpen instead of blurring: the unsharp mask with this blur (`gblur sharpen`,
    /// `gblur batch --sharpen`).
    pub sharpen: Option<Sharpen>,
    /// Refuse to replace an existing output (`--no-clobber`); by default it is replaced.
    pub no_clobber: bool,
    /// `--page N`: page N (from 0) of a multi-page TIFF alone; None: every page.
    pub page: Option<usize>,
    /// `--sigma-z`: a multi-page TIFF's pages blurred as a volume, this sigma across pages.
    pub sigma_z: Option<f64>,
}

impl BlurJob {
    /// A job that blurs `input` into `output` (either `-`: stdin or stdout) with `filter`,
    /// every other setting at the command line's default: the output's format from its
    /// extension, `--device auto`, JPEG quality 90, metadata kept, the default memory budget,
    /// clamped edges, the whole image. Set the fields to change them.
    ///
    /// ```
    /// use gblur::command::job::{run, BlurJob, EdgeMode};
    /// use gblur::command::stages::Blur2d;
    /// use gblur::Method;
    /// # let dir = tempfile::tempdir()?;
    /// # let out = dir.path().join("out.png");
    ///
    /// let filter = Blur2d::checked(Method::Recursive, 3.0, 1.5)?;
    /// let mut job = BlurJob::new("samples/coffee.png", &out, filter);
    /// job.edges.x = EdgeMode::Reflect;
    /// job.no_clobber = true;
    /// let report = run(&job)?;
    /// assert_eq!((report.sigma_x, report.sigma_y), (3.0, 1.5));
    /// println!("{}", report.table());
    /// // The output is there now, and --no-clobber keeps it.
    /// assert!(run(&job).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(input: impl Into<PathBuf>, output: impl Into<PathBuf>, filter: Blur2d) -> BlurJob {
        BlurJob {
            input: input.into(),
            output: output.into(),
            output_format: None,
            filter,
            pipeline: PipelineChoice::Auto,
            device: DeviceSet::One(crate::gpu::opencl::DeviceChoice::Auto),
            linear: false,
            to_srgb: false,
            jpeg_planes: true,
            encode: EncodeOptions::default(),
            max_memory_mib: crate::memory::budget_mib(crate::memory::DEFAULT_BUDGET_MIB),
            metadata: KeepMetadata::ALL,
            mask: MaskOptions::default(),
            edges: Edges::default(),
            explain: false,
            engine: Engine::Auto,
            progress: false,
            on_progress: None,
            sharpen: None,
            no_clobber: false,
            page: None,
            sigma_z: None,
        }
    }

    /// How this job decodes its input.
    pub fn decoding(&self) -> crate::work::load::Decoding {
        crate::work::load::Decoding {
            max_memory_mib: self.max_memory_mib,
            linear: self.linear,
            to_srgb: self.to_srgb,
        }
    }

    /// The job with its progress bar on (`progress`) or off.
    pub fn with_progress(mut self, progress: bool) -> BlurJob {
        self.progress = progress;
        self
    }

    /// The job telling `tell` each step of its progress (`Progress`), whether or not it draws
    /// a bar: the stages of the whole-image path, the rows of the strip engine, and `done`
    /// once the output is written (`run`, `blur_stack`, `blur_inks`).
    pub fn with_progress_callback(
        mut self,
        tell: impl Fn(crate::progress::Progress) + Send + Sync + 'static,
    ) -> BlurJob {
        self.on_progress = Some(crate::progress::OnProgress::new(tell));
        self
    }

    /// What the final rename of the main command's output may replace: under `--no-clobber`
    /// nothing, also a file that appeared at the output while the job ran (the rename fails
    /// where the name is taken, in one step).
    pub(crate) fn replace(&self) -> codec::Replace<'static> {
        match self.no_clobber {
            true => codec::Replace::Never,
            false => codec::Replace::Any,
        }
    }
}

/// Why a job failed: set-up problems (exit 2) or the blur itself (exit 1).
#[derive(Debug)]
pub enum JobError {
    /// The job could not start: a bad option, an output that cannot be written (exit 2).
    Setup(anyhow::Error),
    /// The job failed on its way: a bad input, a failed write (exit 1).
    Failed(anyhow::Error),
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JobError::Setup(e) | JobError::Failed(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for JobError {}

impl JobError {
    /// The exit status the command gives it: 2 for a set-up problem, 1 for a failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            JobError::Setup(_) => 2,
            JobError::Failed(_) => 1,
        }
    }

    pub(crate) fn setup(e: impl Into<anyhow::Error>) -> JobError {
        JobError::Setup(e.into())
    }

    pub(crate) fn failed(e: impl Into<anyhow::Error>) -> JobError {
        JobError::Failed(e.into())
    }
}
