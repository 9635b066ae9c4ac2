//! JPEG's `Codec`: the whole file through libjpeg (gray, RGB, CMYK inks turned to RGB, a
//! damaged file recovered), a scanline at a time for the strip engine, encoded in restart
//! stripes whole or as rows arrive, with its IPTC records read and its EXIF, XMP and IPTC
//! written after the JFIF segment.

use super::{rows_in, rows_out, JpegColor};
use crate::codec::decode::{
    cmyk_by_formula_note, cmyk_profile, foreign_profile_dropped, image_error, open_decoder,
    through_profile,
};
use crate::codec::format::{Codec, FileToDecode, ImageToEncode, InksToEncode};
use crate::codec::metadata::{self, Blobs, FromFile};
use crate::codec::read::Input;
use crate::codec::rows::{RowReader, RowsOutCost, RowsTarget, SampleBatches};
use crate::codec::source::Seekable;
use crate::codec::{icc, jpeg, one_line, DecodedFile, ImageIoError};
use image::{ColorType, DynamicImage, ImageFormat};
use std::io::Cursor;
use std::path::Path;
use std::time::Duration;

/// The most rows of a JPEG stripe (16 MCU rows of 16), and what a stripe costs in the
/// encoder: its rows waiting, and its working copies and output (measured: 1.3 times its
/// rows' bytes for one stripe of an 8000-pixel RGB row).
const STRIPE_ROWS: u64 = 256;
const STRIPE_COST: u64 = 2;

/// JPEG, through libjpeg.
pub struct Jpeg;

impl Codec for Jpeg {
    fn format(&self) -> ImageFormat {
        ImageFormat::Jpeg
    }

    fn decodes_bytes(&self) -> bool {
        true
    }

    fn decode(&self, file: FileToDecode<'_>) -> Result<DecodedFile, ImageIoError> {
        let bytes = file
            .bytes
            .expect("a codec that decodes bytes is handed them");
        check_end(file.path, bytes)?;
        let mut notes = Vec::new();
        let (image, meta) = decode_whole(file.path, bytes, file.max_memory_mib, &mut notes)?;
        Ok(DecodedFile {
            jpeg: Some(jpeg::JpegTraits::read(bytes)),
            notes,
            ..DecodedFile::new(image, ImageFormat::Jpeg, meta)
        })
    }

    fn reads_rows(&self) -> bool {
        true
    }

    fn open_rows(
        &self,
        input: &Input,
        _max_memory_mib: u64,
    ) -> Result<Result<Box<dyn RowReader>, String>, ImageIoError> {
        Ok(rows_in::open(input)?.map(|rows| Box::new(rows) as Box<dyn RowReader>))
    }

    fn writable(&self) -> &'static [ColorType] {
        &[ColorType::L8, ColorType::Rgb8]
    }

    fn encode(&self, e: ImageToEncode<'_>) -> Result<(Vec<u8>, Option<String>), String> {
        // JPEG holds 8-bit gray or colour: what the output's colour choice leaves as anything
        // else (never, from the command) is brought to one of them here.
        let converted;
        let (bytes, color) = match e.image {
            DynamicImage::ImageLuma8(g) => (g.as_raw(), JpegColor::Gray),
            DynamicImage::ImageRgb8(rgb) => (rgb.as_raw(), JpegColor::Rgb),
            other if !other.color().has_color() => {
                converted = other.to_luma8().into_raw();
                (&converted, JpegColor::Gray)
            }
            other => {
                converted = other.to_rgb8().into_raw();
                (&converted, JpegColor::Rgb)
            }
        };
        let dims = (e.image.width(), e.image.height());
        jpeg::encode(bytes, dims, color, e.jpeg, e.icc).map(|bytes| (bytes, None))
    }

    fn writes_rows(&self) -> bool {
        true
    }

    fn write_rows(
        &self,
        target: RowsTarget<'_>,
        rows: SampleBatches,
    ) -> Result<(Duration, Vec<String>), ImageIoError> {
        let color = match target.color.channel_count() {
            1 => JpegColor::Gray,
            _ => JpegColor::Rgb,
        };
        let header = rows_out::JpegHeader {
            size: target.size,
            color,
            settings: target.settings.jpeg,
            meta: target.meta,
            stripes_at_once: target.settings.jpeg_stripes,
        };
        let (path, replace) = (target.path, target.replace);
        match rows {
            SampleBatches::U8(rows) => rows_out::write(path, replace, header, rows),
            SampleBatches::U16(rows) => rows_out::write(path, replace, header, rows),
        }
    }

    fn rows_out_bytes(&self, cost: &RowsOutCost) -> u64 {
        cost.jpeg_stripes * STRIPE_COST * STRIPE_ROWS * cost.row
    }

    fn read_metadata(&self, reader: &mut dyn Seekable) -> FromFile {
        metadata::read_jpeg(reader)
    }

    fn holds_metadata(&self) -> bool {
        true
    }

    fn holds_iptc(&self) -> bool {
        true
    }

    fn write_metadata(
        &self,
        bytes: Vec<u8>,
        blobs: Blobs<'_>,
        notes: &mut Vec<String>,
    ) -> Result<Vec<u8>, String> {
        metadata::into_jpeg(bytes, blobs, notes)
    }

    fn holds_inks(&self) -> bool {
        true
    }

    /// 8-bit inks (16-bit ones reduced, as any image is, dithered with `--dither`) at full
    /// resolution, stored inverted as Photoshop writes CMYK JPEGs and every reader takes them,
    /// with the Adobe marker that says so where the input had one (a TIFF input: always).
    fn encode_inks(&self, e: InksToEncode<'_>, notes: &mut Vec<String>) -> Result<Vec<u8>, String> {
        let size = (e.inks.width(), e.inks.height());
        let eight = match e.inks {
            DynamicImage::ImageRgba8(b) => b.into_raw(),
            deep => {
                let dither = e.options.dither;
                notes.push(format!(
                    "JPEG holds 8-bit inks: the 16-bit inks were reduced to 8{}",
                    if dither { ", dithered" } else { "" }
                ));
                // As any image is reduced: the four samples alike (black in alpha's place).
                crate::pixels::convert_with(deep, ColorType::Rgba8, dither)
                    .image
                    .into_bytes()
            }
        };
        let (settings, note) = e.options.jpeg.resolve(e.jpeg);
        notes.extend(note);
        let adobe_marker = e.jpeg.is_none_or(|t| t.adobe.is_some());
        let stored: Vec<u8> = eight.into_iter().map(|v| 255 - v).collect();
        let settings = jpeg::JpegSettings {
            chroma: jpeg::Chroma::S444,
            ..settings
        };
        let color = JpegColor::Cmyk { adobe_marker };
        jpeg::encode(&stored, size, color, settings, e.icc)
    }
}

