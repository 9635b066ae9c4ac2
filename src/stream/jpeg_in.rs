//! JPEG rows in: the header and metadata as the whole-image decode reads them (the `image`
//! crate's decoder, handed the file's header segments only, so that a large file is never read
//! whole), then the pixels a scanline at a time from libjpeg through the `mozjpeg` crate.
//! Neither `libjpeg-turbo-rs` (whose scanline reader decodes the whole image first) nor the
//! `image` crate's decoder hands out rows before the last one is decoded.

use super::header::{decode_error, Header};
use super::StreamSample;
use crate::codec::jpeg::JpegTraits;
use crate::codec::ImageIoError;
use image::codecs::jpeg::JpegDecoder;
use image::{ColorType, ImageFormat};
use mozjpeg::decompress::DecompressStarted;
use mozjpeg_sys::{jpeg_common_struct, jpeg_error_mgr, J_COLOR_SPACE};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor};
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// A baseline or progressive 8-bit JPEG being read scanline by scanline.
pub struct JpegRows {
    scanlines: Scanlines,
    path: PathBuf,
    pub header: Header,
    /// The input's quality and chroma layout, for `--quality same` and `--subsampling same`.
    pub traits: JpegTraits,
}

/// libjpeg's decompressor, started.
struct Scanlines(DecompressStarted<BufReader<File>>);

// SAFETY: libjpeg keeps a decompressor's whole state in its own structures (no thread-local or
// global state), and `JpegRows` moves it to the decoder thread whole: it is used by one thread
// at a time and never shared.
unsafe impl Send for Scanlines {}

/// The most header bytes (everything before the first scan: tables, ICC, EXIF, XMP) read to
/// learn the image's size and metadata.
const MOST_HEADER_BYTES: usize = 64 << 20;

/// Opens `path` (a JPEG) for reading by scanlines. `Err(why)` inside the Ok: a JPEG the strip
/// engine does not stream (CMYK or YCCK, or turned by its EXIF orientation), which the
/// whole-image path reads instead.
pub fn open(path: &Path) -> Result<Result<JpegRows, String>, ImageIoError> {
    let mut traits = JpegTraits::default();
    let read = super::header::read(path, ImageFormat::Jpeg, |mut file| {
        let head = header_segments(&mut file)?;
        traits = JpegTraits::read(&head);
        JpegDecoder::new(Cursor::new(head))
    })?;
    let header = match read {
        Ok(header) => header,
        Err(why) => return Ok(Err(why)),
    };
    let started = libjpeg(path, || {
        let file = File::open(path)?;
        let decompress = mozjpeg::Decompress::with_err(strict_errors()).from_file(file)?;
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
    }))
}

impl JpegRows {
    /// Fills `out` with the next rows (whole rows).
    pub fn read<T: StreamSample>(&mut self, out: &mut [T]) -> Result<(), ImageIoError> {
        let rows = &mut self.scanlines.0;
        let Some(bytes) = T::as_bytes_mut(out) else {
            unreachable!("a JPEG streams 8-bit samples");
        };
        libjpeg(&self.path, || rows.read_scanlines_into(bytes).map(|_| ()))
    }
}

/// Runs libjpeg calls, whose errors unwind (`strict_errors`), and says what went wrong as a
/// decode error of `path`.
fn libjpeg<R>(path: &Path, calls: impl FnOnce() -> io::Result<R>) -> Result<R, ImageIoError> {
    match catch_unwind(AssertUnwindSafe(calls)) {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => {
            Err(decode_error(path, "the image data ends early"))
        }
        Ok(Err(e)) => Err(decode_error(path, e)),
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .map_or("libjpeg failed", String::as_str);
            Err(decode_error(path, message))
        }
    }
}

/// An error manager whose errors unwind to `libjpeg`'s `catch_unwind`, as do the warnings of
/// damaged data (a file cut short, a corrupt segment), which libjpeg would otherwise paper
/// over with gray rows. Only bytes skipped between markers pass, as the whole-image decoder
/// lets them.
fn strict_errors() -> jpeg_error_mgr {
    // SAFETY: `jpeg_std_error` initialises every field of the zeroed struct.
    let mut err: jpeg_error_mgr = unsafe { std::mem::zeroed() };
    unsafe { mozjpeg_sys::jpeg_std_error(&mut err) };
    err.error_exit = Some(fail);
    err.emit_message = Some(warn);
    err
}

extern "C-unwind" fn fail(cinfo: &mut jpeg_common_struct) {
    std::panic::resume_unwind(Box::new(message(cinfo)));
}

extern "C-unwind" fn warn(cinfo: &mut jpeg_common_struct, level: c_int) {
    // SAFETY: libjpeg calls this with its error manager set.
    let code = unsafe { (*cinfo.err).msg_code };
    if level < 0 && code != mozjpeg_sys::JWRN_EXTRANEOUS_DATA as c_int {
        fail(cinfo);
    }
}

/// libjpeg's text for its current message.
fn message(cinfo: &mut jpeg_common_struct) -> String {
    let mut buffer = [0u8; 80];
    // SAFETY: libjpeg calls the handlers with its error manager set; `format_message` writes
    // at most 80 bytes, NUL-terminated, into the buffer (which its binding declares shared).
    unsafe {
        if let Some(format) = (*cinfo.err).format_message {
            let format: unsafe extern "C-unwind" fn(&mut jpeg_common_struct, *mut u8) =
                std::mem::transmute(format);
            format(cinfo, buffer.as_mut_ptr());
        }
    }
    let text = buffer.split(|&b| b == 0).next().unwrap_or_default();
    String::from_utf8_lossy(text).into_owned()
}

/// The file's bytes from its start to the end of its first scan header: every segment the
/// header and metadata are read from. An error where the file is not a JPEG, ends first, or
/// holds more than `MOST_HEADER_BYTES` of them.
fn header_segments(file: &mut impl BufRead) -> image::ImageResult<Vec<u8>> {
    let bad =
        |what: &str| image::ImageError::IoError(io::Error::new(io::ErrorKind::InvalidData, what));
    let mut head = vec![0u8; 2];
    file.read_exact(&mut head)?;
    if head != [0xFF, 0xD8] {
        return Err(bad("not a JPEG (no start-of-image marker)"));
    }
    loop {
        let mut marker = [0u8; 2];
        file.read_exact(&mut marker)?;
        while marker[1] == 0xFF {
            // Fill bytes before a marker.
            file.read_exact(&mut marker[1..])?;
        }
        if marker[0] != 0xFF {
            return Err(bad("a header segment does not start with a marker"));
        }
        head.extend_from_slice(&marker);
        if matches!(marker[1], 0x01 | 0xD0..=0xD7) {
            continue; // no length follows
        }
        let mut length = [0u8; 2];
        file.read_exact(&mut length)?;
        head.extend_from_slice(&length);
        let len = (u16::from_be_bytes(length) as usize).max(2);
        if head.len() + len > MOST_HEADER_BYTES {
            return Err(bad("its header segments are over 64 MiB"));
        }
        let at = head.len();
        head.resize(at + len - 2, 0);
        file.read_exact(&mut head[at..])?;
        if marker[1] == 0xDA {
            return Ok(head);
        }
    }
}
