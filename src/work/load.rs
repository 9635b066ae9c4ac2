//! Decoding an input into the form its path blurs: as decoded where the path takes it so,
//! else premultiplied planar f32. Non-finite float samples are cleaned first and noted.

use super::edges::{self, EdgePlan};
use super::{Keep, Loaded, Working};
use crate::codec::jpeg::{JpegTraits, Subsampling, YccPlanes};
use crate::codec::metadata::Metadata;
use crate::codec::{self, ImageIoError};
use crate::pixels;
use crate::report::{Pass, Stage};
use image::{ColorType, ImageFormat};
use std::path::Path;
use std::time::Instant;

/// How an input is decoded: within a memory budget (`--max-memory`), for a blur in linear
/// light (`--linear`), and converted from its ICC profile to sRGB (`--to-srgb`).
#[derive(Clone, Copy, Debug)]
pub struct Decoding {
    /// The memory budget, MiB.
    pub max_memory_mib: u64,
    /// Convert to linear light (`--linear`).
    pub linear: bool,
    /// Convert from the input's ICC profile to sRGB (`--to-srgb`).
    pub to_srgb: bool,
}

/// Decodes `path`, timing it into `passes`, and converts it to planar f32 unless `keep` keeps
/// it as decoded.
#[cfg(feature = "unstable-internals")]
pub fn load(
    path: &Path,
    max_memory_mib: u64,
    linear: bool,
    keep: Keep,
    plan: &EdgePlan,
    passes: &mut Vec<Pass>,
) -> Result<Loaded, ImageIoError> {
    let input = codec::read::open(path, max_memory_mib)?;
    let decoding = Decoding {
        max_memory_mib,
        linear,
        to_srgb: false,
    };
    load_with(Source::Input(&input), decoding, keep, true, plan, passes)
}

/// Where an image comes from.
#[derive(Clone, Copy)]
pub enum Source<'a> {
    /// An input opened for the job (`codec::read::open`), read through its one handle.
    Input(&'a codec::read::Input),
    /// An encoded image already in memory (stdin's content), and what errors call it.
    Memory {
        /// The name its errors carry.
        name: &'a Path,
        /// The encoded image.
        bytes: &'a [u8],
    },
}

/// `load` for any source, extended for `plan`'s edge modes, cleaning non-finite float samples
/// only where `sanitize` says (`--nan ignore` keeps them for the blur to leave out).
pub fn load_with(
    source: Source,
    decoding: Decoding,
    keep: Keep,
    sanitize: bool,
    plan: &EdgePlan,
    passes: &mut Vec<Pass>,
) -> Result<Loaded, ImageIoError> {
    let Decoding {
        max_memory_mib,
        linear,
        to_srgb,
    } = decoding;
    let t = Instant::now();
    // Planes have no edge extension: an edge mode other than clamp blurs RGB.
    let planes = match keep {
        Keep::JpegPlanes { subsampling, .. } if plan.is_none() => Some(subsampling),
        _ => None,
    };
    let read;
    let source = match (source, planes) {
        (Source::Input(input), Some(_)) => {
            read = jpeg_read(input, max_memory_mib)?;
            read.as_deref().map_or(source, |bytes| Source::Memory {
                name: &input.name,
                bytes,
            })
        }
        (source, _) => source,
    };
    if let Some(subsampling) = planes {
        if let Some(loaded) = load_planes(source, subsampling, (decoding, t), passes)? {
            return Ok(loaded);
        }
    }
    let mut decoded = match source {
        Source::Input(input) => codec::decode_input(input, max_memory_mib)?,
        Source::Memory { name, bytes } => codec::decode_bytes(name, bytes, max_memory_mib)?,
    };
    passes.push(Pass::host(Stage::Decode, "decode", t));
    let notes = cleaned(&mut decoded, sanitize, to_srgb, passes);
    let image = &mut decoded.image;
    let (color, size) = (image.color(), (image.width(), image.height()));
    let name = match source {
        Source::Input(input) => &input.name,
        Source::Memory { name, .. } => name,
    };
    let padding = extend(image, plan, max_memory_mib, name, passes)?;
    let mut loaded = decoded_loaded(decoded, (color, size), (notes, padding), linear);
    loaded.adapt(keep, linear, passes);
    Ok(loaded)
}

/// A decoded image (`color`, `width`×`height` before an edge mode's `padding`) as loaded, with
/// what came with it, in its decoded form.
fn decoded_loaded(
    decoded: codec::DecodedFile,
    (color, (width, height)): (ColorType, (u32, u32)),
    (notes, padding): (Vec<String>, Option<edges::Padding>),
    linear: bool,
) -> Loaded {
    Loaded {
        working: Working::Decoded(decoded.image),
        layout: pixels::Layout {
            color,
            linear: linear && pixels::is_integer(color),
        },
        meta: decoded.meta,
        format: decoded.format,
        color,
        width,
        height,
        notes,
        jpeg: decoded.jpeg,
        tiff_compression: decoded.tiff_compression,
        webp_lossless: decoded.webp_lossless,
        gray_float: decoded.gray_float,
        padding,
        mix: None,
    }
}

