//! The main job: one file in, one blurred file out, every step timed.

use crate::codec::{self, EncodeOptions};
use crate::cpu::{banded, reference};
use crate::filter::{Blur2d, Method};
use crate::gpu::opencl::device::DeviceSet;
use crate::gpu::opencl::{device, ClContext, DeviceChoice};
use crate::gpu::pipeline;
use crate::gpu::plan::{Pipeline, PipelineChoice};
use crate::gpu::upload::{self, Upload};
use crate::pixels;
use crate::pixels::planar::Planar;
use crate::report::{Backend, ImageSummary, Pass, Report, Stage};
use image::{ColorType, DynamicImage, ImageFormat};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A checked request to blur one file.
#[derive(Clone, Debug)]
pub struct BlurJob {
    pub input: PathBuf,
    pub output: PathBuf,
    pub sigma_x: f64,
    pub sigma_y: f64,
    pub method: Method,
    pub pipeline: PipelineChoice,
    /// One device here; `gblur batch` also takes `all` and lists.
    pub device: DeviceSet,
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

/// The image a blur works on.
pub enum Working {
    /// Premultiplied planar f32: what the OpenCL pipelines and the reference path take.
    Planar(Planar),
    /// The decoded image itself, blurred in place by the banded Rust blur (no f32 copy).
    Decoded(DynamicImage),
}

/// A decoded input, oriented, as the blur will take it.
pub struct Loaded {
    pub working: Working,
    pub layout: pixels::Layout,
    pub icc: Option<Vec<u8>>,
    pub format: ImageFormat,
    pub color: ColorType,
    pub width: u32,
    pub height: u32,
    /// What decoding changed that the report should say (`pixels::sanitize_image`).
    pub notes: Vec<String>,
}

impl Loaded {
    /// What a device running `pipe` receives of this image: planar f32, or the decoded 8-bit
    /// samples (`Upload::for_image`); None for a decoded image that the device does not take,
    /// which the banded blur handles on the host.
    pub fn upload(&self, pipe: Pipeline, blur: &Blur2d) -> Option<Upload> {
        match &self.working {
            Working::Planar(_) => Some(Upload::PlanarF32),
            Working::Decoded(image) => {
                match Upload::for_image(image.color(), self.layout.linear, pipe, blur) {
                    u @ Upload::U8 { .. } => Some(u),
                    Upload::PlanarF32 => None,
                }
            }
        }
    }
}

/// Which decoded images a path blurs as they are, without a planar f32 copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// Every image converted to planar f32 (the reference path, the FIR, the other pipelines).
    Planar,
    /// Every image as decoded: the Rust path's banded blur, in place.
    Decoded,
    /// 8-bit gray, gray+alpha, RGB and RGBA as decoded (uploaded as bytes, converted on the
    /// device: `upload::blur_u8`), the rest as planar f32.
    Decoded8Bit,
}

impl Keep {
    /// What a path keeps: the Rust path (`device` None) or a device running `device`.
    pub fn for_path(device: Option<Pipeline>, blur: &Blur2d) -> Keep {
        let recursive = blur.x.is_recursive() && blur.y.is_recursive();
        match device {
            _ if !recursive => Keep::Planar,
            None => Keep::Decoded,
            Some(Pipeline::Blocked { .. }) => Keep::Decoded8Bit,
            Some(_) => Keep::Planar,
        }
    }

    pub fn keeps(self, color: ColorType) -> bool {
        match self {
            Keep::Planar => false,
            Keep::Decoded => true,
            Keep::Decoded8Bit => upload::u8_channels(color).is_some(),
        }
    }
}

/// Decodes `path`, timing it into `passes`, and converts it to planar f32 unless `keep` keeps
/// it as decoded.
pub fn load(
    path: &Path,
    max_memory_mib: u64,
    linear: bool,
    keep: Keep,
    passes: &mut Vec<Pass>,
) -> Result<Loaded, codec::ImageIoError> {
    let t = Instant::now();
    let mut decoded = codec::decode(path, max_memory_mib)?;
    passes.push(Pass::host(Stage::Decode, "decode", t));
    let notes = pixels::sanitize_image(&mut decoded.image)
        .into_iter()
        .collect();
    let image = decoded.image;
    let (color, width, height) = (image.color(), image.width(), image.height());
    let (working, layout) = if keep.keeps(color) {
        let layout = pixels::Layout {
            color,
            linear: linear && pixels::is_integer(color),
        };
        (Working::Decoded(image), layout)
    } else {
        let t = Instant::now();
        let (planar, layout) = pixels::to_planar(&image, linear);
        passes.push(Pass::host(Stage::Decode, "to planar f32", t));
        (Working::Planar(planar), layout)
    };
    Ok(Loaded {
        working,
        layout,
        icc: decoded.icc,
        format: decoded.format,
        color,
        width,
        height,
        notes,
    })
}

