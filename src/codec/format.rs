//! One trait per image format, `Codec`: how gblur decodes a format whole and by rows, encodes
//! it whole and by rows, reads and writes its metadata, and what its files can hold. Each
//! format implements it in its own folder (`jpeg`, `png`, `tiff`, `webp`, `heif`, `jxl`,
//! `ico`; `plain` for the formats the `image` crate reads and writes as they are), and the rest
//! of gblur asks `codec::of(format)` rather than matching on the format, so adding a format
//! touches its folder and the list in `of`. The row readers' and writers' types are in `rows`.

use super::jpeg::{JpegSettings, JpegTraits};
use super::metadata::{Blobs, FromFile};
use super::read::Input;
use super::rows::{RowReader, RowsOutCost, RowsTarget, SampleBatches};
use super::source::Seekable;
use super::{DecodedFile, EncodeOptions, ImageIoError};
use image::{ColorType, DynamicImage, ImageFormat};
use std::path::Path;
use std::time::Duration;

/// An image format's reading and writing. Every method but `format` and `decode` has a
/// default: a format that gblur does not write, stream or hold metadata in.
pub trait Codec: Sync {
    /// The format, as the `image` crate names it (HEIF and JPEG XL under stand-ins:
    /// `heif::HEIF`, `jxl::JXL`).
    fn format(&self) -> ImageFormat;

    /// What reports and errors call it.
    fn name(&self) -> String {
        format!("{:?}", self.format())
    }

    // Decoding whole.

    /// Whether its decoder takes the whole file in memory (libjpeg, libheif, jxl-oxide), not a
    /// reader: `FileToDecode::bytes` then holds it.
    fn decodes_bytes(&self) -> bool {
        false
    }

    /// Decodes the file's pixels and its metadata within `file.max_memory_mib`; the caller
    /// turns the pixels as `meta.orientation` says (None where the decoder turned them).
    fn decode(&self, file: FileToDecode<'_>) -> Result<DecodedFile, ImageIoError>;

    // Decoding by rows.

    /// Whether the strip engine reads it row by row (`open_rows`).
    fn reads_rows(&self) -> bool {
        false
    }

    /// Opens the file for reading by rows (the strip engine), within `max_memory_mib`;
    /// `Err(why)` inside the `Ok` where it is not streamed, and the whole-image path reads it.
    fn open_rows(
        &self,
        _input: &Input,
        _max_memory_mib: u64,
    ) -> Result<Result<Box<dyn RowReader>, String>, ImageIoError> {
        Ok(Err(format!("it does not stream {}", self.name())))
    }

    // Encoding whole.

    /// The colour types its encoder takes; empty where gblur does not write the format.
    fn writable(&self) -> &'static [ColorType] {
        &[]
    }

    /// Whether gblur writes it here (a format written through a library checks that it loads).
    fn can_write(&self) -> bool {
        !self.writable().is_empty()
    }

    /// Whether gray is written as colour (its encoders take gray as RGB): an ICC profile for
    /// gray then does not describe what is written.
    fn gray_as_colour(&self) -> bool {
        false
    }

    /// Encodes `image` into memory, with its ICC profile where the format carries it (and a
    /// note where it does not); an error in the encoder's words. Outputs are checked against
    /// `can_write` before anything is decoded, so the refusal here is never seen.
    fn encode(&self, _image: ImageToEncode<'_>) -> Result<(Vec<u8>, Option<String>), String> {
        Err(format!("gblur does not write {}", self.name()))
    }

    // Encoding by rows.

    /// Whether the strip engine writes it row by row (`write_rows`).
    fn writes_rows(&self) -> bool {
        false
    }

    /// Writes the rows `rows` delivers (batches of whole rows, top to bottom) as a file at
    /// `target.path`, atomically; returns the time spent encoding and writing (not waiting),
    /// and notes on metadata the format could not hold. Only where `writes_rows`.
    fn write_rows(
        &self,
        target: RowsTarget<'_>,
        _rows: SampleBatches,
    ) -> Result<(Duration, Vec<String>), ImageIoError> {
        Err(ImageIoError::BadOutput {
            path: target.path.into(),
            detail: format!("gblur does not write {} row by row", self.name()),
        })
    }

