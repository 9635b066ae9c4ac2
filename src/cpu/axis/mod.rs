//! The Gaussian along one axis of a contiguous N-D array, on the host's cores: the engine of
//! `gblur::nd` (and of the Python package's `gaussian_filter`).
//!
//! An array of shape `(…, n, …)` seen along axis k is `outer × n × inner`: `outer` the product
//! of the sizes before k, `inner` of those after it, so line `(o, i)` starts at
//! `o·n·inner + i` and steps by `inner`. Lines are taken sixteen at a time, one per SIMD lane
//! (a block), and blocks four at a time (a work item; eight or sixteen for f32 columns a page
//! or more apart, `WIDE` and `WIDEST`): the item's blocks are gathered side by side into a
//! scratch of `n + 2·pad` rows of one vector per block (converted to f32, the edge mode's
//! extension written around them), filtered down the scratch as independent recurrences,
//! which hide each other's FMA latency, and scattered back (`pass.rs` deals the items out).
//! Where `inner ≥ 16` a block's lanes are neighbouring columns, so every gathered row of an
//! item is 64 or more neighbouring samples, and the rows ahead are prefetched (each is a page
//! or more from the last, which the hardware prefetchers do not follow). Otherwise the lanes are one channel of sixteen neighbouring
//! rows (the last axis, where `inner` is 1, or the pixels of an interleaved image, `inner` its
//! channels), moved through 16×16 transposes; there an item of four blocks is taken only where
//! its scratch stays in the core's L2 cache (`SCRATCH_BYTES`), else an item is one block. Each
//! pass reads and writes the array once; the last two axes of a stack of small planes go
//! plane by plane in one pass (`planes.rs`, chosen by `steps.rs`).
//!
//! The recursive filter runs in its difference form (`reference::recursive_line`, the same
//! sections stepped as the banded blur steps them): a constant line stays constant bit for
//! bit, and both halves start from a zero state at the scratch's ends, which is the clamp
//! edge. Other modes extend the line by the filter's reach (`edges::reach`), so what lies
//! beyond the extension moves no output by more than `edges::RECURSIVE_TAIL` of its range.
//! The FIR (below σ = 2, or where a caller asks for scipy's cut kernel) runs on the same
//! scratch with reads clamped to it.

use super::banded::sections::{Coef, Sections};
use super::lanes::{Isa, LANES, V};
use crate::cpu::lanes::simd_dispatch;
use crate::filter::{EdgeMode, LineFilter};
use columns::{anticausal_scatter, gather_causal, load_row};
use non_finite::Spoilers;
use rayon::prelude::*;

pub use element::Element;
use pass::AxisPass;

/// One axis's filter and what lies beyond its ends.
#[derive(Clone, Debug)]
pub(crate) struct AxisFilter {
    pub filter: LineFilter,
    pub edge: EdgeMode,
    /// The constant of `EdgeMode::Constant`, in the array's own units: one value, or one per
    /// channel of an interleaved image, where the line starting at element `s` takes
    /// `cvals[s % cvals.len()]` (its channel, for an array of shape (…, channels)).
    pub cvals: Vec<f32>,
    /// Where a NaN or an infinity spoils only the outputs within this many samples of it
    /// (scipy's kernel radius: `non_finite`); None lets non-finite values run through the
    /// filter (the image paths, which replace them first).
    pub footprint: Option<usize>,
}

impl AxisFilter {
    /// Samples of extension each end needs: none for clamp (the filter's own edge), one for
    /// a constant (the clamp beyond it repeats the constant), else the filter's reach.
    pub fn pad(&self) -> usize {
        match self.edge {
            EdgeMode::Clamp => 0,
            EdgeMode::Constant(_) => 1,
            _ => self.filter.reach(),
        }
    }

    /// Each axis's extension: its filter's pad (0 where it has none).
    pub fn pads(axes: &[Option<AxisFilter>]) -> Vec<usize> {
        axes.iter()
            .map(|a| a.as_ref().map_or(0, AxisFilter::pad))
            .collect()
    }

