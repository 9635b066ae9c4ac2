//! Blurring a loaded image on its device or on the built-in Rust path. When the device cannot
//! blur it, the Rust path does, and the report says why: an image larger than the device may
//! allocate goes to the Rust path before anything is uploaded, and a failed kernel build,
//! buffer allocation or enqueue sends it there after the fact. A device fault never fails the
//! job and never panics.

use super::sharpen::Sharpen;
use super::{Keep, Loaded, Working};
use crate::backend::Device;
use crate::codec::jpeg::YccPlanes;
use crate::codec::ImageIoError;
use crate::cpu::{banded, lanes, reference};
use crate::filter::Blur2d;
use crate::gpu::opencl::pinned::Staging;
use crate::gpu::opencl::{ClContext, ClError};
use crate::gpu::pipeline;
use crate::gpu::plan::{Pipeline, Upload};
use crate::gpu::upload;
use crate::pixels;
use crate::pixels::planar::Planar;
use crate::report::{Pass, Stage};
use image::{ColorType, DynamicImage, GrayImage};
use std::time::Instant;

/// How an image was blurred.
pub struct BlurOutcome {
    /// The pipeline that ran (the Rust path's after a fallback).
    pub pipeline: String,
    /// Whether the device ran it (false: the Rust path, asked for or fallen back to).
    pub on_device: bool,
    /// Why the device was passed over, for the report.
    pub note: Option<String>,
    /// The device error that caused the fallback, if one did.
    pub failure: Option<ClError>,
}

impl BlurOutcome {
    /// The Rust path's outcome, asked for: `pipeline` ran.
    fn on_host(pipeline: String) -> BlurOutcome {
        BlurOutcome {
            pipeline,
            on_device: false,
            note: None,
            failure: None,
        }
    }
}

/// On the Rust path (no `device`), an image without alpha, linear light or a selection
/// sharpened in place by the banded blur's rows pass, the blur never rounded on its own; None
/// where the image is not one of those.
fn sharpen_in_place(
    device: Option<&Device>,
    loaded: &mut Loaded,
    blur: &Blur2d,
    sharpen: &Sharpen,
    passes: &mut Vec<Pass>,
) -> Option<BlurOutcome> {
    let (None, None, false, Working::Decoded(image)) = (
        device,
        &loaded.mix,
        loaded.layout.linear,
        &mut loaded.working,
    ) else {
        return None;
    };
    let unsharp = sharpen.unsharp(image.color());
    let cpu_passes = banded::sharpen_image(image, blur, unsharp)?;
    passes.extend(host_passes(cpu_passes));
    let isa = lanes::isa_name();
    Some(BlurOutcome::on_host(format!(
        "banded, in place ({isa}), {}",
        sharpen.describe()
    )))
}

/// Blurs `loaded` on `device` when there is one and it can hold the image, else on the Rust
/// path. A fallback decodes the image again with `reload` (as the Rust path takes it, in place
/// where it can), so it writes the same bytes as `--device rust`; a device failure has consumed
/// the image anyway, and keeping a second copy for a rare case is not worth the memory. Only
/// that I/O can fail. `staging`, where a batch's decoder copied a JPEG's planes into pinned
/// memory, is where the device reads them and writes them back (`Staging::blurred` then says
/// so).
///
/// With `sharpen`, the blurred image then becomes the unsharp mask of the input
/// (`sharpen::Sharpen`): the image is blurred as planar f32 (converted first where it was
/// loaded otherwise), and the input is kept beside it until then.
pub fn blur(
    device: Option<&Device>,
    loaded: &mut Loaded,
    blur: &Blur2d,
    sharpen: Option<&Sharpen>,
    passes: &mut Vec<Pass>,
    reload: impl FnOnce() -> Result<Loaded, ImageIoError>,
    staging: Option<&mut Staging>,
) -> Result<BlurOutcome, ImageIoError> {
    let Some(sharpen) = sharpen else {
        return blur_only(device, loaded, blur, passes, reload, staging);
    };
    if let Some(done) = sharpen_in_place(device, loaded, blur, sharpen, passes) {
        return Ok(done);
    }
    loaded.adapt(Keep::Planar, loaded.layout.linear, passes);
    let t = Instant::now();
    let original = match &loaded.working {
        Working::Planar(p) => p.clone(),
        _ => unreachable!("adapted to planar f32 above"),
    };
    passes.push(Pass::host(Stage::Blur, "keep the input", t));
    let mut done = match device {
        // Planar f32 on the host is this image's own form here: no reload.
        None => BlurOutcome::on_host(blur_on_host(loaded, blur, passes)),
        Some(_) => blur_only(device, loaded, blur, passes, reload, staging)?,
    };
    // A device that failed left the image to the Rust path, which may blur it as decoded.
    loaded.adapt(Keep::Planar, loaded.layout.linear, passes);
    let t = Instant::now();
    if let Working::Planar(blurred) = &mut loaded.working {
        sharpen.apply(&original, blurred, loaded.layout);
    }
    passes.push(Pass::host(Stage::Blur, "sharpen", t));
    done.pipeline = format!("{}, {}", done.pipeline, sharpen.describe());
    Ok(done)
}

