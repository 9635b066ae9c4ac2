//! The recursive Gaussian along one axis of an array held in chunks, each chunk filtered on
//! its own, with no overlap between chunks, at the same cost for any sigma: block-parallel
//! recursive filtering (Nehab, Maximo, Lima and Hoppe, "GPU-efficient recursive filtering and
//! summed-area tables") with the chunks as the blocks.
//!
//! The filter is linear and its state is four numbers per line (two 2nd-order sections, each
//! a value and its step), so a chunk filtered from a zero state differs from the whole
//! array's result only by the response to the state entering it from each side. Along one
//! axis that takes three steps, each over every chunk or column of chunks independently:
//!
//! 1. [`Carry::summarize`] each chunk: per line, the state its own samples leave at each end
//!    from a zero start, and its first and last samples ([`SUMMARY`] values).
//! 2. [`Carry::carry`] each column of chunks along the axis (their summaries concatenated
//!    along it): a short walk over the summaries that gives the state entering every chunk
//!    from each side ([`INCOMING`] values per line), the array's own ends extended by the edge
//!    mode, exactly: for the periodic modes the state of the endlessly repeated array.
//! 3. [`Carry::filter`] each chunk from its incoming states.
//!
//! The result is the whole array's recursive filter to float32 rounding (the tests hold it
//! within 2e-5 of the data's range of the filter run down an extension past its reach, for
//! every mode and sigma 2 to 200): within 2e-5 of [`Filter`](super::Filter) on the whole
//! array with `Method::Recursive` for the modes whose edge the whole-array filter meets
//! exactly (clamp, constant), and within 1e-4 for reflect, mirror and wrap, whose extension
//! the whole-array filter cuts where its weights fall under 5e-5 (here it is not cut). A summary or an incoming state is an array
//! of the chunk's shape with the axis's extent replaced by [`SUMMARY`] or [`INCOMING`], so
//! that the chunks' summaries concatenate along the axis as the chunks do.
//!
//! ```
//! use gblur::nd::carry::{Carry, INCOMING, SUMMARY};
//! use gblur::nd::Filter;
//! use gblur::{EdgeMode, Method};
//!
//! // A line of 100 samples held as chunks of 30, 30 and 40, blurred at sigma 25: each chunk
//! // is far shorter than the filter's reach, and none reads another's samples.
//! let line: Vec<f32> = (0..100).map(|i| ((i * 37) % 11) as f32).collect();
//! let lengths = [30, 30, 40];
//! let carry = Carry::new(25.0)?.mode(EdgeMode::Reflect);
//! let chunks: Vec<&[f32]> = vec![&line[..30], &line[30..60], &line[60..]];
//! let mut summaries = Vec::new();
//! for c in &chunks {
//!     let mut s = vec![0f32; SUMMARY];
//!     carry.summarize(c, &[c.len()], 0, &mut s)?;
//!     summaries.extend(s);
//! }
//! let mut incoming = vec![0f32; INCOMING * 3];
//! carry.carry(&summaries, &[SUMMARY * 3], 0, &lengths, &mut incoming)?;
//! let mut chunked = Vec::new();
//! for (c, state) in chunks.iter().zip(incoming.chunks(INCOMING)) {
//!     let mut out = vec![0f32; c.len()];
//!     carry.filter(c, &[c.len()], 0, state, &mut out)?;
//!     chunked.extend(out);
//! }
//! let mut whole = line.clone();
//! Filter::new(&[25.0])?.method(Method::Recursive).mode(EdgeMode::Reflect).apply(&mut whole, &[100])?;
//! let worst = chunked.iter().zip(&whole).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
//! assert!(worst < 10.0 * 5e-5);
//! # Ok::<(), gblur::Error>(())
//! ```

// Pack loops index several arrays in step; written with indices they vectorise reliably.
#![allow(clippy::needless_range_loop)]

use crate::api::gaussian::check_sigma;
use crate::api::Error;
use crate::cpu::banded::sections::{Coef, Sections};
use crate::cpu::lanes::{simd_dispatch, FlushSubnormals, Isa, LANES, V};
use crate::filter::gaussian::{RecursiveGaussian, SECTION_FLOATS};
use crate::filter::EdgeMode;
use rayon::prelude::*;
use walk::{Pair, Walk};

