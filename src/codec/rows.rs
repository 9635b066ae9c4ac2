//! What the formats' row-streaming halves share (`png`, `tiff` and `jpeg`'s `rows_in` and
//! `rows_out`, which the strip engine drives): the samples a row holds, the channel pairs that
//! carry batches of rows and bring their buffers back, the header and metadata a streamed
//! decoder reads before the pixels (as the whole-image decode reads them: the `image` crate's
//! decoder, with the codec's `read_metadata`), and the errors both directions report.

use crate::codec::jpeg::{JpegSettings, JpegTraits};
use crate::codec::metadata::Metadata;
use crate::codec::read::{FileAt, Input};
use crate::codec::tiff::Compression;
use crate::codec::{ImageIoError, Replace};
use crossbeam_channel::{Receiver, Sender};
use image::codecs::png::CompressionType;
use image::{ColorType, ImageDecoder, ImageFormat, ImageResult};
use std::io::{BufReader, Seek};
use std::path::Path;

/// The file a row reader streams: the input's one handle, buffered, at a position of its own.
pub type InputFile = BufReader<FileAt>;

/// A reader of `input`'s file from its start; the strip engine streams files, never bytes
/// held in memory.
pub fn file_of(input: &Input) -> Result<InputFile, ImageIoError> {
    let file = input.file_reader().ok_or_else(|| {
        decode_error(
            &input.name,
            "the strip engine streams a file, and this input is in memory",
        )
    })?;
    Ok(BufReader::new(file))
}

/// Batches of rows one way and their emptied buffers back the other, for the next batch.
pub type Batches<T> = (Receiver<Vec<T>>, Sender<Vec<T>>);

/// Samples a PNG row holds (8-bit as they are, 16-bit big-endian), and a TIFF strip's as the
/// `tiff` crate decodes them (native values).
pub trait RowSample: super::tiff::write::Sample + Send + Sync {
    fn from_png(bytes: &[u8], out: &mut [Self]);
    fn to_png(samples: &[Self], out: &mut Vec<u8>);
    /// The samples as bytes where they are 8-bit, and bytes as samples; None where they are
    /// not.
    fn as_bytes(samples: &[Self]) -> Option<&[u8]>;
    fn as_bytes_mut(samples: &mut [Self]) -> Option<&mut [u8]>;
    fn from_bytes_mut(bytes: &mut [u8]) -> Option<&mut [Self]>;
    /// The next rows of `reader` into `out`.
    fn read_rows(reader: &mut dyn RowReader, out: &mut [Self]) -> Result<(), ImageIoError>;
    /// Batches of these samples as a row writer takes them.
    fn batches(rows: Batches<Self>) -> SampleBatches;
    /// Copies `src` into `out` where its samples are of this type; false where they are not.
    fn from_native<S: Copy + 'static>(src: &[S], out: &mut [Self]) -> bool {
        if std::any::TypeId::of::<S>() != std::any::TypeId::of::<Self>() {
            return false;
        }
        // SAFETY: S is Self (same TypeId), so the slice is a slice of Self.
        let same = unsafe { std::slice::from_raw_parts(src.as_ptr().cast::<Self>(), src.len()) };
        out.copy_from_slice(same);
        true
    }
}

impl RowSample for u8 {
    fn from_png(bytes: &[u8], out: &mut [u8]) {
        out.copy_from_slice(bytes);
    }
    fn to_png(samples: &[u8], out: &mut Vec<u8>) {
        out.extend_from_slice(samples);
    }
    fn as_bytes(samples: &[u8]) -> Option<&[u8]> {
        Some(samples)
    }
    fn as_bytes_mut(samples: &mut [u8]) -> Option<&mut [u8]> {
        Some(samples)
    }
    fn from_bytes_mut(bytes: &mut [u8]) -> Option<&mut [u8]> {
        Some(bytes)
    }
    fn read_rows(reader: &mut dyn RowReader, out: &mut [u8]) -> Result<(), ImageIoError> {
        reader.read_u8(out)
    }
    fn batches(rows: Batches<u8>) -> SampleBatches {
        SampleBatches::U8(rows)
    }
}

