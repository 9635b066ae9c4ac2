//! The strip engine: a PNG streamed from its decoder through the banded blur's sliding window
//! (`cpu::banded::blur_streamed`) to its encoder, each on its own thread, so that memory
//! stays bounded by the window whatever the image's size, and a job costs about its slowest
//! stage rather than the sum of the three.
//!
//! Decoder thread: rows in batches of `DECODE_ROWS` → a channel of 2 batches → the blur on the
//! calling thread (its passes on the rayon pool) → a channel of one strip → encoder thread:
//! rows into the PNG stream writer and a temporary file, renamed over the output when every
//! row is written (`codec::png::rows_out`; TIFF and JPEG likewise through their formats' row
//! halves). An error anywhere drops the channels, which stops the other stages; the temporary
//! file is removed and the output left as it was.

mod budget;
mod gpu_bands;
mod method;
mod report;
mod run;
mod stage;
mod two_pass;

use crate::backend::Device;
use crate::codec::jpeg::JpegOptions;
use crate::codec::metadata::{KeepMetadata, Metadata};
use crate::codec::rows::RowReader;
use crate::codec::rows::{self as header, Batches, RowSample};
use crate::codec::tiff::TiffCompression;
use crate::codec::{self, ImageIoError};
use crate::cpu::banded::{
    blur_streamed, srgb_table, Axis, ColumnStates, Pixels, Sample, StripPlan,
};
use crate::fault::env_number;
use crate::filter::Blur2d;
use crate::gpu::opencl::ClError;
use crate::gpu::plan::{Pipeline, Upload};
use crate::progress::RowsBar;
use crate::report::{Pass, Stage};
use crossbeam_channel::{bounded, Receiver, Sender};
use image::codecs::png::CompressionType;
use image::{ColorType, ImageFormat};
pub use run::run;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// An input being read row by row by its format's reader (`Codec::open_rows`): a PNG a row at
/// a time, a TIFF a strip at a time, a JPEG a scanline at a time.
pub struct Rows(Box<dyn RowReader>);

impl Rows {
    /// A TIFF input's Compression tag, for `--tiff-compression same` (None for other formats).
    fn tiff_compression(&self) -> Option<u16> {
        self.0.stored_compression()
    }

    /// The input's metadata, sample layout and size.
    fn header(&self) -> &header::Header {
        self.0.header()
    }

    fn header_mut(&mut self) -> &mut header::Header {
        self.0.header_mut()
    }

    pub fn size(&self) -> (u32, u32) {
        (self.header().width, self.header().height)
    }

    pub fn color(&self) -> ColorType {
        self.header().color
    }

    pub fn format(&self) -> ImageFormat {
        self.0.format()
    }

    /// Samples per row.
    pub fn row_samples(&self) -> usize {
        self.header().row_samples()
    }

    /// The next rows (whole rows) into `out`, behind the decoder guard: a decoder's panic is
    /// a decode error of the input.
    fn read<T: StreamSample>(&mut self, out: &mut [T]) -> Result<(), ImageIoError> {
        let read = codec::guard::catch(|| {
            if crate::fault::is(crate::fault::Fault::DecoderPanic) {
                panic!("assertion failed: an injected decoder fault")
            }
            T::read_rows(&mut *self.0, out)
        });
        read.unwrap_or_else(|panic| Err(decoder_failed(self.path(), &panic)))
    }

    fn path(&self) -> &Path {
        self.0.path()
    }
}

/// What `open` found.
pub enum Opened {
    Rows(Box<Rows>),
    /// The file is one the strip engine does not stream, or not into `output`, and why.
    Unsupported(String),
}

/// A decoder's or encoder's panic, caught by the guard, as an error of `path`.
fn decoder_failed(path: &Path, panic: &str) -> ImageIoError {
    ImageIoError::Decode {
        path: path.into(),
        detail: format!("the decoder failed ({panic})"),
    }
}

/// Opens `job`'s input (a PNG, TIFF or JPEG, as `unsupported` checked) for reading by rows
/// into its output, within its memory budget, behind the decoder guard. Huge pages are left
/// off from here (`memory::use_huge_pages`): the engine's budget counts resident memory
/// closely, and a caller that goes on without it turns them back on.
pub fn open(job: &StripJob) -> Result<Opened, ImageIoError> {
    crate::memory::use_huge_pages(false);
    codec::guard::catch(|| open_rows(job))
        .unwrap_or_else(|panic| Err(decoder_failed(job.input, &panic)))
}

