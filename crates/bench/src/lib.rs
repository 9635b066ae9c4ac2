//! `gblur bench`: the story of the "Tuning Performance on the GPU" chapter told in measured
//! figures on the user's device. Every kernel's output is checked against a host reference
//! before it is timed; a wrong kernel is reported as FAILED and never timed. Times come from profiling events: 2 untimed warm-ups,
//! then `runs` timed runs, reported as median and min–max.

pub mod blur;
pub mod cpu;
pub mod device;
mod kernels;
pub mod matmul;
pub mod output;
pub mod peak;
pub mod reduce;
pub mod runner;
pub mod transpose;

#[cfg(test)]
mod ladder_tests;

use gblur::gpu::opencl::{ClContext, DeviceChoice};
use serde::Serialize;
use std::path::PathBuf;

/// Options shared by every bench command.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    pub device: DeviceChoice,
    /// (width, height) pairs; `None` means the command's default sweep.
    pub sizes: Option<Vec<(usize, usize)>>,
    pub runs: usize,
    pub json: bool,
    pub csv: Option<PathBuf>,
    pub markdown: Option<PathBuf>,
    pub plot: Option<PathBuf>,
    pub quiet: bool,
}

/// A `gblur bench` command, checked: the options every bench shares and the command's own.
#[derive(Clone, Debug)]
pub struct BenchJob {
    pub options: BenchOptions,
    pub request: BenchRequest,
}

/// Which bench to run, with its own options.
#[derive(Clone, Debug)]
pub enum BenchRequest {
    Peak,
    Transpose,
    Blur(blur::BlurBenchOptions),
    /// The sigmas to sweep.
    Cpu {
        sigmas: Vec<f64>,
    },
    Matmul(matmul::MatmulOptions),
    Reduce(reduce::ReduceOptions),
}

/// One measurement: a kernel or strategy at one size. Fields a bench does not use stay `None`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Record {
    pub bench: &'static str,
    pub name: String,
    pub size: String,
    pub width: usize,
    pub height: usize,
    pub channels: Option<usize>,
    pub sigma: Option<f64>,
    pub runs: usize,
    pub median_ms: Option<f64>,
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub gbps: Option<f64>,
    pub mpps: Option<f64>,
    pub gflops: Option<f64>,
    pub pct_of_copy: Option<f64>,
    pub accesses_per_pixel: Option<f64>,
    pub flops_per_pixel: Option<f64>,
    pub flops_per_byte: Option<f64>,
    /// Matmul: K (the record's width and height are N and M).
    pub depth: Option<usize>,
    /// Matmul: the multi-threaded CPU baseline's time over this row's.
    pub speedup_over_cpu: Option<f64>,
    /// Matmul: GFLOP/s as a percentage of the fastest device kernel at this size.
    pub pct_of_best: Option<f64>,
    pub estimate_mpps: Option<f64>,
    pub measured_over_estimate: Option<f64>,
    /// Output matched the host reference (`false`: FAILED or skipped, not timed).
    pub verified: bool,
    pub status: Status,
    pub build_options: String,
    pub device: String,
}

impl Record {
    pub fn new(
        bench: &'static str,
        name: impl Into<String>,
        (w, h): (usize, usize),
        ctx: &ClContext,
    ) -> Self {
        Self {
            bench,
            name: name.into(),
            size: format!("{w}x{h}"),
            width: w,
            height: h,
            device: ctx.device_name(),
            build_options: gblur::gpu::opencl::program::BASE_OPTIONS.into(),
            ..Self::default()
        }
    }

    pub fn pixels(&self) -> f64 {
        (self.width * self.height) as f64
    }

    /// Fills the timing fields from `stats`, with GB/s for `bytes` moved per run.
    pub fn timed(&mut self, stats: &runner::Stats, bytes: f64) {
        self.runs = stats.runs;
        self.median_ms = Some(stats.median_ms);
        self.min_ms = Some(stats.min_ms);
        self.max_ms = Some(stats.max_ms);
        let s = stats.median_ms * 1e-3;
        self.gbps = Some(bytes / s * 1e-9);
        self.mpps = Some(self.pixels() / s * 1e-6);
        self.verified = true;
        self.status = Status::Ok;
    }

