//! One serialisable report of a blur: what ran where, and the time of every pass. The same
//! struct feeds the table on stderr and the JSON on stdout.

use serde::Serialize;
use std::fmt::Write as _;
use std::time::Instant;

/// What a pass moves, for the report's grouping and GB/s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PassKind {
    /// Bytes moved between the host and a device.
    Transfer,
    /// A filter kernel.
    Filter,
    /// A transpose kernel.
    Transpose,
    /// A kernel that looks at the samples and changes none (for NaN and infinity).
    Check,
    /// Host work on the pixels (decode, conversions, encode, the Rust path's passes).
    Host,
    /// Host work independent of the pixels (context creation, kernel builds).
    Setup,
}

/// The part of a job a pass belongs to: what a batch sums per file and over the folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Reading the file and turning it into the image the blur takes.
    Decode,
    /// Opening the device and building its kernels.
    Setup,
    /// The blur, on the device (transfers included) or on the host.
    Blur,
    /// Turning the result back into samples, encoding and writing the file.
    Encode,
}

/// What a job records of one image as it runs: its timed passes, in order, and the notes
/// its report gives.
pub struct Log<'a> {
    /// The job's passes, to add to.
    pub passes: &'a mut Vec<Pass>,
    /// The job's notes, to add to.
    pub notes: &'a mut Vec<String>,
}

/// One timed pass.
#[derive(Clone, Debug, Serialize)]
pub struct Pass {
    /// What the table shows; never used as a key.
    pub name: String,
    /// Where it ran and what it moved.
    pub kind: PassKind,
    /// Which stage of the job it belongs to.
    pub stage: Stage,
    /// Milliseconds.
    pub ms: f64,
    /// Bytes the pass reads and writes in global memory (nominal: each kernel's accesses).
    pub bytes: u64,
}

/// Adds each of `more`'s passes to the pass of the same name in `all` (a new one the first
/// time): the report of a job done in parts (bands, slabs) shows the whole's upload, kernels
/// and download.
pub fn add_up(all: &mut Vec<Pass>, more: Vec<Pass>) {
    for pass in more {
        match all.iter_mut().find(|p| p.name == pass.name) {
            Some(sum) => {
                sum.ms += pass.ms;
                sum.bytes += pass.bytes;
            }
            None => all.push(pass),
        }
    }
}

impl Pass {
    /// A host pass of `stage` that started at `started` and ends now.
    pub fn host(stage: Stage, name: &str, started: Instant) -> Pass {
        Pass::host_ms(stage, name, started.elapsed().as_secs_f64() * 1e3)
    }

    /// A host pass of `stage` that took `ms`.
    pub fn host_ms(stage: Stage, name: &str, ms: f64) -> Pass {
        let kind = match stage {
            Stage::Setup => PassKind::Setup,
            _ => PassKind::Host,
        };
        Pass {
            name: name.into(),
            kind,
            stage,
            ms,
            bytes: 0,
        }
    }

    /// A device command of the blur, timed by its profiling events.
    pub fn device(name: String, kind: PassKind, ms: f64, bytes: u64) -> Pass {
        Pass {
            name,
            kind,
            stage: Stage::Blur,
            ms,
            bytes,
        }
    }

    /// Whether the pass ran on the host (the table's "where").
    pub fn on_host(&self) -> bool {
        matches!(self.kind, PassKind::Host | PassKind::Setup)
    }
}

/// The time `passes` spent in `stage`: the one place passes are summed.
pub fn stage_ms(passes: &[Pass], stage: Stage) -> f64 {
    passes
        .iter()
        .filter(|p| p.stage == stage)
        .map(|p| p.ms)
        .sum()
}

/// An image as the report names it.
#[derive(Clone, Debug, Serialize)]
pub struct ImageSummary {
    /// Its path (`stdin`, `stdout` for the streams).
    pub path: String,
    /// Its format's name.
    pub format: String,
    /// Width, pixels (upright).
    pub width: u32,
    /// Height, pixels (upright).
    pub height: u32,
    /// Its colour type's name (`Rgb8`, `CMYK8`, ...).
    pub color: String,
}

/// Which implementation blurred the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// An OpenCL device.
    Opencl,
    /// The built-in Rust path.
    Rust,
}

