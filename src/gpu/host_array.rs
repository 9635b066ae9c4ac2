//! The host's side of an N-D array's staged transfers (`opencl::staged`): which sample of the
//! host's array (or which edge constant) fills each sample of the device's array, and where
//! each sample coming back goes. The device's array is the host's extended by `pads[k]`
//! samples at both ends of each axis k as that axis's edge mode says; filling the staging
//! slots from the host's samples extends and converts in the same walk, and draining them
//! crops and rounds, so no extended copy is made on the host.

use super::opencl::staged::{HostSide, PIECE};
use super::opencl::ClContext;
use crate::cpu::axis::footprint::piece_finite;
use crate::cpu::axis::{AxisFilter, Element};
use crate::filter::EdgeMode;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// A host array of `shape` and the device's extension of it.
pub struct Extended<'a, S, D> {
    input: &'a [S],
    output: &'a mut [D],
    shape: Vec<usize>,
    /// Each axis's extension.
    pads: Vec<Pad>,
    /// The device's shape.
    padded: Vec<usize>,
    /// Whether a sample staged so far was NaN or infinite (`fill` looks at every piece it
    /// writes, in the core's cache, instead of a pass over the input of its own).
    non_finite: AtomicBool,
    /// Whether the input and the output are f32 in the context's page-locked memory with
    /// nothing extended: the copy engine reads or writes them there (`locked_in`).
    locked: (bool, bool),
}

/// One axis's extension on the device: `by` samples at both ends (0: none) as `mode` says,
/// `cval` where the mode is a constant.
#[derive(Clone, Copy, Debug)]
pub struct Pad {
    pub by: usize,
    pub mode: EdgeMode,
    pub cval: f32,
}

impl Pad {
    pub const NONE: Pad = Pad {
        by: 0,
        mode: EdgeMode::Clamp,
        cval: 0.0,
    };

    /// The extension an axis's filter needs on the device (none for an axis left alone).
    pub(crate) fn of(axis: Option<&AxisFilter>) -> Pad {
        match axis {
            Some(a) => Pad {
                by: a.pad(),
                mode: a.edge,
                cval: a.cvals[0],
            },
            None => Pad::NONE,
        }
    }
}

impl<'a, S: Element, D: Element> Extended<'a, S, D> {
    /// `input` and `output` of `shape` (the same length, not empty), the device's array
    /// extended by `pads`, one per axis. A sample outside along several axes takes the
    /// extension of the last of them, as extending one axis after another gives it.
    pub fn new(input: &'a [S], output: &'a mut [D], shape: &[usize], pads: Vec<Pad>) -> Self {
        assert_eq!(input.len(), output.len(), "input and output sizes");
        assert_eq!(input.len(), shape.iter().product::<usize>(), "array size");
        assert!(!input.is_empty(), "an array with samples");
        assert_eq!(pads.len(), shape.len(), "a pad per axis");
        let padded = shape.iter().zip(&pads).map(|(n, p)| n + 2 * p.by).collect();
        Extended {
            input,
            output,
            shape: shape.to_vec(),
            pads,
            padded,
            non_finite: AtomicBool::new(false),
            locked: (false, false),
        }
    }

    /// Notes which of the input and the output lie in page-locked memory of `ctx`
    /// (`ClContext::is_page_locked`): where such a side is f32 and nothing is extended, the
    /// copy engine reads or writes it there itself (`HostSide::locked_source`,
    /// `locked_target`).
    pub fn locked_in(mut self, ctx: &ClContext) -> Self {
        let whole = self.padded == self.shape;
        self.locked = (
            whole && S::as_f32(self.input).is_some_and(|s| ctx.is_page_locked(s)),
            whole && D::as_f32_mut(self.output).is_some_and(|d| ctx.is_page_locked(d)),
        );
        self
    }

    /// Whether a staged sample was NaN or infinite: an input sample, or an edge constant.
    pub fn staged_non_finite(&self) -> bool {
        self.non_finite.load(Ordering::Relaxed)
    }

