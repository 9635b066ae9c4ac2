//! libjpeg (libjpeg-turbo's C library, compiled by the `mozjpeg` crate) as a whole:
//! recovering a damaged file as libjpeg-based tools do (`recover`), so that a corrupt segment
//! costs the rows it damages, not the rest of the picture, and the report says so; whether its
//! SIMD code is in; and a file's header segments, read without its pixels.

pub use super::errors::{run, strict_errors};
use super::errors::{tolerant_errors, WARNINGS};
use image::{DynamicImage, GrayImage, RgbImage};
use mozjpeg_sys::J_COLOR_SPACE;
use std::io::{self, BufRead};
use std::os::raw::c_int;

extern "C" {
    /// libjpeg-turbo's SIMD dispatcher: nonzero where its SIMD inverse DCT runs on this CPU;
    /// always zero in a build without its SIMD code (`jsimd_none.c`, what the `mozjpeg` crate
    /// compiles where `nasm` is missing).
    fn jsimd_can_idct_islow() -> c_int;
}

/// Whether libjpeg runs its SIMD code here: false where it was built without (no `nasm` at
/// build time: every JPEG decode and encode then runs in plain C) or
/// where the CPU has none of its instruction sets.
pub fn has_simd() -> bool {
    // SAFETY: a query without arguments; libjpeg-turbo detects the CPU once, thread-safely.
    unsafe { jsimd_can_idct_islow() != 0 }
}

/// The most header bytes (everything before the first scan: tables, ICC, EXIF, XMP) read to
/// learn the image's size and metadata.
const MOST_HEADER_BYTES: usize = 64 << 20;

/// A damaged JPEG's pixels as libjpeg recovers them (rows it cannot decode come out gray,
/// the rows after the next restart marker or scan decode again), with libjpeg's warnings, the
/// first of which is what the report quotes. Gray and colour (YCbCr or RGB) files only; an
/// error for anything libjpeg cannot read at all, or over `max_bytes`.
pub fn recover(bytes: &[u8], max_bytes: u64) -> Result<(DynamicImage, Vec<String>), String> {
    WARNINGS.with(|w| w.borrow_mut().clear());
    let decoded = run(|| {
        let decompress = mozjpeg::Decompress::with_err(tolerant_errors()).from_mem(bytes)?;
        let (w, h) = (decompress.width(), decompress.height());
        let gray = match decompress.color_space() {
            J_COLOR_SPACE::JCS_GRAYSCALE => true,
            J_COLOR_SPACE::JCS_YCbCr | J_COLOR_SPACE::JCS_RGB => false,
            other => {
                return Err(io::Error::other(format!(
                    "a damaged {other:?} file, which gblur does not recover"
                )))
            }
        };
        let channels = if gray { 1 } else { 3 };
        if (w * h * channels) as u64 > max_bytes {
            return Err(io::Error::other("over the memory limit"));
        }
        let (w32, h32) = (w as u32, h as u32);
        if gray {
            let mut started = decompress.grayscale()?;
            let pixels = started.read_scanlines::<u8>()?;
            started.finish()?;
            Ok(GrayImage::from_raw(w32, h32, pixels).map(DynamicImage::from))
        } else {
            let mut started = decompress.rgb()?;
            let pixels = started.read_scanlines::<[u8; 3]>()?;
            started.finish()?;
            Ok(RgbImage::from_raw(w32, h32, pixels.into_flattened()).map(DynamicImage::from))
        }
    })?;
    let warnings = WARNINGS.with(|w| std::mem::take(&mut *w.borrow_mut()));
    let image = decoded.ok_or("libjpeg returned fewer rows than its header declares")?;
    Ok((image, warnings))
}

/// The bytes from a JPEG's start to the end of its first scan header: every segment the
/// header and metadata are read from (stray bytes between segments left out). An error where
/// the bytes are not a JPEG, end first, or hold more than `MOST_HEADER_BYTES` of them.
pub fn header_segments(file: &mut impl BufRead) -> image::ImageResult<Vec<u8>> {
    let bad =
        |what: &str| image::ImageError::IoError(io::Error::new(io::ErrorKind::InvalidData, what));
    let mut head = vec![0u8; 2];
    file.read_exact(&mut head)?;
    if head != [0xFF, 0xD8] {
        return Err(bad("not a JPEG (no start-of-image marker)"));
    }
    loop {
        let mut marker = [0u8; 2];
        file.read_exact(&mut marker[..1])?;
        // Bytes between segments are skipped, as libjpeg skips them (with a warning).
        let mut skipped = 0;
        while marker[0] != 0xFF {
            skipped += 1;
            if head.len() + skipped > MOST_HEADER_BYTES {
                return Err(bad("no marker in its first 64 MiB"));
            }
            file.read_exact(&mut marker[..1])?;
        }
        file.read_exact(&mut marker[1..])?;
        while marker[1] == 0xFF {
            // Fill bytes before a marker.
            file.read_exact(&mut marker[1..])?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// CI builds with `nasm` (`.ci/run` installs it) on x86-64 machines with AVX2: libjpeg's
    /// SIMD must be in, or every JPEG path would silently run in plain C.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn libjpeg_runs_its_simd_code() {
        assert!(
            has_simd() || !std::arch::is_x86_feature_detected!("sse2"),
            "libjpeg was built without its SIMD code: install nasm, then cargo clean -p mozjpeg-sys"
        );
    }

    /// A JPEG with restart markers every row of MCUs, and the same file with a stretch of one
    /// restart interval's entropy-coded data overwritten.
    fn damaged_pair() -> (Vec<u8>, Vec<u8>) {
        let img = RgbImage::from_fn(64, 64, |x, y| {
            image::Rgb([(x * 4) as u8, (y * 4) as u8, 90])
        });
        let good = crate::codec::jpeg::encode(
            img.as_raw(),
            (64, 64),
            crate::codec::jpeg::JpegColor::Rgb,
            crate::codec::jpeg::JpegSettings {
                quality: 90,
                chroma: crate::codec::jpeg::Chroma::S444,
            },
            None,
        )
        .unwrap();
        let mut bad = good.clone();
        let sos = bad.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
        let from = sos + 40;
        for b in &mut bad[from..from + 30] {
            *b = 0x5A;
        }
        (good, bad)
    }

    #[test]
    fn a_damaged_file_is_recovered_with_its_warnings_and_a_sound_one_without() {
        let (good, bad) = damaged_pair();
        let (image, warnings) = recover(&good, 1 << 30).unwrap();
        assert_eq!((image.width(), image.height()), (64, 64));
        assert!(warnings.is_empty(), "{warnings:?}");
        let (image, warnings) = recover(&bad, 1 << 30).unwrap();
        assert_eq!((image.width(), image.height()), (64, 64));
        assert!(!warnings.is_empty());
        assert!(recover(&good[..100], 1 << 30).is_err());
        assert!(recover(&good, 100).is_err(), "over the memory limit");
    }
}