    /// Whether no axis needs an extension (every filtered one clamped).
    pub fn nothing_to_extend(axes: &[Option<AxisFilter>]) -> bool {
        axes.iter().flatten().all(|a| a.pad() == 0)
    }

    /// Each axis's line filter (None where the axis is left alone).
    pub fn lines(axes: &[Option<AxisFilter>]) -> Vec<Option<LineFilter>> {
        axes.iter()
            .map(|a| a.as_ref().map(|a| a.filter.clone()))
            .collect()
    }
}

/// `outer × n × inner`: the array seen along one axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lines {
    pub outer: usize,
    pub n: usize,
    pub inner: usize,
}

impl Lines {
    /// The array of `shape` along `axis`.
    pub fn along(shape: &[usize], axis: usize) -> Lines {
        Lines {
            outer: shape[..axis].iter().product(),
            n: shape[axis],
            inner: shape[axis + 1..].iter().product(),
        }
    }

    fn len(&self) -> usize {
        self.outer * self.n * self.inner
    }
}

/// A pointer that blocks share across threads. Every block reads and writes only its own
/// lines' samples, so no two threads touch the same sample.
#[derive(Clone, Copy)]
struct Shared<T>(*mut T);
// SAFETY: see the type's comment; the pointers outlive the parallel loop that uses them.
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// The pointer (a method, so that closures capture the whole `Shared`, not its field).
    fn get(self) -> *mut T {
        self.0
    }
}

/// A block of up to sixteen lines: where lane ℓ's line starts, and how the lanes lie.
#[derive(Clone, Copy)]
enum Block {
    /// Lanes are neighbouring columns: line ℓ starts at `start + ℓ`.
    Columns { start: usize, lanes: usize },
    /// Lanes are the same channel of neighbouring rows (`inner < 16`: the last axis, where
    /// `inner` is 1, or the pixels of an interleaved image, `inner` its channels): line ℓ
    /// starts at `start + ℓ·n·inner`, its samples `inner` apart.
    Rows { start: usize, lanes: usize },
}

impl Block {
    fn lanes(self) -> usize {
        match self {
            Block::Columns { lanes, .. } | Block::Rows { lanes, .. } => lanes,
        }
    }

    /// Where lane `l`'s line starts.
    fn start(self, l: usize, lines: Lines) -> usize {
        match self {
            Block::Columns { start, .. } => start + l,
            Block::Rows { start, .. } => start + l * lines.n * lines.inner,
        }
    }
}

impl Lines {
    /// Every block of the array, in memory order.
    fn blocks(&self) -> Vec<Block> {
        let mut out = Vec::new();
        if self.inner >= LANES {
            for o in 0..self.outer {
                for i0 in (0..self.inner).step_by(LANES) {
                    out.push(Block::Columns {
                        start: o * self.n * self.inner + i0,
                        lanes: (self.inner - i0).min(LANES),
                    });
                }
            }
        } else {
            // The channels of the same rows one after another, so that a thread that takes
            // neighbouring blocks finds the rows in its cache.
            for o0 in (0..self.outer).step_by(LANES) {
                for i in 0..self.inner {
                    out.push(Block::Rows {
                        start: o0 * self.n * self.inner + i,
                        lanes: (self.outer - o0).min(LANES),
                    });
                }
            }
        }
        out
    }

    /// Where line `l` (in line order: `o·inner + i`) starts.
    #[cfg(test)]
    fn start(&self, l: usize) -> usize {
        (l / self.inner) * self.n * self.inner + l % self.inner
    }
}

/// Blocks filtered together by one work item: four independent recurrences per row hide the
/// FMA latency that one would wait on (the banded blur's `VECS`), and where the lanes are
/// columns each row of the item is 64 neighbouring samples, a whole cache line per block.
const GROUP: usize = 4;

