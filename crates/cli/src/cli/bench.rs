//! `gblur bench`'s arguments, turned into a `BenchJob`: the bench layer takes plain options
//! and never sees clap.

use super::parse_sigma;
use clap::{Args, Subcommand, ValueEnum};
use gblur::command::devices::DeviceChoice;
use gblur_bench::blur::BlurBenchOptions;
use gblur_bench::{BenchJob, BenchRequest};
use std::path::PathBuf;

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Copy bandwidth (float, float4) and the copy + dependent multiply-add series.
    Peak(BenchArgs),
    /// Every transpose strategy against the copy kernel, over a sweep of sizes.
    Transpose(BenchArgs),
    /// The algorithm table of the "Tuning Performance on the GPU" chapter: copy, 2D and
    /// separable convolution, recursive pipelines.
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
pub struct ShapeList(pub Vec<gblur_bench::matmul::Shape>);

fn parse_shape_list(s: &str) -> Result<ShapeList, String> {
    gblur_bench::matmul::parse_shapes(s).map(ShapeList)
}

fn parse_preset(s: &str) -> Result<String, String> {
    if s != "all" {
        gblur_bench::matmul::Preset::parse(s)?;
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

impl BenchCommand {
    /// The checked bench job: the shared options and the command's own.
    pub fn to_job(&self, quiet: bool) -> BenchJob {
        let (options, request) = match self {
            BenchCommand::Peak(c) => (c.to_options(quiet), BenchRequest::Peak),
            BenchCommand::Transpose(c) => (c.to_options(quiet), BenchRequest::Transpose),
            BenchCommand::Blur {
                common,
                sigma,
                channels,
                only,
            } => (
                common.to_options(quiet),
                BenchRequest::Blur(BlurBenchOptions {
                    sigmas: sigma.clone(),
                    channels: channels.iter().map(|&c| c as usize).collect(),
                    only: only.clone(),
                }),
            ),
            BenchCommand::Cpu { common, sigma } => (
                common.to_options(quiet),
                BenchRequest::Cpu {
                    sigmas: sigma.clone(),
                },
            ),
            BenchCommand::Matmul(m) => (
                m.out.to_options(quiet, None),
                BenchRequest::Matmul(m.to_options()),
            ),
            BenchCommand::Reduce(r) => (
                r.out.to_options(quiet, None),
                BenchRequest::Reduce(r.to_options()),
            ),
        };
        BenchJob { options, request }
    }
}

impl MatmulArgs {
    pub fn to_options(&self) -> gblur_bench::matmul::MatmulOptions {
        gblur_bench::matmul::MatmulOptions {
            shapes: self.sizes.clone().map(|s| s.0),
            elem: match self.elem {
                ElemArg::F32 => gblur_bench::matmul::Elem::F32,
                ElemArg::I32 => gblur_bench::matmul::Elem::I32,
            },
            rungs: self.rungs.clone(),
            presets: self.presets.clone(),
            cpu_baselines: !self.no_cpu,
        }
    }
}

impl ReduceArgs {
    pub fn to_options(&self) -> gblur_bench::reduce::ReduceOptions {
        gblur_bench::reduce::ReduceOptions {
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
    gblur_bench::parse_sizes(s).map(SizeList)
}

impl BenchArgs {
    pub fn to_options(&self, quiet: bool) -> gblur_bench::BenchOptions {
        self.out.to_options(quiet, self.sizes.clone().map(|s| s.0))
    }
}

impl BenchOutArgs {
    pub fn to_options(
        &self,
        quiet: bool,
        sizes: Option<Vec<(usize, usize)>>,
    ) -> gblur_bench::BenchOptions {
        gblur_bench::BenchOptions {
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
