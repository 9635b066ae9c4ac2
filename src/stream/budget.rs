//! The strip engine's memory, counted so that the whole job's peak resident memory stays
//! within `--max-memory`: the process as it stands (measured), what the codecs and the rows in
//! flight hold beside the blur (estimated here, from each reader's and writer's buffers, with
//! the figures measured on the 2-core machine at 16–64 MiB), and the blur's window or bands
//! in what is left. A job whose codecs and smallest window cannot fit is refused in one line
//! that gives the least budget it needs.

use super::{Rows, StripJob, DECODE_ROWS};
use crate::codec::rows::RowsOutCost;

/// Decoded batches alive at once: two queued, one being decoded, one being read into the
/// window, and the spare buffers that come back (up to four).
const DECODED_BATCHES: u64 = 8;

/// Pieces of blurred rows alive at once: one queued, one being written, one being filled, and
/// the two spare buffers that come back.
const EMITTED_PIECES: u64 = 5;

/// What each codec holds besides rows: zlib's window and tables, libjpeg's and the `tiff`
/// crate's buffers, buffered file I/O (1 MiB writers), and the allocator's slack.
const CODEC_FIXED: u64 = 2 << 20;

/// The bytes of blurred rows sent to the encoder at once (at least a row): large enough that
/// the channel's traffic costs nothing beside the copies, small enough that the few pieces
/// alive are little memory at any budget.
pub(super) const PIECE_BYTES: u64 = 1 << 20;

/// What the engine holds beside the blur's window for `rows` going into `job`'s output, its
/// samples `sample_bytes` wide, with `stripes` JPEG stripes encoded at once.
pub(super) fn beside_window(job: &StripJob, rows: &Rows, sample_bytes: u64, stripes: u64) -> u64 {
    let row = rows.row_samples() as u64 * sample_bytes;
    let piece = PIECE_BYTES.max(row);
    let in_flight = DECODED_BATCHES * DECODE_ROWS as u64 * row + EMITTED_PIECES * piece;
    let decoder = rows.0.held_bytes();
    let cost = RowsOutCost {
        row,
        piece,
        jpeg_stripes: stripes,
        tiff: job.tiff.resolve(rows.tiff_compression()).0.compression(),
    };
    let encoder = crate::codec::of(job.format).rows_out_bytes(&cost);
    in_flight + decoder + encoder + 2 * CODEC_FIXED
}

/// The blur's share of `job`'s budget beside a process holding `resident` bytes and the
/// codecs and rows in flight holding `beside`.
pub(super) fn blur_share(job: &StripJob, resident: u64, beside: u64) -> u64 {
    let budget = job.max_memory_mib.saturating_mul(1 << 20);
    budget
        .saturating_sub(crate::memory::margin(budget))
        .saturating_sub(resident)
        .saturating_sub(beside)
}

/// The least budget, in MiB, whose share holds `window` bytes beside `resident` and `beside`.
pub(super) fn least_budget_mib(resident: u64, beside: u64, window: u64) -> u64 {
    crate::memory::least_budget_mib(resident + beside + window)
}