/// `decoded` with its non-finite float samples cleaned where `sanitize` says, converted from
/// its ICC profile to sRGB where `to_srgb` does (timed); returns what the report should say:
/// the cleaning, the metadata left unread, the decoder's notes, the conversion's.
fn cleaned(
    decoded: &mut codec::DecodedFile,
    sanitize: bool,
    to_srgb: bool,
    passes: &mut Vec<Pass>,
) -> Vec<String> {
    let mut notes: Vec<String> = sanitize
        .then(|| pixels::sanitize_image(&mut decoded.image))
        .flatten()
        .into_iter()
        .collect();
    notes.append(&mut decoded.meta.unread);
    notes.append(&mut decoded.notes);
    if to_srgb {
        let t = Instant::now();
        let tagged = decoded.meta.icc.is_some();
        notes.extend(codec::icc::to_srgb(
            &mut decoded.image,
            &mut decoded.meta.icc,
        ));
        if tagged && decoded.meta.icc.is_none() {
            decoded.meta.exif_in_srgb();
            passes.push(Pass::host(Stage::Decode, "to sRGB", t));
        }
    }
    notes
}

/// `input`'s bytes where it is a JPEG file, which the planes may take: read once, for them and
/// for the decode should they not take it; None for any other input.
fn jpeg_read(
    input: &codec::read::Input,
    max_memory_mib: u64,
) -> Result<Option<std::borrow::Cow<'_, [u8]>>, ImageIoError> {
    match input.sniffed == Some(ImageFormat::Jpeg) {
        true => input.whole(max_memory_mib).map(Some),
        false => Ok(None),
    }
}

/// A colour JPEG whose layout `subsampling` writes, loaded as its YCbCr planes, or None where
/// the source is not one (`codec::decode_jpeg_planes`) and is to be decoded as pixels, as one
/// that `--to-srgb` converts is (colours are converted as RGB samples). `t`: when the load
/// began, its file's read included.
fn load_planes(
    source: Source,
    subsampling: Subsampling,
    (decoding, t): (Decoding, Instant),
    passes: &mut Vec<Pass>,
) -> Result<Option<Loaded>, ImageIoError> {
    let max_memory_mib = decoding.max_memory_mib;
    let (name, bytes) = match source {
        Source::Memory { name, bytes } => (name, bytes),
        // Not a JPEG: `load_with` reads a JPEG file into memory for the planes.
        Source::Input(_) => return Ok(None),
    };
    let traits = JpegTraits::read(bytes);
    let Some(chroma) = traits.chroma else {
        return Ok(None);
    };
    if subsampling != Subsampling::Same && subsampling != Subsampling::Fixed(chroma) {
        return Ok(None);
    }
    let Some((planes, meta)) = codec::decode_jpeg_planes(name, bytes, chroma, max_memory_mib)?
    else {
        return Ok(None);
    };
    if decoding.to_srgb && meta.icc.as_deref().is_some_and(codec::icc::converts) {
        return Ok(None);
    }
    passes.push(Pass::host(Stage::Decode, "decode to YCbCr planes", t));
    Ok(Some(planes_loaded(planes, meta, traits)))
}

/// A JPEG decoded as its YCbCr planes, as the blur takes it (RGB 8-bit once converted back).
fn planes_loaded(planes: YccPlanes, mut meta: Metadata, traits: JpegTraits) -> Loaded {
    let notes = std::mem::take(&mut meta.unread);
    let color = ColorType::Rgb8;
    Loaded {
        layout: pixels::Layout {
            color,
            linear: false,
        },
        meta,
        format: ImageFormat::Jpeg,
        color,
        width: planes.width,
        height: planes.height,
        notes,
        jpeg: Some(traits),
        tiff_compression: None,
        webp_lossless: false,
        gray_float: false,
        padding: None,
        mix: None,
        working: Working::Ycc(planes),
    }
}

/// Extends `image` for `plan`'s edge modes (nothing for clamp), refusing an extension over
/// the memory limit; returns where the image lies in it.
fn extend(
    image: &mut image::DynamicImage,
    plan: &EdgePlan,
    max_memory_mib: u64,
    name: &Path,
    passes: &mut Vec<Pass>,
) -> Result<Option<edges::Padding>, ImageIoError> {
    if plan.is_none() {
        return Ok(None);
    }
    let (w, h) = plan.padded_size(image.width(), image.height());
    let bytes = w * h * image.color().bytes_per_pixel() as u64;
    if bytes > max_memory_mib << 20 || w > u32::MAX as u64 || h > u32::MAX as u64 {
        return Err(ImageIoError::EdgesOverLimit {
            path: name.into(),
            detail: format!(
                "--edge {} extends the image to {w}x{h} ({} MiB), over the memory limit of {max_memory_mib} MiB",
                plan.edges.describe(),
                bytes.div_ceil(1 << 20)
            ),
        });
    }
    let t = Instant::now();
    let (padded, padding) = edges::pad(image, plan);
    *image = padded;
    passes.push(Pass::host(Stage::Decode, "extend edges", t));
    Ok(Some(padding))
}

impl Loaded {
    /// Converts a decoded image that `keep` does not keep to planar f32, as `load` would
    /// have for that path. A batch whose workers keep different images decodes every image
    /// as decoded, and each worker adapts the ones it takes.
    pub fn adapt(&mut self, keep: Keep, linear: bool, passes: &mut Vec<Pass>) {
        let Working::Decoded(image) = &self.working else {
            return;
        };
        if keep.keeps(image.color()) {
            return;
        }
        let t = Instant::now();
        let (planar, layout) = pixels::to_planar(image, linear);
        self.working = Working::Planar(planar);
        self.layout = layout;
        passes.push(Pass::host(Stage::Decode, "to planar f32", t));
    }
}
