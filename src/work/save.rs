//! Turning a blurred image back into samples of the colour type its output format holds,
//! encoding it, and writing it through a temporary file that is renamed over the output.

use super::{Loaded, Working};
use crate::codec::metadata::{self, KeepMetadata};
use crate::codec::{self, EncodeOptions, ImageIoError};
use crate::pixels;
use crate::report::{Pass, Stage};
use image::{ColorType, ImageFormat};
use std::path::Path;
use std::time::Instant;

/// Where and how an image is written; a `path` of `-` is stdout, written in one piece once
/// the image is fully encoded.
#[derive(Clone, Copy, Debug)]
pub struct Output<'a> {
    pub path: &'a Path,
    pub format: ImageFormat,
    pub encode: EncodeOptions,
    /// Which of the input's ICC profile, EXIF and XMP are written.
    pub metadata: KeepMetadata,
}

/// Converts `blurred` back, encodes it and writes it atomically, adding what the format could
/// not hold to `notes`; returns the colour type written.
pub fn save(
    blurred: Loaded,
    output: Output,
    passes: &mut Vec<Pass>,
    notes: &mut Vec<String>,
) -> Result<ColorType, ImageIoError> {
    let layout = blurred.layout;
    let (out_color, lost) = codec::output_color(layout.color, output.format);
    notes.extend(lost);
    let image = match blurred.working {
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
    let meta = blurred.meta.select(output.metadata);
    let stdout = codec::is_stdio(output.path);
    let name = if stdout {
        Path::new("stdout")
    } else {
        output.path
    };
    let icc = meta.icc.as_deref();
    let (bytes, icc_note) = codec::encode(&image, output.format, icc, output.encode, name)?;
    notes.extend(icc_note);
    passes.push(Pass::host(Stage::Encode, "encode", t));
    // EXIF and XMP go into the encoded file as a pass of their own, so the report shows what
    // they cost.
    let bytes = if meta.exif.is_some() || meta.xmp.is_some() {
        let t = Instant::now();
        let size = (image.width(), image.height());
        let (bytes, lost) = metadata::embed(bytes, output.format, &meta, size, name)?;
        notes.extend(lost);
        passes.push(Pass::host(Stage::Encode, "metadata", t));
        bytes
    } else {
        bytes
    };
    let t = Instant::now();
    if stdout {
        codec::write_stdout(&bytes)?;
    } else {
        codec::write_atomic(output.path, &bytes)?;
    }
    passes.push(Pass::host(Stage::Encode, "write", t));
    Ok(out_color)
}