/// Values per line in a chunk's summary: the causal state at its last sample and the
/// anticausal state at its first (four each, from a zero start), then its first and last
/// samples.
pub const SUMMARY: usize = 10;

/// Values per line in a chunk's incoming states: the causal state at its first sample, then
/// the anticausal state at its last.
pub const INCOMING: usize = 8;

/// Lines a task of the thread pool takes at least: a few groups of `LANES`.
const LINES_PER_TASK: usize = 4 * LANES;

/// The recursive Gaussian along one axis, for arrays held in chunks (see the module's
/// documentation for the three steps).
#[derive(Clone, Debug, PartialEq)]
pub struct Carry {
    sigma: f64,
    mode: EdgeMode,
    cval: f64,
    /// The difference-form coefficients (`RecursiveGaussian::to_f32_difference_block`):
    /// the sections run on the input's first differences, and the output is the input plus
    /// theirs, as in the whole-array filter.
    block: [f32; 2 * SECTION_FLOATS],
}

/// The zero-input step of each section of a difference-form block as a matrix on its `(w,
/// d)`: what the carries propagate states with, in f64 from the f32 coefficients the kernels
/// step with (`Coef::differences`: `d' = r² d − eps w + u`, `w' = w + d'`).
fn transition(block: &[f32; 2 * SECTION_FLOATS]) -> Pair {
    [0, 1].map(|s| {
        let eps = block[s * SECTION_FLOATS + 4] as f64;
        let r2 = (1.0 - block[s * SECTION_FLOATS + 5] as f64) as f32 as f64;
        [1.0 - eps, r2, -eps, r2]
    })
}

/// A chunk (or summary) seen along one axis: `outer` blocks of `n × inner` values.
#[derive(Clone, Copy)]
struct Along {
    outer: usize,
    n: usize,
    inner: usize,
}

impl Along {
    fn new(shape: &[usize], axis: usize, len: usize, what: &str) -> Result<Along, Error> {
        if axis >= shape.len() {
            return Err(Error::Shape(format!(
                "axis {axis} is out of range for a {what} of {} dimensions",
                shape.len()
            )));
        }
        let total: usize = shape.iter().product();
        if total != len {
            return Err(Error::Buffer(format!(
                "the {what} holds {len} values where its shape {shape:?} has {total}"
            )));
        }
        Ok(Along {
            outer: shape[..axis].iter().product(),
            n: shape[axis],
            inner: shape[axis + 1..].iter().product(),
        })
    }

    /// The same lines with `n` values each.
    fn with_n(self, n: usize) -> Along {
        Along { n, ..self }
    }

    /// How many outer blocks a task of the pool takes.
    fn outer_per_task(&self) -> usize {
        LINES_PER_TASK.div_ceil(self.inner.max(1)).max(1)
    }

    /// Where line `l` (of `outer × inner`, counted in a task's own blocks) starts.
    fn start(&self, l: usize) -> usize {
        (l / self.inner) * self.n * self.inner + l % self.inner
    }

    /// The lines of `blocks` outer blocks in groups of `LANES`: neighbouring lines where the
    /// axis has `LANES` or more lines beside each other (a vector load per row), else lines
    /// gathered from wherever they start.
    fn groups(&self, blocks: usize) -> Vec<Group> {
        let mut groups = Vec::new();
        let mut push = |starts: &dyn Fn(usize) -> usize, live: usize, contiguous: bool| {
            let mut at = [0; LANES];
            for (g, a) in at.iter_mut().enumerate() {
                *a = starts(g.min(live - 1));
            }
            groups.push(Group {
                starts: at,
                live,
                contiguous,
            });
        };
        if self.inner >= LANES {
            for o in 0..blocks {
                let base = o * self.n * self.inner;
                for i in (0..self.inner).step_by(LANES) {
                    let live = (self.inner - i).min(LANES);
                    push(&|g| base + i + g, live, live == LANES);
                }
            }
        } else {
            let lines = blocks * self.inner;
            for first in (0..lines).step_by(LANES) {
                push(
                    &|g| self.start(first + g),
                    (lines - first).min(LANES),
                    false,
                );
            }
        }
        groups
    }