impl RowReader for rows_in::JpegRows {
    crate::codec::rows::row_reader_basics!(ImageFormat::Jpeg);
    /// A progressive file's coefficients (2 bytes each, per component at its own resolution),
    /// or a baseline file's MCU rows and upsampling buffers with libjpeg's pools beside them
    /// (1 MiB more measured on a 16000-pixel-wide photo).
    fn held_bytes(&self) -> u64 {
        let (width, height) = (self.header.width as f64, self.header.height as f64);
        if self.progressive {
            let chroma = self.traits.chroma.map_or(0.0, |c| {
                let (h, v) = c.factors();
                2.0 / (h * v) as f64
            });
            let components = match self.header.color.channel_count() {
                1 => 1.0,
                _ => 1.0 + chroma,
            };
            return (width * height * components * 2.0) as u64;
        }
        let row = self.header.row_samples() as u64;
        3 * 16 * row + (1 << 20)
    }
    fn jpeg_traits(&self) -> Option<jpeg::JpegTraits> {
        Some(self.traits)
    }
}

/// The JPEG decoders fill a truncated file's missing rows with gray and report success; gblur
/// refuses it like every other truncated file (the fault drills check it).
pub(in crate::codec) fn check_end(name: &Path, bytes: &[u8]) -> Result<(), ImageIoError> {
    match crate::codec::jpeg_complete(bytes) {
        true => Ok(()),
        false => Err(ImageIoError::Decode {
            path: name.into(),
            detail: "the file is truncated (no JPEG end-of-image marker)".into(),
        }),
    }
}

/// A JPEG's pixels and metadata, all through libjpeg: 8-bit gray, YCbCr and RGB files as gray or
/// RGB, CMYK and YCCK files as inks turned to RGB through their ICC profile or by formula,
/// each with every warning of damaged data an error; a file found damaged goes to libjpeg's
/// tolerant mode, whose warnings say whether it is (then it recovers what it can, as
/// libjpeg-based tools do, and a note says so) or was only beyond the strict read. Stray bytes
/// between header segments, which libjpeg skips, are left out first.
fn decode_whole(
    path: &Path,
    bytes: &[u8],
    max_memory_mib: u64,
    notes: &mut Vec<String>,
) -> Result<(DynamicImage, metadata::Metadata), ImageIoError> {
    let mut scan = bytes;
    let head = jpeg::libjpeg::header_segments(&mut scan)
        .map_err(|e| image_error(path, e, max_memory_mib))?;
    let clean: std::borrow::Cow<[u8]> = match head.len() + scan.len() == bytes.len() {
        true => bytes.into(),
        false => [&head[..], scan].concat().into(),
    };
    // The frame as libjpeg reads it (after stray bytes), which says CMYK or not.
    let frame = jpeg::Frame::read(&mut Cursor::new(&head[..]));
    let mut head = Cursor::new(head);
    let ((w, h), mut meta) = {
        let (decoder, meta) = open_decoder(path, &mut head, ImageFormat::Jpeg, max_memory_mib)?;
        (decoder.dimensions(), meta)
    };
    let limit = max_memory_mib.saturating_mul(1 << 20);
    let over = || ImageIoError::OverLimit {
        path: path.into(),
        limit_mib: max_memory_mib,
    };
    let first = if let Some(frame) = frame.filter(|f| f.components == 4) {
        notes.extend(foreign_profile_dropped(&mut meta, "JPEG"));
        if meta.icc.is_none() {
            notes.push(cmyk_by_formula_note("JPEG"));
        }
        // The inks and their RGB, 7 bytes a pixel, and a progressive file's coefficients.
        if jpeg::working_bytes(&clean, frame, 7) > limit {
            return Err(over());
        }
        match jpeg::decode_inks(&clean, limit) {
            Ok((w, h, inks)) => {
                let rgb = inks_to_rgb(path, (w, h, inks), &mut meta, notes)?;
                return Ok((rgb, meta));
            }
            Err(damage) => Err(damage),
        }
    } else {
        strict_pixels(path, &clean, (w, h), max_memory_mib)?
    };
    match first {
        Ok(image) => Ok((image, meta)),
        Err(damage) => Ok((
            recovered(path, (&clean, limit), (w, h), &damage, notes)?,
            meta,
        )),
    }
}