fn open_rows(job: &StripJob) -> Result<Opened, ImageIoError> {
    let (source, output, max_memory_mib) = (job.source, job.format, job.max_memory_mib);
    let Some(format) = job.input_format else {
        return Ok(Opened::Unsupported("its format is not recognised".into()));
    };
    let rows = match codec::of(format).open_rows(source, max_memory_mib)? {
        Ok(reader) => Rows(reader),
        Err(why) => return Ok(Opened::Unsupported(why)),
    };
    if output == ImageFormat::Jpeg && !matches!(rows.color(), ColorType::L8 | ColorType::Rgb8) {
        let why = "16-bit samples or alpha go to JPEG through the whole-image path";
        return Ok(Opened::Unsupported(why.into()));
    }
    let icc = rows.header().meta.icc.as_deref();
    if job.to_srgb && rows.color().has_color() && icc.is_some_and(codec::icc::converts) {
        let why = "it does not convert colours: --to-srgb with a profile other than sRGB goes through the whole-image path";
        return Ok(Opened::Unsupported(why.into()));
    }
    if output == ImageFormat::Tiff {
        let meta = rows.header().meta.clone().select(job.metadata);
        let why = if meta.has_blobs() {
            Some("its EXIF, XMP or IPTC goes to TIFF through the whole-image path")
        } else {
            None
        };
        if let Some(why) = why {
            return Ok(Opened::Unsupported(why.into()));
        }
    }
    Ok(Opened::Rows(Box::new(rows)))
}

/// Which engine blurs the main command's image (`--engine`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The strip engine where the decoded image would not fit `--max-memory` and the job is
    /// one it runs; the whole-image path otherwise.
    Auto,
    /// Decode, blur and encode the whole image, one after the other.
    Whole,
    /// The strip engine; a job it does not run is an error.
    Strips,
}

/// A decoded batch (or why the decoder stopped) going to the blur.
type DecodedBatch<T> = Result<Vec<T>, ImageIoError>;

/// Rows per batch from the decoder: small, so the blur's first strip starts early.
pub(crate) const DECODE_ROWS: usize = 16;

/// Test hook: `GBLUR_BAND_ROWS=N` forces the device's bands to N rows.
const BAND_ROWS_VAR: &str = "GBLUR_BAND_ROWS";

/// Test hook: `GBLUR_TWO_PASS=1` runs the exact two-pass method whatever the budget.
const TWO_PASS_VAR: &str = "GBLUR_TWO_PASS";

/// Test hook: `GBLUR_STRIP_ROWS=N` forces strips of N rows (rounded up to 16, or to 128 from
/// 128 up), so that small images cross many strips.
const STRIP_ROWS_VAR: &str = "GBLUR_STRIP_ROWS";

/// The samples the strip engine streams: what the codecs' row halves read and write
/// (`codec::rows::RowSample`) and the banded blur takes.
pub trait StreamSample: Sample + RowSample {
    /// Distinct values, for the sRGB table of `--linear`.
    const LEVELS: usize;
}

impl StreamSample for u8 {
    const LEVELS: usize = 256;
}

impl StreamSample for u16 {
    const LEVELS: usize = 65536;
}

/// A main-command job as the strip engine sees it.
pub struct StripJob<'a> {
    pub input: &'a Path,
    /// The input, opened once: every read of it (header, rows, the two-pass method's second
    /// read) goes through this handle.
    pub source: &'a codec::read::Input,
    /// The input's format, from its head (`job::plan::Header`).
    pub input_format: Option<ImageFormat>,
    pub output: &'a Path,
    pub format: ImageFormat,
    /// What the output's final rename may replace (`--no-clobber`: nothing).
    pub replace: codec::Replace<'a>,
    pub sigma_y: f64,
    pub linear: bool,
    pub max_memory_mib: u64,
    pub png_compression: CompressionType,
    /// `--quality` and `--subsampling`, for JPEG output.
    pub jpeg: JpegOptions,
    /// `--tiff-compression`, for TIFF output.
    pub tiff: TiffCompression,
    /// The OpenCL device's pipeline where one is chosen; None for the Rust path.
    pub gpu: Option<Pipeline>,
    /// `--region` or `--mask` selects part of the image.
    pub masked: bool,
    /// Both axes' edge mode is clamp.
    pub clamp: bool,
    /// Show the rows' progress bar once the job has run `PROGRESS_AFTER`.
    pub progress: bool,
    /// A program's progress callback, told the rows as they go to the encoder.
    pub on_progress: Option<crate::progress::OnProgress>,
    /// Which kinds of the input's metadata are written (`--strip`, `--keep`).
    pub metadata: KeepMetadata,
    /// The input is to be converted to sRGB (`--to-srgb`), which the whole-image path does
    /// where its profile is not sRGB's already.
    pub to_srgb: bool,
}

/// Why the strip engine cannot run `job` with `blur`, from the job alone; None where it can
/// as far as that tells (the input's header may still say no: `open`).
pub fn unsupported(job: &StripJob, blur: &Blur2d) -> Option<String> {
    let why = if codec::is_stdio(job.input) || codec::is_stdio(job.output) {
        "it reads and writes files, not stdin or stdout"
    } else if job
        .gpu
        .is_some_and(|p| !matches!(p, Pipeline::Blocked { .. }))
    {
        "on an OpenCL device it runs the blocked pipeline only (--pipeline blocked)"
    } else if job.masked {
        "it blurs the whole image: no --region or --mask"
    } else if !job.clamp {
        "its edge mode is clamp only"
    } else if Axis::of(&blur.x).is_none() || Axis::of(&blur.y).is_none() {
        "it runs the recursive filter only (sigma >= 2 with --method auto, or --method recursive)"
    } else if !codec::of(job.format).writes_rows() {
        "it writes PNG, TIFF and JPEG only"
    } else if !job.input_format.is_some_and(|f| codec::of(f).reads_rows()) {
        "it reads PNG, TIFF and JPEG only"
    } else {
        return None;
    };
    Some(why.into())
}

