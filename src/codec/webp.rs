//! WebP through libwebp, loaded at run time (`libwebp.so.7`, Debian's `libwebp7`), as libheif
//! is: the build compiles no C for it. Lossy output (`--quality N`): the `image` crate writes
//! WebP lossless only, which stays the default; gray is written as RGB (WebP has no gray),
//! alpha losslessly beside the lossy colour, the ICC profile in an `ICCP` chunk. Where libwebp
//! is missing, lossy output is refused in one line that names the package. Input: a still
//! image's pixels, which libwebp decodes faster than the `image` crate
//! (`docs/BENCHMARKS.md`); without libwebp the crate decodes them. The header and metadata
//! are the crate's either way.
//!
//! libwebp's simple API is all gblur calls: `WebPEncodeRGB(A)` encodes with libwebp's default
//! configuration at the given quality (method 4, alpha at quality 100: exactly what `cwebp
//! -q N` writes), and `WebPDecodeRGB(A)Into` decodes into a buffer gblur owns.

use super::decode::{image_error, open_decoder, rewind};
use super::format::{Codec, FileToDecode, ImageToEncode};
use super::metadata::{self, Blobs};
use super::source::Seekable;
use super::{plain, DecodedFile, EncodeOptions, ImageIoError};
use dlopen2::wrapper::{Container, WrapperApi};
use image::{ColorType, DynamicImage, ImageDecoder, ImageFormat};
use std::io::{Cursor, SeekFrom};
use std::os::raw::{c_int, c_void};
use std::sync::OnceLock;

/// The part of libwebp's C API gblur calls (libwebp 1.0 and later have all of it).
#[derive(WrapperApi)]
struct Api {
    #[dlopen2_name = "WebPGetEncoderVersion"]
    encoder_version: unsafe extern "C" fn() -> c_int,
    #[dlopen2_name = "WebPEncodeRGB"]
    encode_rgb: unsafe extern "C" fn(
        rgb: *const u8,
        width: c_int,
        height: c_int,
        stride: c_int,
        quality: f32,
        output: *mut *mut u8,
    ) -> usize,
    #[dlopen2_name = "WebPEncodeRGBA"]
    encode_rgba: unsafe extern "C" fn(
        rgba: *const u8,
        width: c_int,
        height: c_int,
        stride: c_int,
        quality: f32,
        output: *mut *mut u8,
    ) -> usize,
    #[dlopen2_name = "WebPFree"]
    free: unsafe extern "C" fn(ptr: *mut c_void),
    #[dlopen2_name = "WebPDecodeRGBInto"]
    decode_rgb_into: unsafe extern "C" fn(
        data: *const u8,
        size: usize,
        output: *mut u8,
        output_size: usize,
        stride: c_int,
    ) -> *mut u8,
    #[dlopen2_name = "WebPDecodeRGBAInto"]
    decode_rgba_into: unsafe extern "C" fn(
        data: *const u8,
        size: usize,
        output: *mut u8,
        output_size: usize,
        stride: c_int,
    ) -> *mut u8,
}

/// The names libwebp's shared library goes by.
const LIBRARY: [&str; 3] = ["libwebp.so.7", "libwebp.7.dylib", "libwebp.dll"];

/// What to install where libwebp is missing.
pub const INSTALL: &str = "on Debian and Ubuntu: apt-get install libwebp7";

/// libwebp, loaded once; Err says why it could not be.
fn api() -> Result<&'static Container<Api>, &'static str> {
    static API: OnceLock<Result<Container<Api>, String>> = OnceLock::new();
    API.get_or_init(|| {
        if crate::fault::is(crate::fault::Fault::NoLibwebp) {
            return Err(format!("libwebp is not installed ({INSTALL})"));
        }
        super::shared_library::load::<Api>(&LIBRARY)
            .map_err(|last| format!("libwebp is not installed ({INSTALL}; {last})"))
    })
    .as_ref()
    .map_err(String::as_str)
}

/// libwebp's version (as `1.2.4`), or why it does not load (for `gblur formats`).
pub fn version() -> Result<String, String> {
    let api = api()?;
    // SAFETY: takes nothing, returns a number.
    let v = unsafe { api.encoder_version() };
    Ok(format!(
        "{}.{}.{}",
        (v >> 16) & 0xFF,
        (v >> 8) & 0xFF,
        v & 0xFF
    ))
}