/// `blur` without sharpening.
fn blur_only(
    device: Option<&Device>,
    loaded: &mut Loaded,
    blur: &Blur2d,
    passes: &mut Vec<Pass>,
    reload: impl FnOnce() -> Result<Loaded, ImageIoError>,
    staging: Option<&mut Staging>,
) -> Result<BlurOutcome, ImageIoError> {
    let rust = |loaded: &mut Loaded, passes: &mut Vec<Pass>, note, failure| BlurOutcome {
        pipeline: blur_on_host(loaded, blur, passes),
        on_device: false,
        note,
        failure,
    };
    let Some(device) = device else {
        // Loaded for a device that then failed to build its kernels: decode again, in place.
        if matches!(loaded.working, Working::Planar(_))
            && Keep::for_path(None, blur) == Keep::Decoded
        {
            loaded.working = Working::Planar(Planar::default());
            *loaded = reload()?;
        }
        return Ok(rust(loaded, passes, None, None));
    };
    let (note, failure) = match too_large(device, device_bytes(device, loaded, blur)) {
        Some(why) => (
            format!("{why}: blurred on the built-in Rust path instead"),
            None,
        ),
        None => {
            let before = passes.len();
            match blur_on_device(device, loaded, blur, passes, staging) {
                Ok(pipeline) => {
                    return Ok(BlurOutcome {
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

/// Blurs `loaded` on `device`: bytes up and down where the device takes the decoded image,
/// planar f32 otherwise. Returns the name of the pipeline that ran.
fn blur_on_device(
    device: &Device,
    loaded: &mut Loaded,
    blur: &Blur2d,
    passes: &mut Vec<Pass>,
    staging: Option<&mut Staging>,
) -> Result<String, ClError> {
    let (ctx, pipe) = (&device.ctx, device.pipeline);
    let takes_bytes = loaded.upload(pipe, blur).is_some();
    let linear = loaded.layout.linear;
    match &mut loaded.working {
        Working::Decoded(image) if takes_bytes => {
            passes.extend(upload::blur_u8(ctx, image, blur, linear, pipe)?);
            Ok(format!("{}, 8-bit in and out", pipe.describe()))
        }
        Working::Ycc(planes) if takes_bytes => {
            let chroma = planes.chroma.name();
            passes.extend(blur_ycc_on_device(ctx, pipe, planes, blur, staging)?);
            Ok(format!(
                "{}, YCbCr {chroma} planes 8-bit in and out",
                pipe.describe(),
            ))
        }
        Working::Decoded(_) | Working::Ycc(_) => Ok(blur_on_host(loaded, blur, passes)),
        Working::Planar(planar) => {
            let (out, dev_passes) = pipeline::blur(ctx, std::mem::take(planar), blur, pipe)?;
            *planar = out;
            passes.extend(dev_passes);
            Ok(pipe.describe())
        }
    }
}

/// Blurs `loaded` on the Rust path: in place where it was loaded as decoded (mixed into it by
/// `loaded.mix`, which it takes, where there is one), else through the planar reference.
/// Returns the name of the pipeline that ran.
pub fn blur_on_host(loaded: &mut Loaded, blur: &Blur2d, passes: &mut Vec<Pass>) -> String {
    let linear = loaded.layout.linear;
    let mix = loaded.mix.take();
    match &mut loaded.working {
        Working::Decoded(image) => {
            let select = mix.as_deref().map(Vec::as_slice);
            let cpu_passes = crate::cpu::blur_in_place(image, blur, linear, select)
                .expect("loaded in place only for filters the in-place blurs take");
            passes.extend(host_passes(cpu_passes));
            format!("banded, in place ({})", lanes::isa_name())
        }
        Working::Ycc(planes) => {
            for (plane, plane_blur, name) in ycc_planes(planes, blur) {
                passes.extend(blur_plane_on_host(plane, &plane_blur, name));
            }
            format!(
                "YCbCr {} planes, chroma at sigma / subsampling ({})",
                planes.chroma.name(),
                lanes::isa_name()
            )
        }
        // Recursive planar images on the host are weighted planes (`mask`), not an image's
        // own samples: the banded blur takes them one plane at a time.
        Working::Planar(planar) => match banded::blur_planes(planar, blur) {
            Some(cpu_passes) => {
                passes.extend(host_passes(cpu_passes));
                format!("banded, per plane ({})", lanes::isa_name())
            }
            None => {
                let (out, cpu_passes) = reference::blur(planar, blur);
                *planar = out;
                passes.extend(host_passes(cpu_passes));
                "rows + blocked transposes".into()
            }
        },
    }
}

/// A JPEG's planes with the blur of each: Y with `blur`, Cb and Cr on their own grids with
/// sigma divided by their subsampling factors (`Blur2d::subsampled`).
fn ycc_planes<'p>(
    ycc: &'p mut YccPlanes,
    blur: &Blur2d,
) -> impl Iterator<Item = (&'p mut GrayImage, Blur2d, &'static str)> {
    let chroma = blur.subsampled(ycc.chroma.factors());
    let blurs = [blur.clone(), chroma.clone(), chroma];
    ycc.planes
        .iter_mut()
        .zip(blurs)
        .zip(["Y", "Cb", "Cr"])
        .map(|((plane, blur), name)| (plane, blur, name))
}

/// A JPEG's planes blurred in place on a device running the blocked pipeline, up as bytes and
/// back as bytes, all three with one wait (`upload::InPlaceU8`); a plane whose filter is an
/// FIR (chroma below twice `FIR_BELOW_SIGMA`) is blurred on the host, as the Rust path blurs
/// it. With `staging` (the planes one after another in pinned memory), the device reads and
/// writes the staged copies, and the host's result is staged too.
fn blur_ycc_on_device(
    ctx: &ClContext,
    pipe: Pipeline,
    ycc: &mut YccPlanes,
    blur: &Blur2d,
    mut staging: Option<&mut Staging>,
) -> Result<Vec<Pass>, ClError> {
    let lens: Vec<usize> = ycc.planes.iter().map(|p| p.len()).collect();
    let largest = lens.iter().copied().max().unwrap_or(0);
    let staged = staging
        .as_deref_mut()
        .filter(|s| s.bytes().len() >= lens.iter().sum())
        .map(|s| split_planes(s.bytes_mut(), &lens));
    let is_staged = staged.is_some();
    // Each plane's region of the slot, or none at all.
    let mut regions = staged.unwrap_or_default().into_iter();
    let mut passes = Vec::new();
    let mut on_device = upload::InPlaceU8::new(ctx, largest, pipe)?;
    for (plane, plane_blur, name) in ycc_planes(ycc, blur) {
        let region = regions.next();
        if plane_blur.x.is_recursive() && plane_blur.y.is_recursive() {
            let dims = (plane.width() as usize, plane.height() as usize, 1);
            let samples: &mut [u8] = match region {
                Some(r) => r,
                None => plane,
            };
            on_device.add(samples, dims, &plane_blur, false, name)?;
        } else {
            passes.extend(blur_plane_on_host(plane, &plane_blur, name));
            if let Some(r) = region {
                r.copy_from_slice(plane);
            }
        }
    }
    passes.extend(on_device.finish()?);
    if let Some(s) = staging {
        s.blurred = is_staged;
    }
    Ok(passes)
}

/// `bytes` cut into consecutive pieces of `lens` bytes (it must hold their sum).
fn split_planes<'b>(mut bytes: &'b mut [u8], lens: &[usize]) -> Vec<&'b mut [u8]> {
    lens.iter()
        .map(|&n| {
            let (head, tail) = std::mem::take(&mut bytes).split_at_mut(n);
            bytes = tail;
            head
        })
        .collect()
}

/// Copies a JPEG's planes into `staging`, one after another (what `blur_ycc_on_device` reads);
/// false where they do not fit.
pub fn stage_planes(ycc: &YccPlanes, staging: &mut Staging) -> bool {
    let lens: Vec<usize> = ycc.planes.iter().map(|p| p.len()).collect();
    if staging.bytes().len() < lens.iter().sum() {
        return false;
    }
    for (region, plane) in split_planes(staging.bytes_mut(), &lens)
        .into_iter()
        .zip(&ycc.planes)
    {
        region.copy_from_slice(plane);
    }
    true
}

/// Copies the blurred planes back out of `staging` where the device left them there; returns
/// whether it did.
pub fn unstage_planes(ycc: &mut YccPlanes, staging: &Staging) -> bool {
    if !staging.blurred {
        return false;
    }
    let mut at = 0;
    for plane in ycc.planes.iter_mut() {
        let n = plane.len();
        plane.copy_from_slice(&staging.bytes()[at..at + n]);
        at += n;
    }
    true
}

/// Blurs one 8-bit plane in place on the host, through the planar reference where the banded
/// blur does not take its filter (an FIR at small sigma); the passes are named after `name`.
fn blur_plane_on_host(plane: &mut GrayImage, blur: &Blur2d, name: &str) -> Vec<Pass> {
    let mut image = DynamicImage::ImageLuma8(std::mem::take(plane));
    let cpu_passes = match crate::cpu::blur_in_place(&mut image, blur, false, None) {
        Some(p) => p,
        None => {
            let (planar, _) = pixels::to_planar(&image, false);
            let (out, p) = reference::blur(&planar, blur);
            image = pixels::from_planar(&out, ColorType::L8, ColorType::L8);
            p
        }
    };
    *plane = image.into_luma8();
    cpu_passes
        .into_iter()
        .map(|p| Pass::host_ms(Stage::Blur, &format!("{name} {}", p.name), p.ms))
        .collect()
}

fn host_passes(cpu_passes: Vec<reference::CpuPass>) -> impl Iterator<Item = Pass> {
    cpu_passes
        .into_iter()
        .map(|p| Pass::host_ms(Stage::Blur, p.name, p.ms))
}

/// Why `device` cannot hold an image whose device buffers take `(largest, total)` bytes
/// (`Upload::device_bytes`), if it cannot: a buffer over the device's largest allocation
/// (CL_DEVICE_MAX_MEM_ALLOC_SIZE), or all of them over its global memory.
pub fn too_large(device: &Device, (largest, total): (u64, u64)) -> Option<String> {
    let (mib, total_mib) = (largest.div_ceil(1 << 20), total.div_ceil(1 << 20));
    let info = &device.ctx.info;
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

/// The device buffers `loaded` needs on `device`, as `too_large` takes them.
fn device_bytes(device: &Device, loaded: &Loaded, blur: &Blur2d) -> (u64, u64) {
    let (w, h) = loaded.size();
    match (loaded.upload(device.pipeline, blur), &loaded.working) {
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