impl RowSample for u16 {
    fn from_png(bytes: &[u8], out: &mut [u16]) {
        for (o, b) in out.iter_mut().zip(bytes.chunks_exact(2)) {
            *o = u16::from_be_bytes([b[0], b[1]]);
        }
    }
    fn to_png(samples: &[u16], out: &mut Vec<u8>) {
        out.extend(samples.iter().flat_map(|s| s.to_be_bytes()));
    }
    fn as_bytes(_: &[u16]) -> Option<&[u8]> {
        None
    }
    fn as_bytes_mut(_: &mut [u16]) -> Option<&mut [u8]> {
        None
    }
    fn from_bytes_mut(_: &mut [u8]) -> Option<&mut [u16]> {
        None
    }
    fn read_rows(reader: &mut dyn RowReader, out: &mut [u16]) -> Result<(), ImageIoError> {
        reader.read_u16(out)
    }
    fn batches(rows: Batches<u16>) -> SampleBatches {
        SampleBatches::U16(rows)
    }
}

/// An encoder's failure on `path`, in `format`.
pub fn encode_error<'a>(path: &'a Path, format: &'a str) -> impl Fn(String) -> ImageIoError + 'a {
    move |detail| ImageIoError::Encode {
        path: path.into(),
        format: format.into(),
        detail,
    }
}

/// The size of an image's rows: samples in a row, and rows.
#[derive(Clone, Copy, Debug)]
pub struct RowsOf {
    pub row: usize,
    pub height: u32,
}

/// Whether an encoder was handed every row of `rows`, having been handed `done` samples;
/// else where the rows stopped.
pub fn all_rows(done: usize, rows: RowsOf) -> Result<(), String> {
    match done == rows.row * rows.height as usize {
        true => Ok(()),
        false => Err(format!(
            "the blur stopped after {} of {} rows",
            done / rows.row.max(1),
            rows.height
        )),
    }
}

/// A file's metadata, sample layout and size.
pub struct Header {
    pub meta: Metadata,
    pub color: ColorType,
    pub width: u32,
    pub height: u32,
}

impl Header {
    /// Samples per row.
    pub fn row_samples(&self) -> usize {
        self.width as usize * self.color.channel_count() as usize
    }
}

pub fn decode_error(path: &Path, detail: impl ToString) -> ImageIoError {
    ImageIoError::Decode {
        path: path.into(),
        detail: detail.to_string(),
    }
}

pub fn open_error(path: &Path) -> impl Fn(std::io::Error) -> ImageIoError + '_ {
    move |cause| ImageIoError::Open {
        path: path.into(),
        cause,
    }
}

/// The header of `input`, a `format` file that `decoder` reads. `Err(why)` inside the Ok: its
/// orientation (EXIF, the TIFF's own tag or XMP) turns the image, which the strip engine does
/// not do, or its alpha is associated (premultiplied). An image without pixels is an error.
pub fn read<D: ImageDecoder>(
    input: &Input,
    format: ImageFormat,
    decoder: impl FnOnce(InputFile) -> ImageResult<D>,
) -> Result<Result<Header, String>, ImageIoError> {
    let path = input.name.as_path();
    let mut file = file_of(input)?;
    let from_file = super::of(format).read_metadata(&mut file);
    file.rewind().map_err(open_error(path))?;
    let mut head = decoder(file).map_err(|e| decode_error(path, e))?;
    let meta = Metadata::read(Some(&mut head), from_file).map_err(|e| decode_error(path, e))?;
    if meta.orientation.is_some() {
        return Ok(Err(
            "its EXIF orientation turns the image, and the engine streams rows as they are stored"
                .into(),
        ));
    }
    if meta.associated_alpha {
        return Ok(Err("its alpha is associated (premultiplied)".into()));
    }
    let color = head.color_type();
    let (width, height) = head.dimensions();
    if width == 0 || height == 0 {
        return Err(decode_error(
            path,
            format!("the image has no pixels ({width} × {height})"),
        ));
    }
    Ok(Ok(Header {
        meta,
        color,
        width,
        height,
    }))
}

