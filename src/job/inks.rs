//! A CMYK JPEG or TIFF into a JPEG or TIFF: its four inks blurred (or sharpened) as four
//! channels and written as CMYK with its ICC profile, as libvips keeps CMYK. Outputs that
//! cannot hold CMYK, and the options that need colour (`--to-srgb`, `--linear`, `--region`,
//! `--mask`, `--luminance`), take the usual path, where the inks become sRGB through the
//! profile and a note says so.

use super::{report, stdio_name, summary, BlurJob, Destination, JobError, Outcome};
use crate::backend::DeviceSet;
use crate::codec::format::InksToEncode;
use crate::codec::inks::{self, InkImage};
use crate::codec::read::Input;
use crate::codec::{self, metadata};
use crate::cpu::axis::Element;
use crate::cpu::banded::{self, Unsharp};
use crate::cpu::interleaved::WholeImage;
use crate::filter::{Blur2d, EdgeMode};
use crate::gpu::opencl::device::DeviceChoice;
use crate::report::{Pass, Report, Stage};
use image::{DynamicImage, ImageFormat};
use std::time::Instant;

/// Whether `job` asks for something that needs colour, not inks (`--to-srgb`, `--linear`,
/// `--region` or `--mask`, `--luminance`): a CMYK input then goes the usual way, to sRGB.
pub fn needs_colour(job: &BlurJob) -> bool {
    job.to_srgb
        || job.linear
        || job.mask.active()
        || job.sharpen.as_ref().is_some_and(|s| s.luminance)
}

/// Blurs a CMYK input into `out_format` keeping its inks, where the input is CMYK (a file's
/// header says it may be, then its bytes do) and the output holds CMYK; None where the usual
/// path takes it.
pub fn run(
    job: &BlurJob,
    input: &Input,
    format: Option<ImageFormat>,
    Destination {
        format: out_format,
        replace,
    }: Destination,
    passes: &mut Vec<Pass>,
) -> Result<Option<Report>, JobError> {
    if !codec::holds_inks(out_format) || needs_colour(job) {
        return Ok(None);
    }
    let name = stdio_name(&job.input, "stdin");
    let t = Instant::now();
    if input.is_file() && !inks::may_be_cmyk_as(input, format) {
        return Ok(None);
    }
    let bytes = input.whole(job.max_memory_mib).map_err(JobError::failed)?;
    let Some(ink) = inks::read(name, &bytes, job.max_memory_mib).map_err(JobError::failed)? else {
        return Ok(None);
    };
    refuse_options(job, out_format)?;
    if job.explain {
        crate::report::diagnostic("explain: a CMYK input into a JPEG or TIFF: its four inks are blurred on the host's cores and written as CMYK");
    }
    passes.push(Pass::host(Stage::Decode, "decode (CMYK inks)", t));
    let InkImage {
        mut image,
        format,
        meta,
        jpeg,
        tiff_compression,
        mut notes,
    } = ink;
    if !matches!(
        job.device,
        DeviceSet::One(DeviceChoice::Auto | DeviceChoice::Rust)
    ) {
        notes.push(
            "CMYK inks are blurred on the host's cores: --device was not used for them".into(),
        );
    }
    let input_color = ink_name(&image);
    let blur = &job.filter;
    let t = Instant::now();
    blur_inks(job, blur, &mut image);
    passes.push(Pass::host(
        Stage::Blur,
        if job.sharpen.is_some() {
            "sharpen (4 inks)"
        } else {
            "blur (4 inks)"
        },
        t,
    ));

    let out_name = stdio_name(&job.output, "stdout");
    let meta = meta.select(job.metadata);
    let t = Instant::now();
    let size = (image.width(), image.height());
    let failed = |detail: String| {
        JobError::failed(codec::ImageIoError::Encode {
            path: out_name.into(),
            format: format!("{out_format:?}"),
            detail,
        })
    };
    let encoding = InksToEncode {
        inks: image,
        icc: meta.icc.as_deref(),
        options: job.encode,
        jpeg: jpeg.as_ref(),
        tiff_compression,
    };
    let bytes = codec::of(out_format)
        .encode_inks(encoding, &mut notes)
        .map_err(failed)?;
    passes.push(Pass::host(Stage::Encode, "encode", t));
    let t = Instant::now();
    let (bytes, lost) =
        metadata::embed(bytes, out_format, &meta, size, out_name).map_err(JobError::failed)?;
    notes.extend(lost);
    codec::write_output(&job.output, &bytes, replace).map_err(JobError::failed)?;
    passes.push(Pass::host(Stage::Encode, "write", t));
    notes.push(format!(
        "the input is CMYK: its four inks were {} as they are and written as CMYK{}",
        if job.sharpen.is_some() {
            "sharpened"
        } else {
            "blurred"
        },
        if meta.icc.is_some() {
            " with its ICC profile"
        } else {
            ""
        }
    ));
    let output_color = match out_format {
        ImageFormat::Jpeg => "CMYK8".to_string(),
        _ => input_color.clone(),
    };
    let outcome = Outcome {
        device: None,
        input: summary(name, format, size, input_color),
        output: summary(out_name, out_format, size, output_color),
        method: blur.method_name(),
        pipeline: "CMYK inks, interleaved, on the host".into(),
        linear: false,
        pages: None,
        passes: std::mem::take(passes),
        why: None,
        notes,
    };
    Ok(Some(report(job, outcome)))
}

