//! The strip engine's blur on a GPU, for images larger than the host budget or the device's
//! memory: the image goes up in bands of rows, each with `reach` rows of the image above and
//! below it, is blurred in place by the blocked 8-bit pipeline with clamped edges, and the
//! band's own rows come back. The recursive filter started `reach` rows outside a band has
//! forgotten its start by the band's first row (weights beyond the reach are under 5e-5,
//! `gaussian::recursive_reach`), so bands join without a seam; at the image's own edges the
//! clamp is the image's.
//!
//! Each band's upload, blur and download are queued without a wait (`upload::InPlaceU8`), from
//! and into page-locked memory, and the host reads the next band's rows from the decoder
//! while the device works through them.

use super::stage::{Feed, Sink};
use super::{Stop, StreamSample};
use crate::backend::Device;
use crate::filter::Blur2d;
use crate::gpu::opencl::pinned::Pinned;
use crate::gpu::upload::InPlaceU8;
use crate::report::{Pass, Stage};
use std::ops::Range;
use std::time::{Duration, Instant};

/// Rows per band and the rows of reach above and below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BandPlan {
    pub band: usize,
    pub reach: usize,
}

/// The fewest rows a band may have, and at least twice the reach: the device then blurs at
/// most twice the image's rows (a 1 GP image at sigma 50 in bands of 33 rows takes 2.5 times
/// the Rust path's time on an H200 host).
const LEAST_BAND: usize = 16;

impl BandPlan {
    /// Bands of an image `height` rows of `row_bytes` (8-bit samples) with `reach` rows each
    /// side, as many rows as fit three times in `host_budget` bytes (`blur_bands`' page-locked
    /// buffers) and on the device, whose blocked pipeline holds the band's
    /// bytes and an f32 copy (5 bytes a sample) in buffers of at most `device_alloc` bytes.
    /// `forced` (a test hook) sets the band's rows. None where not even `LEAST_BAND` rows and
    /// twice the reach (or the image's `height`) fit.
    pub fn new(
        (row_bytes, height): (usize, usize),
        reach: usize,
        host_budget: u64,
        device_alloc: u64,
        forced: Option<usize>,
    ) -> Option<BandPlan> {
        let row = row_bytes.max(1) as u64;
        let by_host = host_budget / (3 * row);
        let by_device = device_alloc / (4 * row);
        let rows = by_host.min(by_device) as usize;
        let band = forced.unwrap_or(rows.saturating_sub(2 * reach));
        let least = LEAST_BAND.max(2 * reach).min(height);
        let fits = band >= least || forced.is_some();
        fits.then_some(BandPlan {
            band: band.clamp(1, height.max(1)),
            reach: reach.min(height),
        })
    }

    /// Host bytes the bands hold for rows of `row_bytes`.
    pub fn bytes(&self, row_bytes: usize) -> u64 {
        3 * ((self.band + 2 * self.reach) * row_bytes) as u64
    }
}

/// Blurs the image (`w`×`h` pixels of `channels` 8-bit samples) in bands on `device`, from
/// `feed` to `sink`. Returns the device's passes (summed over the bands), the stage's busy
/// time in ms (the device's work as its events time it, and the host's copies) and a note on
/// how long the device held a band: the rest of the time it waits for the host.
///
/// Two page-locked buffers take turns holding a band's rows and its reach: the device reads
/// one while the host copies the reach the next band shares into the other and reads the
/// decoder's next rows after it; a third takes the blurred band back.
pub fn blur_bands<T: StreamSample>(
    device: &Device,
    (w, h, channels): (usize, usize, usize),
    blur: &Blur2d,
    linear: bool,
    plan: BandPlan,
    (mut feed, mut sink): (Feed<T>, Sink<T>),
) -> Result<(Vec<Pass>, f64, Option<String>), Stop> {
    let row = w * channels;
    let (ctx, pipeline) = (&device.ctx, device.pipeline);
    let most = (plan.band + 2 * plan.reach).min(h) * row;
    let pinned = || ctx.pinned(most).map_err(Stop::Device);
    let (mut this, mut next, mut out) = (pinned()?, pinned()?, pinned()?);
    let span = |y0: usize| {
        let y1 = (y0 + plan.band).min(h);
        (y0.saturating_sub(plan.reach), y1, (y1 + plan.reach).min(h))
    };
    let mut passes: Vec<Pass> = Vec::new();
    let (mut bands, mut on_device) = (0, 0);
    let mut shared_copies = Duration::ZERO;
    let (_, _, bottom) = span(0);
    feed.fill(rows_of(&mut this, 0..bottom, row))?;
    let mut y0 = 0;
    while y0 < h {
        let (top, y1, bottom) = span(y0);
        let len = (bottom - top) * row;
        let mut images = InPlaceU8::new(ctx, len, pipeline).map_err(Stop::Device)?;
        let (source, blurred) = (&this.as_slice()[..len], &mut out.as_mut_slice()[..len]);
        images
            .add_from(source, blurred, (w, bottom - top, channels), blur, linear)
            .map_err(Stop::Device)?;
        // While the device works: the next band's rows, those it shares with this one first.
        if y1 < h {
            let (next_top, _, next_bottom) = span(y1);
            let t = Instant::now();
            let shared = (next_top - top) * row..len;
            let kept = shared.len() / row;
            next.as_mut_slice()[..shared.len()].copy_from_slice(&this.as_slice()[shared]);
            shared_copies += t.elapsed();
            feed.fill(rows_of(&mut next, kept..next_bottom - next_top, row))?;
        }
        let (band, (start, end)) = images.finish_spanned().map_err(Stop::Device)?;
        crate::report::add_up(&mut passes, band);
        (bands, on_device) = (bands + 1, on_device + end.saturating_sub(start));
        // To the encoder (in pieces, so that the rows in flight stay small beside the bands).
        sink.emit(rows_of::<T>(&mut out, y0 - top..y1 - top, row))?;
        std::mem::swap(&mut this, &mut next);
        y0 = y1;
    }
    let copies = feed.copies + sink.copies + shared_copies;
    Ok(bands_report(passes, copies, bands, on_device))
}

/// The passes of `bands` bands with the host's `copies` added, their busy time, and a note of
/// the nanoseconds the bands spent `on_device`.
fn bands_report(
    mut passes: Vec<Pass>,
    copies: Duration,
    bands: usize,
    on_device: u64,
) -> (Vec<Pass>, f64, Option<String>) {
    let ms = copies.as_secs_f64() * 1e3;
    passes.push(Pass::host_ms(Stage::Blur, "copies in and out", ms));
    let busy = passes.iter().map(|p| p.ms).sum();
    let note = format!(
        "device bands: {bands} bands, each on the device from its upload's start to its download's end, {:.0} ms in all",
        on_device as f64 * 1e-6
    );
    (passes, busy, Some(note))
}

/// Rows `rows` of `pinned` (rows of `row` 8-bit samples) as samples of `T`.
fn rows_of<T: StreamSample>(pinned: &mut Pinned, rows: Range<usize>, row: usize) -> &mut [T] {
    let bytes = &mut pinned.as_mut_slice()[rows.start * row..rows.end * row];
    T::from_bytes_mut(bytes).expect("the device takes 8-bit bands only")
}