    /// Where the line that starts at `s` in `lines`' layout starts in this one.
    fn start_of(&self, lines: Along, s: usize) -> usize {
        let (o, i) = (s / (lines.n * lines.inner), s % lines.inner);
        o * self.n * self.inner + i
    }
}

/// Lines stepped together, one per lane of the vector.
#[derive(Clone, Copy)]
struct Group {
    /// Where each lane's line starts; the lanes from `live` on repeat the last live line
    /// (they step the same values and write nothing).
    starts: [usize; LANES],
    live: usize,
    /// Whether the lanes are the neighbouring lines from `starts[0]` on.
    contiguous: bool,
}

impl Group {
    /// The same lines in another layout (`to`) of `from`'s lines, e.g. a summary's.
    #[inline(always)]
    fn moved(&self, from: Along, to: Along) -> Group {
        let mut starts = self.starts;
        for s in starts.iter_mut() {
            *s = to.start_of(from, *s);
        }
        Group { starts, ..*self }
    }

    /// Each lane's value `offset` past its line's start.
    #[inline(always)]
    fn load(&self, x: &[f32], offset: usize) -> V {
        let mut v = V::ZERO;
        if self.contiguous {
            v.0.copy_from_slice(&x[self.starts[0] + offset..][..LANES]);
        } else {
            for g in 0..LANES {
                v.0[g] = x[self.starts[g] + offset];
            }
        }
        v
    }

    /// Each live lane's value of `v` written `offset` past its line's start.
    #[inline(always)]
    fn store(&self, out: &mut [f32], offset: usize, v: V) {
        if self.contiguous {
            out[self.starts[0] + offset..][..LANES].copy_from_slice(&v.0);
        } else {
            for g in 0..self.live {
                out[self.starts[g] + offset] = v.0[g];
            }
        }
    }

    /// Both sections' state, stored as four values from `first` on (`w, d` of each).
    #[inline(always)]
    fn load_state(&self, from: &[f32], first: usize, stride: usize) -> Sections {
        Sections {
            w: [
                self.load(from, first * stride),
                self.load(from, (first + 2) * stride),
            ],
            d: [
                self.load(from, (first + 1) * stride),
                self.load(from, (first + 3) * stride),
            ],
        }
    }
}

impl Carry {
    /// The recursive Gaussian of `sigma` (from 0.001 to 1e6 samples) along one axis; the
    /// edge mode defaults to reflect (scipy's), the constant to 0.
    ///
    /// ```
    /// assert!(gblur::nd::carry::Carry::new(0.0).is_err());
    /// ```
    pub fn new(sigma: f64) -> Result<Carry, Error> {
        check_sigma(sigma, "the chunked axis")?;
        if sigma == 0.0 {
            return Err(Error::Sigma {
                axis: "the chunked axis".into(),
                value: sigma,
            });
        }
        Ok(Carry {
            sigma,
            mode: EdgeMode::Reflect,
            cval: 0.0,
            block: RecursiveGaussian::new(sigma).to_f32_difference_block(),
        })
    }

    /// What lies beyond the array's two ends along the axis (a constant's value is `cval`'s,
    /// in the array's units, as with [`Filter`](super::Filter)).
    pub fn mode(mut self, mode: EdgeMode) -> Self {
        self.mode = mode;
        self
    }

    /// The value beyond the ends for `EdgeMode::Constant` (a finite number: [`Carry::carry`]
    /// refuses any other).
    pub fn cval(mut self, cval: f64) -> Self {
        self.cval = cval;
        self
    }

    /// The sigma this filter was made for.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// Step 1: writes the summary of `chunk` (of `shape`) along `axis` into `summary`, of
    /// the chunk's shape with the axis's extent [`SUMMARY`].
    pub fn summarize(
        &self,
        chunk: &[f32],
        shape: &[usize],
        axis: usize,
        summary: &mut [f32],
    ) -> Result<(), Error> {
        let lines = Along::new(shape, axis, chunk.len(), "chunk")?;
        let out = lines.with_n(SUMMARY);
        check_len(summary, out, "summary")?;
        if lines.n == 0 || summary.is_empty() {
            summary.fill(0.0);
            return Ok(());
        }
        let per = lines.outer_per_task();
        let coef = Coef::differences(&self.block);
        summary
            .par_chunks_mut(per * SUMMARY * lines.inner)
            .zip(chunk.par_chunks(per * lines.n * lines.inner))
            .for_each(|(sum, x)| {
                let _flush = FlushSubnormals::new(true);
                summarize_task(&coef, x, sum, lines);
            });
        Ok(())
    }

