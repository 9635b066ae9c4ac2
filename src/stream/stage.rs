//! The blur stage's two ends, whichever engine blurs: `Feed` hands out the decoder's rows into
//! the blur's own buffers, and `Sink` hands blurred rows to the encoder, each counting its
//! copies as the stage's busy time (not its waits).

use super::{DecodedBatch, Stop};
use crate::progress::RowsBar;
use crossbeam_channel::{Receiver, Sender};
use std::time::{Duration, Instant};

/// The decoder's batches, read as one stream of samples.
pub struct Feed<T> {
    input: Receiver<DecodedBatch<T>>,
    /// Where read batches go back to the decoder, for its next one.
    back: Sender<Vec<T>>,
    batch: Vec<T>,
    at: usize,
    pub copies: Duration,
}

impl<T: Copy> Feed<T> {
    pub fn new((input, back): (Receiver<DecodedBatch<T>>, Sender<Vec<T>>)) -> Self {
        Feed {
            input,
            back,
            batch: Vec::new(),
            at: 0,
            copies: Duration::ZERO,
        }
    }

    /// Fills `dst` with the next samples (whole rows, as the caller asks for them).
    pub fn fill(&mut self, dst: &mut [T]) -> Result<(), Stop> {
        let mut filled = 0;
        while filled < dst.len() {
            if self.at == self.batch.len() {
                let next = match self.input.recv() {
                    Ok(Ok(b)) => b,
                    Ok(Err(e)) => return Err(Stop::Failed(e)),
                    Err(_) => return Err(Stop::Gone),
                };
                // The decoder's next batch goes into this one's memory.
                let _ = self.back.try_send(std::mem::replace(&mut self.batch, next));
                self.at = 0;
            }
            let t = Instant::now();
            let n = (dst.len() - filled).min(self.batch.len() - self.at);
            dst[filled..filled + n].copy_from_slice(&self.batch[self.at..self.at + n]);
            (filled, self.at) = (filled + n, self.at + n);
            self.copies += t.elapsed();
        }
        Ok(())
    }
}

/// The encoder's channel, with the progress bar the rows advance.
pub struct Sink<'a, T> {
    output: Sender<Vec<T>>,
    /// Buffers the encoder has written out, for the next strip.
    spare: Receiver<Vec<T>>,
    bar: &'a mut RowsBar,
    /// The most bytes of blurred rows sent at once (`budget::piece_bytes`): the channel and
    /// the buffers coming back hold a few such pieces, which a whole strip or band each (up
    /// to hundreds of MiB at a large sigma) would make the job's largest cost.
    piece_bytes: usize,
    pub copies: Duration,
}

impl<'a, T: Copy> Sink<'a, T> {
    pub fn new(
        (output, spare, bar): (Sender<Vec<T>>, Receiver<Vec<T>>, &'a mut RowsBar),
        piece_bytes: usize,
    ) -> Self {
        Sink {
            output,
            spare,
            bar,
            piece_bytes,
            copies: Duration::ZERO,
        }
    }

    /// Sends a copy of `rows` (whole rows) to the encoder, in pieces of at most
    /// `piece_bytes` (at least a row).
    pub fn emit(&mut self, rows: &[T]) -> Result<(), Stop> {
        let row = self.bar.stride.max(1);
        let piece = (self.piece_bytes / (row * size_of::<T>())).max(1) * row;
        for rows in rows.chunks(piece) {
            let t = Instant::now();
            let mut owned = self.spare.try_recv().unwrap_or_default();
            owned.clear();
            owned.extend_from_slice(rows);
            self.copies += t.elapsed();
            self.output.send(owned).map_err(|_| Stop::Gone)?;
            self.bar.advance(rows.len());
        }
        Ok(())
    }
}