    /// The output did not match the host reference: not timed.
    pub fn fail(&mut self, why: impl std::fmt::Display) {
        self.verified = false;
        self.status = Status::Failed(why.to_string());
    }

    /// Not run here (too slow for the device class, or a shape the kernel cannot take).
    pub fn skip(&mut self, why: impl std::fmt::Display) {
        self.verified = false;
        self.status = Status::Skipped(why.to_string());
    }
}

/// How a record's measurement went. Printed and serialized as one string: `ok`,
/// `estimated: how`, `skipped: why` or `FAILED: why` (empty while pending).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Status {
    /// Not measured yet.
    #[default]
    Pending,
    /// Checked and timed.
    Ok,
    /// Checked, and timed on part of the work, scaled up (the note says how).
    Estimated(String),
    /// Not run, and why.
    Skipped(String),
    /// The output did not match the host reference; not timed.
    Failed(String),
}

impl Status {
    pub fn is_failed(&self) -> bool {
        matches!(self, Status::Failed(_))
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Pending => Ok(()),
            Status::Ok => f.write_str("ok"),
            Status::Estimated(how) => write!(f, "estimated: {how}"),
            Status::Skipped(why) => write!(f, "skipped: {why}"),
            Status::Failed(why) => write!(f, "FAILED: {why}"),
        }
    }
}

impl Serialize for Status {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Parses `512`, `4000x3000` or a comma-separated list of them.
pub fn parse_sizes(s: &str) -> Result<Vec<(usize, usize)>, String> {
    s.split(',')
        .map(|one| {
            let one = one.trim();
            let (w, h) = match one.split_once(['x', 'X']) {
                Some((w, h)) => (w, h),
                None => (one, one),
            };
            let parse = |v: &str| v.trim().parse::<usize>().ok().filter(|v| *v > 0);
            match (parse(w), parse(h)) {
                (Some(w), Some(h)) => Ok((w, h)),
                _ => Err(format!(
                    "'{one}' is not a size: use N or WxH with positive integers"
                )),
            }
        })
        .collect()
}

/// Runs one bench command end to end: the sweep, its table and files, and an error when a
/// device kernel FAILED verification.
pub fn run(job: &BenchJob) -> anyhow::Result<()> {
    let opts = &job.options;
    // Before the sweep, so a wrong name costs no measuring.
    if let Some(p) = &opts.plot {
        output::check_plot_path(p)?;
    }
    let ctx = || device::open_device(&opts.device);
    let records = match &job.request {
        // cpu's rows are the Rust paths (its OpenCL row is optional): its FAILED rows show in
        // its table, and the exit status counts device kernels only.
        BenchRequest::Cpu { sigmas } => return cpu::run(opts, sigmas).map(drop),
        BenchRequest::Peak => peak::run(&ctx()?, opts)?,
        BenchRequest::Transpose => transpose::run(&ctx()?, opts)?,
        BenchRequest::Blur(b) => blur::run(&ctx()?, opts, b)?,
        BenchRequest::Matmul(m) => matmul::run(&ctx()?, opts, m)?,
        BenchRequest::Reduce(r) => reduce::run(&ctx()?, opts, r)?,
    };
    let failed = records.iter().filter(|r| r.status.is_failed()).count();
    anyhow::ensure!(
        failed == 0,
        "{failed} kernel(s) FAILED verification (see the status column)"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(
            parse_sizes("512, 4000x3000").unwrap(),
            vec![(512, 512), (4000, 3000)]
        );
        assert!(parse_sizes("0").is_err());
        assert!(parse_sizes("12xq").is_err());
    }

    /// The table, CSV and JSON all print the status as one string, prefix first.
    #[test]
    fn status_prints_as_one_string() {
        let cases = [
            (Status::Pending, ""),
            (Status::Ok, "ok"),
            (
                Status::Estimated("first 3 of 9 rows timed, ×3".into()),
                "estimated: first 3 of 9 rows timed, ×3",
            ),
            (Status::Skipped("too slow".into()), "skipped: too slow"),
            (
                Status::Failed("element 0: got 1, want 2".into()),
                "FAILED: element 0: got 1, want 2",
            ),
        ];
        for (status, text) in cases {
            assert_eq!(status.to_string(), text);
            assert_eq!(serde_json::to_value(&status).unwrap(), text);
            assert_eq!(status.is_failed(), text.starts_with("FAILED"));
        }
    }
}