/// A gray, YCbCr or RGB JPEG's pixels (`clean`, of `w`×`h` by its header) through
/// libjpeg's strict read: `Ok(Err(damage))` where the read found the file damaged, `Err`
/// where it cannot be read here at all.
fn strict_pixels(
    path: &Path,
    clean: &[u8],
    (w, h): (u32, u32),
    max_memory_mib: u64,
) -> Result<Result<DynamicImage, String>, ImageIoError> {
    let limit = max_memory_mib.saturating_mul(1 << 20);
    match jpeg::decode_pixels(clean, limit) {
        Ok(Some(image)) if (image.width(), image.height()) == (w, h) => Ok(Ok(image)),
        Ok(Some(_)) => Ok(Err(
            "the decoder read another size than the header's".to_string()
        )),
        Ok(None) if jpeg::frame_within(clean, 3, limit).is_none() => Err(ImageIoError::OverLimit {
            path: path.into(),
            limit_mib: max_memory_mib,
        }),
        Ok(None) => Err(ImageIoError::Unsupported {
            path: path.into(),
            detail: "a JPEG whose colour coding libjpeg does not turn to gray or RGB".into(),
        }),
        Err(damage) => Ok(Err(damage)),
    }
}

/// A CMYK JPEG's 8-bit `inks` of `w`×`h` in RGB: through its CMYK profile where `meta` holds
/// one that converts, else by the formula.
fn inks_to_rgb(
    path: &Path,
    (w, h, inks): (u32, u32, Vec<u8>),
    meta: &mut metadata::Metadata,
    notes: &mut Vec<String>,
) -> Result<DynamicImage, ImageIoError> {
    let inks = icc::Inks::Eight(inks);
    if cmyk_profile(meta).is_some() {
        if let Some(rgb) = through_profile(Ok((w, h, &inks)), meta, notes) {
            return Ok(rgb);
        }
    }
    let icc::Inks::Eight(inks) = inks else {
        unreachable!("a JPEG's inks are 8-bit")
    };
    let rgb = jpeg::inks_by_formula(w, h, &inks).map(DynamicImage::from);
    rgb.ok_or_else(|| ImageIoError::Decode {
        path: path.into(),
        detail: "libjpeg read fewer inks than the header declares".into(),
    })
}

/// The JPEG `clean` of `w`×`h` that the strict decode refused (`damage`), as libjpeg recovers
/// it within `limit` bytes, with a note of what it warned; an error naming both where it
/// cannot.
fn recovered(
    path: &Path,
    (clean, limit): (&[u8], u64),
    (w, h): (u32, u32),
    damage: &str,
    notes: &mut Vec<String>,
) -> Result<DynamicImage, ImageIoError> {
    match jpeg::libjpeg::recover(clean, limit) {
        Ok((image, warnings)) if (image.width(), image.height()) == (w, h) => {
            // libjpeg read the file cleanly: it was only beyond the first decoder.
            if let Some(first) = warnings.first() {
                notes.push(format!(
                    "the JPEG data is damaged ({}); libjpeg recovered what it could, as libjpeg-based tools do ({} warning{}), and damaged rows may show gray or smeared",
                    one_line(first),
                    warnings.len(),
                    if warnings.len() == 1 { "" } else { "s" }
                ));
            }
            Ok(image)
        }
        Ok(_) => Err(damaged(path, damage, "libjpeg decoded another size")),
        Err(e) => Err(damaged(path, damage, &e)),
    }
}

fn damaged(path: &Path, strict: &str, libjpeg: &str) -> ImageIoError {
    ImageIoError::Decode {
        path: path.into(),
        detail: format!(
            "the JPEG data is damaged ({}) and libjpeg could not recover it ({})",
            one_line(strict),
            one_line(libjpeg)
        ),
    }
}
