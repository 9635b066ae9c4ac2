//! One serialisable report of a blur: what ran where, and the time of every pass. The same
//! struct feeds the table on stderr and the JSON on stdout.

use crate::gpu::pipeline::{Pass, PassKind};
use serde::Serialize;
use std::fmt::Write as _;

#[derive(Clone, Debug, Serialize)]
pub struct ImageSummary {
    pub path: String,
    pub format: String,
    pub width: u32,
    pub height: u32,
    pub color: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub device: String,
    /// `opencl` or `rust`.
    pub backend: &'static str,
    pub input: ImageSummary,
    pub output: ImageSummary,
    pub sigma_x: f64,
    pub sigma_y: f64,
    /// Which filter ran: `recursive`, `fir`, or one per axis.
    pub method: String,
    pub pipeline: String,
    pub linear: bool,
    pub passes: Vec<Pass>,
    pub total_ms: f64,
    pub notes: Vec<String>,
}

impl Report {
    pub fn megapixels(&self) -> f64 {
        self.input.width as f64 * self.input.height as f64 * 1e-6
    }

    /// Total device time of the device passes (transfers and kernels).
    pub fn device_ms(&self) -> f64 {
        self.passes
            .iter()
            .filter(|p| !matches!(p.kind, PassKind::Host | PassKind::Setup))
            .map(|p| p.ms)
            .sum()
    }

    /// The human-readable table.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let mp = self.megapixels();
        let _ = writeln!(s, "device   {}", self.device);
        let _ = writeln!(
            s,
            "image    {} {}×{} {} ({}) → {} {} ({})",
            self.input.path,
            self.input.width,
            self.input.height,
            self.input.color,
            self.input.format,
            self.output.path,
            self.output.color,
            self.output.format
        );
        let sigma = if self.sigma_x == self.sigma_y {
            format!("sigma {}", self.sigma_x)
        } else {
            format!("sigma {} (x), {} (y)", self.sigma_x, self.sigma_y)
        };
        let light = if self.linear { ", linear light" } else { "" };
        let _ = writeln!(
            s,
            "blur     {sigma}, {}, {}{light}",
            self.method, self.pipeline
        );
        let _ = writeln!(
            s,
            "{:<29} {:>6} {:>10} {:>10} {:>9}",
            "pass", "where", "ms", "MP/s", "GB/s"
        );
        for p in &self.passes {
            let place = if matches!(p.kind, PassKind::Host | PassKind::Setup) {
                "host"
            } else {
                "device"
            };
            let mpps = if p.ms > 0.0 && p.kind != PassKind::Setup {
                format!("{:.0}", mp / (p.ms * 1e-3))
            } else {
                "-".into()
            };
            let gbps = if p.bytes > 0 && p.ms > 0.0 {
                format!("{:.1}", p.bytes as f64 / (p.ms * 1e-3) * 1e-9)
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "{:<29} {:>6} {:>10.3} {:>10} {:>9}",
                p.name, place, p.ms, mpps, gbps
            );
        }
        if self.backend == "opencl" {
            let d = self.device_ms();
            let _ = writeln!(
                s,
                "{:<29} {:>6} {:>10.3} {:>10.0}",
                "device passes (sum)",
                "device",
                d,
                mp / (d * 1e-3)
            );
        }
        let _ = writeln!(
            s,
            "{:<29} {:>6} {:>10.3} {:>10.0}",
            "total (wall)",
            "host",
            self.total_ms,
            mp / (self.total_ms * 1e-3)
        );
        for n in &self.notes {
            let _ = writeln!(s, "note: {n}");
        }
        s
    }
}

/// Prints the report: JSON on stdout when asked, the table on stderr unless quiet. A closed
/// stdout (`| head`) is not an error.
pub fn emit(report: &Report, json: bool, quiet: bool) {
    if json {
        let text = serde_json::to_string_pretty(report).expect("report serialises");
        let _ = writeln_stdout(&text);
    }
    if !quiet {
        eprint!("{}", report.table());
    }
}

fn writeln_stdout(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}")?;
    out.flush()
}

/// Progress-bar layout of a benchmark sweep.
pub const SWEEP: &str = "{bar:30} {pos}/{len} {elapsed_precise} ETA {eta} {msg}";
/// Progress-bar layout of a batch.
pub const FILES: &str = "{bar:30} {pos}/{len} files  {per_sec}  ETA {eta}  {msg}";

/// A progress bar on stderr for `total` steps. indicatif hides it when stderr is not a
/// terminal; `--quiet` hides it always.
pub fn progress_bar(total: usize, quiet: bool, template: &str) -> indicatif::ProgressBar {
    if quiet {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total as u64);
    bar.set_style(indicatif::ProgressStyle::with_template(template).expect("valid template"));
    bar
}
