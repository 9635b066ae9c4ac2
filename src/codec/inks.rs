//! CMYK kept as CMYK: a CMYK JPEG's or TIFF's inks as four samples a pixel (cyan, magenta,
//! yellow, black; 0 is no ink), upright, with the file's metadata, for an output that holds
//! CMYK (JPEG, TIFF), as libvips keeps it. Every other output gets the inks converted to sRGB
//! through the profile (`decode`).

use super::decode::{foreign_profile_dropped, image_error, open_decoder};
use super::{guard, jpeg, metadata, read, tiff, ImageIoError};
use image::{DynamicImage, ImageBuffer, ImageFormat};
use std::io::{Cursor, Seek};
use std::path::Path;

/// A CMYK input's inks and what came with them.
pub struct InkImage {
    /// The inks in an RGBA-shaped buffer (8 or 16 bits a sample): C, M, Y, K for R, G, B, A.
    pub image: DynamicImage,
    pub format: ImageFormat,
    pub meta: metadata::Metadata,
    /// How a JPEG input was written (None for a TIFF).
    pub jpeg: Option<jpeg::JpegTraits>,
    /// A TIFF input's Compression tag (None for a JPEG).
    pub tiff_compression: Option<u16>,
    pub notes: Vec<String>,
}

/// Whether the opened `input`, whose head says it is in `format`, is a CMYK JPEG or a one-page
/// CMYK TIFF, from its header alone: the file is then read whole for `read`.
pub fn may_be_cmyk_as(input: &read::Input, format: Option<ImageFormat>) -> bool {
    // A header that makes a decoder panic is the usual decode's to refuse, behind its guard.
    guard::catch(|| may_be_cmyk_unguarded(input, format)).unwrap_or(false)
}

fn may_be_cmyk_unguarded(input: &read::Input, format: Option<ImageFormat>) -> bool {
    match format {
        // The component count from the frame header: the segments before it (EXIF, ICC, XMP:
        // megabytes at times) are skipped, not read, so that the check holds no more than a
        // read buffer where the strip engine then streams the file in a bounded budget.
        Some(ImageFormat::Jpeg) => {
            jpeg::Frame::read(&mut input.reader()).is_some_and(|frame| frame.components == 4)
        }
        Some(ImageFormat::Tiff) => {
            let quirks = tiff::Quirks::read(&mut *input.reader());
            quirks.plain_inks && quirks.pages == 1
        }
        _ => false,
    }
}

/// The inks of `bytes` (named `name` in errors) within `max_memory_mib` (the bytes held
/// count), where they are a CMYK JPEG or a one-page CMYK TIFF that reads cleanly; None for
/// anything else, which the usual decode takes (a damaged CMYK JPEG is recovered there, in
/// RGB). Inks over the budget are an error, not the usual decode's business. The decoders run
/// behind the guard that turns a panic into a one-line error.
pub fn read(
    name: &Path,
    bytes: &[u8],
    max_memory_mib: u64,
) -> Result<Option<InkImage>, ImageIoError> {
    let left = max_memory_mib.saturating_sub(bytes.len() as u64 >> 20);
    guard::catch(|| read_unguarded(name, bytes, left)).unwrap_or_else(|panic| {
        Err(ImageIoError::Decode {
            path: name.into(),
            detail: format!("the decoder failed ({panic})"),
        })
    })
}

fn read_unguarded(
    name: &Path,
    bytes: &[u8],
    max_memory_mib: u64,
) -> Result<Option<InkImage>, ImageIoError> {
    let read = match read::guess(bytes) {
        Some(ImageFormat::Jpeg) => jpeg_inks(name, bytes, max_memory_mib)?,
        Some(ImageFormat::Tiff) => tiff_inks(name, bytes, max_memory_mib)?,
        _ => None,
    };
    let Some(mut ink) = read else {
        return Ok(None);
    };
    ink.image.apply_orientation(ink.meta.orientation());
    ink.notes.extend(ink.meta.unread.iter().cloned());
    Ok(Some(ink))
}

/// Inks over the budget: an error naming the file.
fn over(name: &Path, max_memory_mib: u64) -> ImageIoError {
    ImageIoError::OverLimit {
        path: name.into(),
        limit_mib: max_memory_mib,
    }
}

