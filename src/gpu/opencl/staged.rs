//! Arrays to and from the device through pinned staging slots, in chunks, at the bus's rate.
//!
//! A driver copies ordinary (pageable) host memory through a buffer of its own, at a fraction
//! of the bus's rate (on an H200 host: 7.6 GB/s up and 14.8 down from pageable memory, 54 both
//! ways from page-locked). So an array goes up as chunks: the host's cores fill a pinned slot
//! with the next chunk (converting, extending: `HostSide::fill`) while the copy engine moves
//! the previous slot; it comes down the same way, each chunk's slot emptied on every core
//! (`HostSide::drain`) while the next chunks are on the bus. The context keeps its slots
//! between calls, so only its first array pays for pinning them. A side that already lies in
//! the context's page-locked memory (`lanes`), sample for sample, skips the slots: the copy
//! engine reads or writes it whole, and the device looks for NaN and infinity in an input
//! that no fill looked at.

use super::pinned::Pinned;
use super::{ClContext, ClError, Timed};
use crate::report::{Pass, PassKind};
use opencl3::memory::Buffer;
use opencl3::types::CL_NON_BLOCKING;
use rayon::prelude::*;

/// Bytes of a chunk unless a caller asks for fewer: large enough that a chunk's command costs
/// the driver little beside its copy, small enough that the first chunk's fill, alone on the
/// critical path, is short.
pub const SLOT_BYTES: usize = 16 << 20;

/// The most bytes a caller may ask a chunk to hold.
pub const LARGEST_SLOT: usize = 64 << 20;

/// Slots in flight: one filled or drained by the host while the others are on the bus.
const SLOTS: usize = 3;

/// Samples per host work item inside a slot.
pub const PIECE: usize = 1 << 15;

/// The host's side of a staged transfer: what goes up, and where what comes back goes.
pub trait HostSide: Sync {
    /// Writes samples `first..first + out.len()` of the device's array into `out`; called
    /// on every core at once, for pieces of a chunk.
    fn fill(&self, first: usize, out: &mut [f32]);
    /// Takes samples `first..first + samples.len()` of the device's array as they arrive,
    /// a chunk a call, in order (spreading its work over the cores itself).
    fn drain(&mut self, first: usize, samples: &[f32]);
    /// The device's whole array (every sample from the first, in order) where it already
    /// lies in page-locked memory of the context (`ClContext::page_locked`): the copy engine
    /// reads it there, with no fill (and the device looks for NaN and infinity in it). None:
    /// filled. A side that is a part of another array's (`volume`'s slabs) keeps None.
    fn locked_source(&self) -> Option<&[f32]> {
        None
    }
    /// Where the device's whole array lands (every sample from the first, in order), where
    /// that is page-locked memory of the context: the copy engine writes it there, with no
    /// drain. None: drained.
    fn locked_target(&mut self) -> Option<&mut [f32]> {
        None
    }
    /// The device found a NaN or an infinity in the `locked_source` array, which no fill
    /// looked at.
    fn found_non_finite(&self) {}
    /// The samples of the device's array of `len` that come back (`drain` takes these
    /// alone): all of them, unless the side is a part of a larger array whose margins only
    /// feed its own samples (`volume`'s slabs).
    fn wanted(&self, len: usize) -> std::ops::Range<usize> {
        0..len
    }
    /// Whether `drain` writes where `fill` reads (an array blurred in place): a slab's own
    /// samples then land over the margin the next slab has still to read, which `volume`
    /// keeps first.
    fn drains_over_its_input(&self) -> bool {
        true
    }
}

/// A transfer made of chunks: their commands, for the report.
pub struct Chunked {
    name: &'static str,
    chunks: Vec<Timed>,
    bytes: u64,
}

impl Chunked {
    fn new(name: &'static str, len: usize) -> Self {
        Chunked {
            name,
            chunks: Vec::new(),
            bytes: len as u64 * 4,
        }
    }

