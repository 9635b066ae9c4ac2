//! The main job: one file in, one blurred file out, every step timed.

use crate::filter::{Blur2d, Method};
use crate::image_io::{self, EncodeOptions};
use crate::opencl::{device, ClContext, DeviceChoice};
use crate::pipeline::{self, Pass, PassKind, PipelineChoice};
use crate::report::{ImageSummary, Report};
use crate::{cpu, pixels};
use anyhow::Context as _;
use std::path::PathBuf;
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

pub fn run(job: &BlurJob) -> Result<Report, JobError> {
    let t_total = Instant::now();
    let out_format =
        image_io::check_output(&job.input, &job.output).map_err(|e| JobError::Setup(e.into()))?;
    let mut notes = Vec::new();
    let mut passes = Vec::new();

    // Device selection is checked before any work: a wrong --device is a set-up error.
    let selected = device::select(&job.device).map_err(|e| JobError::Setup(e.into()))?;

    let t = Instant::now();
    let decoded =
        image_io::decode(&job.input, job.max_memory_mib).map_err(|e| JobError::Failed(e.into()))?;
    passes.push(host("decode", t));
    let in_color = decoded.image.color();
    let (w, h) = (decoded.image.width(), decoded.image.height());

    let t = Instant::now();
    let blur = Blur2d::new(job.method, job.sigma_x, job.sigma_y);
    let ctx = match selected {
        Some(info) => {
            let ctx = ClContext::new(info).map_err(|e| JobError::Setup(e.into()))?;
            let pipe = job.pipeline.resolve(&ctx.info);
            pipeline::prepare(&ctx, &blur, pipe, (w as usize, h as usize))
                .map_err(|e| JobError::Failed(e.into()))?;
            passes.push(host(SETUP, t));
            Some(ctx)
        }
        None => {
            if job.device == DeviceChoice::Auto {
                notes.push("no OpenCL device found: ran the built-in Rust implementation".into());
            }
            None
        }
    };

    let t = Instant::now();
    let (planar, layout) = pixels::to_planar(&decoded.image, job.linear);
    drop(decoded.image);
    passes.push(host("to planar f32", t));
    if job.linear && !layout.linear {
        notes.push("--linear ignored: float images are linear already".into());
    }

    let (mut blurred, device_name, backend, pipeline_name) = match &ctx {
        Some(ctx) => {
            let pipe = job.pipeline.resolve(&ctx.info);
            let (out, dev_passes) = pipeline::blur(ctx, planar, &blur, pipe)
                .with_context(|| {
                    format!(
                        "{}: blur on {} failed",
                        job.input.display(),
                        ctx.device_name()
                    )
                })
                .map_err(JobError::Failed)?;
            passes.extend(dev_passes);
            (out, ctx.device_name(), "opencl", pipe.describe())
        }
        None => {
            let (out, cpu_passes) = cpu::blur(&planar, &blur);
            drop(planar);
            passes.extend(cpu_passes.into_iter().map(|p| Pass {
                name: p.name.into(),
                kind: PassKind::Host,
                ms: p.ms,
                bytes: 0,
            }));
            let threads = rayon::current_num_threads();
            (
                out,
                format!("built-in Rust ({threads} threads)"),
                "rust",
                "rows + blocked transposes".into(),
            )
        }
    };

    let t = Instant::now();
    pixels::finish_planar(&mut blurred, layout);
    let (out_color, lost) = image_io::output_color(layout.color, out_format);
    notes.extend(lost);
    let image = pixels::from_planar(&blurred, layout.color, out_color);
    drop(blurred);
    passes.push(host("from planar", t));

    let t = Instant::now();
    let (bytes, icc_note) = image_io::encode(
        &image,
        out_format,
        decoded.icc.as_deref(),
        job.encode,
        &job.output,
    )
    .map_err(|e| JobError::Failed(e.into()))?;
    notes.extend(icc_note);
    passes.push(host("encode", t));
    let t = Instant::now();
    image_io::write_atomic(&job.output, &bytes).map_err(|e| JobError::Failed(e.into()))?;
    passes.push(host("write", t));

    Ok(Report {
        device: device_name,
        backend,
        input: ImageSummary {
            path: job.input.display().to_string(),
            format: format!("{:?}", decoded.format),
            width: w,
            height: h,
            color: format!("{in_color:?}"),
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
        linear: layout.linear,
        passes,
        total_ms: t_total.elapsed().as_secs_f64() * 1e3,
        notes,
    })
}