    /// The bytes its row writer holds besides the rows in flight.
    fn rows_out_bytes(&self, _cost: &RowsOutCost) -> u64 {
        0
    }

    // Metadata.

    /// What the file holds that the `image` crate's decoder does not hand over (a TIFF's EXIF,
    /// a PNG's late eXIf, a BMP's ICC profile, IPTC records). The reader is left anywhere.
    fn read_metadata(&self, _reader: &mut dyn Seekable) -> FromFile {
        FromFile::default()
    }

    /// Whether its files hold EXIF and XMP (and the ICC profile).
    fn holds_metadata(&self) -> bool {
        false
    }

    /// Whether its encoder writes the EXIF and XMP itself, from `ImageToEncode::blobs` (AVIF's
    /// and HEIC's), not `write_metadata` after it.
    fn encoder_writes_metadata(&self) -> bool {
        false
    }

    /// Whether its files hold IPTC-IIM records.
    fn holds_iptc(&self) -> bool {
        false
    }

    /// `bytes`, a file `encode` made, with the EXIF, XMP and IPTC in `blobs` added where the
    /// format holds them and its encoder did not write them itself (AVIF's and HEIC's do, from
    /// `ImageToEncode::blobs`); `notes` say what it could not hold. Only where
    /// `holds_metadata`.
    fn write_metadata(
        &self,
        bytes: Vec<u8>,
        _blobs: Blobs<'_>,
        _notes: &mut Vec<String>,
    ) -> Result<Vec<u8>, String> {
        Ok(bytes)
    }

    // What its files hold besides pixels.

    /// Whether it holds CMYK inks (kept as they are from a CMYK input: `job::inks`).
    fn holds_inks(&self) -> bool {
        false
    }

    /// Encodes CMYK inks into memory, where the format holds them (`holds_inks`); `notes` say
    /// what was given up.
    fn encode_inks(
        &self,
        _inks: InksToEncode<'_>,
        _notes: &mut Vec<String>,
    ) -> Result<Vec<u8>, String> {
        Err(format!("{} holds no CMYK inks", self.name()))
    }

    /// Whether it holds several pages (a stack blurred page by page or as a volume).
    fn holds_pages(&self) -> bool {
        false
    }

    /// Whether it holds gray 32-bit float as gray (`DecodedFile::gray_float`).
    fn holds_gray_float(&self) -> bool {
        false
    }
}

/// A file to decode.
pub struct FileToDecode<'a> {
    /// What errors call it (a path, or `stdin`).
    pub path: &'a Path,
    /// Its bytes from the start.
    pub reader: &'a mut dyn Seekable,
    /// The whole file, where it is in memory (always, for a codec that `decodes_bytes`).
    pub bytes: Option<&'a [u8]>,
    /// The memory the decode may take, in MiB.
    pub max_memory_mib: u64,
}

/// An image to encode, and what goes with it.
#[derive(Clone, Copy)]
pub struct ImageToEncode<'a> {
    /// The pixels.
    pub image: &'a DynamicImage,
    /// The image is gray float held as RGB(A) with three equal channels.
    pub gray_float: bool,
    /// The ICC profile to carry.
    pub icc: Option<&'a [u8]>,
    /// The EXIF and XMP, for an encoder that writes them itself (`encoder_writes_metadata`);
    /// every other format's go in after (`write_metadata`), and these are empty.
    pub blobs: Blobs<'a>,
    /// The command line's encoder settings.
    pub options: EncodeOptions,
    /// A JPEG's quality and subsampling, resolved against the input.
    pub jpeg: JpegSettings,
    /// The output, whose name tells AVIF from HEIC.
    pub path: &'a Path,
}

/// CMYK inks to encode, and what goes with them.
pub struct InksToEncode<'a> {
    /// The inks in an RGBA-shaped image (8 or 16 bits a sample): C, M, Y, K for R, G, B, A;
    /// 0 is no ink.
    pub inks: DynamicImage,
    /// The input's CMYK profile.
    pub icc: Option<&'a [u8]>,
    /// The command line's encoder settings.
    pub options: EncodeOptions,
    /// How a JPEG input was written, for `--quality same` and its Adobe marker.
    pub jpeg: Option<&'a JpegTraits>,
    /// A TIFF input's Compression tag, for `--tiff-compression same`.
    pub tiff_compression: Option<u16>,
}
