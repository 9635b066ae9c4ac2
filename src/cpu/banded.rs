//! The fast CPU blur: the recursive Gaussian run in place on the decoded image's own
//! interleaved samples (8-bit, 16-bit or f32), in bands of rows, 16 columns per SIMD vector.
//!
//! A full f32 copy of a photo is four times its 8-bit size and would not fit the memory bound
//! (2× the decoded image), so no whole-image intermediate exists. Instead:
//!
//! 1. *Column summaries.* The anticausal column filter's state at every band boundary (4
//!    floats per column per boundary; a band is 128 rows, so the states stay ≤ 1/8 of an 8-bit
//!    image), from the bottom edge up: the bottom band is
//!    walked, and each band above adds a weighted sum of its inputs to the state from below
//!    carried across it (block-parallel filtering's summaries, Nehab et al. 2011), which has
//!    no chain of dependent steps to wait on.
//! 2. *Bands*, top to bottom. For each band the column filter runs anticausally from the
//!    stored state and causally from the state carried out of the band above, into an f32
//!    scratch of the band alone, each 16-row tile transposed as it is finished so that rows
//!    become lanes; then each row of the band is filtered (16 rows at a time, reading that
//!    scratch in order), transposed back (8-bit samples as bytes, after their conversion:
//!    a quarter of the shuffles) and written over the input band, which nothing needs any
//!    more.
//!
//! The filter is `reference::recursive_line`'s (the same sections with the same f32 coefficients,
//! the same first-sample offset and clamp-edge start-up), with FMA where the CPU has it, but
//! each section runs its poles first and its two-tap numerator on their state (`Sections`):
//! the same filter in three fewer operations per sample and direction. It agrees with the
//! reference to a few f32 roundings (measured on f32 images: 2.4e-7 at σ = 1–30, 1.6e-6 at
//! σ = 400, against 1.2e-7 and 4.2e-7 with the reference's own order).

// Lane loops index several arrays in step; written with indices they vectorise reliably.
#![allow(clippy::needless_range_loop)]

use crate::cpu::lanes::{Isa, LANES, V};
use crate::cpu::reference::CpuPass;
use crate::filter::gaussian::SECTION_FLOATS;
use crate::filter::{Blur2d, LineFilter};
use crate::pixels::{linear_to_srgb, srgb_to_linear};
use crate::simd_dispatch;
use image::DynamicImage;
use rayon::prelude::*;
use std::cell::RefCell;
use std::time::Instant;

/// Vectors per column work item: four independent recurrences per row hide the FMA latency.
const VECS: usize = 4;
const CHUNK: usize = VECS * LANES;
/// Fields of a band-boundary state: w and d of both sections.
const BOUNDARY: usize = 4 * VECS;
/// Fields carried from band to band: w, d of both sections and the offset.
const CARRY: usize = 5 * VECS;

/// A sample type the banded blur reads and writes in place.
///
/// Integer samples are filtered in their own level units (0 ..= `FULL`): the filter is linear,
/// so scaling to [0, 1] on the way in and back on the way out would only cost a multiply each.
pub trait Sample: Copy + Send + Sync + 'static {
    /// Full intensity in working units: the largest level, or 1 for floats.
    const FULL: f32;
    /// The sample in working units.
    fn to_f32(self) -> f32;
    /// Integer samples are clamped and rounded (as `pixels` does); floats pass as they are.
    fn from_f32(v: f32) -> Self;
    /// The sample as a table index (integers only), for sRGB decoding by lookup.
    fn index(self) -> usize;
    /// A 16×16 block of working values as samples, transposed (rows in lanes become rows).
    #[inline(always)]
    fn transposed<I: Isa>(m: &[V; LANES]) -> [[Self; LANES]; LANES] {
        let t = I::transpose(m);
        let mut out = [[Self::from_f32(0.0); LANES]; LANES];
        for i in 0..LANES {
            for j in 0..LANES {
                out[i][j] = Self::from_f32(t[i].0[j]);
            }
        }
        out
    }
}

impl Sample for u8 {
    const FULL: f32 = 255.0;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        crate::cpu::lanes::level_to_u8(v)
    }
    #[inline(always)]
    fn index(self) -> usize {
        self as usize
    }
    #[inline(always)]
    fn transposed<I: Isa>(m: &[V; LANES]) -> [[Self; LANES]; LANES] {
        I::transpose_to_u8(m)
    }
}

impl Sample for u16 {
    const FULL: f32 = 65535.0;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        #[allow(clippy::manual_clamp)]
        let x = v.max(0.0).min(Self::FULL) + 0.5;
        // SAFETY: as in `lanes::level_to_u8`; x is in [0.5, 65535.5].
        unsafe { x.to_int_unchecked::<i32>() as u16 }
    }
    #[inline(always)]
    fn index(self) -> usize {
        self as usize
    }
}

impl Sample for f32 {
    const FULL: f32 = 1.0;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn index(self) -> usize {
        0
    }
}

/// How samples become premultiplied working values and back.
#[derive(Clone, Copy)]
pub struct Pixels<'a> {
    pub channels: usize,
    /// The last channel is alpha: colour is premultiplied while filtering.
    pub alpha: bool,
    /// sRGB decoding table indexed by sample value, in level units (colour channels of
    /// integer images only).
    pub linear: Option<&'a [f32]>,
}

/// One axis's recursive filter, every coefficient splatted across the lanes, for sections
/// run as their all-pole part followed by their two-tap numerator (see `Sections`).
#[derive(Clone, Copy)]
struct Coef {
    /// Causal output weights of the all-pole state: `n0 + n1` on w, `−n1` on d.
    cw: [V; 2],
    cd: [V; 2],
    /// Anticausal output weights: `m1 + m2` on w, `−m2` on d.
    aw: [V; 2],
    ad: [V; 2],
    neps: [V; 2],
    /// r² = 1 − q, the decay of the delta d.
    r2: [V; 2],
    /// 1 / eps: the all-pole state of a constant unit input.
    steady: [V; 2],
}

