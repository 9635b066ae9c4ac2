//! TIFF rows out: strips of about 1 MiB through the `tiff` crate's encoder as the rows arrive,
//! uncompressed and with the ICC profile, as the whole-image encoder writes them; BigTIFF
//! where the pixels alone come near the classic format's 4 GiB of offsets. Into a temporary
//! file renamed over the output once complete.

use super::{all_rows, encode_error, env_number, Batches};
use crate::codec::{self, ImageIoError};
use std::io::{Seek, Write};
use std::path::Path;
use std::time::{Duration, Instant};
use tiff::encoder::{colortype, TiffEncoder, TiffKind, TiffValue};
use tiff::tags::Tag;
use tiff::TiffResult;

/// Pixel bytes above which the output is BigTIFF: a classic TIFF's offsets are 32-bit, and
/// the directory and tags come after the pixels.
const BIG_OVER: u64 = (4 << 30) - (16 << 20);

/// Test hook: `GBLUR_BIGTIFF_OVER=N` writes BigTIFF above N bytes of pixels instead.
const BIG_OVER_VAR: &str = "GBLUR_BIGTIFF_OVER";

/// Strip size aimed at: large enough that the per-strip tags stay small, small enough that a
/// strip is little memory beside the blur's window.
const STRIP_BYTES: u64 = 1 << 20;

/// Test hook: `GBLUR_TIFF_STRIP_BYTES=N` aims at strips of N bytes instead, so that a small
/// image's strips end inside the blur's batches.
const STRIP_BYTES_VAR: &str = "GBLUR_TIFF_STRIP_BYTES";

/// What the TIFF is to hold besides its rows.
pub struct TiffHeader<'a> {
    pub size: (u32, u32),
    pub channels: usize,
    pub icc: Option<&'a [u8]>,
}

/// The TIFF layouts of one sample type: gray, RGB and RGBA.
pub trait TiffSample: Copy + Sized {
    /// Writes `header`'s image into `e` from the rows `rows` delivers; returns the samples
    /// written (fewer than the image's where the rows stopped early).
    fn write<W: Write + Seek, K: TiffKind>(
        e: &mut TiffEncoder<W, K>,
        header: &TiffHeader,
        rows: &Batches<Self>,
        busy: &mut Duration,
    ) -> TiffResult<usize>;
}

macro_rules! tiff_sample {
    ($t:ty, $gray:ty, $rgb:ty, $rgba:ty) => {
        impl TiffSample for $t {
            fn write<W: Write + Seek, K: TiffKind>(
                e: &mut TiffEncoder<W, K>,
                header: &TiffHeader,
                rows: &Batches<Self>,
                busy: &mut Duration,
            ) -> TiffResult<usize> {
                match header.channels {
                    1 => write_image::<$gray, W, K>(e, header, rows, busy),
                    3 => write_image::<$rgb, W, K>(e, header, rows, busy),
                    _ => write_image::<$rgba, W, K>(e, header, rows, busy),
                }
            }
        }
    };
}

tiff_sample!(u8, colortype::Gray8, colortype::RGB8, colortype::RGBA8);
tiff_sample!(u16, colortype::Gray16, colortype::RGB16, colortype::RGBA16);

/// Writes the image in strips of whole rows as the batches arrive (each of whole rows).
fn write_image<C: colortype::ColorType, W: Write + Seek, K: TiffKind>(
    e: &mut TiffEncoder<W, K>,
    header: &TiffHeader,
    (rows, back): &Batches<C::Inner>,
    busy: &mut Duration,
) -> TiffResult<usize>
where
    [C::Inner]: TiffValue,
    C::Inner: Copy,
{
    let t = Instant::now();
    let (w, h) = header.size;
    let row = w as usize * header.channels;
    let row_bytes = (row * std::mem::size_of::<C::Inner>()) as u64;
    let strip_bytes = env_number(STRIP_BYTES_VAR).unwrap_or(STRIP_BYTES);
    let rows_per_strip = (strip_bytes / row_bytes.max(1)).clamp(1, h as u64) as usize;
    let mut image = e.new_image::<C>(w, h)?;
    image.rows_per_strip(rows_per_strip as u32)?;
    if let Some(icc) = header.icc {
        image.encoder().write_tag(Tag::IccProfile, icc)?;
    }
    // Samples in a whole strip and in the image.
    let (whole, total) = (rows_per_strip * row, row * h as usize);
    let mut strip: Vec<C::Inner> = Vec::with_capacity(whole);
    let mut done = 0;
    *busy += t.elapsed();
    for batch in rows.iter() {
        let t = Instant::now();
        let mut rest = &batch[..];
        while !rest.is_empty() {
            if strip.is_empty() && rest.len() >= whole {
                // A whole strip in the batch goes out from it, not through a copy.
                image.write_strip(&rest[..whole])?;
                rest = &rest[whole..];
                done += whole;
                continue;
            }
            let take = (whole - strip.len()).min(rest.len());
            strip.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            done += take;
            if strip.len() == whole || done == total {
                image.write_strip(&strip)?;
                strip.clear();
            }
        }
        // The blur's next strip goes into this one's memory.
        let _ = back.try_send(batch);
        *busy += t.elapsed();
    }
    let t = Instant::now();
    if done == total {
        image.finish()?;
    }
    *busy += t.elapsed();
    Ok(done)
}

/// Writes the rows `rows` delivers (batches of whole rows, top to bottom) as a TIFF at `path`,
/// atomically: nothing is renamed over `path` unless every row arrived and was written.
/// Returns the time spent writing, not waiting.
pub fn write<T: TiffSample>(
    path: &Path,
    header: TiffHeader,
    rows: Batches<T>,
) -> Result<Duration, ImageIoError> {
    let encode_err = encode_error(path, "Tiff");
    let t = Instant::now();
    let tmp = codec::temp_beside(path)?;
    let _removed_on_ctrl_c = crate::interrupt::writing(tmp.path());
    let (w, h) = header.size;
    let pixel_bytes = w as u64 * h as u64 * (header.channels * std::mem::size_of::<T>()) as u64;
    let big_over = env_number(BIG_OVER_VAR).unwrap_or(BIG_OVER);
    let mut busy = t.elapsed();
    // Unbuffered: the strips go out in writes of about 1 MiB, and an error in a buffer's
    // final flush would go unseen when the encoder drops it.
    let file = tmp.as_file();
    let written = if pixel_bytes > big_over {
        TiffEncoder::new_big(file).and_then(|mut e| T::write(&mut e, &header, &rows, &mut busy))
    } else {
        TiffEncoder::new(file).and_then(|mut e| T::write(&mut e, &header, &rows, &mut busy))
    };
    let done = written.map_err(|e| encode_err(e.to_string()))?;
    all_rows(done, (w as usize * header.channels, h)).map_err(&encode_err)?;
    let t = Instant::now();
    codec::persist(tmp, path)?;
    Ok(busy + t.elapsed())
}
