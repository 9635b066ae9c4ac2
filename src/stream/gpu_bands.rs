//! The strip engine's blur on a GPU, for images larger than the host budget or the device's
//! memory: the image goes up in bands of rows, each with `reach` rows of the image above and
//! below it, is blurred in place by the blocked 8-bit pipeline with clamped edges, and the
//! band's own rows come back. The recursive filter started `reach` rows outside a band has
//! forgotten its start by the band's first row (weights beyond the reach are under 5e-5,
//! `gaussian::recursive_reach`), so bands join without a seam; at the image's own edges the
//! clamp is the image's.
//!
//! Each band's upload, blur and download are queued without a wait (`upload::InPlaceU8`), and
//! the host reads the next band's rows from the decoder while the device works through them.

use super::stage::{Feed, Sink};
use super::{Stop, StreamSample};
use crate::backend::Device;
use crate::filter::Blur2d;
use crate::gpu::upload::InPlaceU8;
use crate::report::{Pass, Stage};
use std::time::Instant;

/// Rows per band and the rows of reach above and below it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BandPlan {
    pub band: usize,
    pub reach: usize,
}

/// The fewest rows a band may have: fewer would spend most of the device's work on reach.
const LEAST_BAND: usize = 16;

impl BandPlan {
    /// Bands of an image `height` rows of `row_bytes` (8-bit samples) with `reach` rows each side, as many rows
    /// as fit twice in `host_budget` bytes (the rows held from the decoder and the band's copy
    /// the device blurs in place) and on the device, whose blocked pipeline holds the band's
    /// bytes and an f32 copy (5 bytes a sample) in buffers of at most `device_alloc` bytes.
    /// `forced` (a test hook) sets the band's rows. None where not even `LEAST_BAND` rows (or
    /// the image's `height`) fit.
    pub fn new(
        (row_bytes, height): (usize, usize),
        reach: usize,
        (host_budget, device_alloc): (u64, u64),
        forced: Option<usize>,
    ) -> Option<BandPlan> {
        let row = row_bytes.max(1) as u64;
        let by_host = host_budget / (2 * row);
        let by_device = device_alloc / (4 * row);
        let rows = by_host.min(by_device) as usize;
        let band = forced.unwrap_or(rows.saturating_sub(2 * reach));
        let fits = band >= LEAST_BAND.min(height) || forced.is_some();
        fits.then_some(BandPlan {
            band: band.clamp(1, height.max(1)),
            reach: reach.min(height),
        })
    }

    /// Host bytes the bands hold for rows of `row_bytes`.
    pub fn bytes(&self, row_bytes: usize) -> u64 {
        2 * ((self.band + 2 * self.reach) * row_bytes) as u64
    }
}

/// Blurs the image (`w`×`h` pixels of `channels` 8-bit samples) in bands on `device`, from
/// `feed` to `sink`. Returns the device's passes (summed over the bands) and the stage's busy
/// time in ms (the device's work as its events time it, and the host's copies).
pub fn blur_bands<T: StreamSample>(
    device: &Device,
    (w, h, channels): (usize, usize, usize),
    (blur, linear): (&Blur2d, bool),
    plan: BandPlan,
    (mut feed, mut sink): (Feed<T>, Sink<T>),
) -> Result<(Vec<Pass>, f64), Stop> {
    let row = w * channels;
    let (ctx, pipeline) = (&device.ctx, device.pipeline);
    let mut passes: Vec<Pass> = Vec::new();
    let mut band_copies = 0.0;
    // Input rows `held_from..` of the image, as read from the decoder.
    let (mut held, mut held_from) = (Vec::<T>::new(), 0usize);
    let mut band = Vec::<T>::new();
    let span = |y0: usize| {
        let y1 = (y0 + plan.band).min(h);
        (y0.saturating_sub(plan.reach), y1, (y1 + plan.reach).min(h))
    };
    let mut read_to = |held: &mut Vec<T>, held_from: usize, end: usize| {
        let at = held.len();
        held.resize((end - held_from) * row, T::from_f32(0.0));
        feed.fill(&mut held[at..])
    };
    read_to(&mut held, 0, span(0).2)?;
    let mut y0 = 0;
    while y0 < h {
        let (top, y1, bottom) = span(y0);
        let t = Instant::now();
        band.clear();
        band.extend_from_slice(&held[(top - held_from) * row..(bottom - held_from) * row]);
        band_copies += t.elapsed().as_secs_f64() * 1e3;
        let dims = (w, bottom - top, channels);
        let bytes = T::as_bytes_mut(&mut band).expect("the device takes 8-bit bands only");
        let mut images = InPlaceU8::new(ctx, bytes.len(), pipeline).map_err(Stop::Device)?;
        images
            .add(bytes, dims, blur, linear, "")
            .map_err(Stop::Device)?;
        // While the device works: drop the rows no later band reads, read the next band's.
        let (next_top, _, next_bottom) = span(y1);
        if y1 < h {
            let t = Instant::now();
            held.drain(..(next_top - held_from) * row);
            held_from = next_top;
            band_copies += t.elapsed().as_secs_f64() * 1e3;
            read_to(&mut held, held_from, next_bottom)?;
        }
        add_up(&mut passes, images.finish().map_err(Stop::Device)?);
        sink.emit(&band[(y0 - top) * row..(y1 - top) * row])?;
        y0 = y1;
    }
    let copies = (feed.copies + sink.copies).as_secs_f64() * 1e3 + band_copies;
    passes.push(Pass::host_ms(Stage::Blur, "band copies", copies));
    let busy = passes.iter().map(|p| p.ms).sum();
    Ok((passes, busy))
}

/// Adds each of `band`'s passes to the pass of the same name in `all` (a new one the first
/// time), so that the report shows the whole image's upload, kernels and download.
fn add_up(all: &mut Vec<Pass>, band: Vec<Pass>) {
    for pass in band {
        match all.iter_mut().find(|p| p.name == pass.name) {
            Some(sum) => {
                sum.ms += pass.ms;
                sum.bytes += pass.bytes;
            }
            None => all.push(pass),
        }
    }
}
