//! Turning a blurred image back into samples of the colour type its output format holds,
//! encoding it, and writing it through a temporary file that is renamed over the output.

use super::{edges, Loaded, Working};
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
    let (width, height) = (blurred.width, blurred.height);
    let image = match blurred.working {
        Working::Planar(mut planar) => {
            let t = Instant::now();
            if let Some(padding) = blurred.padding {
                edges::crop_planar(&mut planar, padding, width, height);
            }
            pixels::finish_planar(&mut planar, layout);
            let image = pixels::from_planar(&planar, layout.color, out_color);
            passes.push(Pass::host(Stage::Encode, "from planar", t));
            image
        }
        Working::Decoded(mut image) => {
            if let Some(padding) = blurred.padding {
                let t = Instant::now();
                image = edges::crop_image(image, padding, width, height);
                passes.push(Pass::host(Stage::Encode, "crop edges", t));
            }
            if image.color() == out_color {
                image
            } else {
                let t = Instant::now();
                let image = pixels::convert(image, out_color);
                passes.push(Pass::host(Stage::Encode, "convert", t));
                image
            }
        }
    };
    let t = Instant::now();
    let icc = blurred.icc.as_deref();
    let stdout = codec::is_stdio(output.path);
    let name = if stdout {
        Path::new("stdout")
    } else {
        output.path
    };
    let (bytes, icc_note) = codec::encode(&image, output.format, icc, output.encode, name)?;
    notes.extend(icc_note);
    passes.push(Pass::host(Stage::Encode, "encode", t));
    let t = Instant::now();
    if stdout {
        codec::write_stdout(&bytes)?;
    } else {
        codec::write_atomic(output.path, &bytes)?;
    }
    passes.push(Pass::host(Stage::Encode, "write", t));
    Ok(out_color)
}
