//! The command line as users type it (clap), and its translation into checked job options.
//! Nothing below this module knows about clap.

mod batch;
#[cfg(feature = "bench")]
mod bench;
mod entry;
mod gradient;
mod manual;
mod output;

pub use batch::BatchArgs;
#[cfg(feature = "bench")]
pub use bench::BenchCommand;
pub use entry::main;
pub use gradient::GradientArgs;
pub use manual::{completions, man, man_pages};
use output::{parse_format, split_prefix};

use clap::{Args, Parser, Subcommand, ValueEnum};
use gblur::command::devices::DeviceChoice;
use gblur::command::devices::DeviceSet;
use gblur::command::devices::TransposeKind;
use gblur::command::devices::{ChunkStart, PipelineChoice};
use gblur::command::formats::KeepMetadata;
use gblur::command::formats::{self, EncodeOptions};
use gblur::command::job::BlurJob;
use gblur::command::job::Engine;
use gblur::command::job::Sharpen;
use gblur::command::job::{parse_region, MaskMode, MaskOptions, NanPolicy, Region};
use gblur::command::job::{EdgeMode, Edges};
use gblur::command::stages::Blur2d;
use gblur::Method;
use image::codecs::png::CompressionType;
use std::path::PathBuf;

/// Blur images with a recursive (IIR) Gaussian on OpenCL devices, and report the time of
/// every pass.
///
/// The cost per pixel does not grow with sigma. Runs on a GPU where there is one and it pays
/// for the image (--device auto measures it), and otherwise on a built-in multi-threaded Rust
/// path; an OpenCL CPU device (PoCL) runs only when --device names it.
#[derive(Debug, Parser)]
#[command(
    name = "gblur",
    version,
    args_conflicts_with_subcommands = true,
    allow_negative_numbers = true,
    subcommand_negates_reqs = true,
    after_help = "Examples:\n  gblur photo.jpg blurred.jpg --sigma 5\n  cat a.png | gblur - - --format jpg --sigma 3 > b.jpg\n  gblur scan.png out.png --sigma-x 8 --sigma-y 2 --json\n  gblur devices"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub blur: BlurArgs,
    /// Print nothing on stderr but errors.
    #[arg(
        short,
        long,
        global = true,
        conflicts_with = "verbose",
        help_heading = "Reporting"
    )]
    pub quiet: bool,
    /// Print more detail on stderr (device details, the error chain).
    #[arg(short, long, global = true, help_heading = "Reporting")]
    pub verbose: bool,
    /// Use N threads on the CPU (decoding, encoding, the Rust path's blur, batch lanes), at
    /// most 16 per core (RAYON_NUM_THREADS likewise); default: one per core.
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u16).range(1..), help_heading = "Device and speed")]
    pub threads: Option<u16>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every OpenCL platform and device gblur can use.
    Devices {
        /// Print the list as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Measure the figures `--device auto` chooses by, again: the Rust path's rate and the
    /// device's set-up, transfers and kernels. They are kept in the cache folder
    /// (GBLUR_CACHE_DIR, else $XDG_CACHE_HOME/gblur or ~/.cache/gblur); `auto` measures them
    /// on its first run with a GPU.
    Calibrate {
        /// The device to measure (as --device takes it); auto: the first GPU, if any.
        #[arg(long, default_value = "auto", value_parser = |s: &str| Ok::<_, String>(DeviceChoice::parse(s)))]
        device: DeviceChoice,
        /// Print the figures as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Measure the device: peak bandwidth, transposes, blur algorithms.
    #[cfg(feature = "bench")]
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Blur every image under IN_DIR into the same structure under OUT_DIR.
    Batch(BatchArgs),
    /// Sharpen an image with the unsharp mask: out = in + AMOUNT·(in − blur(in)), where the
    /// difference is over THRESHOLD.
    ///
    /// The blur is gblur's Gaussian (every option of the main command applies: --sigma, the
    /// edge modes, --region and --mask, --linear, --device), so sharpening costs the same at
    /// any radius. Colour is blurred premultiplied by alpha and sharpened as straight values;
    /// alpha is kept. 8- and 16-bit results are clipped to their range, float ones keep every
    /// value.
    Sharpen(SharpenArgs),
    /// Map edges (the Gaussian gradient magnitude) or blobs (the Laplacian of the Gaussian,
    /// --laplacian) of an image, or of every image in a folder, as scipy.ndimage computes
    /// them, at a cost that does not grow with sigma.
    ///
    /// The map is of the image's luma (1 = full scale), written as a 32-bit float TIFF (the
    /// values themselves) or a 16-bit PNG (scaled: --png-scale).
    Gradient(GradientArgs),
    /// List the image formats this build reads and writes: the samples written, the metadata
    /// kept, and whether libheif (HEIC and AVIF input) is installed.
    Formats {
        /// Print the list as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script on stdout (e.g. `gblur completions bash >
    /// ~/.local/share/bash-completion/completions/gblur`).
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print a manual page (roff) on stdout (e.g. `gblur man | man -l -`), or write them all.
    ///
    /// Without PAGE, the page of gblur itself; with it, a subcommand's (`batch`, `bench`,
    /// `bench-blur`, ...). `--dir DIR` writes every page into DIR instead (gblur.1,
    /// gblur-batch.1, gblur-bench-blur.1, ...), as `man` finds them under a man1 folder.
    Man {
        /// The subcommand whose page to print, its words joined by `-` (`bench-blur`).
        page: Option<String>,
        /// Write every page into this folder instead of printing one.
        #[arg(long, value_name = "DIR", conflicts_with = "page")]
        dir: Option<PathBuf>,
    },
    /// Merge the shard summaries that `gblur batch --summary DIR` wrote.
    ///
    /// Exit 0 only when every shard is present, every file is in exactly one shard, and none
    /// failed or was left unfinished; exit 1 otherwise, naming what is wrong.
    BatchReport {
        /// The folder given to `gblur batch --summary`.
        dir: PathBuf,
        /// Print the merged report as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct BlurArgs {
    /// Image to read (any format the `image` crate reads, recognised by content); `-` reads
    /// stdin.
    #[arg(required = true)]
    pub input: Option<PathBuf>,
    /// Where to write the result; the extension picks the format. `-` writes stdout in the
    /// input's format (or --format's, or a prefix's: png:-); a prefix also forces the format of
    /// a file (png:out.dat).
    #[arg(required = true)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub settings: BlurSettings,
    /// The output format (png, jpg, tif, webp, ...) whatever OUTPUT's extension; for OUTPUT
    /// `-`, without it, the input's.
    #[arg(long, value_parser = parse_format, help_heading = "Output")]
    pub format: Option<image::ImageFormat>,
    /// Print on stderr why the device or the Rust path runs: with --device auto and a GPU, the
    /// time the cost model predicts for each path and where its figures came from.
    #[arg(long, help_heading = "Device and speed", hide_short_help = true)]
    pub explain: bool,
    /// whole: decode, blur and encode the whole image in turn; strips: stream a PNG, TIFF or
    /// JPEG through a window of rows, or through an OpenCL device's blocked pipeline in bands
    /// of rows (decode, blur and encode on their own threads, memory bounded by --max-memory:
    /// docs/ALGORITHMS.md; where a large sigma's window would not fit, the image is read
    /// twice, the first time for the filter's state every few hundred rows); auto: strips where the decoded image is over --max-memory and the
    /// job is one the strip engine runs (PNG, TIFF or JPEG files in and out, clamp edges, the
    /// recursive filter, no mask; a TIFF in strips, of one page; no EXIF rotation), whole
    /// otherwise.
    #[arg(long, value_enum, default_value_t = EngineArg::Auto, help_heading = "Device and speed", hide_short_help = true)]
    pub engine: EngineArg,
    /// Refuse to replace an existing OUTPUT (exit 2, the file left as it is), also one another
    /// writer creates while gblur runs. By default it is replaced, as cp and vips replace it.
    #[arg(long, help_heading = "Output")]
    pub no_clobber: bool,
    /// Blur page N (counted from 0) of a multi-page TIFF alone, into any format. Without it
    /// every page is blurred, into a TIFF of as many pages.
    #[arg(
        long,
        value_name = "N",
        conflicts_with = "sigma_z",
        help_heading = "Pages"
    )]
    pub page: Option<usize>,
}

/// `gblur sharpen`: the main command's arguments and the unsharp mask's.
#[derive(Debug, Args)]
pub struct SharpenArgs {
    #[command(flatten)]
    pub blur: BlurArgs,
    #[command(flatten)]
    pub sharpen: SharpenFlags,
}

/// The unsharp mask's settings, for `gblur sharpen` and `gblur batch --sharpen`.
#[derive(Debug, Args)]
pub struct SharpenFlags {
    /// How much of the difference from the blur to add (default 1: out = 2·in − blur),
    /// from 0 to 100.
    #[arg(long, value_parser = parse_amount, help_heading = "Sharpening")]
    pub amount: Option<f64>,
    /// Leave differences no larger than this alone (default 0): a fraction of full scale for
    /// 8- and 16-bit images (0.02 is 5 of 255), the value itself for float ones, from 0 to 1.
    #[arg(long, value_parser = parse_threshold, help_heading = "Sharpening")]
    pub threshold: Option<f64>,
    /// Sharpen luminance alone (Rec. 709 luma; RGB images): the same difference goes to red,
    /// green and blue, so edges gain no colour fringes.
    #[arg(long, help_heading = "Sharpening")]
    pub luminance: bool,
}

impl SharpenFlags {
    /// The unsharp mask where `on`; its flags without `on` are a usage error.
    pub fn sharpen(&self, on: bool) -> Result<Option<Sharpen>, String> {
        if !on {
            if self.amount.is_some() || self.threshold.is_some() || self.luminance {
                return Err("--amount, --threshold and --luminance go with --sharpen".into());
            }
            return Ok(None);
        }
        Ok(Some(Sharpen {
            amount: self.amount.unwrap_or(1.0) as f32,
            threshold: self.threshold.unwrap_or(0.0) as f32,
            luminance: self.luminance,
        }))
    }
}

fn parse_amount(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not an amount from 0 to 100")),
    }
}