/// The options the inks route cannot honour, refused in one line: `--subsampling` (a CMYK
/// JPEG is written at full resolution) and `--engine strips` (the inks are blurred whole).
fn refuse_options(job: &BlurJob, out_format: ImageFormat) -> Result<(), JobError> {
    let why = if job.encode.subsampling_given && out_format == ImageFormat::Jpeg {
        "--subsampling: a CMYK input is written as a CMYK JPEG at full resolution; leave --subsampling out, or give --to-srgb for an RGB JPEG"
    } else if job.engine == crate::stream::Engine::Strips {
        "--engine strips: a CMYK input kept as CMYK is blurred whole, not streamed; leave --engine out, or give --to-srgb"
    } else {
        return Ok(());
    };
    Err(JobError::setup(anyhow::anyhow!(
        "{}: {why}",
        job.input.display()
    )))
}

/// What reports call inks of `image`'s depth.
fn ink_name(image: &DynamicImage) -> String {
    match image {
        DynamicImage::ImageRgba16(_) => "CMYK16".into(),
        _ => "CMYK8".into(),
    }
}

/// Blurs the inks in place as four independent channels (no alpha), or makes them their
/// unsharp mask. A constant edge's value stands for the same look as on colour (0 black, 1
/// white), so on inks it is 1 − V: white paper is no ink.
fn blur_inks(job: &BlurJob, blur: &Blur2d, image: &mut DynamicImage) {
    let on_inks = |mode: EdgeMode| match mode {
        EdgeMode::Constant(v) => EdgeMode::Constant(1.0 - v),
        other => other,
    };
    let whole = WholeImage {
        blur,
        edge_x: on_inks(job.edges.x),
        edge_y: on_inks(job.edges.y),
        linear: false,
    };
    let dims = (image.width() as usize, image.height() as usize, 4);
    let unsharp = job.sharpen.as_ref().map(|s| s.unsharp(image.color()));
    match image {
        DynamicImage::ImageRgba8(b) => ink_pass(&whole, b.as_mut(), dims, unsharp),
        DynamicImage::ImageRgba16(b) => ink_pass(&whole, b.as_mut(), dims, unsharp),
        _ => unreachable!("inks are RGBA-shaped 8- or 16-bit (codec::inks)"),
    }
}

/// `blur_inks` for one sample type.
fn ink_pass<T: banded::Sample + Element>(
    whole: &WholeImage,
    data: &mut [T],
    dims: (usize, usize, usize),
    unsharp: Option<Unsharp>,
) {
    let Some(u) = unsharp else {
        return whole.blur(data, dims, false);
    };
    let original = data.to_vec();
    whole.blur(data, dims, false);
    for (d, o) in data.iter_mut().zip(original) {
        *d = T::from_f32(u.apply(o.to_f32(), d.to_f32()));
    }
}