/// `image` (8-bit gray, gray with alpha, RGB or RGBA, as `codec::output_color` leaves it for
/// WebP) as a lossy WebP at `quality` (1 to 100), with `icc` where given.
pub fn encode_lossy(
    image: &DynamicImage,
    quality: u8,
    icc: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    let api = api()
        .map_err(|why| format!("lossy WebP (--quality) is written through libwebp, and {why}"))?;
    let colour;
    let image = match image {
        DynamicImage::ImageLuma8(_) => {
            colour = DynamicImage::ImageRgb8(image.to_rgb8());
            &colour
        }
        DynamicImage::ImageLumaA8(_) => {
            colour = DynamicImage::ImageRgba8(image.to_rgba8());
            &colour
        }
        other => other,
    };
    let (w, h) = (image.width(), image.height());
    let (samples, channels, encode) = match image {
        DynamicImage::ImageRgb8(i) => (i.as_raw(), 3, api.encode_rgb),
        DynamicImage::ImageRgba8(i) => (i.as_raw(), 4, api.encode_rgba),
        other => {
            return Err(format!(
                "lossy WebP takes 8-bit samples, not {:?}",
                other.color()
            ))
        }
    };
    // WebP's sides are at most 16383 pixels; libwebp refuses larger ones itself.
    let side =
        |s: u32| c_int::try_from(s).map_err(|_| format!("a side of {s} pixels is beyond WebP"));
    let (width, height, stride) = (side(w)?, side(h)?, side(w * channels)?);
    let mut output: *mut u8 = std::ptr::null_mut();
    // SAFETY: `samples` holds `height` rows of `stride` bytes; libwebp allocates `output` and
    // returns its size (0 and no buffer on failure).
    let size = unsafe {
        encode(
            samples.as_ptr(),
            width,
            height,
            stride,
            quality as f32,
            &mut output,
        )
    };
    if size == 0 || output.is_null() {
        return Err(format!("libwebp could not encode the {w} × {h} image"));
    }
    // SAFETY: libwebp wrote `size` bytes at `output`, which is freed once copied.
    let bytes = unsafe { std::slice::from_raw_parts(output, size) }.to_vec();
    unsafe { (api.free)(output.cast()) };
    match icc {
        Some(profile) => super::metadata::webp_icc(bytes, profile),
        None => Ok(bytes),
    }
}

/// The pixels of the still WebP `bytes`, whose header (read by the `image` crate) says `size`
/// and `alpha`: RGB or RGBA, as the crate decodes them. None where libwebp is not installed or
/// does not decode it as that (an animation): the crate then decodes it.
pub fn decode(bytes: &[u8], size: (u32, u32), alpha: bool) -> Option<DynamicImage> {
    let api = api().ok()?;
    let (w, h) = size;
    let channels = if alpha { 4 } else { 3 };
    let stride = c_int::try_from(w as usize * channels).ok()?;
    let mut pixels = vec![0u8; w as usize * h as usize * channels];
    let into = if alpha {
        api.decode_rgba_into
    } else {
        api.decode_rgb_into
    };
    // SAFETY: libwebp writes at most `pixels.len()` bytes, `stride` to a row, and returns NULL
    // where the image does not fit that buffer (another size) or does not decode.
    let done = unsafe {
        into(
            bytes.as_ptr(),
            bytes.len(),
            pixels.as_mut_ptr(),
            pixels.len(),
            stride,
        )
    };
    if done.is_null() {
        return None;
    }
    match alpha {
        true => image::RgbaImage::from_raw(w, h, pixels).map(DynamicImage::ImageRgba8),
        false => image::RgbImage::from_raw(w, h, pixels).map(DynamicImage::ImageRgb8),
    }
}

/// The quality gblur writes a lossy WebP at when `--quality` is not given: libvips's and
/// cwebp's default.
pub const DEFAULT_QUALITY: u8 = 75;

/// Whether the WebP file `reader` holds is lossless (its image, or an animation's first frame,
/// is a `VP8L` chunk, not a lossy `VP8 ` one), read from its chunk headers alone; the caller
/// rewinds.
pub fn is_lossless(reader: &mut dyn Seekable) -> bool {
    let mut head = [0u8; 12];
    if reader.read_exact(&mut head).is_err() || &head[..4] != b"RIFF" || &head[8..] != b"WEBP" {
        return false;
    }
    let mut chunk = [0u8; 8];
    while reader.read_exact(&mut chunk).is_ok() {
        match &chunk[..4] {
            b"VP8L" => return true,
            b"VP8 " => return false,
            // A frame: its 16-byte header, then its image's chunks.
            b"ANMF" => match reader.seek(SeekFrom::Current(16)) {
                Ok(_) => continue,
                Err(_) => return false,
            },
            _ => {}
        }
        // Chunks are padded to an even length.
        let len = u32::from_le_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]) as i64;
        if reader.seek(SeekFrom::Current(len + (len & 1))).is_err() {
            return false;
        }
    }
    false
}

