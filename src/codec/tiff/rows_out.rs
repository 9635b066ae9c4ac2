//! TIFF rows out: strips of about 1 MiB written as the rows arrive, through the same writer
//! as the whole-image encoder (`codec::tiff::write`: uncompressed, with the ICC profile, alpha
//! declared unassociated); BigTIFF where the pixels alone come near the classic format's
//! 4 GiB of offsets. Into a temporary file renamed over the output once complete.

use super::write::{Layout, Strips, BIG_OVER, STRIP_BYTES};
use crate::codec::rows::{all_rows, encode_error, Batches, RowSample, RowsOf};
use crate::codec::{self, ImageIoError};
use crate::fault::env_number;
use std::io::{Seek, Write};
use std::path::Path;
use std::time::{Duration, Instant};
use tiff::encoder::{TiffEncoder, TiffKind};
use tiff::TiffResult;

/// Test hook: `GBLUR_BIGTIFF_OVER=N` writes BigTIFF above N bytes of pixels instead.
const BIG_OVER_VAR: &str = "GBLUR_BIGTIFF_OVER";

/// Test hook: `GBLUR_TIFF_STRIP_BYTES=N` aims at strips of N bytes instead, so that a small
/// image's strips end inside the blur's batches.
const STRIP_BYTES_VAR: &str = "GBLUR_TIFF_STRIP_BYTES";

/// Writes the image in strips of whole rows as the batches arrive (each of whole rows);
/// returns the samples written (fewer than the image's where the rows stopped early).
fn write_image<T: RowSample, W: Write + Seek, K: TiffKind>(
    e: &mut TiffEncoder<W, K>,
    layout: Layout,
    (rows, back): &Batches<T>,
    busy: &mut Duration,
) -> TiffResult<usize> {
    let t = Instant::now();
    let strip_bytes = env_number(STRIP_BYTES_VAR).unwrap_or(STRIP_BYTES);
    let rows_per_strip = layout.rows_per_strip::<T>(strip_bytes);
    let mut image = Strips::<W, K, T>::new(e, layout, rows_per_strip)?;
    let whole = rows_per_strip as usize * layout.row();
    let mut strip: Vec<T> = Vec::with_capacity(whole);
    let mut done = 0;
    *busy += t.elapsed();
    for batch in rows.iter() {
        let t = Instant::now();
        let mut rest = &batch[..];
        while !rest.is_empty() {
            let due = image.next_strip_samples();
            if due == 0 {
                break;
            }
            if strip.is_empty() && rest.len() >= due {
                // A whole strip in the batch goes out from it, not through a copy.
                image.write(&rest[..due])?;
                rest = &rest[due..];
                done += due;
                continue;
            }
            let take = (due - strip.len()).min(rest.len());
            strip.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            done += take;
            if strip.len() == due {
                image.write(&strip)?;
                strip.clear();
            }
        }
        // The blur's next strip goes into this one's memory.
        let _ = back.try_send(batch);
        *busy += t.elapsed();
    }
    let t = Instant::now();
    if image.next_strip_samples() == 0 {
        image.finish()?;
    }
    *busy += t.elapsed();
    Ok(done)
}

/// Writes the rows `rows` delivers (batches of whole rows, top to bottom) as a TIFF at `path`,
/// atomically: nothing is renamed over `path` unless every row arrived and was written.
/// Returns the time spent writing, not waiting.
pub fn write<T: RowSample>(
    path: &Path,
    replace: codec::Replace,
    layout: Layout,
    rows: Batches<T>,
) -> Result<Duration, ImageIoError> {
    let encode_err = encode_error(path, "Tiff");
    let t = Instant::now();
    let tmp = codec::temp_beside(path)?;
    let _removed_on_ctrl_c = crate::interrupt::writing(tmp.path());
    let pixel_bytes = (layout.row() * layout.height as usize * std::mem::size_of::<T>()) as u64;
    let big_over = env_number(BIG_OVER_VAR).unwrap_or(BIG_OVER);
    let mut busy = t.elapsed();
    // Unbuffered: the strips go out in writes of about 1 MiB, and an error in a buffer's
    // final flush would go unseen when the encoder drops it.
    let file = tmp.as_file();
    let written = if pixel_bytes > big_over {
        TiffEncoder::new_big(file).and_then(|mut e| write_image(&mut e, layout, &rows, &mut busy))
    } else {
        TiffEncoder::new(file).and_then(|mut e| write_image(&mut e, layout, &rows, &mut busy))
    };
    let done = written.map_err(|e| encode_err(e.to_string()))?;
    all_rows(
        done,
        RowsOf {
            row: layout.row(),
            height: layout.height,
        },
    )
    .map_err(&encode_err)?;
    let t = Instant::now();
    codec::persist_with(tmp, path, replace)?;
    Ok(busy + t.elapsed())
}