/// The most scratch (the lines with their extension, and the filtered lines) an item of
/// rows takes in four blocks: an L2 cache's worth on current cores. On a 16-core Xeon, f32
/// 8192², the last axis in four blocks (4 MiB, in L3) took 1.8 times as long as in one
/// (1 MiB), where the first axis (columns) took 0.8 times as long in four.
const SCRATCH_BYTES: usize = 1 << 20;

/// Blocks side by side in an item of columns a page or more apart whose scratch fits the core's
/// cache (the first axis of a volume): each row of the item is 128 neighbouring samples, so
/// that each page visited gives twice the bytes. On 16 threads of a Xeon, f32 256×512², that
/// axis took 0.81 times the time of four blocks (medians of paired rounds); on rows closer
/// than a page (the middle axis) eight were 1.03 times as slow, sixteen 1.2 times.
const WIDE: usize = 8;

/// `WIDE`'s blocks doubled where the scratch still fits (columns of up to 512 samples with
/// their extension: a volume's first axis up to 512 deep with clamped edges, less with a mode
/// that extends the lines): each row of the item is 256 neighbouring samples, a
/// whole kilobyte of each page visited. The first axis of f32 512³ took 0.89 times the time of
/// `WIDE` on 16 threads of a Xeon (four alternating rounds), 0.88 on one thread of an EPYC.
const WIDEST: usize = 16;

/// The page size the prefetchers stop at.
const PAGE: usize = 4096;

/// Filters every line of `src` along the axis `lines` describes into `dst` (the same shape).
/// `src` and `dst` may be the same memory: pass the same pointer (`filter_axis_in_place`).
///
/// # Safety
/// `src` and `dst` must point to `lines.len()` valid samples each, and nothing else may
/// access them during the call; they are either the same buffer or do not overlap.
unsafe fn filter_axis_raw<S: Element, D: Element>(
    src: *const S,
    dst: *mut D,
    lines: Lines,
    f: &AxisFilter,
) {
    if lines.len() == 0 {
        return;
    }
    let pass = AxisPass::new::<S, D>(lines, f);
    let (src, dst) = (Shared(src as *mut S), Shared(dst));
    pass.par_items().for_each_init(
        || pass.scratch(),
        |scratch, blocks| {
            // SAFETY: the caller's promise; each item touches only its own lines.
            unsafe { pass.item(src, dst, blocks, scratch) }
        },
    );
}

/// `filter_axis_raw` from `src` into `dst`.
pub(crate) fn filter_axis<S: Element, D: Element>(
    src: &[S],
    dst: &mut [D],
    shape: &[usize],
    axis: usize,
    f: &AxisFilter,
) {
    let lines = Lines::along(shape, axis);
    assert_eq!(src.len(), lines.len(), "source size");
    assert_eq!(dst.len(), lines.len(), "destination size");
    // The destination may be fresh from its allocator (a new array): its pages mapped on
    // every core at once, not in turn as a walk down columns reaches them on every thread.
    // A pass along rows writes each thread's own run of pages: on many threads their faults
    // overlap the other threads' filtering, and mapping them first is a trip through memory
    // more (f32 8192² into a new array, rows first, 16 threads of a Xeon: 34.7 / 35.1 ms
    // without it against 37.7 / 38.5 with it); on two cores of an EPYC the faults wait
    // (f32 4096², 2 threads: 20.3 ms without against 17.9, medians of five).
    if lines.inner != 1 || rayon::current_num_threads() <= 4 {
        crate::memory::map_pages_in_parallel(dst, D::store(0.0));
    }
    // SAFETY: both slices hold the array, and `dst` is borrowed mutably, so apart from `src`.
    unsafe { filter_axis_raw(src.as_ptr(), dst.as_mut_ptr(), lines, f) }
}

/// `filter_axis_raw` in place.
pub(crate) fn filter_axis_in_place<T: Element>(
    data: &mut [T],
    shape: &[usize],
    axis: usize,
    f: &AxisFilter,
) {
    let lines = Lines::along(shape, axis);
    assert_eq!(data.len(), lines.len(), "array size");
    let p = data.as_mut_ptr();
    // SAFETY: the slice holds the array and is borrowed mutably for the call.
    unsafe { filter_axis_raw(p as *const T, p, lines, f) }
}

