//! When the OpenCL device cannot blur an image, the built-in Rust path does, and the report
//! says why: an image larger than the device may allocate goes to the Rust path before
//! anything is uploaded, and a failed kernel build, buffer allocation or enqueue sends the
//! image there after the fact. A device fault never fails the job and never panics.

use crate::codec::ImageIoError;
use crate::filter::Blur2d;
use crate::gpu::opencl::{ClContext, ClError};
use crate::gpu::plan::PipelineChoice;
use crate::gpu::upload::Upload;
use crate::job::{self, Keep, Loaded, Working};
use crate::pixels::planar::Planar;
use crate::report::Pass;

/// How an image was blurred.
pub struct Blurred {
    /// The pipeline that ran (the Rust path's after a fallback).
    pub pipeline: String,
    /// Whether the device ran it (false: the Rust path, asked for or fallen back to).
    pub on_device: bool,
    /// Why the device was passed over, for the report.
    pub note: Option<String>,
    /// The device error that caused the fallback, if one did.
    pub failure: Option<ClError>,
}

/// Why `ctx` cannot hold an image whose device buffers take `(largest, total)` bytes
/// (`Upload::device_bytes`), if it cannot: a buffer over the device's largest allocation
/// (CL_DEVICE_MAX_MEM_ALLOC_SIZE), or all of them over its global memory.
pub fn too_large(ctx: &ClContext, (largest, total): (u64, u64)) -> Option<String> {
    let (mib, total_mib) = (largest.div_ceil(1 << 20), total.div_ceil(1 << 20));
    let info = &ctx.info;
    if mib > info.max_alloc_mib {
        Some(format!(
            "the image needs {mib} MiB per device buffer and {} allows {} MiB",
            info.name, info.max_alloc_mib
        ))
    } else if info.global_mem_mib > 0 && total_mib > info.global_mem_mib {
        Some(format!(
            "the image needs {total_mib} MiB on the device and {} has {} MiB",
            info.name, info.global_mem_mib
        ))
    } else {
        None
    }
}

/// The device buffers `loaded` needs on `ctx`, as `too_large` takes them.
fn device_bytes(
    ctx: &ClContext,
    loaded: &Loaded,
    blur: &Blur2d,
    choice: PipelineChoice,
) -> (u64, u64) {
    let (w, h) = (loaded.width as usize, loaded.height as usize);
    match (
        loaded.upload(choice.resolve(&ctx.info), blur),
        &loaded.working,
    ) {
        (Some(upload @ Upload::U8 { channels, .. }), _) => upload.device_bytes(w, h, channels),
        (Some(Upload::PlanarF32), Working::Planar(p)) => {
            Upload::PlanarF32.device_bytes(p.width, p.height, p.channels)
        }
        // Blurred on the host by the banded path: nothing on the device.
        _ => (0, 0),
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

/// Blurs `loaded` on `ctx` when there is one and it can hold the image, else on the Rust
/// path. A fallback decodes the image again with `reload` (as the Rust path takes it, in place
/// where it can), so it writes the same bytes as `--device rust`; a device failure has consumed
/// the image anyway, and keeping a second copy for a rare case is not worth the memory. Only
/// that I/O can fail.
pub fn blur(
    ctx: Option<&ClContext>,
    loaded: &mut Loaded,
    blur: &Blur2d,
    choice: PipelineChoice,
    passes: &mut Vec<Pass>,
    reload: impl FnOnce() -> Result<Loaded, ImageIoError>,
) -> Result<Blurred, ImageIoError> {
    let rust = |loaded: &mut Loaded, passes: &mut Vec<Pass>, note, failure| Blurred {
        pipeline: job::blur_loaded(None, loaded, blur, choice, passes)
            .expect("the Rust path has no device to fail"),
        on_device: false,
        note,
        failure,
    };
    let Some(ctx) = ctx else {
        // Loaded for a device that then failed to build its kernels: decode again, in place.
        if matches!(loaded.working, Working::Planar(_))
            && Keep::for_path(None, blur) == Keep::Decoded
        {
            loaded.working = Working::Planar(Planar::default());
            *loaded = reload()?;
        }
        return Ok(rust(loaded, passes, None, None));
    };
    let too_big = too_large(ctx, device_bytes(ctx, loaded, blur, choice));
    let (note, failure) = match too_big {
        Some(why) => (
            format!("{why}: blurred on the built-in Rust path instead"),
            None,
        ),
        None => {
            let before = passes.len();
            match job::blur_loaded(Some(ctx), loaded, blur, choice, passes) {
                Ok(pipeline) => {
                    return Ok(Blurred {
                        pipeline,
                        on_device: true,
                        note: None,
                        failure: None,
                    })
                }
                Err(e) => {
                    passes.truncate(before);
                    (failure_note(&e.to_string()), Some(e))
                }
            }
        }
    };
    // The device's working copy goes before the image is decoded again.
    loaded.working = Working::Planar(Planar::default());
    *loaded = reload()?;
    Ok(rust(loaded, passes, Some(note), failure))
}
