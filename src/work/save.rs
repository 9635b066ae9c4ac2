//! Turning a blurred image back into samples of the colour type its output format holds,
//! encoding it, and writing it through a temporary file that is renamed over the output.

use super::{edges, Loaded, Working};
use crate::codec::metadata::{self, KeepMetadata};
use crate::codec::{self, jpeg, EncodeOptions, ImageIoError};
use crate::pixels;
use crate::report::{Pass, Stage};
use image::{ColorType, ImageFormat};
use std::path::Path;
use std::time::Instant;

/// Where and how an image is written; a `path` of `-` is stdout, written in one piece once
/// the image is fully encoded.
#[derive(Clone, Copy, Debug)]
pub struct Output<'a> {
    /// Where.
    pub path: &'a Path,
    /// The format.
    pub format: ImageFormat,
    /// How it is encoded.
    pub encode: EncodeOptions,
    /// Which of the input's ICC profile, EXIF and XMP are written.
    pub metadata: KeepMetadata,
    /// What the final rename may replace.
    pub replace: codec::Replace<'a>,
    /// The main command's `--max-memory`: an encoder that holds a copy of the image of its
    /// own (libheif's) must fit beside what the process holds. None in a batch, whose budget
    /// bounds each image's decode and whose images in flight are bounded by their count.
    pub max_memory_mib: Option<u64>,
}

/// Converts `blurred` back, encodes it and writes it atomically, adding what the format could
/// not hold to `notes`; returns the name of the colour type written (`codec::color_name`).
pub fn save(
    mut blurred: Loaded,
    output: Output,
    passes: &mut Vec<Pass>,
    notes: &mut Vec<String>,
) -> Result<String, ImageIoError> {
    let stdout = codec::is_stdio(output.path);
    let name = if stdout {
        Path::new("stdout")
    } else {
        output.path
    };
    let (jpeg, quality_note) = output.encode.jpeg.resolve(blurred.jpeg.as_ref());
    let (tiff, tiff_note) = output.encode.tiff.resolve(blurred.tiff_compression);
    if output.format == ImageFormat::Tiff {
        notes.extend(tiff_note);
    }
    let output = Output {
        encode: EncodeOptions {
            tiff,
            webp_lossless_input: blurred.webp_lossless,
            ..output.encode
        },
        ..output
    };
    if output.format == ImageFormat::Jpeg {
        notes.extend(quality_note);
    }
    let meta = std::mem::take(&mut blurred.meta).select(output.metadata);
    let icc = meta.icc.as_deref();
    let size = (blurred.width, blurred.height);
    let (bytes, out_color) = match blurred.working {
        Working::Ycc(planes) if output.format == ImageFormat::Jpeg => {
            let t = Instant::now();
            let bytes = jpeg::encode_planes(&planes, jpeg.quality, icc).map_err(|detail| {
                ImageIoError::Encode {
                    path: name.into(),
                    format: "Jpeg".into(),
                    detail,
                }
            })?;
            passes.push(Pass::host(Stage::Encode, "encode from YCbCr planes", t));
            (bytes, codec::color_name(ColorType::Rgb8, false))
        }
        working => {
            let loaded = Loaded { working, ..blurred };
            encode_samples(loaded, output, (&meta, jpeg), passes, notes)?
        }
    };
    // EXIF and XMP go into the encoded file as a pass of their own, so the report shows what
    // they cost.
    let bytes = match meta.has_blobs() {
        true => with_metadata(bytes, (&meta, size), output.format, name, (passes, notes))?,
        false => bytes,
    };
    let t = Instant::now();
    codec::write_output(output.path, &bytes, output.replace)?;
    passes.push(Pass::host(Stage::Encode, "write", t));
    Ok(out_color)
}

