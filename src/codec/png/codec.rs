//! PNG's `Codec`: decoded whole by the `image` crate (with an eXIf chunk after the pixels or a
//! legacy EXIF text chunk read here), a row at a time for the strip engine, encoded on every
//! core (or streamed at `fast`) whole or as rows arrive, with EXIF and XMP in chunks before the
//! pixels.

use super::{encode, encode_fast, rows_in, rows_out};
use crate::codec::format::{Codec, Encoded, Encoding};
use crate::codec::metadata::{self, Blobs, FromFile};
use crate::codec::read::Input;
use crate::codec::rows::{Header, RowReader, RowsOutCost, RowsTarget, SampleBatches};
use crate::codec::source::Seekable;
use crate::codec::{decode, plain, DecodedFile, ImageIoError};
use image::codecs::png::CompressionType;
use image::{ColorType, ImageFormat};
use std::path::Path;
use std::time::Duration;

/// PNG.
pub struct Png;

impl Codec for Png {
    fn format(&self) -> ImageFormat {
        ImageFormat::Png
    }

    fn decode(&self, file: Encoded<'_>) -> Result<DecodedFile, ImageIoError> {
        decode::with_image_crate(ImageFormat::Png, file)
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
        use ColorType::*;
        &[L8, La8, Rgb8, Rgba8, L16, La16, Rgb16, Rgba16]
    }

    /// gblur's encoders (stripes on every core, or fdeflate streamed at `fast`), the `image`
    /// crate's for a layout they do not write.
    fn encode(&self, e: Encoding<'_>) -> Result<(Vec<u8>, Option<String>), String> {
        let ours = match e.options.png_compression {
            CompressionType::Fast => encode_fast(e.image, e.icc),
            CompressionType::Best => encode(e.image, 9, e.icc),
            _ => encode(e.image, 6, e.icc),
        };
        match ours {
            Some(bytes) => bytes.map(|bytes| (bytes, None)),
            None => plain::encode(ImageFormat::Png, e),
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
        let header = rows_out::PngHeader {
            size: target.size,
            color: target.color,
            meta: target.meta,
            compression: target.settings.png,
        };
        let (path, replace) = (target.path, target.replace);
        let busy = match rows {
            SampleBatches::U8(rows) => rows_out::write(path, replace, header, rows),
            SampleBatches::U16(rows) => rows_out::write(path, replace, header, rows),
        };
        busy.map(|busy| (busy, Vec::new()))
    }

    /// A piece in PNG's byte order, and the rows the filters compare.
    fn rows_out_bytes(&self, cost: &RowsOutCost) -> u64 {
        cost.piece + 4 * cost.row
    }

    fn read_metadata(&self, reader: &mut dyn Seekable) -> FromFile {
        metadata::read_png(reader)
    }

    fn holds_metadata(&self) -> bool {
        true
    }

    fn write_metadata(
        &self,
        bytes: Vec<u8>,
        blobs: Blobs<'_>,
        _notes: &mut Vec<String>,
    ) -> Result<Vec<u8>, String> {
        metadata::into_png(bytes, blobs)
    }
}

impl RowReader for rows_in::PngRows {
    fn format(&self) -> ImageFormat {
        ImageFormat::Png
    }
    fn path(&self) -> &Path {
        &self.path
    }
    fn header(&self) -> &Header {
        &self.header
    }
    fn header_mut(&mut self) -> &mut Header {
        &mut self.header
    }
    fn read_u8(&mut self, out: &mut [u8]) -> Result<(), ImageIoError> {
        self.read(out)
    }
    fn read_u16(&mut self, out: &mut [u16]) -> Result<(), ImageIoError> {
        self.read(out)
    }
    /// The previous and current rows, raw and unfiltered.
    fn held_bytes(&self) -> u64 {
        let (width, color) = (self.header.width as u64, self.header.color);
        4 * width * color.bytes_per_pixel() as u64
    }
}
