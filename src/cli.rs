//! The command line as users type it (clap), and its translation into checked job options.
//! Nothing below this module knows about clap.

use crate::codec::EncodeOptions;
use crate::filter::Method;
use crate::gpu::opencl::device::DeviceSet;
use crate::gpu::opencl::DeviceChoice;
use crate::gpu::plan::{ChunkStart, PipelineChoice};
use crate::gpu::transpose::TransposeKind;
use crate::job::BlurJob;
use clap::{Args, Parser, Subcommand, ValueEnum};
use image::codecs::png::CompressionType;
use std::path::PathBuf;

/// Blur images with a recursive (IIR) Gaussian on OpenCL devices, and report the time of
/// every pass.
///
/// The cost per pixel does not grow with sigma. Runs on a GPU when there is one, on any other
/// OpenCL device (e.g. PoCL on the CPU) otherwise, and on a built-in multi-threaded Rust path
/// when no OpenCL runtime is installed.
#[derive(Debug, Parser)]
#[command(
    name = "gblur",
    version,
    args_conflicts_with_subcommands = true,
    allow_negative_numbers = true,
    subcommand_negates_reqs = true,
    after_help = "Examples:\n  gblur photo.jpg blurred.jpg --sigma 5\n  gblur scan.png out.png --sigma-x 8 --sigma-y 2 --json\n  gblur devices"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub blur: BlurArgs,
    /// Print nothing on stderr but errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Print more detail on stderr (device details, the error chain).
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every OpenCL platform and device gblur can use.
    Devices {
        /// Print the list as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Measure the device: peak bandwidth, transposes, blur algorithms.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Blur every image under IN_DIR into the same structure under OUT_DIR.
    Batch(BatchArgs),
}

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
    pub fn to_job(&self, verbose: bool, quiet: bool) -> crate::batch::BatchJob {
        crate::batch::BatchJob {
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

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Copy bandwidth (float, float4) and the copy + dependent multiply-add series.
    Peak(BenchArgs),
    /// Every transpose strategy against the copy kernel, over a sweep of sizes.
    Transpose(BenchArgs),
    /// The seed's algorithm table: copy, 2D and separable convolution, recursive pipelines.
    Blur {
        #[command(flatten)]
        common: BenchArgs,
        /// Sigmas to sweep, comma-separated.
        #[arg(long, default_value = "5", value_delimiter = ',', value_parser = parse_sigma)]
        sigma: Vec<f64>,
        /// Channel counts to sweep (planes per image), comma-separated.
        #[arg(long, default_value = "1,4", value_delimiter = ',', value_parser = clap::value_parser!(u8).range(1..=4))]
        channels: Vec<u8>,
        /// Only the rows whose algorithm name contains one of these, comma-separated (the
        /// copy rows, every percentage's yardstick, always run): e.g. `blocked,overlapped`.
        #[arg(long, value_delimiter = ',', value_name = "TEXT")]
        only: Vec<String>,
    },
    /// The blur in memory on the CPU: the banded Rust path (8-bit RGB and f32), the planar
    /// reference and the OpenCL device's pipeline side by side (peers: benches/cpu.sh).
    Cpu {
        #[command(flatten)]
        common: BenchArgs,
        /// Sigmas to sweep, comma-separated.
        #[arg(long, default_value = "5,20", value_delimiter = ',', value_parser = parse_sigma)]
        sigma: Vec<f64>,
    },
    /// The matrix-multiplication ladder: ten kernels from naive to 2D register blocking,
    /// beside a naive and a multi-threaded CPU baseline.
    Matmul(MatmulArgs),
    /// The dot-product ladder: host sums, work-group sums and a full on-device reduction,
    /// against the copy kernel.
    Reduce(ReduceArgs),
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub out: BenchOutArgs,
    /// Image sizes: N (square) or WxH, comma-separated. Each command has its own default sweep.
    #[arg(long, value_parser = parse_size_list)]
    pub sizes: Option<SizeList>,
}

#[derive(Debug, Args)]
pub struct MatmulArgs {
    #[command(flatten)]
    pub out: BenchOutArgs,
    /// Shapes: N (N×N×N) or MxNxK (A is M×K, B is K×N), comma-separated. Default: 1024, 2048,
    /// 4096 and 2000 on a GPU; 128, 256 and 512 on other devices.
    #[arg(long, value_parser = parse_shape_list)]
    pub sizes: Option<ShapeList>,
    /// Element type: f32, or i32 (the blog's integer variant, checked exactly).
    #[arg(long = "type", value_enum, default_value_t = ElemArg::F32)]
    pub elem: ElemArg,
    /// Rungs to run, 1-10, comma-separated (default: all).
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u8).range(1..=10))]
    pub rungs: Vec<u8>,
    /// Tile presets of rung 10 as TSMxTSNxTSK-WPTMxWPTN (e.g. 128x128x8-8x8), comma-separated,
    /// or `all` for the bundled ones (default: the device class's).
    #[arg(long, value_delimiter = ',', value_parser = parse_preset)]
    pub presets: Vec<String>,
    /// Leave out the CPU baselines (and the speed-up column).
    #[arg(long)]
    pub no_cpu: bool,
}