/// Whether libheif's encoder for the output `path` can hold `image` beside what the process
/// holds within `max_memory_mib`; an error naming the least budget that would otherwise.
fn heif_fits(
    image: &image::DynamicImage,
    path: &Path,
    max_memory_mib: u64,
    name: &Path,
) -> Result<(), ImageIoError> {
    let coding = codec::heif::Coding::for_path(path);
    let pixels = image.width() as u64 * image.height() as u64;
    let deep = image.color().bytes_per_pixel() > image.color().channel_count();
    let needs = coding.encoder_bytes(pixels, deep);
    if needs <= crate::memory::room_bytes(max_memory_mib) {
        return Ok(());
    }
    let resident = crate::memory::resident_bytes();
    Err(ImageIoError::Encode {
        path: name.into(),
        format: coding.name().into(),
        detail: format!(
            "its encoder holds about {} MiB for {:.1} MP beside the {} MiB the process holds, over --max-memory {}: this job needs --max-memory {} or more",
            needs.div_ceil(1 << 20),
            pixels as f64 / 1e6,
            resident >> 20,
            max_memory_mib,
            crate::memory::least_budget_mib(resident + needs),
        ),
    })
}

/// A blurred image held as decoded, cropped out of an edge mode's extension (`padding`) to
/// `width`×`height`, then converted to `out_color` (dithered where `dither`) where it is not
/// that already.
fn decoded_to(
    mut image: image::DynamicImage,
    padding: Option<edges::Padding>,
    (width, height): (u32, u32),
    (out_color, dither): (image::ColorType, bool),
    passes: &mut Vec<Pass>,
) -> pixels::Converted {
    if let Some(padding) = padding {
        let t = Instant::now();
        image = edges::crop_image(image, padding, width, height);
        passes.push(Pass::host(Stage::Encode, "crop edges", t));
    }
    if image.color() == out_color {
        return pixels::Converted {
            image,
            clipped: 0,
            dithered: false,
        };
    }
    let t = Instant::now();
    let converted = pixels::convert_with(image, out_color, dither);
    passes.push(Pass::host(Stage::Encode, "convert", t));
    converted
}

/// `bytes` (`format`, named `name` in errors) with `meta`'s EXIF and XMP for an image of
/// `size` embedded, timed; what could not be kept is noted.
fn with_metadata(
    bytes: Vec<u8>,
    (meta, size): (&metadata::Metadata, (u32, u32)),
    format: ImageFormat,
    name: &Path,
    (passes, notes): (&mut Vec<Pass>, &mut Vec<String>),
) -> Result<Vec<u8>, ImageIoError> {
    let t = Instant::now();
    let (bytes, lost) = metadata::embed(bytes, format, meta, size, name)?;
    notes.extend(lost);
    passes.push(Pass::host(Stage::Encode, "metadata", t));
    Ok(bytes)
}

/// `save`'s encode of an image held as samples: converted to what `output`'s format holds,
/// checked against the budget where it is HEIF, encoded with `meta`'s profile (and its EXIF
/// and XMP where AVIF's encoder writes them) and `jpeg`'s settings; returns the bytes and the
/// colour written.
fn encode_samples(
    loaded: Loaded,
    output: Output,
    (meta, jpeg): (&metadata::Metadata, jpeg::JpegSettings),
    passes: &mut Vec<Pass>,
    notes: &mut Vec<String>,
) -> Result<(Vec<u8>, String), ImageIoError> {
    let name = match codec::is_stdio(output.path) {
        true => Path::new("stdout"),
        false => output.path,
    };
    let size = (loaded.width, loaded.height);
    let gray_float = loaded.gray_float && codec::of(output.format).holds_gray_float();
    let image = to_samples(loaded, output, passes, notes);
    if let Some(budget) = output
        .max_memory_mib
        .filter(|_| output.format == codec::heif::HEIF)
    {
        heif_fits(&image, output.path, budget, name)?;
    }
    let t = Instant::now();
    let samples = (&image, gray_float);
    // AVIF's encoder writes the EXIF and XMP; every other format's go in after.
    let own = codec::of(output.format).encoder_writes_metadata();
    let adjusted = own.then(|| metadata::ForOutput::of(meta, size));
    let blobs = adjusted.as_ref().map(|a| a.blobs()).unwrap_or_default();
    let icc = meta.icc.as_deref();
    let (bytes, icc_note) = codec::encode(
        samples,
        output.format,
        (icc, blobs),
        (output.encode, jpeg),
        name,
    )?;
    notes.extend(icc_note);
    passes.push(Pass::host(Stage::Encode, "encode", t));
    Ok((bytes, codec::color_name(image.color(), gray_float)))
}