impl Coef {
    fn new(c: &[f32; 2 * SECTION_FLOATS]) -> Self {
        // Each section's f32 coefficients as f64; every derived one is rounded to f32 once.
        let sections: [[f64; SECTION_FLOATS]; 2] =
            std::array::from_fn(|k| std::array::from_fn(|i| c[k * SECTION_FLOATS + i] as f64));
        let f = |f: fn(&[f64; SECTION_FLOATS]) -> f64| sections.map(|s| V::splat(f(&s) as f32));
        Coef {
            cw: f(|s| s[0] + s[1]),
            cd: f(|s| -s[1]),
            aw: f(|s| s[2] + s[3]),
            ad: f(|s| -s[3]),
            neps: f(|s| -s[4]),
            r2: f(|s| 1.0 - s[5]),
            steady: f(|s| 1.0 / s[4]),
        }
    }

    #[inline(always)]
    fn causal(&self) -> (&[V; 2], &[V; 2]) {
        (&self.cw, &self.cd)
    }

    #[inline(always)]
    fn anticausal(&self) -> (&[V; 2], &[V; 2]) {
        (&self.aw, &self.ad)
    }
}

/// The state of both 2nd-order sections for 16 lines, as all-pole states. A section is
/// `N(z) / D(z)` with a two-tap numerator (`n0 + n1 z⁻¹` causally, `m1 z + m2 z²`
/// anticausally); the two factors commute, so the input runs through `1 / D` alone (the
/// reference's delta form: w and its step d) and the numerator acts on w at the output:
/// `n0 w[n] + n1 w[n−1] = (n0 + n1) w − n1 d`. That takes 3 operations per section and
/// sample where feeding `n0 x + n1 x'` in takes 5, and the same 4 FMAs that weigh both
/// sections' outputs also add them up.
#[derive(Clone, Copy)]
struct Sections {
    w: [V; 2],
    d: [V; 2],
}

impl Sections {
    const ZERO: Sections = Sections {
        w: [V::ZERO; 2],
        d: [V::ZERO; 2],
    };

    /// The state of a constant input `xl` for ever: the clamp edge's start.
    #[inline(always)]
    fn steady(k: &Coef, xl: V) -> Self {
        Sections {
            w: [k.steady[0] * xl, k.steady[1] * xl],
            d: [V::ZERO; 2],
        }
    }

    /// Advances both sections by one input.
    #[inline(always)]
    fn step<I: Isa>(&mut self, k: &Coef, x: V) {
        for s in 0..2 {
            // d·r² where the reference has d − q·d: one operation fewer, and the two differ
            // by the rounding of r² (6e-8 relative) on the small per-step delta d.
            let t = V::madd::<I>(k.neps[s], self.w[s], V::madd::<I>(k.r2[s], self.d[s], x));
            self.d[s] = t;
            self.w[s] = self.w[s] + t;
        }
    }

    /// `acc` plus both sections' outputs, for the output weights of one direction.
    #[inline(always)]
    fn output<I: Isa>(&self, (ow, od): (&[V; 2], &[V; 2]), acc: V) -> V {
        let mut acc = acc;
        for s in 0..2 {
            acc = V::madd::<I>(ow[s], self.w[s], acc);
            acc = V::madd::<I>(od[s], self.d[s], acc);
        }
        acc
    }

    #[inline(always)]
    fn save(&self, out: &mut [V], v: usize) {
        for f in 0..2 {
            out[f * VECS + v] = self.w[f];
            out[(2 + f) * VECS + v] = self.d[f];
        }
    }

    #[inline(always)]
    fn restore(from: &[V], v: usize) -> Self {
        Sections {
            w: [from[v], from[VECS + v]],
            d: [from[2 * VECS + v], from[3 * VECS + v]],
        }
    }
}

#[inline(always)]
fn premultiply<const C: usize>(r: &mut [f32; LANES], per_level: f32) {
    for i in 0..LANES {
        if i % C != C - 1 {
            r[i] *= r[i - i % C + C - 1] * per_level;
        }
    }
}

/// Loads samples `j..j+16` of `row` (zeros past its end) as premultiplied working values.
#[inline(always)]
fn load<T: Sample>(row: &[T], j: usize, px: &Pixels) -> V {
    let n = row.len().saturating_sub(j).min(LANES);
    let mut r = [0f32; LANES];
    match px.linear {
        None if n == LANES => {
            let s = &row[j..j + LANES];
            for i in 0..LANES {
                r[i] = s[i].to_f32();
            }
        }
        None => {
            for i in 0..n {
                r[i] = row[j + i].to_f32();
            }
        }
        Some(lut) => {
            for i in 0..n {
                let v = row[j + i];
                let is_alpha = px.alpha && (j + i) % px.channels == px.channels - 1;
                r[i] = if is_alpha { v.to_f32() } else { lut[v.index()] };
            }
        }
    }
    if px.alpha {
        // `j` is a multiple of 16, so lanes start on a pixel boundary for 2 or 4 channels.
        match px.channels {
            2 => premultiply::<2>(&mut r, 1.0 / T::FULL),
            4 => premultiply::<4>(&mut r, 1.0 / T::FULL),
            _ => {}
        }
    }
    V(r)
}

/// The image as rows of interleaved samples.
#[derive(Clone, Copy)]
struct Rows<'a, T> {
    data: &'a [T],
    stride: usize,
    height: usize,
}

