//! Pass 1 of the exact two-pass method (`cpu::banded::exact`): the input decoded once on its
//! own thread into the column states from which pass 2, the streamed job itself, starts each
//! strip's anticausal filter. Then the input is opened again for pass 2.

use super::stage::Feed;
use super::{decode, join, open, DecodedBatch, Opened, Rows, Shape, Stop, StreamSample, StripJob};
use crate::codec::metadata::Metadata;
use crate::codec::ImageIoError;
use crate::cpu::banded::{summarise_streamed, Axis, ColumnStates, Pixels};
use crate::progress::RowsBar;
use crate::report::{Pass, Stage};
use crossbeam_channel::bounded;
use std::fs::File;
use std::path::Path;
use std::time::Instant;

/// What pass 1 left: the states, its passes (the decoder's busy time and the sums') and its
/// wall in ms.
pub(super) struct FirstPass {
    pub states: ColumnStates,
    pub passes: Vec<Pass>,
    pub wall_ms: f64,
}

/// Pass 1 of `job` over `rows` (samples as `px` reads them) in strips of `strip` rows (and
/// the states' temporary file `spill`, where they go to one), the rows counted on `bar`.
pub(super) fn first_pass<T: StreamSample>(
    job: &StripJob,
    rows: Rows,
    px: &Pixels,
    ky: Axis,
    strip: usize,
    spill: Option<File>,
    bar: &mut RowsBar,
) -> Result<FirstPass, ImageIoError> {
    let wall = Instant::now();
    let dims = Shape::of(&rows).dims();
    let (tx, rx) = bounded::<DecodedBatch<T>>(2);
    let (back, spare) = bounded::<Vec<T>>(4);
    let (summed, copies, decode_busy) = std::thread::scope(|s| {
        let decoder = s.spawn(move || decode(rows, (tx, spare)));
        let mut feed = Feed::new((rx, back));
        let fill = |dst: &mut [T]| {
            feed.fill(dst)?;
            bar.advance(dst.len());
            Ok(())
        };
        let summed = summarise_streamed(dims, px, ky, strip, spill, fill);
        let copies = feed.copies;
        // The decoder stops once its channel is gone, where the sums stopped early.
        drop(feed);
        (summed, copies, join(decoder))
    });
    let (states, sums_ms) = match summed {
        Ok(done) => done,
        Err(Stop::Failed(e)) => return Err(e),
        Err(Stop::Spill(e)) => return Err(spill_error(job, e)),
        Err(Stop::Gone | Stop::Device(_)) => {
            unreachable!("the decoder says why it stopped, and no device runs pass 1")
        }
    };
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let passes = vec![
        Pass::host_ms(
            Stage::Decode,
            "decode (pass 1, thread, busy)",
            ms(decode_busy),
        ),
        Pass::host_ms(
            Stage::Blur,
            "column states (y, pass 1)",
            sums_ms + ms(copies),
        ),
    ];
    Ok(FirstPass {
        states,
        passes,
        wall_ms: ms(wall.elapsed()),
    })
}

/// The job's input opened again for pass 2; an error where it is no longer the image pass 1
/// read (`size` and `color`).
pub(super) fn reopen(job: &StripJob, shape: Shape) -> Result<Rows, ImageIoError> {
    match open(job)? {
        Opened::Rows(rows) if Shape::of(&rows) == shape => {
            let mut rows = *rows;
            // The metadata was taken from the first opening for the output.
            rows.header_mut().meta = Metadata::default();
            Ok(rows)
        }
        _ => Err(ImageIoError::Decode {
            path: job.input.into(),
            detail: "the file changed between the two passes of the exact method".into(),
        }),
    }
}

/// An unnamed temporary file for the column states, in the output's folder: the disk that
/// takes the output has room for what it is written from, and an unnamed file goes when the
/// process does, however it ends.
pub(super) fn spill_file(job: &StripJob) -> Result<File, ImageIoError> {
    let folder = match job.output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    tempfile::tempfile_in(folder).map_err(|e| spill_error(job, e))
}

/// A failure of the states' temporary file, as an error of the output it is written for.
pub(super) fn spill_error(job: &StripJob, e: std::io::Error) -> ImageIoError {
    ImageIoError::Write {
        path: job.output.into(),
        cause: std::io::Error::new(e.kind(), format!("a temporary file of column states: {e}")),
    }
}