fn parse_threshold(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a threshold from 0 to 1 (a fraction of full scale)"
        )),
    }
}

impl SharpenArgs {
    /// The checked job: the main command's, sharpening.
    pub fn to_job(&self) -> Result<BlurJob, String> {
        let mut job = self.blur.to_job()?;
        job.sharpen = self.sharpen.sharpen(true)?;
        check_sharpen_mask(&job)?;
        Ok(job)
    }
}

/// Sharpening blends by a selection (`blend`); `exclude` (leaving the unselected pixels out
/// of the blur) has no meaning for it.
pub fn check_sharpen_mask(job: &BlurJob) -> Result<(), String> {
    match (&job.sharpen, job.mask.mode) {
        (Some(_), MaskMode::Exclude) if job.mask.active() => Err(
            "--mask-mode exclude does not apply to sharpening: it blends (--mask-mode blend)"
                .into(),
        ),
        _ => Ok(()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineArg {
    Auto,
    Whole,
    Strips,
}

/// Blur options shared by the main command and batch.
#[derive(Debug, Args)]
#[group(id = "blur_settings")]
#[command(group = clap::ArgGroup::new("selection").args(["region", "mask"]).multiple(true))]
pub struct BlurSettings {
    /// Standard deviation of the Gaussian in pixels, both axes: 0.001 to 1000000, or 0 for no
    /// blur.
    #[arg(short, long, value_parser = parse_sigma, required_unless_present_any = ["sigma_x", "sigma_y", "sigma_z"], help_heading = "Blur")]
    pub sigma: Option<f64>,
    /// Sigma along x (across rows), overriding --sigma; given alone, only rows are blurred.
    /// 0 leaves rows alone.
    #[arg(long, value_parser = parse_sigma, help_heading = "Blur")]
    pub sigma_x: Option<f64>,
    /// Sigma along y (down columns), overriding --sigma; given alone, only columns are
    /// blurred. 0 leaves columns alone.
    #[arg(long, value_parser = parse_sigma, help_heading = "Blur")]
    pub sigma_y: Option<f64>,
    /// Blur a multi-page TIFF's pages as one volume (a z-stack), with this sigma across
    /// pages beside --sigma (or --sigma-x, --sigma-y) across each page: pages of one size
    /// and colour type, without alpha; along z the edge mode is --edge-y's. Given alone, the
    /// pages are blurred along z only.
    #[arg(long, value_parser = parse_sigma, value_name = "S", help_heading = "Pages")]
    pub sigma_z: Option<f64>,
    /// auto: recursive, or the exact sampled FIR below sigma 2 where it is more accurate.
    #[arg(long, value_enum, default_value_t = MethodArg::Auto, help_heading = "Blur", hide_short_help = true)]
    pub method: MethodArg,
    /// What lies beyond the image's edges, both axes: clamp (the edge pixel repeated: scipy
    /// nearest, OpenCV BORDER_REPLICATE), reflect (dcba|abcd|dcba: scipy reflect,
    /// BORDER_REFLECT), reflect101 (dcb|abcd|cba: scipy mirror, BORDER_REFLECT_101), wrap
    /// (the image repeated: BORDER_WRAP) or constant[=V] (V a fraction of full scale, 0 to 1,
    /// default 0, the same for 8-bit, 16-bit and float images; alpha opaque). Exact on every
    /// device, pipeline and method; modes other than clamp blur a slightly larger image.
    #[arg(long, default_value = "clamp", value_parser = EdgeMode::parse, value_name = "MODE", help_heading = "Blur", hide_short_help = true)]
    pub edge: EdgeMode,
    /// The edge mode along x (the left and right edges); overrides --edge.
    #[arg(long, value_parser = EdgeMode::parse, value_name = "MODE", help_heading = "Blur", hide_short_help = true)]
    pub edge_x: Option<EdgeMode>,
    /// The edge mode along y (the top and bottom edges); overrides --edge.
    #[arg(long, value_parser = EdgeMode::parse, value_name = "MODE", help_heading = "Blur", hide_short_help = true)]
    pub edge_y: Option<EdgeMode>,
    /// The FIR's radius in sigmas, rounded as scipy.ndimage rounds `truncate`
    /// (floor(T * sigma + 0.5), at least 1); above 0, at most 20. Default: ceil(5 sigma). The
    /// recursive filter has no radius and ignores it.
    #[arg(long, value_parser = parse_truncate, value_name = "T", help_heading = "Blur", hide_short_help = true)]
    pub truncate: Option<f64>,
    /// transpose: column pass + transpose + column pass + transpose; direct: a row pass and
    /// a column pass (version 1 of the "Tuning Performance on the GPU" chapter); blocked: block-parallel column passes with fused
    /// transposes, each chunk starting from carried states (carried) or from a walk in from
    /// outside it (overlap), picked per pass; auto: the fastest measured for the device class
    /// (GPU: blocked, CPU: direct; see docs/BENCHMARKS.md).
    #[arg(long, value_enum, default_value_t = PipelineArg::Auto, help_heading = "Device and speed", hide_short_help = true)]
    pub pipeline: PipelineArg,
    /// The transpose kernel of the transpose pipeline (implies --pipeline transpose when
    /// --pipeline is auto). Default: the fastest for the device class (GPU: tile32, CPU:
    /// local).
    #[arg(
        long,
        value_enum,
        help_heading = "Device and speed",
        hide_short_help = true
    )]
    pub transpose: Option<TransposeArg>,
    /// auto, a device index or name substring from `gblur devices`, gpu, cpu, or rust (the
    /// built-in path). `gblur batch` also takes `all` (every GPU; without one, what auto
    /// picks) or a comma-separated list such as 0,1 or 0,rust: one worker per entry, each
    /// taking the next image when it is free.
    #[arg(short, long, default_value = "auto", value_parser = DeviceSet::parse, value_name = "DEVICE", help_heading = "Device and speed")]
    pub device: DeviceSet,
    /// Blur in linear light: decode sRGB first, re-encode after (what photographers expect
    /// of highlights).
    #[arg(long, help_heading = "Blur")]
    pub linear: bool,
    /// Convert an input with an RGB ICC profile (Adobe RGB, Display P3, ...) to sRGB before
    /// the blur (relative colorimetric); the output carries no profile. Whole-image path only.
    #[arg(long, help_heading = "Output")]
    pub to_srgb: bool,
    /// Quality of a lossy output, 1-100. JPEG: default 90, or `same`, the input JPEG's, read
    /// from its quantisation tables (90 for an input that is not a JPEG). WebP: lossy at it
    /// (libwebp), or `lossless`; default 75 (as libvips and cwebp), lossless for a lossless
    /// WebP input (and where libwebp is not installed, with a note). AVIF and HEIC: default 50
    /// (libheif). Given for an output of another format, it is a usage error, never ignored
    /// (a batch: where no output is a JPEG, WebP, AVIF or HEIC).
    #[arg(long, value_parser = parse_quality, value_name = "1-100|same|lossless", help_heading = "Output")]
    pub quality: Option<formats::Quality>,
    /// JPEG chroma subsampling: `same` (the default) keeps a JPEG input's layout (other inputs
    /// get 4:2:0 below quality 90, 4:4:4 from 90 up). Given for an output that is not a JPEG,
    /// it is a usage error.
    #[arg(long, value_enum, help_heading = "Output", hide_short_help = true)]
    pub subsampling: Option<SubsamplingArg>,
    /// How a JPEG → JPEG job blurs on the Rust path: `auto` blurs the YCbCr planes as the file
    /// holds them (chroma on its own grid) where the output keeps the input's subsampling and
    /// nothing needs RGB (--linear, masks, edge modes, an EXIF rotation); `rgb` always
    /// decodes to RGB.
    #[arg(long, value_enum, default_value_t = JpegPathArg::Auto, help_heading = "Output", hide_short_help = true)]
    pub jpeg_path: JpegPathArg,
    /// TIFF compression: `same` (the default) keeps a TIFF input's (Deflate, with a note, for
    /// one gblur does not write; none for other inputs); `lzw`, `deflate` and `zstd`
    /// difference samples along rows first (Predictor 2 for integers, 3 for floats). Given for
    /// an output that is not a TIFF, it is a usage error (a batch: where none is a TIFF).
    #[arg(long, value_parser = formats::TiffCompression::parse, value_name = "none|lzw|deflate|zstd|same", help_heading = "Output", hide_short_help = true)]
    pub tiff_compression: Option<formats::TiffCompression>,
    /// PNG compression effort, `fast` by default (sizes and times: docs/BENCHMARKS.md). Given
    /// for an output that is not a PNG, it is a usage error.
    #[arg(long, value_enum, help_heading = "Output", hide_short_help = true)]
    pub png_compression: Option<PngCompression>,
    /// Dither (TPDF noise of ±1 step, seeded, so the same input gives the same bytes) before
    /// rounding to fewer bits than the input has (float or 16-bit into 8 bits, float into 16),
    /// so smooth gradients do not band.
    #[arg(long, help_heading = "Output", hide_short_help = true)]
    pub dither: bool,
    /// Memory budget in MiB (at least 1; never more than the machine's memory and swap). The
    /// whole-image path decodes nothing larger (with a JPEG's bytes, and stdin or a pipe read
    /// into memory, counted); the strip engine keeps its whole job's peak resident memory
    /// within it (the codecs and rows in flight, then the window, or the exact two-pass
    /// method's where a large sigma's window would not fit), and refuses a job that cannot
    /// fit, naming the least budget it needs (--engine).
    #[arg(long, default_value_t = gblur::command::process::DEFAULT_BUDGET_MIB, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Device and speed", hide_short_help = true)]
    pub max_memory: u64,
    /// Write no metadata: no ICC profile, EXIF (GPS position, camera and dates), XMP or IPTC.
    /// By default all four are carried to the output where its format holds them (IPTC: JPEG
    /// and TIFF), with the EXIF orientation set to 1 (the pixels are turned already); the
    /// EXIF thumbnail, the unblurred picture, never is.
    #[arg(
        long,
        conflicts_with = "keep",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub strip: bool,
    /// Write only these kinds of the input's metadata (a comma list, or repeat the flag):
    /// e.g. --keep icc drops EXIF, XMP and IPTC but keeps the colour profile.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        value_name = "icc|exif|xmp|iptc",
        help_heading = "Output",
        hide_short_help = true
    )]
    pub keep: Vec<KeepArg>,
    /// Print the report as JSON on stdout, instead of the table on stderr.
    #[arg(long, help_heading = "Reporting")]
    pub json: bool,
    /// Blur only this rectangle: X,Y (its top-left pixel) and W,H (its size), or ImageMagick's
    /// geometry WxH+X+Y, in pixels of the oriented image. Repeat it for more rectangles
    /// (united; with --mask too). A rectangle partly outside the image is clipped to it; one
    /// wholly outside is an error. Every pixel outside the selection keeps its input sample
    /// exactly.
    #[arg(long, value_name = "X,Y,W,H|WxH+X+Y", value_parser = parse_region, help_heading = "Selection")]
    pub region: Vec<Region>,
    /// Blur where this grey image says: 0 untouched, full scale fully blurred, in between
    /// blended (any format and bit depth; a colour mask counts as the mean of its channels). It
    /// must have the input's size; in a batch it applies to every image.
    #[arg(long, value_name = "MASK", help_heading = "Selection")]
    pub mask: Option<PathBuf>,
    /// Soften the selection's edge over about PX pixels: the selection is blurred by a
    /// Gaussian of sigma PX/2 (its 16%-84% rise spans PX pixels, centred on the edge); values
    /// within 0.001 of 0 or 1 are snapped, so pixels more than ~1.6 PX outside stay exact.
    #[arg(long, value_name = "PX", default_value_t = 0.0, value_parser = parse_feather, requires = "selection", help_heading = "Selection", hide_short_help = true)]
    pub feather: f64,
    /// blend: out = in + m*(blur(in) - in), every pixel feeds the blur; exclude: only selected
    /// pixels feed it (normalised convolution, out = in + m*(blur(m*in)/blur(m) - in)), so a
    /// blurred background gets no halo of the unselected foreground.
    #[arg(long, value_enum, default_value_t = MaskModeArg::Blend, requires = "selection", help_heading = "Selection", hide_short_help = true)]
    pub mask_mode: MaskModeArg,
    /// NaN and infinite samples of float images (EXR, HDR, float TIFF): zero replaces them by
    /// 0 before the blur (with a note); ignore leaves them out of it (normalised convolution per
    /// channel) and fills them from the valid samples within reach; where none reach (blurred
    /// weight below 0.001) they stay as they were. Integer images have none: no effect.
    #[arg(long, value_enum, default_value_t = NanArg::Zero, help_heading = "Selection", hide_short_help = true)]
    pub nan: NanArg,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum MaskModeArg {
    Blend,
    Exclude,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum NanArg {
    Zero,
    Ignore,
}

fn parse_feather(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=2e6).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a feather width in pixels from 0 to 2000000"
        )),
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum MethodArg {
    Auto,
    Recursive,
    Fir,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PipelineArg {
    Auto,
    Transpose,
    Direct,
    Blocked,
    Carried,
    Overlap,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum TransposeArg {
    Naive,
    Local,
    Skewed,
    Padded,
    PaddedSkewed,
    Tile32,
    Tile32Skewed,
}

/// A kind of metadata `--keep` names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KeepArg {
    /// The ICC colour profile.
    Icc,
    /// EXIF: camera, exposure, dates, GPS position (never its thumbnail).
    Exif,
    /// The XMP packet.
    Xmp,
    /// IPTC-IIM records: keywords, caption, credit.
    Iptc,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SubsamplingArg {
    Same,
    #[value(name = "444")]
    S444,
    #[value(name = "422")]
    S422,
    #[value(name = "420")]
    S420,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum JpegPathArg {
    Auto,
    Rgb,
}

impl BlurSettings {
    /// The encoders' settings as the flags give them (with which were given).
    fn encode_options(&self) -> EncodeOptions {
        EncodeOptions {
            jpeg: formats::JpegOptions {
                quality: self
                    .quality
                    .unwrap_or(formats::Quality::Fixed(formats::DEFAULT_JPEG_QUALITY)),
                subsampling: match self.subsampling.unwrap_or(SubsamplingArg::Same) {
                    SubsamplingArg::Same => formats::Subsampling::Same,
                    SubsamplingArg::S444 => formats::Subsampling::Fixed(formats::Chroma::S444),
                    SubsamplingArg::S422 => formats::Subsampling::Fixed(formats::Chroma::S422),
                    SubsamplingArg::S420 => formats::Subsampling::Fixed(formats::Chroma::S420),
                },
            },
            png_compression: match self.png_compression.unwrap_or(PngCompression::Fast) {
                PngCompression::Fast => CompressionType::Fast,
                PngCompression::Small => CompressionType::Default,
                PngCompression::Best => CompressionType::Best,
            },
            dither: self.dither,
            quality_given: self.quality.is_some(),
            webp_lossless_input: false,
            tiff: self.tiff_compression.unwrap_or_default(),
            tiff_given: self.tiff_compression.is_some(),
            subsampling_given: self.subsampling.is_some(),
            png_given: self.png_compression.is_some(),
        }
    }

    /// Refuses an encoder option given for an output `format` it does not apply to (where the
    /// format is known before the input is read), rather than ignoring it.
    pub fn check_encoder_options(&self, format: Option<image::ImageFormat>) -> Result<(), String> {
        use image::ImageFormat::Png;
        let Some(format) = format else {
            return Ok(());
        };
        let options = self.encode_options();
        if let Some(why) = options.quality_refused(format) {
            return Err(why);
        }
        for (flag, applies_to, name) in options.given() {
            if applies_to.contains(&format) {
                continue;
            }
            let why = match (flag, format) {
                ("--quality", Png) => {
                    "PNG is lossless (--png-compression sets its effort)".to_string()
                }
                ("--quality", f) => format!("{f:?} is written lossless"),
                (_, f) => format!("the output is {}", formats::format_name(f)),
            };
            return Err(format!("{flag} applies to {name} output: {why}"));
        }
        Ok(())
    }
}

/// `--quality`: 1-100, `same` or `lossless`.
fn parse_quality(s: &str) -> Result<formats::Quality, String> {
    match s {
        "same" => return Ok(formats::Quality::Same),
        "lossless" => return Ok(formats::Quality::Lossless),
        _ => {}
    }
    match s.parse::<u8>() {
        Ok(q @ 1..=100) => Ok(formats::Quality::Fixed(q)),
        _ => Err(format!(
            "{s:?} is not a quality: give 1 to 100, same or lossless"
        )),
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PngCompression {
    /// fdeflate with adaptive row filters: the fastest, and still smaller than zlib's level
    /// 6 without filters.
    #[value(alias = "default")]
    Fast,
    /// zlib level 6 with adaptive filters, on every core.
    Small,
    /// zlib level 9 with adaptive filters, on every core.
    Best,
}

fn parse_sigma(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    if v == 0.0 {
        return Ok(0.0);
    }
    gblur::command::job::check_sigma(v)
        .map_err(|e| format!("{e} (or 0: no blur along that axis), got {s}"))
}

fn parse_truncate(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    gblur::command::job::check_truncate(v).map_err(|e| format!("{e}, got {s}"))
}

impl BlurSettings {
    /// The checked job. Clap has enforced presence and ranges; the filter is checked here
    /// (`--method fir`'s largest sigma), once for the whole job.
    pub fn to_job(&self, input: PathBuf, output: PathBuf) -> Result<BlurJob, String> {
        let mut job = BlurJob::new(input, output, self.filter()?);
        job.pipeline = self.pipeline();
        job.device = self.device.clone();
        job.linear = self.linear;
        job.to_srgb = self.to_srgb;
        job.jpeg_planes = self.jpeg_path == JpegPathArg::Auto;
        job.encode = self.encode_options();
        job.max_memory_mib = gblur::command::process::budget_mib(self.max_memory);
        job.metadata = self.metadata();
        job.mask = self.mask_options();
        let edge = |axis: Option<EdgeMode>| axis.unwrap_or(self.edge);
        job.edges = Edges {
            x: edge(self.edge_x),
            y: edge(self.edge_y),
        };
        job.engine = Engine::Whole; // the main command's `--engine` picks again
        job.sigma_z = self.sigma_z;
        Ok(job)
    }

    /// The blur: one axis's sigma alone blurs that axis only.
    fn filter(&self) -> Result<Blur2d, String> {
        let sigma_x = self.sigma_x.or(self.sigma).unwrap_or(0.0);
        let sigma_y = self.sigma_y.or(self.sigma).unwrap_or(0.0);
        let method = match self.method {
            MethodArg::Auto => Method::Auto,
            MethodArg::Recursive => Method::Recursive,
            MethodArg::Fir => Method::Fir,
        };
        Ok(Blur2d::checked(method, sigma_x, sigma_y)?.with_truncate(self.truncate))
    }

    /// `--pipeline` and `--transpose`: a transpose named alone picks the transpose pipeline.
    fn pipeline(&self) -> PipelineChoice {
        let transpose = self.transpose.map(|t| match t {
            TransposeArg::Naive => TransposeKind::Naive,
            TransposeArg::Local => TransposeKind::Local,
            TransposeArg::Skewed => TransposeKind::Skewed,
            TransposeArg::Padded => TransposeKind::Padded,
            TransposeArg::PaddedSkewed => TransposeKind::PaddedSkewed,
            TransposeArg::Tile32 => TransposeKind::Tile32,
            TransposeArg::Tile32Skewed => TransposeKind::Tile32Skewed,
        });
        match (self.pipeline, transpose) {
            (PipelineArg::Direct, _) => PipelineChoice::Direct,
            (PipelineArg::Blocked, _) => PipelineChoice::Blocked(ChunkStart::Auto),
            (PipelineArg::Carried, _) => PipelineChoice::Blocked(ChunkStart::Carried),
            (PipelineArg::Overlap, _) => PipelineChoice::Blocked(ChunkStart::Overlap),
            (PipelineArg::Transpose, t) | (PipelineArg::Auto, t @ Some(_)) => {
                PipelineChoice::Transpose(t)
            }
            (PipelineArg::Auto, None) => PipelineChoice::Auto,
        }
    }

    /// `--region`, `--mask`, `--feather`, `--mask-mode` and `--nan`.
    fn mask_options(&self) -> MaskOptions {
        MaskOptions {
            regions: self.region.clone(),
            mask: self.mask.clone(),
            feather: self.feather,
            mode: match self.mask_mode {
                MaskModeArg::Blend => MaskMode::Blend,
                MaskModeArg::Exclude => MaskMode::Exclude,
            },
            nan: match self.nan {
                NanArg::Zero => NanPolicy::Zero,
                NanArg::Ignore => NanPolicy::Ignore,
            },
        }
    }

    /// What `--strip` and `--keep` leave of the metadata (clap refuses both together).
    fn metadata(&self) -> KeepMetadata {
        if self.strip {
            return KeepMetadata::NONE;
        }
        if self.keep.is_empty() {
            return KeepMetadata::ALL;
        }
        KeepMetadata {
            icc: self.keep.contains(&KeepArg::Icc),
            exif: self.keep.contains(&KeepArg::Exif),
            xmp: self.keep.contains(&KeepArg::Xmp),
            iptc: self.keep.contains(&KeepArg::Iptc),
        }
    }
}

impl BlurArgs {
    /// The checked job; a usage error names the flag to change.
    pub fn to_job(&self) -> Result<BlurJob, String> {
        let input = self.input.clone().expect("clap requires IN");
        let output = self.output.clone().expect("clap requires OUT");
        let (prefixed, output) = match split_prefix(&output)? {
            Some((format, path)) => (Some(format), path),
            None => (None, output),
        };
        let format = match (prefixed, self.format) {
            (Some(a), Some(b)) if a != b => {
                return Err(format!(
                    "--format {b:?} and the prefix {a:?} of OUTPUT disagree: pass one of them"
                ))
            }
            (a, b) => a.or(b),
        };
        let named = format.or_else(|| image::ImageFormat::from_path(&output).ok());
        self.settings.check_encoder_options(named)?;
        let stdout = gblur::command::formats::is_stdio(&output);
        if stdout && self.settings.json {
            return Err("--json and OUTPUT - (stdout) would both write to stdout: write the image to a file, or leave out --json (the table goes to stderr)".into());
        }
        let mut job = self.settings.to_job(input, output)?;
        job.output_format = format;
        job.explain = self.explain;
        job.no_clobber = self.no_clobber;
        job.page = self.page;
        job.engine = match self.engine {
            EngineArg::Auto => Engine::Auto,
            EngineArg::Whole => Engine::Whole,
            EngineArg::Strips => Engine::Strips,
        };
        Ok(job)
    }
}
