//! TIFF's `Codec`: decoded whole by the `image` crate, or by gblur where the crate is wrong or
//! cannot (tiled planes, gray float, reversed bit order, associated alpha, CMYK through its
//! profile); a strip at a time for the strip engine; encoded whole (pages, gray float, inks)
//! or in strips as rows arrive; its EXIF, ICC profile, XMP and IPTC read from and written into
//! its own directories.

use super::{rows_in, rows_out, Page, Quirks};
use crate::codec::decode::{
    cmyk_by_formula_note, cmyk_profile, foreign_profile_dropped, image_error, open_decoder, rewind,
    through_profile,
};
use crate::codec::format::{Codec, FileToDecode, ImageToEncode, InksToEncode};
use crate::codec::metadata::{self, Blobs, FromFile};
use crate::codec::read::Input;
use crate::codec::rows::{RowReader, RowsOutCost, RowsTarget, SampleBatches};
use crate::codec::source::Seekable;
use crate::codec::{plain, DecodedFile, ImageIoError};
use image::{ColorType, DynamicImage, ImageError, ImageFormat};
use std::path::Path;
use std::time::Duration;

/// TIFF.
pub struct Tiff;

impl Codec for Tiff {
    fn format(&self) -> ImageFormat {
        ImageFormat::Tiff
    }

    fn decode(&self, file: FileToDecode<'_>) -> Result<DecodedFile, ImageIoError> {
        let (path, reader, max_memory_mib) = (file.path, file.reader, file.max_memory_mib);
        let mut notes = Vec::new();
        let quirks = quirks(path, reader, &mut notes)?;
        let limit = max_memory_mib.saturating_mul(1 << 20);
        let map = |e: ImageError| image_error(path, e, max_memory_mib);
        // A CMYK profile was tried (`through_profile` said what came of it).
        let mut profile_tried = false;
        let (mut image, mut meta) = if quirks.plain_inks {
            let (decoded, tried) = plain_inks(path, reader, max_memory_mib, &mut notes)?;
            profile_tried = tried;
            decoded
        } else if quirks.own_decode() {
            let from_file = metadata::read_tiff(reader);
            let meta = metadata::Metadata::read(None, from_file).map_err(map)?;
            rewind(path, reader)?;
            let image = super::read_image(reader, &quirks, limit).map_err(|detail| {
                ImageIoError::Decode {
                    path: path.into(),
                    detail,
                }
            })?;
            (image, meta)
        } else {
            let (decoder, meta) = open_decoder(path, reader, ImageFormat::Tiff, max_memory_mib)?;
            (DynamicImage::from_decoder(decoder).map_err(map)?, meta)
        };
        quirks.mend(&mut image);
        if meta.associated_alpha {
            super::unpremultiply(&mut image);
        }
        if quirks.cmyk && !profile_tried {
            notes.extend(foreign_profile_dropped(&mut meta, "TIFF"));
            if meta.icc.is_none() {
                notes.push(cmyk_by_formula_note("TIFF"));
            }
        }
        Ok(DecodedFile {
            tiff_compression: Some(quirks.compression()),
            gray_float: quirks.gray_float,
            notes,
            ..DecodedFile::new(image, ImageFormat::Tiff, meta)
        })
    }

    fn reads_rows(&self) -> bool {
        true
    }

    /// A strip of the file is held while its rows go to the blur: a quarter of the budget at
    /// most.
    fn open_rows(
        &self,
        input: &Input,
        max_memory_mib: u64,
    ) -> Result<Result<Box<dyn RowReader>, String>, ImageIoError> {
        let most_strip_bytes = max_memory_mib.saturating_mul(1 << 20) / 4;
        let rows = rows_in::open(input, most_strip_bytes)?;
        Ok(rows.map(|rows| Box::new(rows) as Box<dyn RowReader>))
    }

