//! Pass 1, the column summaries: the anticausal column state at every band boundary, bottom
//! up, as each band's weighted inputs plus the state from below carried across it (Nehab et
//! al. 2011). Its own module: the weights, and how far they reach, are numerics of their own.

use super::columns::{tiles, Strips, Walk, PREFETCH_ROWS, STRIP};
use super::samples::{Pixels, Rows, Sample};
use super::sections::{Coef, Sections};
use super::{BOUNDARY, CARRY, CHUNK, VECS};
use crate::cpu::lanes::simd_dispatch;
use crate::cpu::lanes::{Isa, V};
use crate::filter::gaussian::SECTION_FLOATS;
use rayon::prelude::*;

/// A weight this far below its component's largest moves no f32 state: with the decay past
/// it, the weights left out come to at most 2^-29.8 of all weights' sizes (σ = 0.5–50; a
/// test holds them under 2^-26), far below the sum's own rounding. At small sigma that leaves
/// most of a band out of its sum: σ = 5 weighs 61 of 129 rows.
const NEGLIGIBLE: f32 = 1.0 / (1u64 << 30) as f32;

/// What pass 1 needs beyond the coefficients: the weights of a full band's inputs in the
/// anticausal state it hands up, and per section the transition `T^band` that carries the
/// state from below across the band. The walk up a band from a zero state takes `x[r0 + 1 +
/// j]` at the step of row `r0 + j` and leaves `Σ_j T^j e x[r0 + 1 + j]` at its top, `e = (1,
/// 1)`: input `x[r0 + i]` weighs `T^(i−1) e` (`gaussian::unit_responses`).
pub(super) struct BandSums {
    /// `[wa, da, wb, db]` weights of the band's inputs `x[r0 + i]`, `i = 1 ..= band`.
    pub(super) weights: Vec<[f32; 4]>,
    /// How many of `weights` count: past them every weight is below `NEGLIGIBLE` of its
    /// component's largest, so the inputs they weigh change no f32 state.
    pub(super) reach: usize,
    /// `T^band` of each section, row-major, splatted.
    across: [[V; 4]; 2],
}

impl BandSums {
    pub(super) fn new(c: &[f32; 2 * SECTION_FLOATS], band: usize) -> Self {
        let weights = crate::filter::gaussian::unit_responses(c, band - 1)
            .iter()
            .map(|w| w.map(|v| v as f32))
            .collect::<Vec<[f32; 4]>>();
        let largest: [f32; 4] =
            std::array::from_fn(|f| weights.iter().map(|w| w[f].abs()).fold(0.0, f32::max));
        let reach = 1 + weights
            .iter()
            .rposition(|w| (0..4).any(|f| w[f].abs() > NEGLIGIBLE * largest[f]))
            .unwrap_or(0);
        let across = crate::filter::gaussian::block_transition(c, band)
            .map(|t| t.map(|v| V::splat(v as f32)));
        BandSums {
            weights,
            reach,
            across,
        }
    }

    /// Carries boundary state `s` up across a band: its transition `T^band` plus the band's
    /// own weighted inputs `z` (`weighted_sums`).
    #[inline(always)]
    pub(super) fn carry_across<I: Isa>(&self, s: &mut Sections, z: &[V; 4]) {
        for f in 0..2 {
            let t = &self.across[f];
            let (w, d) = (s.w[f], s.d[f]);
            s.w[f] = V::madd::<I>(t[0], w, V::madd::<I>(t[1], d, z[2 * f]));
            s.d[f] = V::madd::<I>(t[2], w, V::madd::<I>(t[3], d, z[2 * f + 1]));
        }
    }
}