/// WebP: the `image` crate's decoder for the header and metadata (and an animation's first
/// frame), libwebp for a still image's pixels and for lossy output; lossless output by the
/// crate's encoder; EXIF and XMP in their chunks.
pub struct WebP;

impl Codec for WebP {
    fn format(&self) -> ImageFormat {
        ImageFormat::WebP
    }

    fn decode(&self, file: FileToDecode<'_>) -> Result<DecodedFile, ImageIoError> {
        let (path, reader) = (file.path, file.reader);
        let lossless = is_lossless(reader);
        rewind(path, reader)?;
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(|cause| ImageIoError::Open {
                path: path.into(),
                cause,
            })?;
        let max_memory_mib = file.max_memory_mib;
        let mut whole = Cursor::new(&bytes[..]);
        let (decoder, meta) = open_decoder(path, &mut whole, ImageFormat::WebP, max_memory_mib)?;
        let (size, alpha) = (decoder.dimensions(), decoder.color_type().has_alpha());
        let image = match decode(&bytes, size, alpha) {
            Some(image) => image,
            None => DynamicImage::from_decoder(decoder)
                .map_err(|e| image_error(path, e, max_memory_mib))?,
        };
        Ok(DecodedFile {
            webp_lossless: lossless,
            ..DecodedFile::new(image, ImageFormat::WebP, meta)
        })
    }

    fn writable(&self) -> &'static [ColorType] {
        use ColorType::*;
        &[L8, La8, Rgb8, Rgba8]
    }

    fn gray_as_colour(&self) -> bool {
        true
    }

    /// Lossy through libwebp at the quality `EncodeOptions::webp_quality` gives, lossless
    /// through the `image` crate; a default lossy output that libwebp is missing for is
    /// written lossless, with a note.
    fn encode(&self, e: ImageToEncode<'_>) -> Result<(Vec<u8>, Option<String>), String> {
        let opts = e.options;
        if !opts.quality_given && !opts.webp_lossless_input && version().is_err() {
            let options = EncodeOptions {
                webp_lossless_input: true,
                ..opts
            };
            let (bytes, note) = self.encode(ImageToEncode { options, ..e })?;
            let missing = format!("libwebp is not installed ({INSTALL}), so the WebP was written lossless; with it, gblur writes quality {DEFAULT_QUALITY}");
            let note = note.map_or(missing.clone(), |n| format!("{n}; {missing}"));
            return Ok((bytes, Some(note)));
        }
        match opts.webp_quality() {
            Some(quality) => encode_lossy(e.image, quality, e.icc).map(|bytes| (bytes, None)),
            None => plain::encode(ImageFormat::WebP, e),
        }
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
        metadata::into_webp(bytes, blobs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// A WebP file of `chunks` (name, payload length), payloads zero.
    fn file(chunks: &[(&[u8; 4], u32)]) -> Vec<u8> {
        let mut out = b"RIFF\0\0\0\0WEBP".to_vec();
        for (name, len) in chunks {
            out.extend_from_slice(*name);
            out.extend_from_slice(&len.to_le_bytes());
            out.resize(out.len() + (*len as usize).next_multiple_of(2), 0);
        }
        out
    }

    #[test]
    fn a_vp8l_image_is_lossless_after_any_chunks_before_it() {
        let lossless = |bytes: Vec<u8>| is_lossless(&mut Cursor::new(bytes));
        assert!(lossless(file(&[(b"VP8L", 10)])));
        assert!(lossless(file(&[
            (b"VP8X", 10),
            (b"ICCP", 3),
            (b"VP8L", 10)
        ])));
        assert!(!lossless(file(&[(b"VP8 ", 10)])));
        assert!(!lossless(file(&[
            (b"VP8X", 10),
            (b"ALPH", 5),
            (b"VP8 ", 10)
        ])));
        assert!(!lossless(file(&[
            (b"VP8X", 10),
            (b"ANIM", 6),
            (b"ANMF", 40)
        ])));
        // An animation whose first frame is lossless (its header, then a VP8L chunk).
        let mut frame = file(&[(b"VP8X", 10), (b"ANIM", 6)]);
        frame.extend_from_slice(b"ANMF\x1c\0\0\0");
        frame.extend_from_slice(&[0; 16]);
        frame.extend_from_slice(b"VP8L\x04\0\0\0\0\0\0\0");
        assert!(lossless(frame));
        assert!(!lossless(file(&[(b"VP8X", 10)])), "no image chunk");
        assert!(!lossless(b"RIFF\0\0\0\0WEBX".to_vec()));
        assert!(!lossless(Vec::new()));
    }
}
