//! The main job: one file in, one blurred file out, every step timed.

use crate::filter::{Blur2d, Method};
use crate::image_io::{self, EncodeOptions};
use crate::opencl::{device, ClContext, DeviceChoice};
use crate::pipeline::{self, Pass, PassKind, PipelineChoice};
use crate::planar::Planar;
use crate::report::{ImageSummary, Report};
use crate::{cpu, pixels};
use image::{ColorType, ImageFormat};
use std::path::{Path, PathBuf};
use std::time::Instant;

const SETUP: &str = "setup + build";

/// A checked request to blur one file.
#[derive(Clone, Debug)]
pub struct BlurJob {
    pub input: PathBuf,
    pub output: PathBuf,
    pub sigma_x: f64,
    pub sigma_y: f64,
    pub method: Method,
    pub pipeline: PipelineChoice,
    pub device: DeviceChoice,
    pub linear: bool,
    pub encode: EncodeOptions,
    pub max_memory_mib: u64,
}

/// Why a job failed: set-up problems (exit 2) or the blur itself (exit 1).
#[derive(Debug)]
pub enum JobError {
    Setup(anyhow::Error),
    Failed(anyhow::Error),
}

fn host(name: &str, started: Instant) -> Pass {
    Pass {
        name: name.into(),
        kind: if name == SETUP {
            PassKind::Setup
        } else {
            PassKind::Host
        },
        ms: started.elapsed().as_secs_f64() * 1e3,
        bytes: 0,
    }
}

/// A decoded input, oriented and converted to the premultiplied planar working image.
pub struct Loaded {
    pub planar: Planar,
    pub layout: pixels::Layout,
    pub icc: Option<Vec<u8>>,
    pub format: ImageFormat,
    pub color: ColorType,
    pub width: u32,
    pub height: u32,
    /// What decoding changed that the report should say (`pixels::sanitize_image`).
    pub notes: Vec<String>,
}

/// Decodes `path` and converts it, timing both steps into `passes`.
pub fn load(
    path: &Path,
    max_memory_mib: u64,
    linear: bool,
    passes: &mut Vec<Pass>,
) -> Result<Loaded, image_io::ImageIoError> {
    let t = Instant::now();
    let mut decoded = image_io::decode(path, max_memory_mib)?;
    passes.push(host("decode", t));
    let t = Instant::now();
    let notes = pixels::sanitize_image(&mut decoded.image)
        .into_iter()
        .collect();
    let (planar, layout) = pixels::to_planar(&decoded.image, linear);
    passes.push(host("to planar f32", t));
    Ok(Loaded {
        planar,
        layout,
        icc: decoded.icc,
        format: decoded.format,
        color: decoded.image.color(),
        width: decoded.image.width(),
        height: decoded.image.height(),
        notes,
    })
}

/// Blurs on the device when there is one, else on the Rust path; returns the result and the
/// name of the pipeline that ran.
pub fn blur_planar(
    ctx: Option<&ClContext>,
    planar: Planar,
    blur: &Blur2d,
    choice: PipelineChoice,
    passes: &mut Vec<Pass>,
) -> Result<(Planar, String), crate::opencl::ClError> {
    match ctx {
        Some(ctx) => {
            let pipe = choice.resolve(&ctx.info);
            let (out, dev_passes) = pipeline::blur(ctx, planar, blur, pipe)?;
            passes.extend(dev_passes);
            Ok((out, pipe.describe()))
        }
        None => Ok((
            cpu_blur(planar, blur, passes),
            "rows + blocked transposes".into(),
        )),
    }
}

/// The Rust path, with its passes reported as host passes.
pub fn cpu_blur(planar: Planar, blur: &Blur2d, passes: &mut Vec<Pass>) -> Planar {
    let (out, cpu_passes) = cpu::blur(&planar, blur);
    passes.extend(cpu_passes.into_iter().map(|p| Pass {
        name: p.name.into(),
        kind: PassKind::Host,
        ms: p.ms,
        bytes: 0,
    }));
    out
}

/// Converts back, encodes and writes `output` atomically; returns the colour type written.
#[allow(clippy::too_many_arguments)]
pub fn save(
    mut blurred: Planar,
    layout: pixels::Layout,
    icc: Option<&[u8]>,
    format: ImageFormat,
    encode: EncodeOptions,
    output: &Path,
    passes: &mut Vec<Pass>,
    notes: &mut Vec<String>,
) -> Result<ColorType, image_io::ImageIoError> {
    let t = Instant::now();
    pixels::finish_planar(&mut blurred, layout);
    let (out_color, lost) = image_io::output_color(layout.color, format);
    notes.extend(lost);
    let image = pixels::from_planar(&blurred, layout.color, out_color);
    drop(blurred);
    passes.push(host("from planar", t));
    let t = Instant::now();
    let (bytes, icc_note) = image_io::encode(&image, format, icc, encode, output)?;
    notes.extend(icc_note);
    passes.push(host("encode", t));
    let t = Instant::now();
    image_io::write_atomic(output, &bytes)?;
    passes.push(host("write", t));
    Ok(out_color)
}