    /// The transfer as one pass: its chunks' device time together. Read once the queue has
    /// finished.
    pub fn into_pass(self, ctx: &ClContext) -> Result<Pass, ClError> {
        let mut ms = 0.0;
        for c in &self.chunks {
            ms += c
                .device_ms()
                .map_err(|e| ctx.api_error("reading profiling counters", e))?;
        }
        Ok(Pass::device(
            self.name.into(),
            PassKind::Transfer,
            ms,
            self.bytes,
        ))
    }
}

impl ClContext {
    /// The context's staging slots, each of at least `bytes` (made on first use, and again
    /// for larger chunks); None where the driver cannot pin them (the callers then go by
    /// pageable memory).
    fn slots(&self, bytes: usize) -> Option<std::cell::RefMut<'_, Vec<Pinned>>> {
        let mut slots = self.staging.borrow_mut();
        if slots.len() == SLOTS && slots.iter().all(|s| s.len() >= bytes) {
            return Some(slots);
        }
        // All of them or none: a driver that pins some and then refuses leaves no mixture.
        slots.clear();
        let made: Vec<Pinned> = (0..SLOTS)
            .map(|_| self.pinned(bytes.max(SLOT_BYTES)).ok())
            .collect::<Option<_>>()?;
        *slots = made;
        Some(slots)
    }

    /// Uploads `len` f32 samples into `buf` from its start, as `host.fill` makes them. With `chunk` samples per
    /// slot at most (`SLOT_BYTES / 4` as a rule, `LARGEST_SLOT / 4` at most). Returns once every chunk
    /// has left its slot.
    pub fn upload_staged(
        &self,
        buf: &mut Buffer<f32>,
        len: usize,
        host: &dyn HostSide,
        chunk: usize,
    ) -> Result<Chunked, ClError> {
        self.upload_chunks(buf, len, host, chunk)
            .inspect_err(|_| self.settle())
    }

    /// `download_staged`'s and `upload_staged`'s way out of a failure: no command of theirs
    /// may still be moving a slot when the next call fills or reads it.
    fn settle(&self) {
        let _ = self.finish();
    }

    fn upload_chunks(
        &self,
        buf: &mut Buffer<f32>,
        len: usize,
        host: &dyn HostSide,
        chunk: usize,
    ) -> Result<Chunked, ClError> {
        let chunk = chunk.clamp(1, LARGEST_SLOT / 4).min(len.max(1));
        let mut sent = Chunked::new("upload", len);
        if let Some(samples) = host.locked_source() {
            assert_eq!(samples.len(), len, "a locked source is the whole array");
            sent.chunks.extend(self.upload_locked(buf, samples, host)?);
            return Ok(sent);
        }
        let Some(mut slots) = self.slots(chunk * 4) else {
            let mut whole = vec![0f32; len];
            fill_in_pieces(0, &mut whole, |f, p| host.fill(f, p));
            sent.chunks.push(self.write(buf, &whole, "upload")?);
            self.finish()?;
            return Ok(sent);
        };
        for (i, first) in (0..len).step_by(chunk).enumerate() {
            let n = chunk.min(len - first);
            if i >= SLOTS {
                // The slot's previous chunk must be on the device before it is refilled.
                sent.chunks[i - SLOTS]
                    .event
                    .wait()
                    .map_err(|e| self.api_error("uploading", e))?;
            }
            let slot = &mut slots[i % SLOTS].as_f32_mut()[..n];
            fill_in_pieces(first, slot, |f, p| host.fill(f, p));
            // SAFETY: the slot stays allocated with the context and is not written again
            // before this command's event has completed (waited on above, or by the queue's
            // order for a download into it).
            let event = unsafe {
                self.queue()
                    .enqueue_write_buffer(buf, CL_NON_BLOCKING, first * 4, slot, &[])
            }
            .map_err(|e| self.api_error("uploading", e))?;
            sent.chunks.push(Timed {
                name: "upload".into(),
                event,
            });
        }
        // The slots are free again once their last chunks are on the device: a call that
        // comes next may refill them at once.
        for c in sent.chunks.iter().rev().take(SLOTS) {
            c.event.wait().map_err(|e| self.api_error("uploading", e))?;
        }
        Ok(sent)
    }

    /// Downloads the samples of `buf` (of `len`) that `host` wants back, handing each chunk
    /// to `host.drain` as it arrives, while the next chunks are on the bus. Returns when every
    /// sample has been drained.
    pub fn download_staged(
        &self,
        buf: &Buffer<f32>,
        len: usize,
        host: &mut dyn HostSide,
        chunk: usize,
    ) -> Result<Chunked, ClError> {
        self.download_chunks(buf, len, host, chunk)
            .inspect_err(|_| self.settle())
    }

    fn download_chunks(
        &self,
        buf: &Buffer<f32>,
        len: usize,
        host: &mut dyn HostSide,
        chunk: usize,
    ) -> Result<Chunked, ClError> {
        let wanted = host.wanted(len);
        let chunk = chunk.clamp(1, LARGEST_SLOT / 4).min(wanted.len().max(1));
        let mut got = Chunked::new("download", wanted.len());
        if let Some(samples) = host.locked_target() {
            assert_eq!(samples.len(), len, "a locked target is the whole array");
            assert_eq!(wanted, 0..len, "a locked target takes every sample");
            got.chunks.push(self.read(buf, samples, "download")?);
            return Ok(got);
        }
        let Some(mut slots) = self.slots(chunk * 4) else {
            let mut whole = vec![0f32; len];
            got.chunks.push(self.read(buf, &mut whole, "download")?);
            host.drain(wanted.start, &whole[wanted]);
            return Ok(got);
        };
        let end = wanted.end;
        let starts: Vec<usize> = wanted.step_by(chunk).collect();
        let enqueue = |slots: &mut Vec<Pinned>, i: usize| -> Result<Timed, ClError> {
            let first = starts[i];
            let slot = &mut slots[i % SLOTS].as_f32_mut()[..chunk.min(end - first)];
            // SAFETY: the slot is not read before this command's event has completed
            // (waited on below), and not refilled before it has been drained.
            let event = unsafe {
                self.queue()
                    .enqueue_read_buffer(buf, CL_NON_BLOCKING, first * 4, slot, &[])
            }
            .map_err(|e| self.api_error("downloading", e))?;
            Ok(Timed {
                name: "download".into(),
                event,
            })
        };
        for i in 0..starts.len().min(SLOTS) {
            let t = enqueue(&mut slots, i)?;
            got.chunks.push(t);
        }
        for i in 0..starts.len() {
            got.chunks[i]
                .event
                .wait()
                .map_err(|e| self.api_error("downloading", e))?;
            let first = starts[i];
            let n = chunk.min(end - first);
            host.drain(first, &slots[i % SLOTS].as_f32()[..n]);
            if i + SLOTS < starts.len() {
                let t = enqueue(&mut slots, i + SLOTS)?;
                got.chunks.push(t);
            }
        }
        Ok(got)
    }
}

impl ClContext {
    /// Uploads `samples`, in the context's page-locked memory, into `buf` in one command,
    /// and has the device look for NaN and infinity in them (which no fill did), telling
    /// `host` where it finds one. Returns once both are done, with both commands (the look
    /// is part of the upload's time in the report: the slots' fills look as they copy).
    fn upload_locked(
        &self,
        buf: &mut Buffer<f32>,
        samples: &[f32],
        host: &dyn HostSide,
    ) -> Result<[Timed; 2], ClError> {
        let up = self.write_blocking(buf, samples, "upload")?;
        let flag = self.clear_flag()?;
        let look = self.flag_non_finite((buf, 0), samples.len(), &flag)?;
        let mut found = [0u32];
        self.read(&flag, &mut found, "finite check")?;
        if found[0] != 0 {
            host.found_non_finite();
        }
        Ok([up, look])
    }
}

/// Samples `first..first + out.len()` into `out` by `fill`, in pieces of `PIECE` on every core.
pub fn fill_in_pieces(first: usize, out: &mut [f32], fill: impl Fn(usize, &mut [f32]) + Sync) {
    out.par_chunks_mut(PIECE)
        .enumerate()
        .for_each(|(p, piece)| fill(first + p * PIECE, piece));
}