impl<'a, T: Sample> Rows<'a, T> {
    #[inline(always)]
    fn row(&self, r: usize) -> &'a [T] {
        &self.data[r * self.stride..(r + 1) * self.stride]
    }

    /// Asks for a chunk's samples of row `r` ahead of its walk: a walk visits each row of a
    /// tile at a different page, which the hardware prefetchers do not predict.
    #[inline(always)]
    fn prefetch(&self, r: usize, j0: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let row = self.row(r);
            let end = row.len().min(j0 + CHUNK);
            let line = 64 / std::mem::size_of::<T>();
            for j in (j0..end).step_by(line) {
                // SAFETY: a prefetch never faults, and the address is inside the row.
                unsafe {
                    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                    _mm_prefetch::<_MM_HINT_T0>(row.as_ptr().add(j) as *const i8);
                }
            }
        }
    }

    /// Asks for `rows` (in that order) of chunks `c0 .. c0 + n` before a walk over them
    /// starts: the in-walk prefetches reach only rows a tile or two ahead, so without this the
    /// walk would wait on memory over its first tiles.
    #[inline(always)]
    fn prefetch_start(&self, rows: impl Iterator<Item = usize>, c0: usize, n: usize) {
        for r in rows {
            for i in 0..n {
                self.prefetch(r, (c0 + i) * CHUNK);
            }
        }
    }

    #[inline(always)]
    fn load(&self, r: usize, j0: usize, px: &Pixels) -> [V; VECS] {
        let row = self.row(r);
        if px.linear.is_none() && !px.alpha && j0 + CHUNK <= row.len() {
            // The common case in a form the compiler turns into a few wide conversions: a
            // whole chunk of samples that only need scaling.
            let s = &row[j0..j0 + CHUNK];
            let mut x = [V::ZERO; VECS];
            for v in 0..VECS {
                for i in 0..LANES {
                    x[v].0[i] = s[v * LANES + i].to_f32();
                }
            }
            return x;
        }
        let mut x = [V::ZERO; VECS];
        for (v, x) in x.iter_mut().enumerate() {
            *x = load(row, j0 + v * LANES, px);
        }
        x
    }
}

/// Rows a column walk takes per visit of a chunk. A strip's chunks are visited in turn, so
/// each row is read left to right across the strip, which the hardware prefetchers follow
/// (a walk down one chunk alone steps a page per row and waits on memory at every step).
/// It is also the rows pass's group: one lane per row.
const TILE_ROWS: usize = LANES;
/// How far ahead of a column walk its rows are prefetched.
const PREFETCH_ROWS: usize = 2 * TILE_ROWS;
/// Chunks per column work item at most: a strip 1024 samples wide.
const STRIP: usize = 16;

/// Chunks per column work item for a row of `chunks`: `STRIP`, or fewer where that would
/// leave fewer than four strips per thread (a 4896-wide gray image is 77 chunks: 5 strips of
/// 16 keep one of two threads idle a fifth of the time; 8 of 10 do not).
fn strip_chunks(chunks: usize) -> usize {
    chunks
        .div_ceil(4 * rayon::current_num_threads())
        .clamp(1, STRIP)
}

/// How a row's chunks are dealt out as column work items.
#[derive(Clone, Copy)]
struct Strips {
    /// Chunks in a row.
    chunks: usize,
    /// Chunks per work item (`strip_chunks`).
    strip: usize,
    /// Vectors of pass-1 states per chunk: one `BOUNDARY` block per band boundary.
    boundaries: usize,
}

/// One chunk's column walk between visits: both sections, the input below the next row
/// (anticausally) and the column offsets.
#[derive(Clone, Copy)]
struct Walk {
    st: [Sections; VECS],
    x1: [V; VECS],
    x0: [V; VECS],
}

impl Walk {
    const ZERO: Walk = Walk {
        st: [Sections::ZERO; VECS],
        x1: [V::ZERO; VECS],
        x0: [V::ZERO; VECS],
    };

    /// The anticausal start below the bottom edge.
    #[inline(always)]
    fn from_bottom<T: Sample>(
        img: Rows<T>,
        j0: usize,
        px: &Pixels,
        k: &Coef,
        x0: [V; VECS],
    ) -> Walk {
        let last = img.load(img.height - 1, j0, px);
        let mut w = Walk { x0, ..Walk::ZERO };
        for v in 0..VECS {
            let xl = last[v] - x0[v];
            w.st[v] = Sections::steady(k, xl);
            w.x1[v] = xl;
        }
        w
    }

    /// Anticausal over rows `rows` (walked upwards); stores each row's result in `out` at
    /// `(r - out_row0) * VECS` when STORE.
    #[inline(always)]
    fn up<T: Sample, I: Isa, const STORE: bool>(
        &mut self,
        img: Rows<T>,
        rows: std::ops::Range<usize>,
        j0: usize,
        px: &Pixels,
        k: &Coef,
        (out, out_row0): (&mut [V], usize),
    ) {
        let (mut st, mut x1, x0) = (self.st, self.x1, self.x0);
        for r in rows.rev() {
            if r >= PREFETCH_ROWS {
                img.prefetch(r - PREFETCH_ROWS, j0);
            }
            let x = img.load(r, j0, px);
            for v in 0..VECS {
                st[v].step::<I>(k, x1[v]);
                if STORE {
                    // With the offset added back: the causal walk adds its part to it.
                    out[(r - out_row0) * VECS + v] = st[v].output::<I>(k.anticausal(), x0[v]);
                }
                x1[v] = x[v] - x0[v];
            }
        }
        (self.st, self.x1) = (st, x1);
    }

    /// Causal over `rows` (a tile, walked downwards), adding the anticausal results (with
    /// the offset) already in `block`, the tile's: the columns' final values. The block is then
    /// transposed in place (`BandScratch`), for the rows pass to read.
    #[inline(always)]
    fn down<T: Sample, I: Isa>(
        &mut self,
        img: Rows<T>,
        rows: std::ops::Range<usize>,
        j0: usize,
        px: &Pixels,
        k: &Coef,
        block: &mut [V; TILE_ROWS * VECS],
    ) {
        let (mut st, x0) = (self.st, self.x0);
        // The tile's results, rows in lanes once transposed: [vector][row].
        let mut tile = [[V::ZERO; LANES]; VECS];
        for (i, r) in rows.clone().enumerate() {
            if r + PREFETCH_ROWS < img.height {
                img.prefetch(r + PREFETCH_ROWS, j0);
            }
            let x = img.load(r, j0, px);
            for v in 0..VECS {
                st[v].step::<I>(k, x[v] - x0[v]);
                tile[v][i] = st[v].output::<I>(k.causal(), block[i * VECS + v]);
            }
        }
        self.st = st;
        for (v, m) in tile.iter().enumerate() {
            let to: &mut [V; LANES] = (&mut block[v * LANES..][..LANES]).try_into().unwrap();
            I::transpose_to(m, to);
        }
    }
}

