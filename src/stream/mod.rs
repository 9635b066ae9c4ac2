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
mod stage;
mod two_pass;

use crate::backend::Device;
use crate::codec::jpeg::{rows_in as jpeg_in, rows_out as jpeg_out};
use crate::codec::jpeg::{JpegColor, JpegOptions, JpegSettings};
use crate::codec::tiff::{Compression, TiffCompression};
use crate::codec::metadata::{KeepMetadata, Metadata};
use crate::codec::png::{rows_in as png_in, rows_out as png_out};
use crate::codec::rows::{self as header, Batches, RowSample};
use crate::codec::tiff::{rows_in as tiff_in, rows_out as tiff_out};
use crate::codec::{self, ImageIoError};
use crate::cpu::banded::{
    blur_streamed, srgb_table, Axis, ColumnStates, Pixels, Sample, StripPlan,
};
use crate::fault::env_number;
use crate::filter::Blur2d;
use crate::gpu::opencl::ClError;
use crate::gpu::plan::{Pipeline, Upload};
use crate::report::{Pass, Stage};
use crossbeam_channel::{bounded, Receiver, Sender};
use gpu_bands::BandPlan;
use image::codecs::png::CompressionType;
use image::{ColorType, ImageFormat};
pub use jpeg_in::JpegRows;
use method::{window_plan, Vertical};
pub use png_in::PngRows;
use crate::progress::RowsBar;
use report::{report, Held};
use stage::{Feed, Sink};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
pub use tiff_in::TiffRows;

/// An input being read row by row: a PNG a row at a time, a TIFF a strip at a time, a JPEG a
/// scanline at a time.
pub enum Rows {
    Png(Box<PngRows>),
    Tiff(Box<TiffRows>),
    Jpeg(Box<JpegRows>),
}

impl Rows {
    /// A TIFF input's Compression tag, for `--tiff-compression same` (None for other formats).
    fn tiff_compression(&self) -> Option<u16> {
        match self {
            Rows::Tiff(r) => Some(r.compression),
            _ => None,
        }
    }

    /// The input's metadata, sample layout and size.
    fn header(&self) -> &header::Header {
        match self {
            Rows::Png(r) => &r.header,
            Rows::Tiff(r) => &r.header,
            Rows::Jpeg(r) => &r.header,
        }
    }

    fn header_mut(&mut self) -> &mut header::Header {
        match self {
            Rows::Png(r) => &mut r.header,
            Rows::Tiff(r) => &mut r.header,
            Rows::Jpeg(r) => &mut r.header,
        }
    }

    pub fn size(&self) -> (u32, u32) {
        (self.header().width, self.header().height)
    }

    pub fn color(&self) -> ColorType {
        self.header().color
    }

    pub fn format(&self) -> ImageFormat {
        match self {
            Rows::Png(_) => ImageFormat::Png,
            Rows::Tiff(_) => ImageFormat::Tiff,
            Rows::Jpeg(_) => ImageFormat::Jpeg,
        }
    }

    /// Samples per row.
    pub fn row_samples(&self) -> usize {
        self.header().row_samples()
    }

    /// Fills `out` with the next rows (whole rows).
    /// The next rows into `out`, behind the decoder guard: a decoder's panic is a decode
    /// error of the input.
    fn read<T: StreamSample>(&mut self, out: &mut [T]) -> Result<(), ImageIoError> {
        let read = codec::guard::catch(|| match self {
            _ if crate::fault::is(crate::fault::Fault::DecoderPanic) => {
                panic!("assertion failed: an injected decoder fault")
            }
            Rows::Png(r) => r.read(out),
            Rows::Tiff(r) => r.read(out),
            Rows::Jpeg(r) => r.read(out),
        });
        read.unwrap_or_else(|panic| Err(decoder_failed(self.path(), &panic)))
    }