    /// Step 2: from the summaries of a column of chunks along `axis`, concatenated along it
    /// in order (`summaries` of `shape`, whose extent along the axis is [`SUMMARY`] times
    /// the number of chunks), and the chunks' extents along the axis (`lengths`), writes the
    /// states entering each chunk into `incoming` (the same shape with [`INCOMING`] per
    /// chunk). A chunk of extent 0 gets zeros and passes the states on.
    pub fn carry(
        &self,
        summaries: &[f32],
        shape: &[usize],
        axis: usize,
        lengths: &[usize],
        incoming: &mut [f32],
    ) -> Result<(), Error> {
        let lines = Along::new(shape, axis, summaries.len(), "column of summaries")?;
        if lines.n != SUMMARY * lengths.len() {
            return Err(Error::Shape(format!(
                "{} chunks have {} summary values along the axis, not {}",
                lengths.len(),
                SUMMARY * lengths.len(),
                lines.n
            )));
        }
        let out = lines.with_n(INCOMING * lengths.len());
        check_len(incoming, out, "incoming states")?;
        if !self.cval.is_finite() {
            return Err(Error::Constant(self.cval));
        }
        if incoming.is_empty() {
            return Ok(());
        }
        let walk = Walk::new(transition(&self.block), lengths, self.mode);
        let per = lines.outer_per_task();
        let cval = self.cval;
        incoming
            .par_chunks_mut(per * out.n * lines.inner)
            .zip(summaries.par_chunks(per * lines.n * lines.inner))
            .for_each(|(inc, sums)| {
                let blocks = sums.len() / (lines.n * lines.inner);
                for l in 0..blocks * lines.inner {
                    let (from, to) = (lines.start(l), out.start(l));
                    let read = |k: usize, v: usize| sums[from + (k * SUMMARY + v) * lines.inner];
                    let states = walk.line(read, cval);
                    for (k, chunk) in states.iter().enumerate() {
                        for (v, &value) in chunk.iter().enumerate() {
                            inc[to + (k * INCOMING + v) * lines.inner] = value as f32;
                        }
                    }
                }
            });
        Ok(())
    }

    /// Step 3: filters `chunk` (of `shape`) along `axis` into `output` (the same shape),
    /// from the chunk's `incoming` states (the chunk's shape with the axis's extent
    /// [`INCOMING`], as step 2 wrote them for this chunk).
    pub fn filter(
        &self,
        chunk: &[f32],
        shape: &[usize],
        axis: usize,
        incoming: &[f32],
        output: &mut [f32],
    ) -> Result<(), Error> {
        let lines = Along::new(shape, axis, chunk.len(), "chunk")?;
        let states = lines.with_n(INCOMING);
        check_len(incoming, states, "incoming states")?;
        check_len(output, lines, "output")?;
        if chunk.is_empty() {
            return Ok(());
        }
        let per = lines.outer_per_task();
        let coef = Coef::differences(&self.block);
        output
            .par_chunks_mut(per * lines.n * lines.inner)
            .zip(chunk.par_chunks(per * lines.n * lines.inner))
            .zip(incoming.par_chunks(per * INCOMING * lines.inner))
            .for_each(|((out, x), inc)| {
                let _flush = FlushSubnormals::new(true);
                filter_task(&coef, x, inc, out, lines);
            });
        Ok(())
    }
}

fn check_len(buffer: &[f32], along: Along, what: &str) -> Result<(), Error> {
    let want = along.outer * along.n * along.inner;
    if buffer.len() == want {
        Ok(())
    } else {
        Err(Error::Buffer(format!(
            "the {what} hold {} values where {want} are needed",
            buffer.len()
        )))
    }
}

simd_dispatch!(fn summarize_task<>(coef: &Coef, x: &[f32], sum: &mut [f32], lines: Along) => summarize_impl);
simd_dispatch!(fn filter_task<>(coef: &Coef, x: &[f32], inc: &[f32], out: &mut [f32], lines: Along) => filter_impl);

