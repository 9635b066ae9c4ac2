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

/// Whether the regular file at `path` is a CMYK JPEG or a one-page CMYK TIFF, from its
/// header alone: the file is then read whole for `read`.
pub fn may_be_cmyk(path: &Path) -> bool {
    may_be_cmyk_as(path, read::sniff(path).ok().flatten())
}

/// `may_be_cmyk` for a file whose head says it is in `format`.
pub fn may_be_cmyk_as(path: &Path, format: Option<ImageFormat>) -> bool {
    // A header that makes a decoder panic is the usual decode's to refuse, behind its guard.
    guard::catch(|| may_be_cmyk_unguarded(path, format)).unwrap_or(false)
}

fn may_be_cmyk_unguarded(path: &Path, format: Option<ImageFormat>) -> bool {
    match format {
        Some(ImageFormat::Jpeg) => jpeg_components(path) == Some(4),
        Some(ImageFormat::Tiff) => std::fs::File::open(path).is_ok_and(|f| {
            let quirks = tiff::Quirks::read(&mut std::io::BufReader::new(f));
            quirks.plain_inks && quirks.pages == 1
        }),
        _ => false,
    }
}

/// The component count of the JPEG at `path`, from its frame header: the segments before it
/// (EXIF, ICC, XMP: megabytes at times) are skipped, not read, so that the check holds no more
/// than a read buffer where the strip engine then streams the file in a bounded budget.
fn jpeg_components(path: &Path) -> Option<u8> {
    let mut file = std::io::BufReader::new(std::fs::File::open(path).ok()?);
    jpeg::Frame::read(&mut file).map(|frame| frame.components)
}

/// The inks of `bytes` (named `name` in errors) within `max_memory_mib` (the bytes held
/// count), where they are a CMYK JPEG or a one-page CMYK TIFF that reads cleanly; None for
/// anything else, which the usual decode takes (a damaged CMYK JPEG is recovered there, in
/// RGB). Inks over the budget are an error, not the usual decode's business. The decoders run
/// behind the guard that turns a panic into a one-line error.
pub fn read(name: &Path, bytes: &[u8], max_memory_mib: u64) -> Result<Option<InkImage>, ImageIoError> {
    let left = max_memory_mib.saturating_sub(bytes.len() as u64 >> 20);
    guard::catch(|| read_unguarded(name, bytes, left)).unwrap_or_else(|panic| {
        Err(ImageIoError::Decode {
            path: name.into(),
            detail: format!("the decoder failed ({panic})"),
        })
    })
}

fn read_unguarded(name: &Path, bytes: &[u8], max_memory_mib: u64) -> Result<Option<InkImage>, ImageIoError> {
    let limit = max_memory_mib.saturating_mul(1 << 20);
    let map = |e| image_error(name, e, max_memory_mib);
    let over = || ImageIoError::OverLimit {
        path: name.into(),
        limit_mib: max_memory_mib,
    };
    let mut notes = Vec::new();
    let (image, format, meta, jpeg, tiff_compression) = match read::guess(bytes) {
        Some(ImageFormat::Jpeg) => {
            let traits = jpeg::JpegTraits::read(bytes);
            if !super::jpeg_complete(bytes) {
                return Ok(None);
            }
            let mut scan = bytes;
            let Ok(head) = jpeg::libjpeg::header_segments(&mut scan) else {
                return Ok(None);
            };
            // The frame as libjpeg reads it, after any stray bytes between segments.
            let Some(frame) = jpeg::Frame::read(&mut Cursor::new(&head[..])).filter(|f| f.components == 4) else {
                return Ok(None);
            };
            let clean = [&head[..], scan].concat();
            let mut head = Cursor::new(head);
            let (_, mut meta) = open_decoder(name, &mut head, ImageFormat::Jpeg, max_memory_mib)?;
            // The inks (and a progressive file's coefficients), and the copy the clean
            // stream is.
            if jpeg::working_bytes(&clean, frame, 4) + clean.len() as u64 > limit {
                return Err(over());
            }
            notes.extend(foreign_profile_dropped(&mut meta, "JPEG"));
            let Ok((w, h, inks)) = jpeg::decode_inks(&clean, limit) else {
                return Ok(None);
            };
            let image = ImageBuffer::from_raw(w, h, inks).map(DynamicImage::ImageRgba8);
            (image, ImageFormat::Jpeg, meta, Some(traits), None)
        }
        Some(ImageFormat::Tiff) => {
            let mut reader = Cursor::new(bytes);
            let quirks = tiff::Quirks::read(&mut reader);
            if !quirks.plain_inks || quirks.pages != 1 {
                return Ok(None);
            }
            reader.rewind().expect("a cursor rewinds");
            let from_file = metadata::read_container(ImageFormat::Tiff, &mut reader);
            let mut meta = metadata::Metadata::read(None, from_file).map_err(map)?;
            notes.extend(foreign_profile_dropped(&mut meta, "TIFF"));
            notes.extend(quirks.not_pages.note());
            reader.rewind().expect("a cursor rewinds");
            let (w, h) = tiff_size(&mut reader).ok_or_else(|| ImageIoError::Decode {
                path: name.into(),
                detail: "the TIFF has no readable size".into(),
            })?;
            if w as u64 * h as u64 * 4 * quirks.sample_bytes() > limit {
                return Err(over());
            }
            reader.rewind().expect("a cursor rewinds");
            let Ok((w, h, inks)) = tiff::read_inks(&mut reader, limit) else {
                return Ok(None);
            };
            let image = match inks {
                super::icc::Inks::Eight(v) => ImageBuffer::from_raw(w, h, v).map(DynamicImage::ImageRgba8),
                super::icc::Inks::Sixteen(v) => ImageBuffer::from_raw(w, h, v).map(DynamicImage::ImageRgba16),
            };
            (image, ImageFormat::Tiff, meta, None, Some(quirks.compression()))
        }
        _ => return Ok(None),
    };
    let Some(mut image) = image else {
        return Ok(None);
    };
    image.apply_orientation(meta.orientation());
    notes.extend(meta.unread.iter().cloned());
    Ok(Some(InkImage {
        image,
        format,
        meta,
        jpeg,
        tiff_compression,
        notes,
    }))
}

/// A TIFF's first image's width and height, from its header.
fn tiff_size(reader: &mut Cursor<&[u8]>) -> Option<(u32, u32)> {
    ::tiff::decoder::Decoder::new(reader).ok()?.dimensions().ok()
}