/// Blurs `loaded` on the device, or on the Rust path (in place where it was loaded so);
/// returns the name of the pipeline that ran.
pub fn blur_loaded(
    ctx: Option<&ClContext>,
    loaded: &mut Loaded,
    blur: &Blur2d,
    choice: PipelineChoice,
    passes: &mut Vec<Pass>,
) -> Result<String, crate::gpu::opencl::ClError> {
    let linear = loaded.layout.linear;
    let on_device = ctx.map(|c| (c, choice.resolve(&c.info)));
    let bytes_up = on_device.filter(|&(_, pipe)| loaded.upload(pipe, blur).is_some());
    match &mut loaded.working {
        Working::Decoded(image) => {
            if let Some((ctx, pipe)) = bytes_up {
                passes.extend(upload::blur_u8(ctx, image, blur, linear, pipe)?);
                return Ok(format!("{}, 8-bit in and out", pipe.describe()));
            }
            let cpu_passes = banded::blur_image(image, blur, linear)
                .expect("loaded in place only for filters the banded blur takes");
            passes.extend(host_passes(cpu_passes));
            Ok(format!(
                "banded, in place ({})",
                crate::cpu::lanes::isa_name()
            ))
        }
        Working::Planar(planar) => {
            let input = std::mem::take(planar);
            let (out, name) = blur_planar(ctx, input, blur, choice, passes)?;
            *planar = out;
            Ok(name)
        }
    }
}

fn host_passes(cpu_passes: Vec<reference::CpuPass>) -> impl Iterator<Item = Pass> {
    cpu_passes
        .into_iter()
        .map(|p| Pass::host_ms(Stage::Blur, p.name, p.ms))
}

/// Blurs on the device when there is one, else on the Rust path; returns the result and the
/// name of the pipeline that ran.
pub fn blur_planar(
    ctx: Option<&ClContext>,
    planar: Planar,
    blur: &Blur2d,
    choice: PipelineChoice,
    passes: &mut Vec<Pass>,
) -> Result<(Planar, String), crate::gpu::opencl::ClError> {
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
    let (out, cpu_passes) = reference::blur(&planar, blur);
    passes.extend(host_passes(cpu_passes));
    out
}

/// Converts back, encodes and writes `output` atomically; returns the colour type written.
#[allow(clippy::too_many_arguments)]
pub fn save(
    blurred: Working,
    layout: pixels::Layout,
    icc: Option<&[u8]>,
    format: ImageFormat,
    encode: EncodeOptions,
    output: &Path,
    passes: &mut Vec<Pass>,
    notes: &mut Vec<String>,
) -> Result<ColorType, codec::ImageIoError> {
    let (out_color, lost) = codec::output_color(layout.color, format);
    notes.extend(lost);
    let image = match blurred {
        Working::Planar(mut planar) => {
            let t = Instant::now();
            pixels::finish_planar(&mut planar, layout);
            let image = pixels::from_planar(&planar, layout.color, out_color);
            passes.push(Pass::host(Stage::Encode, "from planar", t));
            image
        }
        Working::Decoded(image) if image.color() == out_color => image,
        Working::Decoded(image) => {
            let t = Instant::now();
            let image = pixels::convert(image, out_color);
            passes.push(Pass::host(Stage::Encode, "convert", t));
            image
        }
    };
    let t = Instant::now();
    let (bytes, icc_note) = codec::encode(&image, format, icc, encode, output)?;
    notes.extend(icc_note);
    passes.push(Pass::host(Stage::Encode, "encode", t));
    let t = Instant::now();
    codec::write_atomic(output, &bytes)?;
    passes.push(Pass::host(Stage::Encode, "write", t));
    Ok(out_color)
}