/// Row tiles of `rows`, bottom first when `upwards`.
fn tiles(
    rows: std::ops::Range<usize>,
    upwards: bool,
) -> impl Iterator<Item = std::ops::Range<usize>> {
    let n = rows.len().div_ceil(TILE_ROWS);
    (0..n).map(move |i| {
        let i = if upwards { n - 1 - i } else { i };
        let a = rows.start + i * TILE_ROWS;
        a..(a + TILE_ROWS).min(rows.end)
    })
}

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
struct BandSums {
    /// `[wa, da, wb, db]` weights of the band's inputs `x[r0 + i]`, `i = 1 ..= band`.
    weights: Vec<[f32; 4]>,
    /// How many of `weights` count: past them every weight is below `NEGLIGIBLE` of its
    /// component's largest, so the inputs they weigh change no f32 state.
    reach: usize,
    /// `T^band` of each section, row-major, splatted.
    across: [[V; 4]; 2],
}

impl BandSums {
    fn new(c: &[f32; 2 * SECTION_FLOATS], band: usize) -> Self {
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
    fn carry_across<I: Isa>(&self, s: &mut Sections, z: &[V; 4]) {
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
/// the walk's result without its chain of dependent steps.
#[inline(always)]
fn summarise_impl<T: Sample, I: Isa>(
    img: Rows<T>,
    band: usize,
    c0: usize,
    px: &Pixels,
    (k, sums): (&Coef, &BandSums),
    out: &mut [V],
) {
    let h = img.height;
    let bands = h.div_ceil(band);
    let per_chunk = (bands - 1) * BOUNDARY;
    let n = out.len() / per_chunk;
    let mut walks = [Walk::ZERO; STRIP];
    for (i, w) in walks[..n].iter_mut().enumerate() {
        let j0 = (c0 + i) * CHUNK;
        *w = Walk::from_bottom::<T>(img, j0, px, k, img.load(0, j0, px));
    }
    for rows in tiles((bands - 1) * band..h, true) {
        for (i, w) in walks[..n].iter_mut().enumerate() {
            w.up::<T, I, false>(img, rows.clone(), (c0 + i) * CHUNK, px, k, (&mut [], 0));
        }
    }
    let mut st = [[Sections::ZERO; VECS]; STRIP];
    for (i, w) in walks[..n].iter().enumerate() {
        st[i] = w.st;
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
        weighted_sums::<T, I>(img, r0, c0, px, sums, &x0, &mut z[..n]);
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
/// vector, the `[wa, da, wb, db]` the band adds to the state it hands up.
#[inline(always)]
fn weighted_sums<T: Sample, I: Isa>(
    img: Rows<T>,
    r0: usize,
    c0: usize,
    px: &Pixels,
    sums: &BandSums,
    x0: &[[V; VECS]; STRIP],
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
            let (mut z, x0) = (*zi, x0[i]);
            for r in rows.clone() {
                if r + PREFETCH_ROWS < h {
                    img.prefetch(r + PREFETCH_ROWS, j0);
                }
                let x = img.load(r, j0, px);
                let w = sums.weights[r - r0 - 1].map(V::splat);
                for v in 0..VECS {
                    let xv = x[v] - x0[v];
                    for f in 0..4 {
                        z[v][f] = V::madd::<I>(w[f], xv, z[v][f]);
                    }
                }
            }
            *zi = z;
        }
    }
}

simd_dispatch!(fn summarise<T: Sample>(img: Rows<T>, band: usize, c0: usize, px: &Pixels, k: (&Coef, &BandSums), out: &mut [V]) => summarise_impl);

/// Pass 1 on every strip in parallel: each chunk's boundary states, one after another (none
/// where the image is one band).
fn band_states<T: Sample>(
    img: Rows<T>,
    band: usize,
    strips: Strips,
    px: &Pixels,
    k: (&Coef, &BandSums),
) -> Vec<V> {
    let Strips {
        chunks,
        strip,
        boundaries,
    } = strips;
    let mut states = vec![V::ZERO; chunks * boundaries];
    if boundaries > 0 {
        states
            .par_chunks_mut(strip * boundaries)
            .enumerate()
            .for_each(|(s, out)| summarise(img, band, s * strip, px, k, out));
    }
    states
}

/// Pass 2, columns, for the strip of chunks starting at `c0`: filters rows `r0..r1` both
/// ways into `out` (per chunk, `band` rows of `VECS` vectors). `states` holds the strip's
/// pass-1 boundary states (empty if the image is one band); `carry` holds each chunk's causal
/// state and column offsets from the band above.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn columns_impl<T: Sample, I: Isa>(
    img: Rows<T>,
    (r0, r1): (usize, usize),
    c0: usize,
    px: &Pixels,
    k: &Coef,
    states: &[V],
    carry: &mut [V],
    out: &mut [&mut [V]],
) {
    let h = img.height;
    let n = carry.len() / CARRY;
    let band = out.len() * TILE_ROWS;
    let per_chunk = states.len() / n;
    let mut walks = [Walk::ZERO; STRIP];
    for (i, w) in walks[..n].iter_mut().enumerate() {
        let j0 = (c0 + i) * CHUNK;
        let carry = &mut carry[i * CARRY..][..CARRY];
        if r0 == 0 {
            carry.fill(V::ZERO);
            carry[4 * VECS..].copy_from_slice(&img.load(0, j0, px));
        }
        let mut x0 = [V::ZERO; VECS];
        x0.copy_from_slice(&carry[4 * VECS..]);
        *w = if r1 == h {
            Walk::from_bottom::<T>(img, j0, px, k, x0)
        } else {
            let slot = &states[i * per_chunk + (r0 / band) * BOUNDARY..][..BOUNDARY];
            let below = img.load(r1, j0, px);
            let mut w = Walk { x0, ..Walk::ZERO };
            for v in 0..VECS {
                w.st[v] = Sections::restore(slot, v);
                w.x1[v] = below[v] - x0[v];
            }
            w
        };
    }
    img.prefetch_start((r1.saturating_sub(PREFETCH_ROWS).max(r0)..r1).rev(), c0, n);
    for rows in tiles(r0..r1, true) {
        let group = &mut *out[(rows.start - r0) / TILE_ROWS];
        for (i, w) in walks[..n].iter_mut().enumerate() {
            let out = &mut group[i * TILE_ROWS * VECS..][..TILE_ROWS * VECS];
            w.up::<T, I, true>(
                img,
                rows.clone(),
                (c0 + i) * CHUNK,
                px,
                k,
                (out, rows.start),
            );
        }
    }
    for (i, w) in walks[..n].iter_mut().enumerate() {
        let carry = &carry[i * CARRY..][..CARRY];
        for v in 0..VECS {
            w.st[v] = Sections::restore(carry, v);
        }
    }
    for rows in tiles(r0..r1, false) {
        let group = &mut *out[(rows.start - r0) / TILE_ROWS];
        for (i, w) in walks[..n].iter_mut().enumerate() {
            let block = (&mut group[i * TILE_ROWS * VECS..][..TILE_ROWS * VECS])
                .try_into()
                .unwrap();
            w.down::<T, I>(img, rows.clone(), (c0 + i) * CHUNK, px, k, block);
        }
    }
    for (i, w) in walks[..n].iter().enumerate() {
        let carry = &mut carry[i * CARRY..][..CARRY];
        for v in 0..VECS {
            w.st[v].save(carry, v);
        }
    }
}

simd_dispatch!(fn columns<T: Sample>(img: Rows<T>, rows: (usize, usize), c0: usize, px: &Pixels, k: &Coef, states: &[V], carry: &mut [V], out: &mut [&mut [V]]) => columns_impl);

/// Pass 2's columns for band rows `r0..r1`, every strip in parallel, into `scratch` (laid out
/// as `BandScratch` reads it). `carry` holds each chunk's state out of the band above and
/// takes the state out of this one.
fn band_columns<T: Sample>(
    img: Rows<T>,
    (r0, r1): (usize, usize),
    strips: Strips,
    px: &Pixels,
    k: &Coef,
    (states, carry): (&[V], &mut [V]),
    scratch: &mut [V],
) {
    let Strips {
        chunks,
        strip,
        boundaries,
    } = strips;
    // Each strip's tiles in every group of the band: disjoint pieces of the scratch.
    let tile = TILE_ROWS * VECS;
    let mut pieces: Vec<Vec<&mut [V]>> = (0..chunks.div_ceil(strip)).map(|_| vec![]).collect();
    for group in scratch.chunks_mut(chunks * tile) {
        for (s, piece) in group.chunks_mut(strip * tile).enumerate() {
            pieces[s].push(piece);
        }
    }
    pieces
        .par_iter_mut()
        .zip(carry.par_chunks_mut(strip * CARRY))
        .enumerate()
        .for_each(|(s, (out, carry))| {
            let n = carry.len() / CARRY;
            let strip_states =
                &states[(s * strip * boundaries).min(states.len())..][..n * boundaries];
            columns(img, (r0, r1), s * strip, px, k, strip_states, carry, out);
        });
}

/// A band's column results, per 16-row group and in it per 64-column chunk: the tile's 16
/// rows of `VECS` vectors as the column walks leave them, transposed in place once finished,
/// so that the 64 vectors hold samples `64 chunk + i` (i = 0..64) with the tile's rows in
/// lanes. The rows pass reads a group's tiles as they are, one contiguous run.
#[derive(Clone, Copy)]
struct BandScratch<'a> {
    data: &'a [V],
    chunks: usize,
}

impl<'a> BandScratch<'a> {
    /// Samples `16 b .. 16 b + 16` of the 16-row group starting at band row `g`, rows in lanes.
    #[inline(always)]
    fn block(&self, g: usize, b: usize) -> &'a [V; LANES] {
        let (chunk, v) = (b / VECS, b % VECS);
        let at = ((g / TILE_ROWS) * self.chunks + chunk) * TILE_ROWS * VECS + v * LANES;
        self.data[at..at + LANES].try_into().unwrap()
    }
}