/// Opens the OpenCL device chosen (None: the Rust path) and builds the kernels a
/// `width`×`height` image needs, timing it as the setup pass.
pub fn open_device(
    selected: Option<crate::opencl::DeviceInfo>,
    blur: &Blur2d,
    choice: PipelineChoice,
    (width, height): (usize, usize),
    passes: &mut Vec<Pass>,
) -> Result<Option<ClContext>, JobError> {
    let t = Instant::now();
    let Some(info) = selected else {
        return Ok(None);
    };
    let ctx = ClContext::new(info).map_err(|e| JobError::Setup(e.into()))?;
    pipeline::prepare(&ctx, blur, choice.resolve(&ctx.info), (width, height))
        .map_err(|e| JobError::Failed(e.into()))?;
    passes.push(host(SETUP, t));
    Ok(Some(ctx))
}

/// What the report calls the Rust path.
pub fn rust_device_name() -> String {
    format!("built-in Rust ({} threads)", rayon::current_num_threads())
}

pub fn run(job: &BlurJob) -> Result<Report, JobError> {
    let t_total = Instant::now();
    let out_format =
        image_io::check_output(&job.input, &job.output).map_err(|e| JobError::Setup(e.into()))?;
    let mut notes = Vec::new();
    let mut passes = Vec::new();
    // Device selection is checked before any work: a wrong --device is a set-up error.
    let selected = device::select(&job.device).map_err(|e| JobError::Setup(e.into()))?;
    let blur = Blur2d::checked(job.method, job.sigma_x, job.sigma_y)
        .map_err(|e| JobError::Setup(anyhow::anyhow!(e)))?;

    let loaded = load(&job.input, job.max_memory_mib, job.linear, &mut passes)
        .map_err(|e| JobError::Failed(e.into()))?;
    let (w, h) = (loaded.width, loaded.height);
    notes.extend(loaded.notes.iter().cloned());
    if selected.is_none() && job.device == DeviceChoice::Auto {
        notes.push("no OpenCL device found: ran the built-in Rust implementation".into());
    }
    let ctx = match open_device(
        selected,
        &blur,
        job.pipeline,
        (w as usize, h as usize),
        &mut passes,
    ) {
        // The kernels did not build: the Rust path blurs instead (crate::fallback).
        Err(JobError::Failed(e)) => {
            notes.push(crate::fallback::failure_note(&format!("{e:#}")));
            None
        }
        other => other?,
    };
    if job.linear && !loaded.layout.linear {
        notes.push("--linear ignored: float images are linear already".into());
    }

    let reload = || load(&job.input, job.max_memory_mib, job.linear, &mut Vec::new());
    let done = crate::fallback::blur(
        ctx.as_ref(),
        loaded.planar,
        &blur,
        job.pipeline,
        &mut passes,
        || reload().map(|l| l.planar),
    )
    .map_err(|e| JobError::Failed(e.into()))?;
    notes.extend(done.note);
    let pipeline_name = done.pipeline;
    let (device_name, backend) = match &ctx {
        Some(ctx) if done.on_device => (ctx.device_name(), "opencl"),
        _ => (rust_device_name(), "rust"),
    };
    let out_color = save(
        done.planar,
        loaded.layout,
        loaded.icc.as_deref(),
        out_format,
        job.encode,
        &job.output,
        &mut passes,
        &mut notes,
    )
    .map_err(|e| JobError::Failed(e.into()))?;

    Ok(Report {
        device: device_name,
        backend,
        input: ImageSummary {
            path: job.input.display().to_string(),
            format: format!("{:?}", loaded.format),
            width: w,
            height: h,
            color: format!("{:?}", loaded.color),
        },
        output: ImageSummary {
            path: job.output.display().to_string(),
            format: format!("{out_format:?}"),
            width: w,
            height: h,
            color: format!("{out_color:?}"),
        },
        sigma_x: job.sigma_x,
        sigma_y: job.sigma_y,
        method: blur.method_name(),
        pipeline: pipeline_name,
        linear: loaded.layout.linear,
        passes,
        total_ms: t_total.elapsed().as_secs_f64() * 1e3,
        notes,
    })
}