#[derive(Debug, Args)]
pub struct ReduceArgs {
    #[command(flatten)]
    pub out: BenchOutArgs,
    /// Vector lengths: N or 2^P, comma-separated. Default: 2^20, 2^24, 2^26 on a GPU; 2^16,
    /// 2^20, 2^22 on other devices.
    #[arg(long, value_delimiter = ',', value_parser = parse_count)]
    pub sizes: Vec<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ElemArg {
    F32,
    I32,
}

/// Shapes for `bench matmul` (a newtype so clap takes the list as one value).
#[derive(Clone, Debug)]
pub struct ShapeList(pub Vec<crate::bench::matmul::Shape>);

fn parse_shape_list(s: &str) -> Result<ShapeList, String> {
    crate::bench::matmul::parse_shapes(s).map(ShapeList)
}

fn parse_preset(s: &str) -> Result<String, String> {
    if s != "all" {
        crate::bench::matmul::Preset::parse(s)?;
    }
    Ok(s.to_string())
}

fn parse_count(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let n = match s.split_once('^') {
        Some(("2", p)) => p
            .parse::<u32>()
            .ok()
            .filter(|p| *p < 32)
            .map(|p| 1usize << p),
        Some(_) => None,
        None => s.parse().ok(),
    };
    n.filter(|n| *n > 0 && *n < 1 << 31)
        .ok_or_else(|| format!("'{s}' is not a vector length: use N or 2^P, below 2^31"))
}

impl MatmulArgs {
    pub fn to_options(&self) -> crate::bench::matmul::MatmulOptions {
        crate::bench::matmul::MatmulOptions {
            shapes: self.sizes.clone().map(|s| s.0),
            elem: match self.elem {
                ElemArg::F32 => crate::bench::matmul::Elem::F32,
                ElemArg::I32 => crate::bench::matmul::Elem::I32,
            },
            rungs: self.rungs.clone(),
            presets: self.presets.clone(),
            cpu_baselines: !self.no_cpu,
        }
    }
}

impl ReduceArgs {
    pub fn to_options(&self) -> crate::bench::reduce::ReduceOptions {
        crate::bench::reduce::ReduceOptions {
            sizes: (!self.sizes.is_empty()).then(|| self.sizes.clone()),
        }
    }
}

/// Options every bench command shares.
#[derive(Debug, Args)]
pub struct BenchOutArgs {
    /// auto, a device index or name substring, gpu or cpu (an OpenCL device is required).
    #[arg(short, long, default_value = "auto")]
    pub device: String,
    /// Timed runs per measurement, after 2 untimed warm-ups.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
    /// Print the records as JSON on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write the records as CSV.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Also write the table as Markdown.
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Also plot MP/s against image size (.svg or .png).
    #[arg(long, value_name = "FILE.svg|FILE.png")]
    pub plot: Option<PathBuf>,
}

/// Parsed `--sizes` (a newtype so clap takes the list as one value).
#[derive(Clone, Debug)]
pub struct SizeList(pub Vec<(usize, usize)>);

fn parse_size_list(s: &str) -> Result<SizeList, String> {
    crate::bench::parse_sizes(s).map(SizeList)
}

impl BenchArgs {
    pub fn to_options(&self, quiet: bool) -> crate::bench::BenchOptions {
        self.out.to_options(quiet, self.sizes.clone().map(|s| s.0))
    }
}

impl BenchOutArgs {
    pub fn to_options(
        &self,
        quiet: bool,
        sizes: Option<Vec<(usize, usize)>>,
    ) -> crate::bench::BenchOptions {
        crate::bench::BenchOptions {
            device: DeviceChoice::parse(&self.device),
            sizes,
            runs: self.runs as usize,
            json: self.json,
            csv: self.csv.clone(),
            markdown: self.markdown.clone(),
            plot: self.plot.clone(),
            quiet,
        }
    }
}

#[derive(Debug, Args)]
pub struct BlurArgs {
    /// Image to blur (any format the `image` crate reads, recognised by content).
    #[arg(required = true)]
    pub input: Option<PathBuf>,
    /// Where to write the result; the extension picks the format.
    #[arg(required = true)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub settings: BlurSettings,
}

/// Blur options shared by the main command and batch.
#[derive(Debug, Args)]
pub struct BlurSettings {
    /// Standard deviation of the Gaussian in pixels, both axes (finite, > 0).
    #[arg(short, long, value_parser = parse_sigma, required_unless_present_all = ["sigma_x", "sigma_y"])]
    pub sigma: Option<f64>,
    /// Horizontal sigma (overrides --sigma along x).
    #[arg(long, value_parser = parse_sigma)]
    pub sigma_x: Option<f64>,
    /// Vertical sigma (overrides --sigma along y).
    #[arg(long, value_parser = parse_sigma)]
    pub sigma_y: Option<f64>,
    /// auto: recursive, or the exact sampled FIR below sigma 2 where it is more accurate.
    #[arg(long, value_enum, default_value_t = MethodArg::Auto)]
    pub method: MethodArg,
    /// transpose: column pass + transpose + column pass + transpose; direct: a row pass and
    /// a column pass (the seed's version 1); blocked: block-parallel column passes with fused
    /// transposes, each chunk starting from carried states (carried) or from a walk in from
    /// outside it (overlap), picked per pass; auto: the fastest measured for the device class
    /// (GPU: blocked, CPU: direct; see docs/BENCHMARKS.md).
    #[arg(long, value_enum, default_value_t = PipelineArg::Auto)]
    pub pipeline: PipelineArg,
    /// The transpose kernel of the transpose pipeline (implies --pipeline transpose when
    /// --pipeline is auto). Default: the fastest for the device class (GPU: tile32, CPU:
    /// local).
    #[arg(long, value_enum)]
    pub transpose: Option<TransposeArg>,
    /// auto, a device index or name substring from `gblur devices`, gpu, cpu, or rust (the
    /// built-in path). `gblur batch` also takes `all` (every GPU; without one, what auto
    /// picks) or a comma-separated list such as 0,1 or 0,rust: one worker per entry, each
    /// taking the next image when it is free.
    #[arg(short, long, default_value = "auto", value_parser = DeviceSet::parse, value_name = "DEVICE")]
    pub device: DeviceSet,
    /// Blur in linear light: decode sRGB first, re-encode after (what photographers expect
    /// of highlights).
    #[arg(long)]
    pub linear: bool,
    /// JPEG quality, 1-100.
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub quality: u8,
    /// PNG compression effort.
    #[arg(long, value_enum, default_value_t = PngCompression::Default)]
    pub png_compression: PngCompression,
    /// Decoder memory limit in MiB.
    #[arg(long, default_value_t = 512, value_name = "MIB")]
    pub max_memory: u64,
    /// Print the report as JSON on stdout.
    #[arg(long)]
    pub json: bool,
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

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum PngCompression {
    Fast,
    Default,
    Best,
}

fn parse_sigma(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|_| format!("'{s}' is not a number"))?;
    check_sigma(v).map_err(|e| format!("{e}, got {s}"))
}

/// Largest sigma accepted: far wider than any image (the blur is already a near-constant
/// there), and far from where the recursive design degenerates (`r` rounds to 1.0 in f64 near
/// 1e17; `eps`, 3.6e-12 at 1e6, leaves f32's normal range near 1e19).
pub const MAX_SIGMA: f64 = 1e6;

/// Smallest sigma accepted: already the identity (the FIR's neighbour taps are e^-500000).
/// Far below it the recursive design breaks down: at sigma 1.4e-315 (subnormal), omega/sigma
/// overflowed, the coefficients were NaN and `--method recursive` blurred to black (found by
/// the `filter` fuzz target).
pub const MIN_SIGMA: f64 = 1e-3;

/// The sigma rule every command applies: finite, from `MIN_SIGMA` to `MAX_SIGMA`.
pub fn check_sigma(v: f64) -> Result<f64, String> {
    if v.is_finite() && (MIN_SIGMA..=MAX_SIGMA).contains(&v) {
        Ok(v)
    } else {
        Err("sigma must be a number from 0.001 to 1000000".into())
    }
}

impl BlurSettings {
    /// The checked job. Clap has enforced presence and ranges; nothing else can fail here.
    pub fn to_job(&self, input: PathBuf, output: PathBuf) -> BlurJob {
        let sigma_x = self.sigma_x.or(self.sigma).expect("clap requires a sigma");
        let sigma_y = self.sigma_y.or(self.sigma).expect("clap requires a sigma");
        let transpose = self.transpose.map(|t| match t {
            TransposeArg::Naive => TransposeKind::Naive,
            TransposeArg::Local => TransposeKind::Local,
            TransposeArg::Skewed => TransposeKind::Skewed,
            TransposeArg::Padded => TransposeKind::Padded,
            TransposeArg::PaddedSkewed => TransposeKind::PaddedSkewed,
            TransposeArg::Tile32 => TransposeKind::Tile32,
            TransposeArg::Tile32Skewed => TransposeKind::Tile32Skewed,
        });
        BlurJob {
            input,
            output,
            sigma_x,
            sigma_y,
            method: match self.method {
                MethodArg::Auto => Method::Auto,
                MethodArg::Recursive => Method::Recursive,
                MethodArg::Fir => Method::Fir,
            },
            pipeline: match (self.pipeline, transpose) {
                (PipelineArg::Direct, _) => PipelineChoice::Direct,
                (PipelineArg::Blocked, _) => PipelineChoice::Blocked(ChunkStart::Auto),
                (PipelineArg::Carried, _) => PipelineChoice::Blocked(ChunkStart::Carried),
                (PipelineArg::Overlap, _) => PipelineChoice::Blocked(ChunkStart::Overlap),
                (PipelineArg::Transpose, t) | (PipelineArg::Auto, t @ Some(_)) => {
                    PipelineChoice::Transpose(t)
                }
                (PipelineArg::Auto, None) => PipelineChoice::Auto,
            },
            device: self.device.clone(),
            linear: self.linear,
            encode: EncodeOptions {
                jpeg_quality: self.quality,
                png_compression: match self.png_compression {
                    PngCompression::Fast => CompressionType::Fast,
                    PngCompression::Default => CompressionType::Default,
                    PngCompression::Best => CompressionType::Best,
                },
            },
            max_memory_mib: self.max_memory,
        }
    }
}

impl BlurArgs {
    pub fn to_job(&self) -> BlurJob {
        let input = self.input.clone().expect("clap requires IN");
        let output = self.output.clone().expect("clap requires OUT");
        self.settings.to_job(input, output)
    }
}