/// Pass 2, rows: filters rows `g..g+n` of the band (n ≤ 16) along x and writes them to `out`
/// as samples, rows in lanes, 16 pixels (`C` blocks of 16 samples) at a time; the causal
/// results wait in `u` (`stride` vectors) while the anticausal sweep runs back.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn rows_impl<T: Sample, I: Isa>(
    scratch: BandScratch,
    g: usize,
    width: usize,
    px: &Pixels,
    k: &Coef,
    u: &mut [V],
    out: &mut [T],
) {
    match px.channels {
        1 => rows_c::<T, I, 1>(scratch, g, width, px, k, u, out),
        2 => rows_c::<T, I, 2>(scratch, g, width, px, k, u, out),
        3 => rows_c::<T, I, 3>(scratch, g, width, px, k, u, out),
        _ => rows_c::<T, I, 4>(scratch, g, width, px, k, u, out),
    }
}

simd_dispatch!(fn rows<T: Sample>(scratch: BandScratch, g: usize, width: usize, px: &Pixels, k: &Coef, u: &mut [V], out: &mut [T]) => rows_impl);

/// The `C` blocks of pixel block `pb` (pixels `16 pb .. 16 pb + 16`): `blk[q / 16][q % 16]` is
/// sample `q` of the 16 pixels. Blocks past the row's end read as zeros.
#[inline(always)]
fn pixel_blocks<'a, const C: usize>(
    scratch: BandScratch<'a>,
    g: usize,
    stride: usize,
    pb: usize,
) -> [&'a [V; LANES]; C] {
    static ZEROS: [V; LANES] = [V::ZERO; LANES];
    std::array::from_fn(|kb| {
        let b = pb * C + kb;
        if b * LANES < stride {
            scratch.block(g, b)
        } else {
            &ZEROS
        }
    })
}