    /// The device's shape.
    pub fn padded_shape(&self) -> &[usize] {
        &self.padded
    }

    fn row_len(&self) -> usize {
        *self.padded.last().expect("rank ≥ 1")
    }

    /// Device row `q` (a line along the last axis) as the host's row index; where an axis
    /// puts it outside, the constant of the last such axis (Err).
    fn host_row(&self, q: usize) -> Result<usize, f32> {
        let r = self.shape.len();
        let (mut rest, mut row, mut scale) = (q, 0, 1);
        let mut outside = None;
        for k in (0..r - 1).rev() {
            let (m, n, pad) = (self.padded[k], self.shape[k], self.pads[k]);
            let i = rest % m;
            rest /= m;
            let src = match pad.by {
                0 => i,
                by => match pad.mode.source(i as i64 - by as i64, n as i64) {
                    Some(s) => s,
                    None => {
                        // Axes are walked last first: the first constant met is the last.
                        outside.get_or_insert(pad.cval);
                        0
                    }
                },
            };
            row += src * scale;
            scale *= n;
        }
        outside.map_or(Ok(row), Err)
    }

    /// Device row `q` as the host's row index where it is one of the host's own rows (None
    /// in an extension along some axis).
    fn own_row(&self, q: usize) -> Option<usize> {
        let r = self.shape.len();
        let (mut rest, mut row, mut scale) = (q, 0, 1);
        for k in (0..r - 1).rev() {
            let (m, n, by) = (self.padded[k], self.shape[k], self.pads[k].by);
            let i = rest % m;
            rest /= m;
            let src = i.checked_sub(by).filter(|&s| s < n)?;
            row += src * scale;
            scale *= n;
        }
        Some(row)
    }
}

impl<S: Element, D: Element> HostSide for Extended<'_, S, D> {
    fn fill(&self, first: usize, out: &mut [f32]) {
        self.fill_extended(first, out);
        if !piece_finite(out) {
            self.non_finite.store(true, Ordering::Relaxed);
        }
    }

    fn locked_source(&self) -> Option<&[f32]> {
        self.locked.0.then(|| S::as_f32(self.input)).flatten()
    }

    fn locked_target(&mut self) -> Option<&mut [f32]> {
        self.locked.1.then(|| D::as_f32_mut(self.output)).flatten()
    }

    fn found_non_finite(&self) {
        self.non_finite.store(true, Ordering::Relaxed);
    }

    /// The input and the output are two arrays (borrowed apart): a drain never lands on
    /// samples a fill is still to read.
    fn drains_over_its_input(&self) -> bool {
        false
    }

    fn drain(&mut self, first: usize, samples: &[f32]) {
        if self.padded == self.shape {
            self.output[first..first + samples.len()]
                .par_chunks_mut(PIECE)
                .zip(samples.par_chunks(PIECE))
                .for_each(|(d, s)| store(d, s));
            return;
        }
        let (m, n) = (self.row_len(), *self.shape.last().expect("rank ≥ 1"));
        let pad = self.pads.last().expect("rank ≥ 1").by;
        // The device rows this chunk touches, each as (host sample, chunk samples): disjoint
        // and in order, so the output splits into their pieces for every core.
        let mut pieces: Vec<(usize, &[f32])> = Vec::new();
        let mut at = 0;
        while at < samples.len() {
            let (q, c0) = ((first + at) / m, (first + at) % m);
            let take = (m - c0).min(samples.len() - at);
            let chunk = &samples[at..at + take];
            at += take;
            let Some(row) = self.own_row(q) else {
                continue;
            };
            // Columns pad..pad + n of the device row are the host's.
            let (a, b) = (c0.max(pad), (c0 + take).min(pad + n));
            if a < b {
                pieces.push((row * n + a - pad, &chunk[a - c0..b - c0]));
            }
        }
        let mut rest: &mut [D] = &mut self.output[..];
        let mut offset = 0;
        let mut outs: Vec<(&mut [D], &[f32])> = Vec::with_capacity(pieces.len());
        for (start, src) in pieces {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(start - offset);
            let (dst, tail) = tail.split_at_mut(src.len());
            outs.push((dst, src));
            rest = tail;
            offset = start + src.len();
        }
        // Rows of a few samples each would be work items too small to pay for themselves.
        let rows_per_item = (PIECE / n.max(1)).max(1);
        outs.into_par_iter()
            .with_min_len(rows_per_item)
            .for_each(|(dst, src)| store(dst, src));
    }
}