/// What a job did: the image, the blur, where it ran, every pass, and notes.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The device that blurred, or the host's path.
    pub device: String,
    /// OpenCL or the Rust path.
    pub backend: Backend,
    /// The input image.
    pub input: ImageSummary,
    /// The output image.
    pub output: ImageSummary,
    /// Sigma along rows.
    pub sigma_x: f64,
    /// Sigma along columns.
    pub sigma_y: f64,
    /// Sigma across the pages of a TIFF stack blurred as a volume (`--sigma-z`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sigma_z: Option<f64>,
    /// Pages blurred, where the input is a TIFF of several (the image's size is a page's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<usize>,
    /// Which filter ran: `recursive`, `fir`, or one per axis.
    pub method: String,
    /// The GPU pipeline, or the host's passes.
    pub pipeline: String,
    /// Whether it blurred in linear light.
    pub linear: bool,
    /// Every pass, in order.
    pub passes: Vec<Pass>,
    /// The whole job's wall time.
    pub total_ms: f64,
    /// Why `--device auto` ran this path (its cost model's prediction where it weighed one);
    /// None where `--device` named the path.
    pub why: Option<String>,
    /// What the job changed or could not keep.
    pub notes: Vec<String>,
}

impl Report {
    /// Megapixels blurred: the image's, or every page's.
    pub fn megapixels(&self) -> f64 {
        let pages = self.pages.unwrap_or(1) as f64;
        self.input.width as f64 * self.input.height as f64 * pages * 1e-6
    }

    /// Total device time of the device passes (transfers and kernels).
    pub fn device_ms(&self) -> f64 {
        self.passes
            .iter()
            .filter(|p| !p.on_host())
            .map(|p| p.ms)
            .sum()
    }

    /// The table's image line: the input, its size (and pages), colour and format, and the
    /// output's.
    fn image_line(&self) -> String {
        let pages = match self.pages {
            Some(n) => format!(" × {n} pages"),
            None => String::new(),
        };
        let (i, o) = (&self.input, &self.output);
        format!(
            "image    {} {}×{}{pages} {} ({}) → {} {} ({})\n",
            i.path, i.width, i.height, i.color, i.format, o.path, o.color, o.format
        )
    }

    /// The sigmas as the table names them: one where x and y agree, then z where given.
    fn sigmas(&self) -> String {
        let sigma = match self.sigma_x == self.sigma_y {
            true => format!("sigma {}", self.sigma_x),
            false => format!("sigma {} (x), {} (y)", self.sigma_x, self.sigma_y),
        };
        match self.sigma_z {
            Some(z) => format!("{sigma}, {z} (z)"),
            None => sigma,
        }
    }

    /// The human-readable table.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let mp = self.megapixels();
        let _ = writeln!(s, "device   {}", self.device);
        if let Some(why) = &self.why {
            let _ = writeln!(s, "chosen   {why}");
        }
        s.push_str(&self.image_line());
        let sigma = self.sigmas();
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
            s.push_str(&pass_line(p, mp));
        }
        if self.backend == Backend::Opencl {
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

/// Prints the report: JSON on stdout when asked, else the table on stderr unless quiet. A closed
/// stdout (`| head`) is not an error.
pub fn emit(report: &Report, json: bool, quiet: bool) -> std::io::Result<()> {
    let json = json.then(|| serde_json::to_string_pretty(report).expect("report serialises"));
    // The JSON carries every figure of the table: a script that asks for it gets a quiet
    // stderr.
    let table = (!quiet && json.is_none()).then(|| report.table());
    write_out(json.as_deref(), table.as_deref())
}

/// Writes a report: `json` (and a newline) on stdout, `table` on stderr. A report that cannot
/// be written is an error (the caller exits 1), except a stdout its reader closed (`| head`).
pub fn write_out(json: Option<&str>, table: Option<&str>) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(text) = json {
        let mut out = std::io::stdout().lock();
        let written = writeln!(out, "{text}").and_then(|()| out.flush());
        match written {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            other => other?,
        }
    }
    if let Some(text) = table {
        let mut err = std::io::stderr().lock();
        err.write_all(text.as_bytes())?;
        err.flush()?;
    }
    Ok(())
}

/// `text` on one line: a newline (from a file name, or a library's message) would break the
/// promise that an error is one line, so each is shown as `\n`.
pub fn one_line(text: &str) -> String {
    text.replace('\r', "\\r").replace('\n', "\\n")
}

/// Writes a diagnostic line on stderr where it can; one that cannot be written is dropped,
/// never a panic (stderr may be a full disk or closed).
pub fn diagnostic(line: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// One pass's line of the table: its name, where it ran, its time, the image's megapixels
/// (`mp`) a second through it (none for set-up), and its bytes a second where it counts them.
fn pass_line(p: &Pass, mp: f64) -> String {
    let place = if p.on_host() { "host" } else { "device" };
    let mpps = match p.ms > 0.0 && p.kind != PassKind::Setup {
        true => format!("{:.0}", mp / (p.ms * 1e-3)),
        false => "-".into(),
    };
    let gbps = match p.bytes > 0 && p.ms > 0.0 {
        true => format!("{:.1}", p.bytes as f64 / (p.ms * 1e-3) * 1e-9),
        false => String::new(),
    };
    format!(
        "{:<29} {:>6} {:>10.3} {:>10} {:>9}\n",
        p.name, place, p.ms, mpps, gbps
    )
}