/// `rows_impl` for `C` channels: the causal sweep into `u`, then the anticausal sweep back,
/// finishing and storing each 16-pixel block as it completes.
// Long: one SIMD kernel; as inline helpers its sweeps compiled to up to 118 more register moves.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn rows_c<T: Sample, I: Isa, const C: usize>(
    scratch: BandScratch,
    g: usize,
    width: usize,
    px: &Pixels,
    k: &Coef,
    u: &mut [V],
    out: &mut [T],
) {
    let stride = width * C;
    let n_rows = out.len() / stride;
    let pixel_count = width.div_ceil(LANES);

    // Causal, left to right; keeps the first pixel (the offset) and the last (the edge).
    let first = pixel_blocks::<C>(scratch, g, stride, 0);
    let mut x0 = [V::ZERO; C];
    x0.copy_from_slice(&first[0][..C]);
    let mut st = [Sections::ZERO; C];
    let mut xl = [V::ZERO; C];
    for pb in 0..pixel_count {
        let blk = pixel_blocks::<C>(scratch, g, stride, pb);
        let np = (width - pb * LANES).min(LANES);
        let u = &mut u[pb * LANES * C..][..LANES * C];
        // A macro, not a closure: a closure would not inherit the target features.
        macro_rules! pixels {
            ($xs:expr) => {
                for x in $xs {
                    for c in 0..C {
                        let q = x * C + c;
                        let xv = blk[q / LANES][q % LANES] - x0[c];
                        st[c].step::<I>(k, xv);
                        u[q] = st[c].output::<I>(k.causal(), x0[c]);
                        xl[c] = xv;
                    }
                }
            };
        }
        // Whole blocks with a fixed count, which the compiler unrolls into straight code
        // (constant indices, the state in registers).
        if np == LANES {
            pixels!(0..LANES)
        } else {
            pixels!(0..np)
        }
    }

    // Anticausal, right to left, adding up, finishing pixels and storing 16 at a time.
    let mut x1 = xl;
    for c in 0..C {
        st[c] = Sections::steady(k, xl[c]);
    }
    let colour = if px.alpha { C - 1 } else { C };
    let mut done = [[V::ZERO; LANES]; C];
    for pb in (0..pixel_count).rev() {
        let blk = pixel_blocks::<C>(scratch, g, stride, pb);
        let np = (width - pb * LANES).min(LANES);
        let u = &u[pb * LANES * C..][..LANES * C];
        macro_rules! pixels {
            ($xs:expr) => {
                for x in $xs {
                    for c in 0..C {
                        let q = x * C + c;
                        st[c].step::<I>(k, x1[c]);
                        x1[c] = blk[q / LANES][q % LANES] - x0[c];
                        done[q / LANES][q % LANES] = st[c].output::<I>(k.anticausal(), u[q]);
                    }
                }
            };
        }
        if np == LANES {
            pixels!((0..LANES).rev())
        } else {
            pixels!((0..np).rev())
        }
        if px.alpha || px.linear.is_some() {
            for x in 0..np {
                let aq = x * C + C - 1;
                let alpha = done[aq / LANES][aq % LANES];
                for c in 0..colour {
                    let q = x * C + c;
                    let p = &mut done[q / LANES][q % LANES];
                    for l in 0..LANES {
                        let mut v = p.0[l];
                        if px.alpha {
                            // Where nothing is left of the coverage the colour is undefined: 0.
                            v = if alpha.0[l] > 1e-7 * T::FULL {
                                v / alpha.0[l] * T::FULL
                            } else {
                                0.0
                            };
                        }
                        if px.linear.is_some() {
                            v = linear_to_srgb(v * (1.0 / T::FULL)) * T::FULL;
                        }
                        p.0[l] = v;
                    }
                }
            }
        }
        for (kb, block) in done.iter().enumerate() {
            let b = pb * C + kb;
            if b * LANES >= stride {
                break;
            }
            let n = (stride - b * LANES).min(LANES);
            let m = T::transposed::<I>(block);
            for (r, row) in m.iter().enumerate().take(n_rows) {
                let dst = &mut out[r * stride + b * LANES..];
                if n == LANES {
                    dst[..LANES].copy_from_slice(row);
                } else {
                    dst[..n].copy_from_slice(&row[..n]);
                }
            }
        }
    }
}

// The rows pass's causal results: one buffer per worker thread, kept across bands and images.
thread_local! {
    static ROW_BUFFER: RefCell<Vec<V>> = const { RefCell::new(Vec::new()) };
}

/// Pass 2's rows for a band: `out`, the band's rows of the image, filtered along x from the
/// band's column results, 16 rows per work item.
fn band_rows<T: Sample>(scratch: BandScratch, out: &mut [T], width: usize, px: &Pixels, k: &Coef) {
    let stride = width * px.channels;
    let padded = width.div_ceil(LANES) * LANES * px.channels;
    out.par_chunks_mut(LANES * stride)
        .enumerate()
        .for_each(|(group, out)| {
            ROW_BUFFER.with_borrow_mut(|u| {
                u.resize(padded, V::ZERO);
                rows(scratch, group * LANES, width, px, k, u, out);
            })
        });
}

/// Rows per band, for every sample type: the boundary states (16 bytes per column) stay ≤ 1/8
/// of an 8-bit image and 1/32 of an f32 one. Measured on one f32 channel, 16 MP: 32-row bands
/// took a third longer, 256-row bands longer still (their weighted sums spill).
const BAND_ROWS: usize = 128;