/// The recursive filter of an axis as the kernels step it: one pair of sections, and a second
/// pair on the same input whose output is added (the second derivative's design).
pub(crate) struct Recursion {
    first: Coef,
    second: Option<Coef>,
}

/// One work item: up to `G` blocks side by side (`GROUP`, `WIDE` or `WIDEST`), row `k` of
/// block `g` at `x[k·G + g]` in the scratch (the blocks a short last item lacks are filtered as
/// whatever the scratch holds and never written back).
#[derive(Clone, Copy)]
struct Item<'a> {
    blocks: &'a [Block],
    lines: Lines,
    pad: usize,
    /// How many rows ahead a walk down columns asks for its rows (`ahead_rows`).
    ahead: usize,
}

// `filter_item_impl` with `GROUP`, `WIDE`, `WIDEST` or one block side by side. The wide items
// are called with f32 alone (the arrays that are volumes), so that they are not compiled for
// every pair of sample types.
simd_dispatch!(fn filter_four<S: Element, D: Element>(src: Shared<S>, dst: Shared<D>, item: Item<'_>, f: &AxisFilter, coef: Option<&Recursion>, x: &mut [V], out: &mut [V]) => filter_item_impl[GROUP]);
simd_dispatch!(fn filter_wide<S: Element, D: Element>(src: Shared<S>, dst: Shared<D>, item: Item<'_>, f: &AxisFilter, coef: Option<&Recursion>, x: &mut [V], out: &mut [V]) => filter_item_impl[WIDE]);
simd_dispatch!(fn filter_widest<S: Element, D: Element>(src: Shared<S>, dst: Shared<D>, item: Item<'_>, f: &AxisFilter, coef: Option<&Recursion>, x: &mut [V], out: &mut [V]) => filter_item_impl[WIDEST]);
simd_dispatch!(fn filter_one<S: Element, D: Element>(src: Shared<S>, dst: Shared<D>, item: Item<'_>, f: &AxisFilter, coef: Option<&Recursion>, x: &mut [V], out: &mut [V]) => filter_item_impl[1]);

/// Whether `T` is f32.
fn is_f32<T: 'static>() -> bool {
    std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>()
}

/// A work item's lines gathered into `x`, extended by the edge mode, filtered into `out` and
/// scattered into `dst`.
#[inline(always)]
fn filter_item_impl<S: Element, D: Element, I: Isa, const G: usize>(
    src: Shared<S>,
    dst: Shared<D>,
    item: Item<'_>,
    f: &AxisFilter,
    coef: Option<&Recursion>,
    x: &mut [V],
    out: &mut [V],
) {
    // Long columns walk their scratch (lines and outputs) beyond the core's cache: there the
    // gather feeds the causal walk and the anticausal walk the scatter, two trips through the
    // scratch fewer (f32 8192², the first axis on 16 threads of a Xeon: 0.92 times the time;
    // on one, 0.77). Short ones, in the cache, lose a little this way (up to 1.1 times).
    let long = 2 * item.lines.n * G * std::mem::size_of::<V>() > SCRATCH_BYTES;
    if let (Some(k), 0, Block::Columns { .. }, true) = (coef, item.pad, item.blocks[0], long) {
        if k.second.is_none() {
            // SAFETY: as below.
            let seen = unsafe { gather_causal::<S, I, G>(src.get(), item, x, out, &k.first) };
            if !(seen && f.footprint.is_some()) {
                // SAFETY: as below.
                unsafe { anticausal_scatter::<D, I, G>(dst.get(), item, x, out, &k.first) };
                return;
            }
        }
    }
    // SAFETY: `filter_axis_raw`'s caller's promise; each item touches only its own lines.
    unsafe { gather::<S, I, G>(src.get(), item, x) };
    extend::<G>(x, item, f);
    let seen = filter_scratch::<I, G>(x, out, f, coef, item.pad);
    if let (true, Some(footprint)) = (seen, f.footprint) {
        // The rare item with a NaN or an infinity, again with them as 0, then their footprints.
        let spoilers = Spoilers::take(x, G);
        filter_scratch::<I, G>(x, out, f, coef, item.pad);
        spoilers.spoil(out, G, item.pad, footprint, f.filter.order() == 0);
    }
    // SAFETY: as for the gather.
    unsafe { scatter::<D, I, G>(dst.get(), item, out) };
}

/// The axis's filter down the scratch `x` into `out`; whether `x` holds a NaN or an infinity
/// (seen by the recursive filter's causal walk as it goes; looked for after the FIR only where
/// the axis has a footprint).
#[inline(always)]
fn filter_scratch<I: Isa, const G: usize>(
    x: &[V],
    out: &mut [V],
    f: &AxisFilter,
    coef: Option<&Recursion>,
    pad: usize,
) -> bool {
    match (coef, &f.filter) {
        (Some(k), _) => {
            let seen = recursive_impl::<I, G, false>(x, out, &k.first, pad);
            if let Some(second) = &k.second {
                recursive_impl::<I, G, true>(x, out, second, pad);
            }
            seen
        }
        (None, LineFilter::Fir { taps, .. }) => {
            let input = V::splat(f.filter.input_weight());
            fir_impl::<I, G>(x, out, taps, input, pad);
            f.footprint.is_some() && non_finite::any_non_finite::<I>(x)
        }
        (None, LineFilter::Recursive { .. }) => unreachable!("coefficients made by the caller"),
    }
}

/// Asks for the cache lines of `bytes` from `p` on.
#[inline(always)]
fn prefetch<T>(p: *const T, bytes: usize) {
    #[cfg(target_arch = "x86_64")]
    for at in (0..bytes).step_by(64) {
        // SAFETY: a prefetch never faults; the address is only computed, not dereferenced.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(p.cast::<i8>().wrapping_add(at));
        }
    }
}

/// Sixteen neighbouring samples from `p` on, as f32.
///
/// # Safety
/// `p .. p + 16` are valid samples.
#[inline(always)]
unsafe fn load16<S: Element>(p: *const S) -> V {
    V(std::array::from_fn(|l| (*p.add(l)).load()))
}

/// Stores sixteen lanes to neighbouring samples from `p` on.
///
/// # Safety
/// `p .. p + 16` are valid samples that nothing else reads or writes.
#[inline(always)]
unsafe fn store16<D: Element>(p: *mut D, v: V) {
    for (l, &s) in v.0.iter().enumerate() {
        *p.add(l) = D::store(s);
    }
}

/// Reads the item's lines into rows `pad .. pad + n` of `x`, one line per lane (lanes past a
/// block's own are zero). Where the lanes are columns, each row's blocks are read left to
/// right, so that a row of the item is one run of memory.
///
/// # Safety
/// `src` holds the array `item.lines` describes.
#[inline(always)]
unsafe fn gather<S: Element, I: Isa, const G: usize>(src: *const S, item: Item<'_>, x: &mut [V]) {
    let Item {
        blocks, lines, pad, ..
    } = item;
    let n = lines.n;
    if let Block::Columns { .. } = blocks[0] {
        for k in 0..n {
            load_row(src, item, k, &mut x[(pad + k) * G..][..G]);
        }
        return;
    }
    // 16×16 tiles: lane ℓ of the tile is line ℓ, its samples k0 .. k0 + 16, turned so that
    // each row of the scratch holds one sample of every line.
    let step = lines.inner;
    for (g, &block) in blocks.iter().enumerate() {
        let Block::Rows { start, lanes } = block else {
            unreachable!("an item's blocks are of one kind")
        };
        for k0 in (0..n).step_by(LANES) {
            let len = (n - k0).min(LANES);
            let mut tile = [V::ZERO; LANES];
            for (l, t) in tile.iter_mut().enumerate().take(lanes) {
                let p = src.add(start + (l * n + k0) * step);
                if step == 1 && len == LANES {
                    *t = load16(p);
                } else {
                    for k in 0..len {
                        t.0[k] = (*p.add(k * step)).load();
                    }
                }
            }
            let t = I::transpose(&tile);
            for (k, &v) in t.iter().enumerate().take(len) {
                x[(pad + k0 + k) * G + g] = v;
            }
        }
    }
}

/// `v` into row `k` of the column block `block` (its lanes alone), row `ahead` asked for
/// where given.
///
/// # Safety
/// `dst` holds the array `lines` describes.
#[inline(always)]
unsafe fn store_block<D: Element>(
    dst: *mut D,
    block: Block,
    lines: Lines,
    (k, ahead): (usize, Option<usize>),
    v: V,
) {
    let Block::Columns { start, lanes } = block else {
        unreachable!("an item's blocks are of one kind")
    };
    if let Some(a) = ahead {
        prefetch(
            dst.add(start + a * lines.inner),
            lanes * std::mem::size_of::<D>(),
        );
    }
    let p = dst.add(start + k * lines.inner);
    if lanes == LANES {
        store16(p, v);
    } else {
        for l in 0..lanes {
            *p.add(l) = D::store(v.0[l]);
        }
    }
}

/// Writes the filtered lines back where `gather` read them.
///
/// # Safety
/// `dst` holds the array `item.lines` describes.
#[inline(always)]
unsafe fn scatter<D: Element, I: Isa, const G: usize>(dst: *mut D, item: Item<'_>, out: &[V]) {
    let Item { blocks, lines, .. } = item;
    let n = lines.n;
    if let Block::Columns { .. } = blocks[0] {
        for k in 0..n {
            let row = &out[k * G..][..G];
            for (&v, &block) in row.iter().zip(blocks) {
                let ahead = (k + item.ahead < n).then_some(k + item.ahead);
                store_block(dst, block, lines, (k, ahead), v);
            }
        }
        return;
    }
    let step = lines.inner;
    for (g, &block) in blocks.iter().enumerate() {
        let Block::Rows { start, lanes } = block else {
            unreachable!("an item's blocks are of one kind")
        };
        for k0 in (0..n).step_by(LANES) {
            let len = (n - k0).min(LANES);
            let mut tile = [V::ZERO; LANES];
            for (k, t) in tile.iter_mut().enumerate().take(len) {
                *t = out[(k0 + k) * G + g];
            }
            let t = I::transpose(&tile);
            for (l, line) in t.iter().enumerate().take(lanes) {
                let p = dst.add(start + (l * n + k0) * step);
                if step == 1 && len == LANES {
                    store16(p, *line);
                } else {
                    for k in 0..len {
                        *p.add(k * step) = D::store(line.0[k]);
                    }
                }
            }
        }
    }
}

/// Writes the `pad` rows before and after the item's lines in `x` as the edge mode extends
/// them.
fn extend<const G: usize>(x: &mut [V], item: Item<'_>, f: &AxisFilter) {
    let Item {
        blocks, lines, pad, ..
    } = item;
    if pad == 0 {
        return;
    }
    let constant: Option<[V; G]> = matches!(f.edge, EdgeMode::Constant(_)).then(|| {
        std::array::from_fn(|g| {
            blocks
                .get(g)
                .map_or(V::ZERO, |&b| block_cvals(b, lines, &f.cvals))
        })
    });
    let (n, p) = (lines.n as i64, pad as i64);
    for k in (-p..0).chain(n..n + p) {
        let row = (k + p) as usize;
        for g in 0..G {
            x[row * G + g] = match (f.edge.source(k, n), &constant) {
                (Some(s), _) => x[(pad + s) * G + g],
                (None, Some(c)) => c[g],
                (None, None) => V::ZERO,
            };
        }
    }
}

/// Each lane's constant: `cvals` indexed by where its line starts.
fn block_cvals(block: Block, lines: Lines, cvals: &[f32]) -> V {
    let mut v = V::ZERO;
    if cvals.is_empty() {
        return v;
    }
    for l in 0..block.lanes() {
        v.0[l] = cvals[block.start(l, lines) % cvals.len()];
    }
    v
}

/// Row `r` of an item's scratch: one vector per block.
#[inline(always)]
fn row<const G: usize>(x: &[V], r: usize) -> [V; G] {
    x[r * G..][..G].try_into().expect("G vectors")
}

/// Both halves of the recursive filter down `x` (the lines with their extension), in the
/// difference form, into `out` (the lines' own rows): causal outputs first, then the
/// anticausal pass adds its own and the input (times its weight, `Coef::input`). With `ADD`
/// both are added to what `out` holds (a second pair of sections on the same input). Returns
/// whether a line's own samples hold a NaN or an infinity (its extension copies them, or is a
/// finite constant), found as the causal walk reads them: 0 × v is NaN just for those.
#[inline(always)]
fn recursive_impl<I: Isa, const G: usize, const ADD: bool>(
    x: &[V],
    out: &mut [V],
    k: &Coef,
    pad: usize,
) -> bool {
    let (m, n) = (x.len() / G, out.len() / G);
    let mut st = [Sections::ZERO; G];
    for g in 0..G {
        let mut xp = x[g];
        for r in 0..pad {
            let xr = x[r * G + g];
            st[g].step::<I>(k, xr - xp);
            xp = xr;
        }
    }
    // The input before the line's first sample: the extension's last (row 0 where none).
    let mut xp = row::<G>(x, pad.saturating_sub(1));
    let mut seen = [V::ZERO; G];
    for r in pad..pad + n {
        for g in 0..G {
            let xr = x[r * G + g];
            seen[g] = V::madd::<I>(xr, V::ZERO, seen[g]);
            st[g].step::<I>(k, xr - xp[g]);
            let o = &mut out[(r - pad) * G + g];
            *o = st[g].output::<I>(k.causal(), if ADD { *o } else { V::ZERO });
            xp[g] = xr;
        }
    }
    let mut st = [Sections::ZERO; G];
    let mut x1 = [V::ZERO; G];
    for j in (pad + n..m).rev() {
        for g in 0..G {
            st[g].step::<I>(k, x1[g]);
            x1[g] = x[j * G + g] - x[(j - 1) * G + g];
        }
    }
    for j in (pad..pad + n).rev() {
        for g in 0..G {
            st[g].step::<I>(k, x1[g]);
            let a = st[g].output::<I>(k.anticausal(), V::ZERO);
            let o = &mut out[(j - pad) * G + g];
            *o = V::madd::<I>(x[j * G + g], k.input, *o + a);
            x1[g] = match j {
                0 => V::ZERO,
                _ => x[j * G + g] - x[(j - 1) * G + g],
            };
        }
    }
    seen.iter().any(|v| v.0.iter().any(|a| a.is_nan()))
}

/// The FIR down `x`, reads clamped to it, each output its input (times its weight `input`,
/// `LineFilter::input_weight`) plus the taps' weighted differences from it
/// (`reference::fir_line`).
#[inline(always)]
fn fir_impl<I: Isa, const G: usize>(x: &[V], out: &mut [V], taps: &[f32], input: V, pad: usize) {
    let (m, r) = ((x.len() / G) as isize, (taps.len() / 2) as isize);
    for i in 0..out.len() / G {
        let c = (i + pad) as isize;
        let mut acc = [V::ZERO; G];
        for (t, &w) in taps.iter().enumerate() {
            let j = (c + t as isize - r).clamp(0, m - 1) as usize;
            let w = V::splat(w);
            for g in 0..G {
                acc[g] = V::madd::<I>(w, x[j * G + g] - x[c as usize * G + g], acc[g]);
            }
        }
        for g in 0..G {
            out[i * G + g] = V::madd::<I>(x[c as usize * G + g], input, acc[g]);
        }
    }
}

mod columns;
mod element;
pub(crate) mod footprint;
mod non_finite;
mod pass;
pub(crate) mod planes;
pub(crate) mod steps;
#[cfg(test)]
mod tests;
