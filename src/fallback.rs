//! When the OpenCL device cannot blur an image, the built-in Rust path does, and the report
//! says why: an image larger than the device may allocate goes to the Rust path before
//! anything is uploaded, and a failed kernel build, buffer allocation or enqueue sends the
//! image there after the fact. A device fault never fails the job and never panics.

use crate::filter::Blur2d;
use crate::image_io::ImageIoError;
use crate::job;
use crate::opencl::{ClContext, ClError};
use crate::pipeline::{Pass, PipelineChoice};
use crate::planar::Planar;

/// What blurred an image.
pub struct Blurred {
    pub planar: Planar,
    /// The pipeline that ran (the Rust path's name after a fallback).
    pub pipeline: String,
    /// Whether the device ran it (false: the Rust path, asked for or fallen back to).
    pub on_device: bool,
    /// Why the device was passed over, for the report.
    pub note: Option<String>,
    /// The device error that caused the fallback, if one did.
    pub failure: Option<ClError>,
}

/// The name the report gives the Rust path's pipeline.
pub const RUST_PIPELINE: &str = "rows + blocked transposes";

/// Why `ctx` cannot hold a `planar`-sized image, if it cannot: a buffer over the device's
/// largest allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE), or the two image buffers over its
/// global memory.
pub fn too_large(ctx: &ClContext, planar: &Planar) -> Option<String> {
    let mib = (planar.data.len() as u64 * 4).div_ceil(1 << 20);
    let info = &ctx.info;
    if mib > info.max_alloc_mib {
        Some(format!(
            "the image needs {mib} MiB per device buffer and {} allows {} MiB",
            info.name, info.max_alloc_mib
        ))
    } else if info.global_mem_mib > 0 && 2 * mib > info.global_mem_mib {
        Some(format!(
            "the image needs 2 × {mib} MiB on the device and {} has {} MiB",
            info.name, info.global_mem_mib
        ))
    } else {
        None
    }
}

/// The report's note for a device failure (`error`'s text): its first line, so that a build
/// failure's compiler log stays out of it.
pub fn failure_note(error: &str) -> String {
    let line = error.lines().next().unwrap_or_default();
    format!(
        "the OpenCL device failed ({}): blurred on the built-in Rust path instead",
        line.trim_end_matches("; compiler log:")
    )
}

/// Blurs on `ctx` when there is one and it can hold the image, else on the Rust path. A device
/// failure consumes the image, so `reload` decodes it again for the Rust path (a rare case not
/// worth keeping a second copy in memory for); only its I/O can fail.
pub fn blur(
    ctx: Option<&ClContext>,
    planar: Planar,
    blur: &Blur2d,
    choice: PipelineChoice,
    passes: &mut Vec<Pass>,
    reload: impl FnOnce() -> Result<Planar, ImageIoError>,
) -> Result<Blurred, ImageIoError> {
    let rust = |planar: Planar, passes: &mut Vec<Pass>, note, failure| Blurred {
        planar: job::cpu_blur(planar, blur, passes),
        pipeline: RUST_PIPELINE.into(),
        on_device: false,
        note,
        failure,
    };
    let Some(ctx) = ctx else {
        return Ok(rust(planar, passes, None, None));
    };
    if let Some(why) = too_large(ctx, &planar) {
        let note = format!("{why}: blurred on the built-in Rust path instead");
        return Ok(rust(planar, passes, Some(note), None));
    }
    let before = passes.len();
    match job::blur_planar(Some(ctx), planar, blur, choice, passes) {
        Ok((planar, pipeline)) => Ok(Blurred {
            planar,
            pipeline,
            on_device: true,
            note: None,
            failure: None,
        }),
        Err(e) => {
            passes.truncate(before);
            let note = failure_note(&e.to_string());
            let planar = reload()?;
            Ok(rust(planar, passes, Some(note), Some(e)))
        }
    }
}