/// Blurs `width`×`height` interleaved pixels in place; returns the time of each pass.
pub fn blur_in_place<T: Sample>(
    data: &mut [T],
    (width, height): (usize, usize),
    px: &Pixels,
    kx: &[f32; 2 * SECTION_FLOATS],
    ky: &[f32; 2 * SECTION_FLOATS],
) -> Vec<CpuPass> {
    let stride = width * px.channels;
    assert_eq!(data.len(), stride * height, "image buffer size");
    if stride == 0 || height == 0 {
        return Vec::new();
    }
    let band = BAND_ROWS;
    let sums = BandSums::new(ky, band);
    let (kx, ky) = (Coef::new(kx), Coef::new(ky));
    let bands = height.div_ceil(band);
    let chunks = stride.div_ceil(CHUNK);
    let strips = Strips {
        chunks,
        strip: strip_chunks(chunks),
        boundaries: (bands - 1) * BOUNDARY,
    };
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;

    let t = Instant::now();
    let img = Rows {
        data: &*data,
        stride,
        height,
    };
    let states = band_states(img, band, strips, px, (&ky, &sums));
    let summaries_ms = ms(t);

    let (mut columns_ms, mut rows_ms) = (0.0, 0.0);
    let mut carry = vec![V::ZERO; chunks * CARRY];
    let mut scratch = vec![V::ZERO; chunks * band * VECS];
    for b in 0..bands {
        let (r0, r1) = (b * band, ((b + 1) * band).min(height));
        let t = Instant::now();
        let img = Rows {
            data: &*data,
            stride,
            height,
        };
        let starts = (&states[..], &mut carry[..]);
        band_columns(img, (r0, r1), strips, px, &ky, starts, &mut scratch);
        columns_ms += ms(t);

        let t = Instant::now();
        let bs = BandScratch {
            data: &scratch,
            chunks,
        };
        band_rows(bs, &mut data[r0 * stride..r1 * stride], width, px, &kx);
        rows_ms += ms(t);
    }
    vec![
        CpuPass {
            name: "column summaries (y)",
            ms: summaries_ms,
        },
        CpuPass {
            name: "columns (y)",
            ms: columns_ms,
        },
        CpuPass {
            name: "rows (x)",
            ms: rows_ms,
        },
    ]
}

/// sRGB decoding tables for integer samples, indexed by sample value, in level units.
fn srgb_table(levels: usize) -> Vec<f32> {
    let max = (levels - 1) as f32;
    (0..levels)
        .map(|v| srgb_to_linear(v as f32 / max) * max)
        .collect()
}