/// A group of lines that run along memory (stride 1) copied into `rows` (row `j` holds
/// sample `j` of every lane), in 16 × 16 blocks turned by a transpose, the tail sample by
/// sample.
#[inline(always)]
fn gather_along_memory<I: Isa>(group: &Group, x: &[f32], n: usize, rows: &mut [V]) {
    let mut j = 0;
    let mut block = [V::ZERO; LANES];
    while j + LANES <= n {
        for (g, v) in block.iter_mut().enumerate() {
            v.0.copy_from_slice(&x[group.starts[g] + j..][..LANES]);
        }
        I::transpose_to(
            &block,
            (&mut rows[j..j + LANES]).try_into().expect("16 rows"),
        );
        j += LANES;
    }
    for (r, row) in rows.iter_mut().enumerate().take(n).skip(j) {
        *row = group.load(x, r);
    }
}

/// `rows` (as `gather_along_memory` lays them out) written back to the group's live lines.
#[inline(always)]
fn scatter_along_memory<I: Isa>(group: &Group, rows: &[V], n: usize, out: &mut [f32]) {
    let mut j = 0;
    let mut block = [V::ZERO; LANES];
    while j + LANES <= n {
        I::transpose_to(rows[j..j + LANES].try_into().expect("16 rows"), &mut block);
        for (g, v) in block.iter().enumerate().take(group.live) {
            out[group.starts[g] + j..][..LANES].copy_from_slice(&v.0);
        }
        j += LANES;
    }
    for (r, &row) in rows.iter().enumerate().take(n).skip(j) {
        group.store(out, r, row);
    }
}

/// Groups filtered side by side: independent recursions the core overlaps, and for lines
/// beside each other in memory, rows read 4 × 64 bytes at a time.
const PACK: usize = 4;

/// A pack's lines copied into rows per group (row `j` holds sample `j` of every lane): the
/// passes then walk contiguous memory, where down the lines themselves each row lies a
/// stride away, and a power-of-two stride maps every row to the same cache set. Lines a
/// stride apart are read row by row across the pack (one run of neighbouring bytes per row).
#[inline(always)]
fn gather_pack<I: Isa, const G: usize>(
    pack: &[Group],
    x: &[f32],
    lines: Along,
    rows: &mut [Vec<V>; PACK],
) {
    if lines.inner == 1 {
        for g in 0..G {
            gather_along_memory::<I>(&pack[g], x, lines.n, &mut rows[g]);
        }
        return;
    }
    for j in 0..lines.n {
        for g in 0..G {
            rows[g][j] = pack[g].load(x, j * lines.inner);
        }
    }
}

#[inline(always)]
fn scatter_pack<I: Isa, const G: usize>(
    pack: &[Group],
    rows: &[Vec<V>; PACK],
    lines: Along,
    out: &mut [f32],
) {
    if lines.inner == 1 {
        for g in 0..G {
            scatter_along_memory::<I>(&pack[g], &rows[g], lines.n, out);
        }
        return;
    }
    for j in 0..lines.n {
        for g in 0..G {
            pack[g].store(out, j * lines.inner, rows[g][j]);
        }
    }
}

/// Scratch rows for a pack: `n` rows per group.
fn pack_rows(n: usize) -> [Vec<V>; PACK] {
    std::array::from_fn(|_| vec![V::ZERO; n])
}

/// The summaries of a task's lines of `x` into `sum`: per line, the causal state at its last
/// sample and the anticausal state at its first, each from a zero start, then its first and
/// last samples.
#[inline(always)]
fn summarize_impl<I: Isa>(coef: &Coef, x: &[f32], sum: &mut [f32], lines: Along) {
    let mut rows = pack_rows(lines.n);
    let groups = lines.groups(x.len() / (lines.n * lines.inner));
    for pack in groups.chunks(PACK) {
        match pack.len() {
            PACK => summarize_pack::<I, PACK>(coef, pack, x, sum, lines, &mut rows),
            _ => {
                for group in pack.chunks(1) {
                    summarize_pack::<I, 1>(coef, group, x, sum, lines, &mut rows);
                }
            }
        }
    }
}