/// `read`'s inks of a CMYK JPEG, as stored (not yet turned upright).
fn jpeg_inks(
    name: &Path,
    bytes: &[u8],
    max_memory_mib: u64,
) -> Result<Option<InkImage>, ImageIoError> {
    let limit = max_memory_mib.saturating_mul(1 << 20);
    let traits = jpeg::JpegTraits::read(bytes);
    if !super::jpeg_complete(bytes) {
        return Ok(None);
    }
    let mut scan = bytes;
    let Ok(head) = jpeg::libjpeg::header_segments(&mut scan) else {
        return Ok(None);
    };
    // The frame as libjpeg reads it, after any stray bytes between segments.
    let Some(frame) = jpeg::Frame::read(&mut Cursor::new(&head[..])).filter(|f| f.components == 4)
    else {
        return Ok(None);
    };
    let clean = [&head[..], scan].concat();
    let mut head = Cursor::new(head);
    let (_, mut meta) = open_decoder(name, &mut head, ImageFormat::Jpeg, max_memory_mib)?;
    // The inks (and a progressive file's coefficients), and the copy the clean stream is.
    if jpeg::working_bytes(&clean, frame, 4) + clean.len() as u64 > limit {
        return Err(over(name, max_memory_mib));
    }
    let notes = foreign_profile_dropped(&mut meta, "JPEG")
        .into_iter()
        .collect();
    let Ok((w, h, inks)) = jpeg::decode_inks(&clean, limit) else {
        return Ok(None);
    };
    Ok(ImageBuffer::from_raw(w, h, inks).map(|image| InkImage {
        image: DynamicImage::ImageRgba8(image),
        format: ImageFormat::Jpeg,
        meta,
        jpeg: Some(traits),
        tiff_compression: None,
        notes,
    }))
}

/// `read`'s inks of a one-page CMYK TIFF, as stored (not yet turned upright).
fn tiff_inks(
    name: &Path,
    bytes: &[u8],
    max_memory_mib: u64,
) -> Result<Option<InkImage>, ImageIoError> {
    let limit = max_memory_mib.saturating_mul(1 << 20);
    let mut reader = Cursor::new(bytes);
    let quirks = tiff::Quirks::read(&mut reader);
    if !quirks.plain_inks || quirks.pages != 1 {
        return Ok(None);
    }
    reader.rewind().expect("a cursor rewinds");
    let from_file = metadata::read_tiff(&mut reader);
    let map = |e| image_error(name, e, max_memory_mib);
    let mut meta = metadata::Metadata::read(None, from_file).map_err(map)?;
    let mut notes: Vec<String> = foreign_profile_dropped(&mut meta, "TIFF")
        .into_iter()
        .collect();
    notes.extend(quirks.not_pages.note());
    reader.rewind().expect("a cursor rewinds");
    let (w, h) = tiff_size(&mut reader).ok_or_else(|| ImageIoError::Decode {
        path: name.into(),
        detail: "the TIFF has no readable size".into(),
    })?;
    if w as u64 * h as u64 * 4 * quirks.sample_bytes() > limit {
        return Err(over(name, max_memory_mib));
    }
    reader.rewind().expect("a cursor rewinds");
    let Ok((w, h, inks)) = tiff::read_inks(&mut reader, limit) else {
        return Ok(None);
    };
    let image = match inks {
        super::icc::Inks::Eight(v) => ImageBuffer::from_raw(w, h, v).map(DynamicImage::ImageRgba8),
        super::icc::Inks::Sixteen(v) => {
            ImageBuffer::from_raw(w, h, v).map(DynamicImage::ImageRgba16)
        }
    };
    Ok(image.map(|image| InkImage {
        image,
        format: ImageFormat::Tiff,
        meta,
        jpeg: None,
        tiff_compression: Some(quirks.compression()),
        notes,
    }))
}

/// A TIFF's first image's width and height, from its header.
fn tiff_size(reader: &mut Cursor<&[u8]>) -> Option<(u32, u32)> {
    ::tiff::decoder::Decoder::new(reader)
        .ok()?
        .dimensions()
        .ok()
}