/// The `RowReader` methods that a reader with `path` and `header` fields and a generic
/// `read<T: RowSample>` has alike, for a file in `$format`.
macro_rules! row_reader_basics {
    ($format:expr) => {
        fn format(&self) -> image::ImageFormat {
            $format
        }
        fn path(&self) -> &std::path::Path {
            &self.path
        }
        fn header(&self) -> &crate::codec::rows::Header {
            &self.header
        }
        fn header_mut(&mut self) -> &mut crate::codec::rows::Header {
            &mut self.header
        }
        fn read_u8(&mut self, out: &mut [u8]) -> Result<(), crate::codec::ImageIoError> {
            self.read(out)
        }
        fn read_u16(&mut self, out: &mut [u16]) -> Result<(), crate::codec::ImageIoError> {
            self.read(out)
        }
    };
}
pub(crate) use row_reader_basics;

/// A file being read row by row.
pub trait RowReader: Send {
    /// Its format.
    fn format(&self) -> ImageFormat;
    /// What errors call it.
    fn path(&self) -> &Path;
    /// Its metadata, sample layout and size.
    fn header(&self) -> &Header;
    /// The same, to take the metadata from.
    fn header_mut(&mut self) -> &mut Header;
    /// The next rows (whole rows, native order) into `out`, 8-bit samples.
    fn read_u8(&mut self, out: &mut [u8]) -> Result<(), ImageIoError>;
    /// The same, 16-bit samples.
    fn read_u16(&mut self, out: &mut [u16]) -> Result<(), ImageIoError>;
    /// The bytes the decoder holds besides the rows it hands over.
    fn held_bytes(&self) -> u64;
    /// A TIFF's Compression tag, for `--tiff-compression same`.
    fn stored_compression(&self) -> Option<u16> {
        None
    }
    /// How a JPEG was written, for `--quality same` and the subsampling.
    fn jpeg_traits(&self) -> Option<JpegTraits> {
        None
    }
}

/// Batches of rows of 8- or 16-bit samples, as a row writer takes them.
pub enum SampleBatches {
    /// 8-bit samples.
    U8(Batches<u8>),
    /// 16-bit samples.
    U16(Batches<u16>),
}

/// Where and how a row writer writes.
#[derive(Clone, Copy)]
pub struct RowsTarget<'a> {
    /// The output.
    pub path: &'a Path,
    /// Whether an existing file may be replaced.
    pub replace: Replace<'a>,
    /// Width and height.
    pub size: (u32, u32),
    /// The samples' layout.
    pub color: ColorType,
    /// The metadata kept.
    pub meta: &'a Metadata,
    /// The encoders' settings.
    pub settings: RowSettings,
}

/// The row writers' settings, resolved against the input.
#[derive(Clone, Copy)]
pub struct RowSettings {
    /// A JPEG's quality and subsampling.
    pub jpeg: JpegSettings,
    /// The most JPEG restart stripes held and encoded at once.
    pub jpeg_stripes: usize,
    /// A TIFF's compression.
    pub tiff: Compression,
    /// A PNG's compression level.
    pub png: CompressionType,
}

/// What a row writer's memory depends on.
pub struct RowsOutCost {
    /// The bytes of an output row.
    pub row: u64,
    /// The bytes of the pieces the blur emits.
    pub piece: u64,
    /// The most JPEG restart stripes encoded at once.
    pub jpeg_stripes: u64,
    /// A TIFF's compression.
    pub tiff: Compression,
}
