//! JPEG rows in: the header and metadata as the whole-image decode reads them (the `image`
//! crate's decoder, handed the file's header segments only, so that a large file is never read
//! whole), then the pixels a scanline at a time from libjpeg through the `mozjpeg` crate
//! (the `image` crate's decoder hands out no row before the last one is decoded).

use crate::codec::jpeg::header::is_progressive;
use crate::codec::jpeg::libjpeg::{self, header_segments, strict_errors};
use crate::codec::jpeg::JpegTraits;
use crate::codec::read::Input;
use crate::codec::rows::{decode_error, file_of, Header, InputFile, RowSample};
use crate::codec::ImageIoError;
use image::{ColorType, ImageFormat};
use mozjpeg::decompress::DecompressStarted;
use mozjpeg_sys::J_COLOR_SPACE;
use std::io;
use std::path::{Path, PathBuf};

/// A baseline or progressive 8-bit JPEG being read scanline by scanline.
pub struct JpegRows {
    scanlines: Scanlines,
    pub path: PathBuf,
    pub header: Header,
    /// The input's quality and chroma layout, for `--quality same` and `--subsampling same`.
    pub traits: JpegTraits,
    /// A progressive file: libjpeg holds every coefficient of the image while it reads it.
    pub progressive: bool,
}

/// libjpeg's decompressor, started.
struct Scanlines(DecompressStarted<InputFile>);

// SAFETY: libjpeg keeps a decompressor's whole state in its own structures (no thread-local or
// global state), and `JpegRows` moves it to the decoder thread whole: it is used by one thread
// at a time and never shared.
unsafe impl Send for Scanlines {}

/// Opens `input` (a JPEG file) for reading by scanlines. `Err(why)` inside the Ok: a JPEG the strip
/// engine does not stream (CMYK or YCCK, or turned by its EXIF orientation), which the
/// whole-image path reads instead.
pub fn open(input: &Input) -> Result<Result<JpegRows, String>, ImageIoError> {
    let path = input.name.as_path();
    let mut traits = JpegTraits::default();
    let mut progressive = false;
    let read = crate::codec::rows::read(input, ImageFormat::Jpeg, |mut file| {
        let head = header_segments(&mut file)?;
        traits = JpegTraits::read(&head);
        progressive = is_progressive(&head);
        super::JpegHead::read(head)
    })?;
    let header = match read {
        Ok(header) => header,
        Err(why) => return Ok(Err(why)),
    };
    let file = file_of(input)?;
    let started = libjpeg(path, || {
        let decompress = mozjpeg::Decompress::with_err(strict_errors()).from_reader(file)?;
        match (header.color, decompress.color_space()) {
            (ColorType::L8, J_COLOR_SPACE::JCS_GRAYSCALE) => decompress.grayscale().map(Ok),
            (ColorType::Rgb8, J_COLOR_SPACE::JCS_YCbCr | J_COLOR_SPACE::JCS_RGB) => {
                decompress.rgb().map(Ok)
            }
            (color, model) => Ok(Err(format!("its colour model ({model:?}, {color:?})"))),
        }
    })?;
    let started = match started {
        Ok(started) => started,
        Err(why) => return Ok(Err(why)),
    };
    if (started.width(), started.height()) != (header.width as usize, header.height as usize) {
        return Err(decode_error(
            path,
            "libjpeg reads another size than its header",
        ));
    }
    Ok(Ok(JpegRows {
        scanlines: Scanlines(started),
        path: path.into(),
        header,
        traits,
        progressive,
    }))
}

impl JpegRows {
    /// Fills `out` with the next rows (whole rows).
    pub fn read<T: RowSample>(&mut self, out: &mut [T]) -> Result<(), ImageIoError> {
        let rows = &mut self.scanlines.0;
        let Some(bytes) = T::as_bytes_mut(out) else {
            unreachable!("a JPEG streams 8-bit samples");
        };
        libjpeg(&self.path, || rows.read_scanlines_into(bytes).map(|_| ()))
    }
}

/// Runs libjpeg calls; what went wrong is a decode error of `path`.
fn libjpeg<R>(path: &Path, calls: impl FnOnce() -> io::Result<R>) -> Result<R, ImageIoError> {
    libjpeg::run(calls).map_err(|e| decode_error(path, e))
}