/// The decoded image's size in bytes, which the whole-image path holds at once.
pub fn decoded_bytes(rows: &Rows) -> u64 {
    let (width, height) = rows.size();
    width as u64 * height as u64 * rows.color().bytes_per_pixel() as u64
}

/// What the whole-image path would hold of `rows`'s file: its decoded pixels, and a JPEG's
/// bytes up to its end marker, which it reads into memory to decode: the file's size, but
/// never more than the pixels (a JPEG's data is smaller than its pixels, and a motion photo's
/// video after the end marker is never read).
pub fn whole_image_bytes(rows: &Rows) -> u64 {
    let decoded = decoded_bytes(rows);
    let encoded = match codec::of(rows.format()).decodes_bytes() {
        true => std::fs::metadata(rows.path())
            .map_or(0, |m| m.len())
            .min(decoded),
        false => 0,
    };
    decoded + encoded
}

/// What a streamed job did, for its report.
pub struct Streamed {
    pub passes: Vec<Pass>,
    /// Whether the device blurred it (false: the Rust path).
    pub on_device: bool,
    pub notes: Vec<String>,
    pub color: ColorType,
    pub pipeline: String,
}

/// Why the strip engine failed.
#[derive(Debug, thiserror::Error)]
pub enum StripError {
    #[error(transparent)]
    Io(#[from] ImageIoError),
    /// The job needs more memory than `--max-memory`; `detail` says how much.
    #[error("{}: {detail}", path.display())]
    OverBudget { path: PathBuf, detail: String },
    #[error("{device} failed while blurring a band of rows: {error}")]
    Device { device: String, error: Box<ClError> },
}

impl StripError {
    fn device(device: &Device, error: ClError) -> StripError {
        StripError::Device {
            device: device.name(),
            error: Box::new(error),
        }
    }
}

/// Why a stage stopped.
enum Stop {
    Failed(ImageIoError),
    Device(ClError),
    /// The other end of a channel is gone: the stage there failed and says why.
    Gone,
    /// The exact two-pass method's file of column states failed.
    Spill(std::io::Error),
}

impl From<std::io::Error> for Stop {
    fn from(e: std::io::Error) -> Self {
        Stop::Spill(e)
    }
}

/// A streamed image's size and colour type, as the encoder and the second pass see it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Shape {
    pub width: u32,
    pub height: u32,
    pub color: ColorType,
}

impl Shape {
    fn of(rows: &Rows) -> Shape {
        let ((width, height), color) = (rows.size(), rows.color());
        Shape {
            width,
            height,
            color,
        }
    }

    fn dims(self) -> (usize, usize) {
        (self.width as usize, self.height as usize)
    }
}

/// How many JPEG stripes the encoder holds and encodes at once: one per thread of the rayon
/// pool, within an eighth of the job's memory budget. A stripe in the encoder costs about four
/// times its rows' bytes (measured): its rows, the encoder's working copies, its output.
fn stripes_at_once(job: &StripJob, row_bytes: usize) -> usize {
    let stripe = (4 * 256 * row_bytes) as u64;
    let budget = job.max_memory_mib.saturating_mul(1 << 20) / 8;
    (rayon::current_num_threads() as u64)
        .min(budget / stripe.max(1))
        .max(1) as usize
}

/// A stage's result, its panic carried on to the caller.
fn join<R>(h: std::thread::ScopedJoinHandle<'_, R>) -> R {
    h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// The decoder thread: every row of `rows`, in batches, into `out`; stops early when the
/// blur is gone. Returns the time spent decoding, not waiting.
fn decode<T: StreamSample>(
    mut rows: Rows,
    (out, spare): (Sender<DecodedBatch<T>>, Receiver<Vec<T>>),
) -> Duration {
    let (stride, height) = (rows.row_samples(), rows.size().1 as usize);
    let mut busy = Duration::ZERO;
    let mut done = 0;
    while done < height {
        let t = Instant::now();
        let n = DECODE_ROWS.min(height - done);
        let mut batch = spare.try_recv().unwrap_or_default();
        if batch.len() != n * stride {
            batch.resize(n * stride, T::from_f32(0.0));
        }
        let read = rows.read(&mut batch).map(|()| batch);
        busy += t.elapsed();
        let failed = read.is_err();
        if out.send(read).is_err() || failed {
            break;
        }
        done += n;
    }
    busy
}