/// Pass 1 for the strip of chunks starting at `c0`: the anticausal column filter's state at
/// each band boundary, from the bottom edge up, into `out` (per chunk, one `BOUNDARY` block
/// per boundary). The bottom band is walked from the edge's steady state; every band above
/// adds the weighted sum of its inputs to its transition of the state from below, which is
/// the walk's result without its chain of dependent steps. The column offsets of the direct
/// form are the chunks' in `carry` (`CARRY` fields per chunk, as the columns pass keeps them)
/// where it is not empty, else row 0's: the states must be of the same offsets as the walks
/// that start from them. Where `below` is not empty it holds each chunk's state at the last
/// boundary (`BOUNDARY` fields per chunk, the exact two-pass method's `ColumnStates`), which
/// then replaces the bottom band's walk.
#[inline(always)]
fn summarise_impl<T: Sample, I: Isa>(
    img: Rows<T>,
    band: usize,
    c0: usize,
    px: &Pixels,
    (k, sums): (&Coef, &BandSums),
    (carry, below, out): (&[V], &[V], &mut [V]),
) {
    let h = img.height;
    let bands = h.div_ceil(band);
    let per_chunk = (bands - 1) * BOUNDARY;
    let n = out.len() / per_chunk;
    let mut walks = [Walk::ZERO; STRIP];
    for (i, w) in walks[..n].iter_mut().enumerate() {
        let j0 = (c0 + i) * CHUNK;
        let x0 = match carry.get(i * CARRY..(i + 1) * CARRY) {
            Some(c) => c[4 * VECS..].try_into().expect("VECS offsets"),
            None => img.load(0, j0, px),
        };
        *w = Walk::from_bottom::<T>(img, j0, px, k, x0);
    }
    let mut st = [[Sections::ZERO; VECS]; STRIP];
    if below.is_empty() {
        for rows in tiles((bands - 1) * band..h, true) {
            for (i, w) in walks[..n].iter_mut().enumerate() {
                w.up::<T, I, false>(img, rows.clone(), (c0 + i) * CHUNK, px, k, (&mut [], 0));
            }
        }
        for (i, w) in walks[..n].iter().enumerate() {
            st[i] = w.st;
        }
    } else {
        for (i, chunk) in st[..n].iter_mut().enumerate() {
            for (v, s) in chunk.iter_mut().enumerate() {
                *s = Sections::restore(&below[i * BOUNDARY..][..BOUNDARY], v);
            }
        }
    }
    let save = |out: &mut [V], b: usize, st: &[[Sections; VECS]; STRIP]| {
        for (i, chunk) in st[..n].iter().enumerate() {
            let slot = &mut out[i * per_chunk + (b - 1) * BOUNDARY..][..BOUNDARY];
            for (v, s) in chunk.iter().enumerate() {
                s.save(slot, v);
            }
        }
    };
    save(out, bands - 1, &st);
    let x0: [[V; VECS]; STRIP] = std::array::from_fn(|i| walks[i].x0);
    for b in (1..bands - 1).rev() {
        let r0 = b * band;
        let mut z = [[[V::ZERO; 4]; VECS]; STRIP];
        // The difference form's first input is the difference from row r0.
        let mut offsets = x0;
        if T::EXACT {
            for (i, o) in offsets[..n].iter_mut().enumerate() {
                *o = img.load(r0, (c0 + i) * CHUNK, px);
            }
        }
        weighted_sums::<T, I>(img, r0, c0, px, sums, &mut offsets, &mut z[..n]);
        for (chunk, z) in st[..n].iter_mut().zip(&z) {
            for (s, z) in chunk.iter_mut().zip(z) {
                sums.carry_across::<I>(s, z);
            }
        }
        save(out, b, &st);
    }
}

/// Σ weight · (x − x0) over inputs `r0 + 1 ..= r0 + band` of the strip's chunks (one `z` per
/// chunk), as far as the weights reach (below the bottom band, so inside the image): per
/// vector, the `[wa, da, wb, db]` the band adds to the state it hands up. In the difference
/// form `x0` starts as row `r0` and follows the rows, so that each input is `x[r] − x[r − 1]`
/// (`Sample::EXACT`).
#[inline(always)]
pub(super) fn weighted_sums<T: Sample, I: Isa>(
    img: Rows<T>,
    r0: usize,
    c0: usize,
    px: &Pixels,
    sums: &BandSums,
    x0: &mut [[V; VECS]; STRIP],
    z: &mut [[[V; 4]; VECS]],
) {
    let h = img.height;
    let n = z.len();
    img.prefetch_start(
        r0 + 1..(r0 + 1 + PREFETCH_ROWS.min(sums.reach)).min(h),
        c0,
        n,
    );
    for rows in tiles(r0 + 1..r0 + 1 + sums.reach, false) {
        for (i, zi) in z.iter_mut().enumerate() {
            let j0 = (c0 + i) * CHUNK;
            // In locals across the tile, so that the sums stay in registers.
            let (mut z, mut offset) = (*zi, x0[i]);
            for r in rows.clone() {
                if r + PREFETCH_ROWS < h {
                    img.prefetch(r + PREFETCH_ROWS, j0);
                }
                let x = img.load(r, j0, px);
                let w = sums.weights[r - r0 - 1].map(V::splat);
                for v in 0..VECS {
                    let xv = x[v] - offset[v];
                    if T::EXACT {
                        offset[v] = x[v];
                    }
                    for f in 0..4 {
                        z[v][f] = V::madd::<I>(w[f], xv, z[v][f]);
                    }
                }
            }
            (*zi, x0[i]) = (z, offset);
        }
    }
}

simd_dispatch!(fn summarise<T: Sample>(img: Rows<T>, band: usize, c0: usize, px: &Pixels, k: (&Coef, &BandSums), out: (&[V], &[V], &mut [V])) => summarise_impl);

/// Pass 1 on every strip in parallel: each chunk's boundary states, one after another (none
/// where the image is one band). `carry`, where not empty, holds every chunk's column offsets;
/// `below`, where not empty, every chunk's state at the last boundary (`summarise_impl`).
pub(super) fn band_states<T: Sample>(
    img: Rows<T>,
    band: usize,
    strips: Strips,
    px: &Pixels,
    k: (&Coef, &BandSums),
    (carry, below): (&[V], &[V]),
) -> Vec<V> {
    let Strips {
        chunks,
        strip,
        boundaries,
    } = strips;
    let mut states = crate::memory::huge_vec(chunks * boundaries, V::ZERO);
    if boundaries > 0 {
        states
            .par_chunks_mut(strip * boundaries)
            .enumerate()
            .for_each(|(s, out)| {
                let _flush = crate::cpu::lanes::FlushSubnormals::new(true);
                let from = (s * strip * CARRY).min(carry.len());
                let carry = &carry[from..(from + strip * CARRY).min(carry.len())];
                let from = (s * strip * BOUNDARY).min(below.len());
                let below = &below[from..(from + strip * BOUNDARY).min(below.len())];
                summarise(img, band, s * strip, px, k, (carry, below, out))
            });
    }
    states
}
