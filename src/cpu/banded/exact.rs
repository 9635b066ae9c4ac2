//! The strip engine's exact two-pass method, for a filter whose reach makes the sliding
//! window (`window`) too large for the memory budget: σ in the hundreds on a wide image.
//!
//! The window needs `reach` rows below each strip because it starts the anticausal column
//! filter there from a guess. This method starts it from the true state instead, which the
//! first pass computes and stores:
//!
//! 1. *Summaries*, streaming the image once: the state at every `strip`-th row boundary is
//!    `S(t) = T^strip S(t + strip) + Z(t)` (block-parallel filtering's summaries, Nehab et al.
//!    2011, as the whole-image blur's pass 1 uses them): `Z(t)` is the weighted sum of the
//!    `strip` rows below `t`, which needs only those rows (`strip + 1` held), and the last
//!    boundary's state is the walk up from the bottom edge. Once the last row is in, the
//!    states are carried up from the bottom, each in place of its `Z`.
//! 2. *The window*, streaming the image again, with one row of reach: each strip's bottom band
//!    starts from its stored state instead of a guess, so the result is the whole-image blur's
//!    (the same recursion in a different order of sums: f32 rounding apart).
//!
//! Memory (`two_pass_bytes`): the window of `strip + 1` rows, its band scratch and boundary
//! states (`StripPlan::bytes`), plus 16 bytes per sample column for each of the
//! `(height − 1) / strip` stored states. The strip is chosen to make the sum least, about
//! `4 √height` rows: a 32768² RGB image at 8 bits needs about 200 MiB whatever sigma is.

use super::columns::{start_carry, strip_chunks, Walk, STRIP};
use super::samples::{Pixels, Rows, Sample};
use super::sections::{Coef, Sections};
use super::summaries::{weighted_sums, BandSums};
use super::window::StripPlan;
use super::{Axis, BAND_ROWS, BOUNDARY, CARRY, CHUNK, VECS};
use crate::cpu::lanes::{Isa, V};
use crate::simd_dispatch;
use rayon::prelude::*;
use std::time::Instant;

/// The anticausal column filter's exact state at every `strip`-th row of an image, as the
/// first pass leaves them for the second.
pub struct ColumnStates {
    strip: usize,
    /// Per boundary `k · strip` (k = 1, 2, …, below the image's last row), every chunk's
    /// `BOUNDARY` fields, chunk after chunk.
    states: Vec<V>,
    per_boundary: usize,
}

impl ColumnStates {
    /// The states at row `row` (a multiple of the strip, inside the image).
    pub(super) fn at(&self, row: usize) -> &[V] {
        debug_assert!(row > 0 && row.is_multiple_of(self.strip));
        let b = row / self.strip - 1;
        &self.states[b * self.per_boundary..][..self.per_boundary]
    }

    pub fn strip(&self) -> usize {
        self.strip
    }
}

/// Row boundaries the first pass stores for an image `height` rows tall in strips of `strip`.
fn boundaries(height: usize, strip: usize) -> usize {
    height.saturating_sub(1) / strip
}

/// The bytes of the stored states for rows of `row_samples` samples.
fn states_bytes(row_samples: usize, height: usize, strip: usize) -> u64 {
    let padded = row_samples.div_ceil(CHUNK) * CHUNK;
    (boundaries(height, strip) * padded * 16) as u64
}

/// The method's memory for an image `height` rows of `row_samples` samples of
/// `sample_bytes` each, in strips of `plan.strip` (the module doc).
pub fn two_pass_bytes(
    plan: StripPlan,
    (row_samples, sample_bytes): (usize, usize),
    height: usize,
) -> u64 {
    plan.bytes(row_samples, sample_bytes, height) + states_bytes(row_samples, height, plan.strip)
}

/// The two-pass plan for an image `height` rows of `row_samples` samples of `sample_bytes`:
/// the multiple of 128 rows that needs the least memory; `rows` forces the strip (rounded up
/// to 16, or to 128 from 128 up).
pub fn two_pass_plan(
    (row_samples, sample_bytes): (usize, usize),
    height: usize,
    rows: Option<usize>,
) -> StripPlan {
    let plan = |strip| StripPlan { strip, reach: 1 };
    if let Some(rows) = rows {
        return plan(StripPlan::new((row_samples, sample_bytes), 1, 0, Some(rows)).strip);
    }
    let bytes = |strip| two_pass_bytes(plan(strip), (row_samples, sample_bytes), height);
    let tallest = height.next_multiple_of(BAND_ROWS).max(BAND_ROWS);
    let strip = (BAND_ROWS..=tallest)
        .step_by(BAND_ROWS)
        .min_by_key(|&s| bytes(s))
        .expect("one strip at least");
    plan(strip)
}