/// Blurs a decoded image in place with the banded blur. Returns None (and leaves the image
/// untouched) where the banded blur does not apply: an FIR axis, or a colour type it does not
/// know.
pub fn blur_image(img: &mut DynamicImage, blur: &Blur2d, linear: bool) -> Option<Vec<CpuPass>> {
    let (
        LineFilter::Recursive {
            coefficients: kx, ..
        },
        LineFilter::Recursive {
            coefficients: ky, ..
        },
    ) = (&blur.x, &blur.y)
    else {
        return None;
    };
    let dims = (img.width() as usize, img.height() as usize);
    let color = img.color();
    let (channels, alpha) = (color.channel_count() as usize, color.has_alpha());
    let levels = match img {
        DynamicImage::ImageLuma8(_)
        | DynamicImage::ImageLumaA8(_)
        | DynamicImage::ImageRgb8(_)
        | DynamicImage::ImageRgba8(_) => 256,
        _ => 65536,
    };
    let table = (linear && crate::pixels::is_integer(color)).then(|| srgb_table(levels));
    let px = Pixels {
        channels,
        alpha,
        linear: table.as_deref(),
    };
    let passes = match img {
        DynamicImage::ImageLuma8(b) => blur_in_place(b, dims, &px, kx, ky),
        DynamicImage::ImageLumaA8(b) => blur_in_place(b, dims, &px, kx, ky),
        DynamicImage::ImageRgb8(b) => blur_in_place(b, dims, &px, kx, ky),
        DynamicImage::ImageRgba8(b) => blur_in_place(b, dims, &px, kx, ky),
        DynamicImage::ImageLuma16(b) => blur_in_place(b, dims, &px, kx, ky),
        DynamicImage::ImageLumaA16(b) => blur_in_place(b, dims, &px, kx, ky),
        DynamicImage::ImageRgb16(b) => blur_in_place(b, dims, &px, kx, ky),
        DynamicImage::ImageRgba16(b) => blur_in_place(b, dims, &px, kx, ky),
        DynamicImage::ImageRgb32F(b) => blur_in_place(b, dims, &px, kx, ky),
        DynamicImage::ImageRgba32F(b) => blur_in_place(b, dims, &px, kx, ky),
        _ => return None,
    };
    Some(passes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::reference;
    use crate::filter::gaussian::RecursiveGaussian;
    use crate::filter::Method;
    use image::{ColorType, ImageBuffer};

    fn noise(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (s >> 40) as f32 / (1u64 << 24) as f32
            })
            .collect()
    }

    fn image_of(color: ColorType, w: u32, h: u32, seed: u64) -> DynamicImage {
        let c = color.channel_count() as usize;
        let v = noise(w as usize * h as usize * c, seed);
        let f = ImageBuffer::<image::Rgba<f32>, _>::from_fn(w, h, |x, y| {
            let i = (y as usize * w as usize + x as usize) * c;
            image::Rgba(std::array::from_fn(|k| v[i + k.min(c - 1)]))
        });
        let f = DynamicImage::ImageRgba32F(f);
        crate::pixels::convert(f, color)
    }

    #[test]
    fn matches_the_reference_on_every_layout_and_odd_sizes() {
        let sizes = [(1, 1), (1, 9), (13, 1), (17, 5), (70, 133), (301, 77)];
        let colors = [
            ColorType::L8,
            ColorType::La8,
            ColorType::Rgb8,
            ColorType::Rgba8,
            ColorType::L16,
            ColorType::Rgb16,
            ColorType::Rgba16,
            ColorType::Rgb32F,
            ColorType::Rgba32F,
        ];
        for (i, &(w, h)) in sizes.iter().enumerate() {
            for (j, &color) in colors.iter().enumerate() {
                for (sx, sy) in [(2.5, 2.5), (5.0, 40.0)] {
                    for linear in [false, true] {
                        let src = image_of(color, w, h, (i * 31 + j) as u64);
                        let blur = Blur2d::new(Method::Recursive, sx, sy);
                        let want = reference::blur_image(&src, &blur, linear);
                        let mut got = src.clone();
                        blur_image(&mut got, &blur, linear).expect("recursive blur applies");
                        // Floats agree to rounding; integers to one step of rounding either way.
                        let tol = match color {
                            ColorType::Rgb32F | ColorType::Rgba32F => 1e-5,
                            ColorType::L16 | ColorType::Rgb16 | ColorType::Rgba16 => 1.01 / 65535.0,
                            _ => 1.01 / 255.0,
                        };
                        let d = reference::max_difference(&want, &got);
                        assert!(
                            d <= tol,
                            "{color:?} {w}x{h} sigma {sx}/{sy} linear={linear}: {d}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn band_sums_leave_out_only_negligible_weights() {
        // Per component, what the sums leave out against the sum of all weights' sizes: far
        // below f32's rounding (2^-24), and at small sigma most of the band is left out.
        for sigma in [0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 20.0, 50.0] {
            let k = RecursiveGaussian::new(sigma).to_f32_block();
            let sums = BandSums::new(&k, BAND_ROWS);
            for f in 0..4 {
                let size = |w: &[[f32; 4]]| w.iter().map(|w| w[f].abs() as f64).sum::<f64>();
                let left = size(&sums.weights[sums.reach..]) / size(&sums.weights);
                assert!(
                    left < 2f64.powi(-26),
                    "sigma {sigma}, component {f}: {left:e}"
                );
            }
            if sigma <= 5.0 {
                assert!(
                    sums.reach < BAND_ROWS / 2 + 8,
                    "sigma {sigma}: {}",
                    sums.reach
                );
            }
        }
    }

    #[test]
    fn eight_bit_levels_round_as_the_reference_at_large_sigma() {
        // 8-bit samples are filtered in levels (0..=255), the reference in [0, 1]; across many
        // bands and at large sigma they must still round the same nearly everywhere.
        let src = image_of(ColorType::Rgb8, 133, 700, 3);
        for (sx, sy) in [(250.0, 250.0), (1.5, 600.0), (40.0, 3.0)] {
            let blur = Blur2d::new(Method::Recursive, sx, sy);
            let want = reference::blur_image(&src, &blur, false);
            let mut got = src.clone();
            blur_image(&mut got, &blur, false).unwrap();
            let (w, g) = (want.as_bytes(), got.as_bytes());
            let off: Vec<i32> = w
                .iter()
                .zip(g)
                .map(|(&a, &b)| a as i32 - b as i32)
                .collect();
            let differ = off.iter().filter(|&&d| d != 0).count();
            assert!(off.iter().all(|d| d.abs() <= 1), "sigma {sx}/{sy}");
            assert!(
                differ * 1000 < off.len(),
                "sigma {sx}/{sy}: {differ} differ"
            );
        }
    }

    #[test]
    fn constant_image_stays_constant() {
        let mut img: DynamicImage =
            image::RgbImage::from_pixel(90, 300, image::Rgb([7, 128, 255])).into();
        let before = img.clone();
        blur_image(&mut img, &Blur2d::new(Method::Recursive, 30.0, 30.0), false).unwrap();
        assert_eq!(img, before);
    }

    #[test]
    fn fir_axes_are_left_to_the_reference() {
        let mut img: DynamicImage = image::RgbImage::new(4, 4).into();
        assert!(blur_image(&mut img, &Blur2d::new(Method::Fir, 1.0, 1.0), false).is_none());
    }

    #[test]
    fn agrees_with_the_reference_to_a_few_roundings() {
        // Poles first, numerator on their state: the same filter, rounded differently. What
        // it measured: f32 2.4e-7 at σ ≤ 30 and 1.6e-6 at σ = 400; 8-bit 4–13 samples in
        // 632 100 one step off at σ ≤ 120 and 79 at σ = 400. 700 rows: five 128-row bands
        // with boundary states and a short last one.
        let (src, src8) = (
            image_of(ColorType::Rgb32F, 150, 700, 7),
            image_of(ColorType::Rgb8, 301, 700, 3),
        );
        for (sigma, f32_bound, differ_bound) in [
            (1.0, 5e-7, 30),
            (2.0, 5e-7, 30),
            (5.0, 5e-7, 30),
            (11.0, 5e-7, 30),
            (30.0, 5e-7, 30),
            (120.0, 1.5e-6, 40),
            (400.0, 4e-6, 200),
        ] {
            let blur = Blur2d::new(Method::Recursive, sigma, sigma);
            let want = reference::blur_image(&src, &blur, false);
            let mut got = src.clone();
            blur_image(&mut got, &blur, false).unwrap();
            let d = reference::max_difference(&want, &got);
            assert!(d <= f32_bound, "sigma {sigma}: f32 {d:e}");
            let want = reference::blur_image(&src8, &blur, false);
            let mut got = src8.clone();
            blur_image(&mut got, &blur, false).unwrap();
            let (w, g) = (want.as_bytes(), got.as_bytes());
            let differ = w.iter().zip(g).filter(|(a, b)| a != b).count();
            assert!(
                differ <= differ_bound,
                "sigma {sigma}: 8-bit {differ} differ"
            );
        }
    }
}