    fn writable(&self) -> &'static [ColorType] {
        use ColorType::*;
        &[
            L8, La8, Rgb8, Rgba8, L16, La16, Rgb16, Rgba16, Rgb32F, Rgba32F,
        ]
    }

    fn encode(&self, e: ImageToEncode<'_>) -> Result<(Vec<u8>, Option<String>), String> {
        let page = Page {
            image: e.image,
            icc: e.icc,
            gray_float: e.gray_float,
            inks: false,
        };
        match super::encode(page, e.options.tiff.compression()) {
            Some(bytes) => bytes.map(|bytes| (bytes, None)),
            None => plain::encode(ImageFormat::Tiff, e),
        }
    }

    fn writes_rows(&self) -> bool {
        true
    }

    fn write_rows(
        &self,
        target: RowsTarget<'_>,
        rows: SampleBatches,
    ) -> Result<(Duration, Vec<String>), ImageIoError> {
        let layout = super::write::Layout {
            width: target.size.0,
            height: target.size.1,
            channels: target.color.channel_count() as u16,
            icc: target.meta.icc.as_deref(),
            compression: target.settings.tiff,
            inks: false,
        };
        let (path, replace) = (target.path, target.replace);
        let busy = match rows {
            SampleBatches::U8(rows) => rows_out::write(path, replace, layout, rows),
            SampleBatches::U16(rows) => rows_out::write(path, replace, layout, rows),
        };
        busy.map(|busy| (busy, Vec::new()))
    }

    /// A strip, and where it is compressed its predicted bytes, the compressed ones and the
    /// compressor's state (Zstandard's is the largest, about 1.3 MiB at its level 3).
    fn rows_out_bytes(&self, cost: &RowsOutCost) -> u64 {
        let strip = super::write::STRIP_BYTES;
        match cost.tiff {
            super::Compression::None => 2 * strip,
            _ => 4 * strip + (2 << 20),
        }
    }

    fn read_metadata(&self, reader: &mut dyn Seekable) -> FromFile {
        metadata::read_tiff(reader)
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
        metadata::into_tiff(bytes, blobs, notes)
    }

    fn holds_inks(&self) -> bool {
        true
    }

    /// 8- or 16-bit inks as they are (Separated, InkSet CMYK), compressed as the input was
    /// unless `--tiff-compression` says otherwise.
    fn encode_inks(&self, e: InksToEncode<'_>, notes: &mut Vec<String>) -> Result<Vec<u8>, String> {
        let (compression, note) = e.options.tiff.resolve(e.tiff_compression);
        notes.extend(note);
        let page = Page {
            image: &e.inks,
            icc: e.icc,
            gray_float: false,
            inks: true,
        };
        super::encode(page, compression.compression())
            .expect("RGBA-shaped inks are a TIFF colour type")
    }

    fn holds_pages(&self) -> bool {
        true
    }

    fn holds_gray_float(&self) -> bool {
        true
    }
}

impl RowReader for rows_in::TiffRows {
    crate::codec::rows::row_reader_basics!(ImageFormat::Tiff);
    /// The strip's samples and its compressed bytes.
    fn held_bytes(&self) -> u64 {
        2 * self.strip_held
    }
    fn stored_compression(&self) -> Option<u16> {
        Some(self.compression)
    }
}

/// A TIFF's quirks (`Quirks`), read from its head (the reader rewound after), with the notes
/// they call for; an error for a TIFF gblur does not read.
fn quirks(
    path: &Path,
    reader: &mut dyn Seekable,
    notes: &mut Vec<String>,
) -> Result<Quirks, ImageIoError> {
    let quirks = Quirks::read(reader);
    rewind(path, reader)?;
    if let Some(why) = quirks.refused() {
        return Err(ImageIoError::Unsupported {
            path: path.into(),
            detail: why,
        });
    }
    if quirks.pages > 1 {
        notes.push(format!(
            "the TIFF holds {} pages; only the first was blurred and written (gblur IN OUT.tif blurs every page)",
            match quirks.pages {
                n if n >= 10_000 => "10000 or more".to_string(),
                n => n.to_string(),
            }
        ));
    }
    notes.extend(quirks.not_pages.note());
    Ok(quirks)
}

/// A TIFF of plain CMYK inks: through its CMYK profile where it has one, else the `image`
/// crate's conversion; with whether a profile was tried (`through_profile` said what came of
/// it).
fn plain_inks(
    path: &Path,
    reader: &mut dyn Seekable,
    max_memory_mib: u64,
    notes: &mut Vec<String>,
) -> Result<((DynamicImage, metadata::Metadata), bool), ImageIoError> {
    let map = |e: ImageError| image_error(path, e, max_memory_mib);
    let from_file = metadata::read_tiff(reader);
    let mut meta = metadata::Metadata::read(None, from_file).map_err(map)?;
    rewind(path, reader)?;
    let tried = cmyk_profile(&meta).is_some();
    // The inks and their RGB (7 bytes a pixel) within the limit.
    let rgb = match tried {
        true => {
            let limit = max_memory_mib.saturating_mul(1 << 20);
            let inks = super::read_inks(reader, limit / 7 * 4);
            let inks = inks
                .as_ref()
                .map(|(w, h, i)| (*w, *h, i))
                .map_err(String::clone);
            through_profile(inks, &mut meta, notes)
        }
        false => None,
    };
    if let Some(rgb) = rgb {
        return Ok(((rgb, meta), tried));
    }
    rewind(path, reader)?;
    let (decoder, mut read) = open_decoder(path, reader, ImageFormat::Tiff, max_memory_mib)?;
    // The profile `through_profile` could not apply stays out.
    read.icc = meta.icc;
    Ok((
        (DynamicImage::from_decoder(decoder).map_err(map)?, read),
        tried,
    ))
}