    fn path(&self) -> &Path {
        match self {
            Rows::Png(r) => &r.path,
            Rows::Tiff(r) => &r.path,
            Rows::Jpeg(r) => &r.path,
        }
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
    let (path, output, max_memory_mib) = (job.input, job.format, job.max_memory_mib);
    let rows = match job.input_format {
        // A strip of the file is held while its rows go to the blur: a quarter of the budget
        // at most.
        Some(ImageFormat::Tiff) => tiff_in::open(path, max_memory_mib.saturating_mul(1 << 20) / 4)?
            .map(|rows| Rows::Tiff(Box::new(rows))),
        Some(ImageFormat::Jpeg) => jpeg_in::open(path)?.map(|rows| Rows::Jpeg(Box::new(rows))),
        _ => png_in::open(path)?.map(|rows| Rows::Png(Box::new(rows))),
    };
    let rows = match rows {
        Ok(rows) => rows,
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
    /// The input's format, from its head (`job::plan::Header`).
    pub input_format: Option<ImageFormat>,
    pub output: &'a Path,
    pub format: ImageFormat,
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
    } else if !streamed(Some(job.format)) {
        "it writes PNG, TIFF and JPEG only"
    } else if !streamed(codec::sniff(job.input).ok().flatten()) {
        "it reads PNG, TIFF and JPEG only"
    } else {
        return None;
    };
    Some(why.into())
}

/// Whether the strip engine reads and writes `format`.
fn streamed(format: Option<ImageFormat>) -> bool {
    matches!(
        format,
        Some(ImageFormat::Png | ImageFormat::Tiff | ImageFormat::Jpeg)
    )
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
    let encoded = match rows {
        Rows::Jpeg(r) => std::fs::metadata(&r.path)
            .map_or(0, |m| m.len())
            .min(decoded),
        _ => 0,
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

/// The process's resident memory (Linux: /proc/self/statm); 0 where it cannot be read.
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf only reads a configuration value.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    pages * page.max(0) as u64
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

/// Blurs `rows` into `job.output` through the strip engine: in bands on `device` (opened for
/// `job.gpu`) where it takes them, on the Rust path's sliding window otherwise.
pub fn run(
    job: &StripJob,
    blur: &Blur2d,
    rows: Rows,
    device: Option<&Device>,
) -> Result<Streamed, StripError> {
    let color = rows.color();
    match color.bytes_per_pixel() / color.channel_count() {
        1 => run_typed::<u8>(job, blur, rows, device),
        _ => run_typed::<u16>(job, blur, rows, device),
    }
}

/// The band plan for `device` where it blurs a `T` image with rows of `row_samples` (and the
/// filter's `reach`) within what `job`'s budget leaves beside the process as it stands (the
/// device's driver alone holds a few hundred MiB) and `beside` (the codecs and the rows in
/// flight); else why the Rust path blurs it.
fn gpu_plan<T: StreamSample>(
    job: &StripJob,
    device: &Device,
    (row_samples, height): (usize, usize),
    (reach, beside): (usize, u64),
) -> Result<(BandPlan, u64), String> {
    if T::as_bytes(&[]).is_none() {
        return Err("the device takes 8-bit images in bands".into());
    }
    let resident = resident_bytes();
    let budget = budget::blur_share(job, resident, beside);
    let alloc = device.ctx.info.max_alloc_mib.saturating_mul(1 << 20);
    let forced = env_number(BAND_ROWS_VAR);
    let plan = BandPlan::new((row_samples, height), reach, (budget, alloc), forced);
    let least = (2 * reach).max(16);
    plan.map(|p| (p, resident)).ok_or_else(|| {
        format!("device bands of {least} rows and {reach} rows of reach each side do not fit the memory budget beside the {} MiB the process holds with the device open (raise --max-memory)", resident >> 20)
    })
}

/// Where a streamed image is blurred: an OpenCL device's bands (with the process's resident
/// bytes once it was open), else a window of strips on the host, or the exact two passes
/// (`vertical`); with the set-up passes that took.
struct Placement<'d> {
    bands: Option<(&'d Device, BandPlan, u64)>,
    plan: StripPlan,
    window: u64,
    vertical: Vertical,
    setup: Vec<Pass>,
}

/// Places the blur of `rows` (`T` samples, the filter reaching `reach` rows): on `device`'s
/// bands where they fit (a note says why not where they do not), else in a window of strips
/// within the budget; the device's kernels are built here.
fn place<'d, T: StreamSample>(
    job: &StripJob,
    blur: &Blur2d,
    rows: &Rows,
    (device, reach): (Option<&'d Device>, usize),
    notes: &mut Vec<String>,
) -> Result<Placement<'d>, StripError> {
    let ((width, height), color) = (rows.size(), rows.color());
    let stride = rows.row_samples();
    let bytes = std::mem::size_of::<T>();
    let image = (stride, height as usize);
    let stripes = stripes_at_once(job, width as usize * color.channel_count() as usize);
    let beside = budget::beside_window(job, rows, bytes as u64, stripes as u64);
    let bands = device.and_then(|d| match gpu_plan::<T>(job, d, image, (reach, beside)) {
        Ok((plan, resident)) => Some((d, plan, resident)),
        Err(why) => {
            notes.push(format!("{why}: blurred on the built-in Rust path"));
            None
        }
    });
    let mut setup = Vec::new();
    let (plan, window, vertical) = match bands {
        // Not used: the device's bands blur the image.
        Some(_) => (StripPlan { strip: 0, reach }, 0, Vertical::Window),
        None => window_plan(
            job,
            (stride, bytes),
            height as usize,
            (reach, beside),
            env_number(STRIP_ROWS_VAR),
        )?,
    };
    if let Some((device, b, _)) = bands {
        let t = Instant::now();
        let upload = Upload::for_image(color, job.linear, device.pipeline, blur);
        let rows = (b.band + 2 * b.reach).min(height as usize);
        device
            .prepare(blur, (width as usize, rows), upload)
            .map_err(|error| StripError::device(device, error))?;
        setup.push(Pass::host(Stage::Setup, "kernels", t));
    }
    Ok(Placement {
        bands,
        plan,
        window,
        vertical,
        setup,
    })
}

/// What the output is written with: the input's metadata that `--strip` and `--keep` leave,
/// and the encoders' settings resolved against the input, with the notes they owe (the
/// JPEG quality's is returned, for a JPEG output to give).
fn output_settings(
    job: &StripJob,
    rows: &mut Rows,
    notes: &mut Vec<String>,
) -> (Metadata, Settings, Option<String>) {
    let mut meta: Metadata = std::mem::take(&mut rows.header_mut().meta);
    notes.append(&mut meta.unread);
    if job.linear {
        notes.extend(meta.icc.as_deref().and_then(crate::codec::icc::linear_note));
    }
    let mut meta = meta.select(job.metadata);
    if let Some(note) = codec::foreign_profile(meta.icc.as_deref(), rows.color().has_color()) {
        meta.icc = None;
        notes.push(note);
    }
    if job.format == ImageFormat::Png {
        // The JPEG writer's `metadata::embed` says so itself; PNG's chunks are written here.
        notes.extend(meta.iptc_lost(ImageFormat::Png));
    }
    let traits = match &*rows {
        Rows::Jpeg(r) => Some(r.traits),
        _ => None,
    };
    let (jpeg, quality_note) = job.jpeg.resolve(traits.as_ref());
    let (tiff, tiff_note) = job.tiff.resolve(rows.tiff_compression());
    if job.format == ImageFormat::Tiff {
        notes.extend(tiff_note);
    }
    let settings = Settings {
        jpeg,
        tiff: tiff.compression(),
    };
    (meta, settings, quality_note)
}

/// How the image was blurred, for the report: the device's bands or the host's strips.
fn pipeline_name(placement: &Placement, two_pass: bool) -> String {
    match placement.bands {
        Some((device, b, _)) => format!(
            "bands of {} rows with {} rows of reach each side, {}, 8-bit in and out",
            b.band,
            b.reach,
            device.pipeline.describe()
        ),
        None => format!(
            "strips of {} rows, banded ({}){}",
            placement.plan.strip,
            crate::cpu::lanes::isa_name(),
            if two_pass { ", exact two-pass" } else { "" }
        ),
    }
}

fn run_typed<T: StreamSample>(
    job: &StripJob,
    blur: &Blur2d,
    mut rows: Rows,
    device: Option<&Device>,
) -> Result<Streamed, StripError> {
    let ((width, height), color) = (rows.size(), rows.color());
    let stride = rows.row_samples();
    let table = job.linear.then(|| srgb_table(T::LEVELS));
    let px = Pixels {
        channels: color.channel_count() as usize,
        alpha: color.has_alpha(),
        linear: table.as_deref(),
        mix: None,
        sharpen: None,
    };
    let reach = crate::filter::gaussian::recursive_reach(job.sigma_y);
    let axes = (Axis::of(&blur.x), Axis::of(&blur.y));
    let (Some(kx), Some(ky)) = axes else {
        unreachable!("`unsupported` refuses FIR axes");
    };
    let mut notes = Vec::new();
    let placement = place::<T>(job, blur, &rows, (device, reach), &mut notes)?;
    let Placement {
        bands,
        plan,
        window,
        vertical,
        ..
    } = placement;
    let (meta, settings, quality_note) = output_settings(job, &mut rows, &mut notes);
    let two_pass = vertical != Vertical::Window;
    let passes_over = if two_pass { 2 } else { 1 };
    let mut bar = RowsBar::new((width, passes_over * height as u64), stride, job.progress);
    let mut first = match two_pass {
        true => {
            let dims = (width as usize, height as usize);
            let spill = match vertical {
                Vertical::TwoPass { spill: true } => Some(two_pass::spill_file(job)?),
                _ => None,
            };
            let strips = (plan.strip, spill);
            let first = two_pass::first_pass::<T>(job, rows, (dims, &px, ky), strips, &mut bar)?;
            rows = two_pass::reopen(job, ((width, height), color))?;
            rows.header_mut().meta = Metadata::default();
            Some(first)
        }
        false => None,
    };
    // The stages' overlap is measured from here: set-up and pass 1 come before any of them.
    let wall = Instant::now();
    let (in_tx, in_rx) = bounded::<DecodedBatch<T>>(2);
    let (out_tx, out_rx) = bounded::<Vec<T>>(1);
    // Buffers that went through each channel come back for the next batch or strip: a fresh
    // one is zeroed (the decoder's) or faulted in page by page (a strip's tens of MiB, from
    // the system each time), which on a gigapixel image cost more than the copies themselves.
    let (in_back, in_spare) = bounded::<Vec<T>>(4);
    let (out_back, out_spare) = bounded::<Vec<T>>(2);
    let (blurred, decode_busy, encoded) = std::thread::scope(|s| {
        let decoder = s.spawn(move || decode(rows, (in_tx, in_spare)));
        let (header, meta) = ((width, height, color), (&meta, settings));
        let encoder = s.spawn(move || encode::<T>(job, header, meta, (out_rx, out_back)));
        let dims = (width as usize, height as usize);
        let feed = Feed::new((in_rx, in_back));
        let sink = Sink::new((out_tx, out_spare, &mut bar), budget::PIECE_BYTES as usize);
        let blurred = match bands {
            Some((device, bands, _)) => {
                let image = (dims.0, dims.1, px.channels);
                let filter = (blur, job.linear);
                gpu_bands::blur_bands(device, image, filter, bands, (feed, sink))
            }
            None => {
                let exact = first.as_mut().map(|f| &mut f.states);
                blur_stage(dims, &px, (kx, ky), (plan, exact), (feed, sink))
                    .map(|(passes, busy)| (passes, busy, None))
            }
        };
        (blurred, join(decoder), join(encoder))
    });
    bar.finish();
    // The first stage to fail says why; a stage that stopped because another did says nothing.
    let (passes, blur_busy, bands_note) = match blurred {
        Ok(done) => done,
        Err(Stop::Failed(e)) => return Err(e.into()),
        Err(Stop::Device(error)) => {
            let device = device.expect("only a device's bands stop with a device error");
            return Err(StripError::device(device, error));
        }
        Err(Stop::Gone) => return Err(encoded.expect_err("the encoder stopped the blur").into()),
        Err(Stop::Spill(e)) => return Err(two_pass::spill_error(job, e).into()),
    };
    let (encode_busy, output_notes) = encoded?;
    let busy = (decode_busy, blur_busy, encode_busy);
    let held = match (bands, &first) {
        (Some((_, b, resident)), _) => Held::Bands(b, b.bytes(stride), resident),
        (None, Some(first)) => {
            let spilled = first.states.spilled();
            Held::TwoPass(plan, window, reach, first.wall_ms, spilled)
        }
        (None, None) => Held::Window(plan, window),
    };
    let (passes, summary) = report(passes, busy, held, wall);
    let first_passes = first.map(|f| f.passes).unwrap_or_default();
    let pipeline = pipeline_name(&placement, two_pass);
    let passes = placement
        .setup
        .into_iter()
        .chain(first_passes)
        .chain(passes)
        .collect();
    notes.insert(0, summary);
    notes.extend(bands_note);
    if job.format == ImageFormat::Jpeg {
        notes.extend(quality_note);
    }
    notes.extend(output_notes);
    Ok(Streamed {
        passes,
        on_device: bands.is_some(),
        notes,
        color,
        pipeline,
    })
}

/// The encoder thread: the rows into `job.output` as PNG, TIFF or JPEG (`unsupported` allows
/// no other). Returns the time spent writing, not waiting, and notes on what the output
/// could not hold.
fn encode<T: StreamSample>(
    job: &StripJob,
    (width, height, color): (u32, u32, ColorType),
    (meta, settings): (&Metadata, Settings),
    rows: Batches<T>,
) -> Result<(Duration, Vec<String>), ImageIoError> {
    let encoded =
        codec::guard::catch(|| encode_rows(job, (width, height, color), (meta, settings), rows));
    encoded.unwrap_or_else(|panic| {
        Err(ImageIoError::Encode {
            path: job.output.into(),
            format: format!("{:?}", job.format),
            detail: format!("the encoder failed ({panic})"),
        })
    })
}

/// The encoders' settings for one image, resolved against its input.
#[derive(Clone, Copy)]
struct Settings {
    jpeg: JpegSettings,
    tiff: Compression,
}

fn encode_rows<T: StreamSample>(
    job: &StripJob,
    (width, height, color): (u32, u32, ColorType),
    (meta, Settings { jpeg, tiff }): (&Metadata, Settings),
    rows: Batches<T>,
) -> Result<(Duration, Vec<String>), ImageIoError> {
    let size = (width, height);
    let busy = match job.format {
        ImageFormat::Tiff => {
            let layout = crate::codec::tiff::write::Layout {
                width,
                height,
                channels: color.channel_count() as u16,
                icc: meta.icc.as_deref(),
                compression: tiff,
                inks: false,
            };
            tiff_out::write::<T>(job.output, layout, rows)
        }
        ImageFormat::Jpeg => {
            let color = match color.channel_count() {
                1 => JpegColor::Gray,
                _ => JpegColor::Rgb,
            };
            let header = jpeg_out::JpegHeader {
                size,
                color,
                settings: jpeg,
                meta,
                stripes_at_once: stripes_at_once(job, width as usize * color.channels()),
            };
            return jpeg_out::write::<T>(job.output, header, rows);
        }
        _ => {
            let header = png_out::PngHeader {
                size,
                color,
                meta,
                compression: job.png_compression,
            };
            png_out::write::<T>(job.output, header, rows)
        }
    };
    busy.map(|busy| (busy, Vec::new()))
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

/// The blur stage, on the calling thread: rows from the decoder through the window to the
/// encoder. Returns the blur's passes and its busy time in ms (the passes and the copies in
/// and out, not the waits).
fn blur_stage<T: StreamSample>(
    dims: (usize, usize),
    px: &Pixels,
    axes: (Axis, Axis),
    plan: (StripPlan, Option<&mut ColumnStates>),
    (mut feed, mut sink): (Feed<T>, Sink<T>),
) -> Result<(Vec<Pass>, f64), Stop> {
    let fill = |dst: &mut [T]| feed.fill(dst);
    let emit = |rows: &[T]| sink.emit(rows);
    let passes = blur_streamed(dims, px, axes, plan, fill, emit)?;
    let copies = feed.copies + sink.copies;
    let busy = passes.iter().map(|p| p.ms).sum::<f64>() + copies.as_secs_f64() * 1e3;
    let passes = passes
        .into_iter()
        .map(|p| Pass::host_ms(Stage::Blur, p.name, p.ms))
        .collect();
    Ok((passes, busy))
}