/// The blurred image as samples of the colour type `output`'s format holds: cropped out of
/// an edge mode's extension, converted from planar f32 or to fewer bits (dithered if asked),
/// gray float as gray where the format holds gray of that depth, readied for Radiance HDR.
pub fn to_samples(
    blurred: Loaded,
    output: Output,
    passes: &mut Vec<Pass>,
    notes: &mut Vec<String>,
) -> image::DynamicImage {
    let (layout, gray_float) = (blurred.layout, blurred.gray_float);
    let (out_color, lost) = match codec::heif::deep_heic(layout.color, output.format, output.path) {
        Some(deep) => (
            deep,
            Some(
                "HEIC holds 10 bits a sample here: the 16-bit samples were rounded to 10"
                    .to_string(),
            ),
        ),
        None => codec::output_color(layout.color, gray_float, output.format),
    };
    notes.extend(lost);
    let (width, height) = (blurred.width, blurred.height);
    let dither = output.encode.dither;
    let converted = match blurred.working {
        Working::Planar(mut planar) => {
            let t = Instant::now();
            if let Some(padding) = blurred.padding {
                edges::crop_planar(&mut planar, padding, width, height);
            }
            pixels::finish_planar(&mut planar, layout);
            let converted = pixels::from_planar_with(&planar, layout.color, out_color, dither);
            passes.push(Pass::host(Stage::Encode, "from planar", t));
            converted
        }
        Working::Ycc(planes) => {
            let t = Instant::now();
            let converted = pixels::convert_with(planes.to_rgb().into(), out_color, dither);
            passes.push(Pass::host(Stage::Encode, "YCbCr planes to RGB", t));
            converted
        }
        Working::Decoded(image) => {
            let size = (width, height);
            decoded_to(image, blurred.padding, size, (out_color, dither), passes)
        }
    };
    notes.extend(conversion_notes(&converted, dither, out_color));
    let mut image = converted.image;
    if gray_float {
        match codec::gray_of(&image, output.format) {
            Some(gray) => image = gray,
            None if !codec::of(output.format).holds_gray_float() => notes.push(format!(
                "the input is gray float; {:?} output holds no gray of its depth, so it was written as {:?} with three equal channels",
                output.format,
                image.color()
            )),
            None => {}
        }
    }
    if output.format == ImageFormat::Hdr {
        notes.push(for_rgbe(&mut image));
    }
    image
}

/// What the conversion to `out` clipped, and what `--dither` did.
fn conversion_notes(c: &pixels::Converted, dither: bool, out: ColorType) -> Vec<String> {
    let mut notes = Vec::new();
    if c.clipped > 0 {
        notes.push(format!(
            "{} float samples outside [0, 1] were clipped to the range of {out:?}",
            c.clipped
        ));
    }
    if c.dithered {
        notes.push(format!(
            "dithered to {} bits (TPDF noise of ±1 step before rounding)",
            pixels::sample_bits(out)
        ));
    } else if dither {
        notes.push(format!(
            "--dither had nothing to do: {out:?} holds as many bits per sample as the input"
        ));
    }
    notes
}

/// Readies `image` for Radiance HDR (`pixels::for_rgbe`), and the note that says what that
/// format keeps.
fn for_rgbe(image: &mut image::DynamicImage) -> String {
    let negative = pixels::for_rgbe(image);
    let sign = if negative > 0 {
        format!("; it holds no negative values: {negative} negative samples were written as 0")
    } else {
        String::new()
    };
    format!(
        "Radiance HDR keeps an 8-bit mantissa per sample under one exponent per pixel (2 to 3 significant digits){sign}"
    )
}
