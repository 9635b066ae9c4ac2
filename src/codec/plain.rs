//! The formats the `image` crate reads and writes as they are (GIF, PNM, TGA, QOI, OpenEXR,
//! Radiance HDR, DDS, ...), and BMP, whose embedded ICC profile gblur reads itself: their
//! `Codec`s, and the `image` crate's encoder that other codecs fall back on.

use super::format::{Codec, FileToDecode, ImageToEncode};
use super::metadata::{self, FromFile};
use super::source::Seekable;
use super::{decode, heif, jxl, DecodedFile, ImageIoError};
use image::codecs::png::{FilterType, PngEncoder};
use image::codecs::webp::WebPEncoder;
use image::{ColorType, DynamicImage, ImageEncoder, ImageError, ImageFormat};
use std::io::Cursor;
use std::sync::{Mutex, OnceLock, PoisonError};

/// A format the `image` crate reads (and, for some, writes) with nothing gblur adds.
pub struct Plain(ImageFormat);

impl Codec for Plain {
    fn format(&self) -> ImageFormat {
        self.0
    }

    fn decode(&self, file: FileToDecode<'_>) -> Result<DecodedFile, ImageIoError> {
        decode::with_image_crate(self.0, file)
    }

    fn encode(&self, image: ImageToEncode<'_>) -> Result<(Vec<u8>, Option<String>), String> {
        match self.writable().is_empty() {
            true => Err(format!("gblur does not write {}", self.name())),
            false => encode(self.0, image),
        }
    }

    fn writable(&self) -> &'static [ColorType] {
        use ColorType::*;
        match self.0 {
            ImageFormat::Tga => &[L8, La8, Rgb8, Rgba8],
            ImageFormat::Gif | ImageFormat::Qoi => &[Rgb8, Rgba8],
            ImageFormat::OpenExr => &[Rgb32F, Rgba32F],
            ImageFormat::Hdr => &[Rgb32F],
            _ => &[],
        }
    }
}

/// The codec of a format no folder of its own handles.
pub fn of(format: ImageFormat) -> &'static dyn Codec {
    static PLAIN: OnceLock<Vec<Plain>> = OnceLock::new();
    let plain = PLAIN.get_or_init(|| {
        // HEIF and JPEG XL are carried under two of the crate's formats (`heif::HEIF`,
        // `jxl::JXL`), whose codecs are their own.
        let own = [heif::HEIF, jxl::JXL];
        ImageFormat::all()
            .filter(|f| !own.contains(f))
            .map(Plain)
            .collect()
    });
    if let Some(codec) = plain.iter().find(|p| p.0 == format) {
        return codec;
    }
    // A format a later `image` crate adds and does not list in `all`: read as the crate reads
    // it, each such format's codec made once.
    static LATER: Mutex<Vec<&'static Plain>> = Mutex::new(Vec::new());
    let mut later = LATER.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(codec) = later.iter().find(|p| p.0 == format) {
        return *codec;
    }
    let codec: &'static Plain = Box::leak(Box::new(Plain(format)));
    later.push(codec);
    codec
}

/// BMP: the `image` crate's decoder and encoder, and the ICC profile a BITMAPV5HEADER embeds,
/// which the crate's decoder does not read.
pub struct Bmp;

impl Codec for Bmp {
    fn format(&self) -> ImageFormat {
        ImageFormat::Bmp
    }

    fn decode(&self, file: FileToDecode<'_>) -> Result<DecodedFile, ImageIoError> {
        decode::with_image_crate(ImageFormat::Bmp, file)
    }

    fn encode(&self, image: ImageToEncode<'_>) -> Result<(Vec<u8>, Option<String>), String> {
        encode(ImageFormat::Bmp, image)
    }

    fn writable(&self) -> &'static [ColorType] {
        use ColorType::*;
        &[L8, La8, Rgb8, Rgba8]
    }

    fn read_metadata(&self, reader: &mut dyn Seekable) -> FromFile {
        metadata::read_bmp(reader)
    }
}

/// The `image` crate's encoder for `format`, with the ICC profile where the format carries it
/// (PNG and lossless WebP here; every other format's note says it is not written).
pub(super) fn encode(
    format: ImageFormat,
    image: ImageToEncode<'_>,
) -> Result<(Vec<u8>, Option<String>), String> {
    let mut out = Cursor::new(Vec::new());
    let mut note = None;
    fn with_icc<E: ImageEncoder>(
        mut e: E,
        icc: Option<&[u8]>,
        note: &mut Option<String>,
        img: &DynamicImage,
    ) -> Result<(), ImageError> {
        if let Some(p) = icc {
            if e.set_icc_profile(p.to_vec()).is_err() {
                *note = Some(
                    "the output format cannot carry the input's ICC profile; it was not written"
                        .into(),
                );
            }
        }
        img.write_with_encoder(e)
    }
    let (icc, pixels) = (image.icc, image.image);
    match format {
        ImageFormat::Png => with_icc(
            PngEncoder::new_with_quality(
                &mut out,
                image.options.png_compression,
                FilterType::Adaptive,
            ),
            icc,
            &mut note,
            pixels,
        ),
        ImageFormat::WebP => with_icc(WebPEncoder::new_lossless(&mut out), icc, &mut note, pixels),
        other => {
            if icc.is_some() {
                note = Some(format!(
                    "{other:?} cannot carry the input's ICC profile; it was not written"
                ));
            }
            pixels.write_to(&mut out, other)
        }
    }
    .map_err(|e| super::one_line(&e.to_string()))?;
    Ok((out.into_inner(), note))
}