#[inline(always)]
fn summarize_pack<I: Isa, const G: usize>(
    coef: &Coef,
    pack: &[Group],
    x: &[f32],
    sum: &mut [f32],
    lines: Along,
    rows: &mut [Vec<V>; PACK],
) {
    let (n, stride) = (lines.n, lines.inner);
    gather_pack::<I, G>(pack, x, lines, rows);
    let mut causal = [Sections::ZERO; G];
    for j in 1..n {
        for g in 0..G {
            causal[g].step::<I>(coef, rows[g][j] - rows[g][j - 1]);
        }
    }
    let mut anticausal = [Sections::ZERO; G];
    for j in (0..n - 1).rev() {
        for g in 0..G {
            anticausal[g].step::<I>(coef, rows[g][j + 1] - rows[g][j]);
        }
    }
    for g in 0..G {
        let (c, a) = (&causal[g], &anticausal[g]);
        let values = [
            c.w[0],
            c.d[0],
            c.w[1],
            c.d[1],
            a.w[0],
            a.d[0],
            a.w[1],
            a.d[1],
            rows[g][0],
            rows[g][n - 1],
        ];
        let to = pack[g].moved(lines, lines.with_n(SUMMARY));
        for (v, value) in values.into_iter().enumerate() {
            to.store(sum, v * stride, value);
        }
    }
}

/// Both halves of the filter down a task's lines of `x` into `out`, the causal one from the
/// state `inc` holds for each line's first sample, the anticausal one from its state at the
/// last: the whole-array filter's steps (`cpu::axis`), on the input's first differences.
#[inline(always)]
fn filter_impl<I: Isa>(coef: &Coef, x: &[f32], inc: &[f32], out: &mut [f32], lines: Along) {
    let (mut rows, mut y) = (pack_rows(lines.n), pack_rows(lines.n));
    let groups = lines.groups(x.len() / (lines.n * lines.inner));
    for pack in groups.chunks(PACK) {
        match pack.len() {
            PACK => filter_pack::<I, PACK>(coef, pack, x, inc, out, lines, &mut rows, &mut y),
            _ => {
                for group in pack.chunks(1) {
                    filter_pack::<I, 1>(coef, group, x, inc, out, lines, &mut rows, &mut y);
                }
            }
        }
    }
}

/// One pack of `filter_impl`: the causal outputs wait in `y` for the anticausal ones, which
/// add to them and the input.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn filter_pack<I: Isa, const G: usize>(
    coef: &Coef,
    pack: &[Group],
    x: &[f32],
    inc: &[f32],
    out: &mut [f32],
    lines: Along,
    rows: &mut [Vec<V>; PACK],
    y: &mut [Vec<V>; PACK],
) {
    let (n, stride) = (lines.n, lines.inner);
    gather_pack::<I, G>(pack, x, lines, rows);
    let states: [Group; G] = std::array::from_fn(|g| pack[g].moved(lines, lines.with_n(INCOMING)));
    let mut st: [Sections; G] = std::array::from_fn(|g| states[g].load_state(inc, 0, stride));
    for g in 0..G {
        y[g][0] = st[g].output::<I>(coef.causal(), V::ZERO);
    }
    for j in 1..n {
        for g in 0..G {
            st[g].step::<I>(coef, rows[g][j] - rows[g][j - 1]);
            y[g][j] = st[g].output::<I>(coef.causal(), V::ZERO);
        }
    }
    let mut st: [Sections; G] = std::array::from_fn(|g| states[g].load_state(inc, 4, stride));
    for g in 0..G {
        let a = st[g].output::<I>(coef.anticausal(), V::ZERO);
        y[g][n - 1] = rows[g][n - 1] + (y[g][n - 1] + a);
    }
    for j in (0..n - 1).rev() {
        for g in 0..G {
            st[g].step::<I>(coef, rows[g][j + 1] - rows[g][j]);
            let a = st[g].output::<I>(coef.anticausal(), V::ZERO);
            y[g][j] = rows[g][j] + (y[g][j] + a);
        }
    }
    scatter_pack::<I, G>(pack, y, lines, out);
}

mod walk;

#[cfg(test)]
mod tests;
