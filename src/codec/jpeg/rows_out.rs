//! JPEG rows out: the restart stripes the whole-image encoder writes (`codec::jpeg`), each
//! encoded once its rows have arrived, as many at once as the rayon pool has threads (within
//! the memory budget), and joined into a temporary file renamed over the output once
//! complete. The same pixels give the same bytes as the whole-image path: the ICC profile in
//! the first stripe's header, EXIF and XMP after its JFIF segment.

use crate::codec::jpeg::{encode_stripe, JpegColor, JpegSettings, StripePlan};
use crate::codec::metadata::{self, Metadata};
use crate::codec::rows::{all_rows, encode_error, Batches, RowSample, RowsOf};
use crate::codec::{self, ImageIoError};
use image::ImageFormat;
use rayon::prelude::*;
use std::io::BufWriter;
use std::path::Path;
use std::time::{Duration, Instant};

/// What the JPEG is to hold besides its rows.
pub struct JpegHeader<'a> {
    pub size: (u32, u32),
    pub color: JpegColor,
    pub settings: JpegSettings,
    pub meta: &'a Metadata,
    /// The most stripes held and encoded at once.
    pub stripes_at_once: usize,
}

/// Writes the rows `rows` delivers (batches of whole 8-bit rows, top to bottom) as a JPEG at
/// `path`, atomically: nothing is renamed over `path` unless every row arrived and was
/// written. Returns the time spent encoding and writing, not waiting, and notes on metadata
/// JPEG could not hold.
pub fn write<T: RowSample>(
    path: &Path,
    replace: codec::Replace,
    header: JpegHeader,
    (rows, back): Batches<T>,
) -> Result<(Duration, Vec<String>), ImageIoError> {
    let encode_err = encode_error(path, "Jpeg");
    let t = Instant::now();
    let (width, height) = header.size;
    let settings = header.settings;
    let plan =
        StripePlan::new(header.size, header.color.mcu(settings.chroma)).map_err(&encode_err)?;
    let tmp = codec::temp_beside(path)?;
    let _removed_on_ctrl_c = crate::interrupt::writing(tmp.path());
    let mut joiner = plan.joiner(BufWriter::with_capacity(1 << 20, tmp.as_file()));
    let row_bytes = width as usize * header.color.channels();
    let stripe_bytes = plan.rows_per_stripe() * row_bytes;
    let expected = row_bytes * height as usize;
    let hold = stripe_bytes * header.stripes_at_once.max(1);
    let mut pending: Vec<u8> = Vec::with_capacity(hold);
    let (mut done, mut written, mut notes) = (0usize, 0usize, Vec::new());
    let mut busy = t.elapsed();
    // Encodes and writes the whole stripes in `pending` (and the short last one, at the end).
    let mut flush = |pending: &mut Vec<u8>, last: bool| -> Result<(), ImageIoError> {
        let whole = match last {
            true => pending.len(),
            false => pending.len() / stripe_bytes * stripe_bytes,
        };
        let first = written == 0;
        let encoded = pending[..whole]
            .par_chunks(stripe_bytes)
            .enumerate()
            .map(|(i, rows)| {
                let icc = header.meta.icc.as_deref().filter(|_| first && i == 0);
                encode_stripe(rows, width, header.color, settings, icc)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(&encode_err)?;
        for (i, stripe) in encoded.into_iter().enumerate() {
            let stripe = match first && i == 0 {
                true => {
                    let jpeg = ImageFormat::Jpeg;
                    let (bytes, more) =
                        metadata::embed(stripe, jpeg, header.meta, header.size, path)?;
                    notes.extend(more);
                    bytes
                }
                false => stripe,
            };
            joiner.push(&stripe).map_err(codec::write_error(path))?;
        }
        written += whole;
        pending.drain(..whole);
        Ok(())
    };
    for batch in rows.iter() {
        let t = Instant::now();
        let Some(bytes) = T::as_bytes(&batch) else {
            unreachable!("JPEG is written from 8-bit samples");
        };
        pending.extend_from_slice(bytes);
        done += bytes.len();
        // The blur's next strip goes into this one's memory.
        let _ = back.try_send(batch);
        if pending.len() >= hold || done == expected {
            flush(&mut pending, done == expected)?;
        }
        busy += t.elapsed();
    }
    all_rows(
        done,
        RowsOf {
            row: row_bytes,
            height,
        },
    )
    .map_err(&encode_err)?;
    let t = Instant::now();
    let file = joiner.finish().map_err(codec::write_error(path))?;
    file.into_inner()
        .map_err(|e| codec::write_error(path)(e.into_error()))?;
    codec::persist_with(tmp, path, replace)?;
    Ok((busy + t.elapsed(), notes))
}