/// Opens the OpenCL device chosen (None: the Rust path) and builds the kernels a
/// `width`×`height` image needs, timing it as the setup pass.
pub fn open_device(
    selected: Option<crate::gpu::opencl::DeviceInfo>,
    blur: &Blur2d,
    choice: PipelineChoice,
    loaded: &Loaded,
    passes: &mut Vec<Pass>,
) -> Result<Option<ClContext>, JobError> {
    let t = Instant::now();
    let Some(info) = selected else {
        return Ok(None);
    };
    let ctx = ClContext::new(info).map_err(|e| JobError::Setup(e.into()))?;
    let pipe = choice.resolve(&ctx.info);
    // An image the device does not take needs no kernels; the planar ones do no harm.
    let upload = loaded.upload(pipe, blur).unwrap_or(Upload::PlanarF32);
    let size = (loaded.width as usize, loaded.height as usize);
    pipeline::prepare(&ctx, blur, pipe, size, upload).map_err(|e| JobError::Failed(e.into()))?;
    passes.push(Pass::host(Stage::Setup, "setup + build", t));
    Ok(Some(ctx))
}

/// The device `choice` names; None for the Rust path, with a note where `auto` chose it.
/// `auto` takes a GPU when there is one and otherwise the Rust path, which `gblur bench cpu`
/// measures several times faster than an OpenCL CPU device (PoCL) on the same cores, unless
/// an OpenCL pipeline was asked for by name.
pub fn choose_device(
    choice: &DeviceChoice,
    pipeline: PipelineChoice,
) -> Result<(Option<crate::gpu::opencl::DeviceInfo>, Option<String>), crate::gpu::opencl::ClError> {
    if *choice == DeviceChoice::Auto
        && pipeline == PipelineChoice::Auto
        && device::only_cpu_runtimes()
    {
        let why = "no GPU runtime installed (only PoCL): ran the built-in Rust path, faster \
                   here than PoCL (--device cpu runs it)";
        return Ok((None, Some(why.into())));
    }
    let selected = device::select(choice)?;
    if *choice != DeviceChoice::Auto {
        return Ok((selected, None));
    }
    Ok(match selected {
        Some(d) if d.is_gpu() || pipeline != PipelineChoice::Auto => (Some(d), None),
        Some(d) => (
            None,
            Some(format!(
                "no GPU: ran the built-in Rust path, faster here than {} (--device cpu runs it)",
                d.name
            )),
        ),
        None => (
            None,
            Some("no OpenCL device found: ran the built-in Rust implementation".into()),
        ),
    })
}

/// What the report calls the Rust path.
pub fn rust_device_name() -> String {
    format!("built-in Rust ({} threads)", rayon::current_num_threads())
}

pub fn run(job: &BlurJob) -> Result<Report, JobError> {
    let t_total = Instant::now();
    let choice = job.device.single().ok_or_else(|| {
        JobError::Setup(anyhow::anyhow!(
            "--device {}: one image runs on one device; `all` and device lists are for gblur batch",
            job.device
        ))
    })?;
    let out_format =
        codec::check_output(&job.input, &job.output).map_err(|e| JobError::Setup(e.into()))?;
    let mut notes = Vec::new();
    let mut passes = Vec::new();
    // Device selection is checked before any work: a wrong --device is a set-up error.
    let (selected, why) =
        choose_device(choice, job.pipeline).map_err(|e| JobError::Setup(e.into()))?;
    notes.extend(why);
    let blur = Blur2d::checked(job.method, job.sigma_x, job.sigma_y)
        .map_err(|e| JobError::Setup(anyhow::anyhow!(e)))?;

    let keep = Keep::for_path(selected.as_ref().map(|d| job.pipeline.resolve(d)), &blur);
    let mut loaded = load(
        &job.input,
        job.max_memory_mib,
        job.linear,
        keep,
        &mut passes,
    )
    .map_err(|e| JobError::Failed(e.into()))?;
    let (w, h) = (loaded.width, loaded.height);
    notes.append(&mut loaded.notes);
    let ctx = match open_device(selected, &blur, job.pipeline, &loaded, &mut passes) {
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

    let reload = || {
        let rust = Keep::for_path(None, &blur);
        load(
            &job.input,
            job.max_memory_mib,
            job.linear,
            rust,
            &mut Vec::new(),
        )
    };
    let done = crate::fallback::blur(
        ctx.as_ref(),
        &mut loaded,
        &blur,
        job.pipeline,
        &mut passes,
        reload,
    )
    .map_err(|e| JobError::Failed(e.into()))?;
    notes.extend(done.note);
    let pipeline_name = done.pipeline;
    let (device_name, backend) = match &ctx {
        Some(ctx) if done.on_device => (ctx.device_name(), Backend::Opencl),
        _ => (rust_device_name(), Backend::Rust),
    };
    let out_color = save(
        loaded.working,
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