/// Pass 1: reads a `width`×`height` image of interleaved samples from `fill` (whole rows, top
/// to bottom) and returns the anticausal column states at every `strip`-th row, with the time
/// the sums took in ms (not the reads). Stops at `fill`'s first error.
pub fn summarise_streamed<T: Sample, E>(
    (width, height): (usize, usize),
    px: &Pixels,
    ky: Axis,
    strip: usize,
    mut fill: impl FnMut(&mut [T]) -> Result<(), E>,
) -> Result<(ColumnStates, f64), E> {
    let stride = width * px.channels;
    let chunks = stride.div_ceil(CHUNK);
    let per_boundary = chunks * BOUNDARY;
    let count = boundaries(height, strip);
    let mut out = ColumnStates {
        strip,
        states: vec![V::ZERO; count * per_boundary],
        per_boundary,
    };
    if stride == 0 || height == 0 {
        return Ok((out, 0.0));
    }
    let ky = ky.form::<T>();
    let sums = BandSums::new(ky, strip);
    let k = match T::EXACT {
        true => Coef::differences(ky),
        false => Coef::new(ky),
    };
    let per_strip = strip_chunks(chunks);
    let mut carry = vec![V::ZERO; chunks * CARRY];
    let mut data = vec![T::from_f32(0.0); (strip + 1).min(height) * stride];
    let mut ms = 0.0;
    let (mut top, mut held) = (0, 0);
    while top < height {
        let want = (strip + 1).min(height - top);
        fill(&mut data[held * stride..want * stride])?;
        let t = Instant::now();
        let window = Rows {
            data: &data[..want * stride],
            stride,
            height: want,
        };
        if top == 0 {
            for (i, c) in carry.chunks_exact_mut(CARRY).enumerate() {
                start_carry(window, 0, i * CHUNK, px, c);
            }
        } else {
            // The last boundary's state is the walk from the bottom edge; every other one
            // starts as the weighted sum of the strip below it.
            let walk = top == count * strip;
            let b = top / strip - 1;
            out.states[b * per_boundary..][..per_boundary]
                .par_chunks_mut(per_strip * BOUNDARY)
                .zip(carry.par_chunks(per_strip * CARRY))
                .enumerate()
                .for_each(|(s, (out, carry))| {
                    let _flush = crate::cpu::lanes::FlushSubnormals::new(true);
                    strip_sums(window, s * per_strip, px, (&k, &sums), (carry, out), walk);
                });
        }
        ms += t.elapsed().as_secs_f64() * 1e3;
        let n = strip.min(height - top);
        data.copy_within(n * stride..want * stride, 0);
        (top, held) = (top + n, want - n);
    }
    let t = Instant::now();
    for b in (0..count.saturating_sub(1)).rev() {
        let (this, below) = out.states[b * per_boundary..].split_at_mut(per_boundary);
        this.par_chunks_mut(BOUNDARY)
            .zip(below[..per_boundary].par_chunks(BOUNDARY))
            .for_each(|(z, s)| carry_up(&sums, s, z));
    }
    ms += t.elapsed().as_secs_f64() * 1e3;
    Ok((out, ms))
}

/// One strip of chunks (from chunk `c0`) of a pass-1 window: into `out` (`BOUNDARY` fields per
/// chunk) the state the walk from the bottom edge leaves at the window's top row where
/// `walk`, else the weighted sum of rows `1 ..= strip` that the window's top row takes from
/// below. The direct form's column offsets are the chunks' in `carry`.
#[inline(always)]
fn strip_sums_impl<T: Sample, I: Isa>(
    img: Rows<T>,
    c0: usize,
    px: &Pixels,
    (k, sums): (&Coef, &BandSums),
    (carry, out): (&[V], &mut [V]),
    walk: bool,
) {
    let n = out.len() / BOUNDARY;
    let offsets = |i: usize| -> [V; VECS] {
        carry[i * CARRY + 4 * VECS..][..VECS]
            .try_into()
            .expect("VECS offsets")
    };
    if walk {
        for i in 0..n {
            let j0 = (c0 + i) * CHUNK;
            let mut w = Walk::from_bottom::<T>(img, j0, px, k, offsets(i));
            w.up::<T, I, false>(img, 0..img.height, j0, px, k, (&mut [], 0));
            for (v, s) in w.st.iter().enumerate() {
                s.save(&mut out[i * BOUNDARY..][..BOUNDARY], v);
            }
        }
        return;
    }
    let mut x0 = [[V::ZERO; VECS]; STRIP];
    for (i, o) in x0[..n].iter_mut().enumerate() {
        // The difference form's first input is the difference from the window's top row.
        *o = match T::EXACT {
            true => img.load(0, (c0 + i) * CHUNK, px),
            false => offsets(i),
        };
    }
    let mut z = [[[V::ZERO; 4]; VECS]; STRIP];
    weighted_sums::<T, I>(img, 0, c0, px, sums, &mut x0, &mut z[..n]);
    for (i, z) in z[..n].iter().enumerate() {
        for (v, z) in z.iter().enumerate() {
            let s = Sections {
                w: [z[0], z[2]],
                d: [z[1], z[3]],
            };
            s.save(&mut out[i * BOUNDARY..][..BOUNDARY], v);
        }
    }
}

simd_dispatch!(fn strip_sums<T: Sample>(img: Rows<T>, c0: usize, px: &Pixels, k: (&Coef, &BandSums), out: (&[V], &mut [V]), walk: bool) => strip_sums_impl);

/// One chunk's state at a boundary from its weighted sum `z` (replaced) and the state `below`
/// at the next boundary down, carried across the strip between them.
#[inline(always)]
fn carry_up_impl<I: Isa>(sums: &BandSums, below: &[V], z: &mut [V]) {
    for v in 0..VECS {
        let mut s = Sections::restore(below, v);
        let own = Sections::restore(z, v);
        sums.carry_across::<I>(&mut s, &[own.w[0], own.d[0], own.w[1], own.d[1]]);
        s.save(z, v);
    }
}

simd_dispatch!(fn carry_up<>(sums: &BandSums, below: &[V], z: &mut [V]) => carry_up_impl);