impl<S: Element, D: Element> Extended<'_, S, D> {
    /// `HostSide::fill`: the device's samples `first..` from the host's, extended.
    fn fill_extended(&self, first: usize, out: &mut [f32]) {
        if self.padded == self.shape {
            load(out, &self.input[first..first + out.len()]);
            return;
        }
        let (m, n) = (self.row_len(), *self.shape.last().expect("rank ≥ 1"));
        let last = *self.pads.last().expect("rank ≥ 1");
        let (pad, mode) = (last.by, last.mode);
        let mut at = 0;
        while at < out.len() {
            let (q, c0) = ((first + at) / m, (first + at) % m);
            let take = (m - c0).min(out.len() - at);
            let dst = &mut out[at..at + take];
            at += take;
            let row = match self.host_row(q) {
                Ok(row) => row,
                Err(cval) => {
                    // A constant row; the last axis's own constant outside it, where it has one.
                    for (c, d) in (c0..c0 + take).zip(dst.iter_mut()) {
                        let own = mode.source(c as i64 - pad as i64, n as i64).is_some();
                        *d = if own { cval } else { last.cval };
                    }
                    continue;
                }
            };
            let src = &self.input[row * n..(row + 1) * n];
            // The host's own columns in one run, the extension on either side by its mode.
            let (a, b) = (c0.max(pad).min(c0 + take), (c0 + take).min(pad + n).max(c0));
            let (a, b) = (a, b.max(a));
            if a < b {
                load(&mut dst[a - c0..b - c0], &src[a - pad..b - pad]);
            }
            let outside = (c0..a).chain(b..c0 + take);
            for c in outside {
                dst[c - c0] = match mode.source(c as i64 - pad as i64, n as i64) {
                    Some(s) => src[s].load(),
                    None => last.cval,
                };
            }
        }
    }
}

/// `src` rounded into `dst` as the host rounds it; f32 into f32 as a memory copy
/// (`copy_from_slice`): on the H200 host the downloads beside the slots' drain moved 54 GB/s
/// at 512³ against 46–48 beside the element loop.
fn store<D: Element>(dst: &mut [D], src: &[f32]) {
    if let Some(dst) = D::as_f32_mut(dst) {
        dst.copy_from_slice(src);
        return;
    }
    for (d, &v) in dst.iter_mut().zip(src) {
        *d = D::store(v);
    }
}

/// `src` as f32 into `dst` (of the same length); f32 as a memory copy.
fn load<S: Element>(dst: &mut [f32], src: &[S]) {
    if let Some(src) = S::as_f32(src) {
        dst.copy_from_slice(src);
        return;
    }
    for (d, s) in dst.iter_mut().zip(src) {
        *d = s.load();
    }
}

/// A host array of f32 that the device's array is, sample for sample: copied up from it and
/// back into it.
pub struct Same<'a>(pub &'a mut [f32]);

impl HostSide for Same<'_> {
    fn fill(&self, first: usize, out: &mut [f32]) {
        out.copy_from_slice(&self.0[first..first + out.len()]);
    }

    fn drain(&mut self, first: usize, samples: &[f32]) {
        self.0[first..first + samples.len()]
            .par_chunks_mut(PIECE)
            .zip(samples.par_chunks(PIECE))
            .for_each(|(d, s)| d.copy_from_slice(s));
    }
}
