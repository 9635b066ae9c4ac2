//! The Gaussian along one axis of a contiguous N-D array, on the host's cores: the engine of
//! `gblur::nd` (and of the Python package's `gaussian_filter`).
//!
//! An array of shape `(…, n, …)` seen along axis k is `outer × n × inner`: `outer` the product
//! of the sizes before k, `inner` of those after it, so line `(o, i)` starts at
//! `o·n·inner + i` and steps by `inner`. Lines are taken sixteen at a time, one per SIMD lane:
//! a block is gathered into a scratch of `n + 2·pad` vectors (converted to f32, the edge
//! mode's extension written around it), filtered down the scratch, and scattered back. Where
//! `inner ≥ 16` a block's lanes are neighbouring columns, so every gathered row is sixteen
//! contiguous samples; otherwise the lanes are one channel of sixteen neighbouring rows (the
//! last axis, where `inner` is 1, or the pixels of an interleaved image, `inner` its
//! channels), moved through 16×16 transposes. The scratch of one block stays in the core's L2 cache
//! (2 × 4096 rows × 64 B for a 4096-long axis), so each pass reads and writes the array
//! once.
//!
//! The recursive filter runs in its difference form (`reference::recursive_line`, the same
//! sections stepped as the banded blur steps them): a constant line stays constant bit for
//! bit, and both halves start from a zero state at the scratch's ends, which is the clamp
//! edge. Other modes extend the line by the filter's reach (`edges::reach`), so what lies
//! beyond the extension moves no output by more than `edges::RECURSIVE_TAIL` of its range.
//! The FIR (below σ = 2, or where a caller asks for scipy's cut kernel) runs on the same
//! scratch with reads clamped to it.

use super::banded::sections::{Coef, Sections};
use super::lanes::{FlushSubnormals, Isa, LANES, V};
use crate::filter::{EdgeMode, LineFilter};
use crate::cpu::lanes::simd_dispatch;
use rayon::prelude::*;

/// A sample type of an N-D array: read as f32 for the filter, written back rounded and
/// clamped to the type's range where it is an integer.
pub trait Element: Copy + Send + Sync + 'static {
    /// A float type: an intermediate result stored in it loses nothing the filter keeps.
    const FLOAT: bool;
    fn load(self) -> f32;
    fn store(v: f32) -> Self;
    /// The samples as f32, where they are f32 already (a device takes them without a copy).
    fn as_f32_mut(_data: &mut [Self]) -> Option<&mut [f32]> {
        None
    }
}

/// An integer sample from a filtered value: rounded half away from zero, clamped to the
/// type's range, NaN to 0.
#[inline(always)]
fn round_to(v: f32, lo: f32, hi: f32) -> f32 {
    if v.is_nan() {
        0.0
    } else {
        v.round().clamp(lo, hi)
    }
}

impl Element for u8 {
    const FLOAT: bool = false;
    #[inline(always)]
    fn load(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn store(v: f32) -> Self {
        round_to(v, 0.0, 255.0) as u8
    }
}

impl Element for u16 {
    const FLOAT: bool = false;
    #[inline(always)]
    fn load(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn store(v: f32) -> Self {
        round_to(v, 0.0, 65535.0) as u16
    }
}

impl Element for i16 {
    const FLOAT: bool = false;
    #[inline(always)]
    fn load(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn store(v: f32) -> Self {
        round_to(v, -32768.0, 32767.0) as i16
    }
}

impl Element for f32 {
    const FLOAT: bool = true;
    fn as_f32_mut(data: &mut [f32]) -> Option<&mut [f32]> {
        Some(data)
    }
    #[inline(always)]
    fn load(self) -> f32 {
        self
    }
    #[inline(always)]
    fn store(v: f32) -> Self {
        v
    }
}

impl Element for f64 {
    const FLOAT: bool = true;
    #[inline(always)]
    fn load(self) -> f32 {
        self as f32
    }
    #[inline(always)]
    fn store(v: f32) -> Self {
        v as f64
    }
}

/// One axis's filter and what lies beyond its ends.
#[derive(Clone, Debug)]
pub(crate) struct AxisFilter {
    pub filter: LineFilter,
    pub edge: EdgeMode,
    /// The constant of `EdgeMode::Constant`, in the array's own units: one value, or one per
    /// channel of an interleaved image, where the line starting at element `s` takes
    /// `cvals[s % cvals.len()]` (its channel, for an array of shape (…, channels)).
    pub cvals: Vec<f32>,
}

impl AxisFilter {
    /// Samples of extension each end needs: none for clamp (the filter's own edge), one for
    /// a constant (the clamp beyond it repeats the constant), else the filter's reach.
    pub fn pad(&self) -> usize {
        match (self.edge, &self.filter) {
            (EdgeMode::Clamp, _) => 0,
            (EdgeMode::Constant(_), _) => 1,
            (_, LineFilter::Fir { taps, .. }) => taps.len() / 2,
            (_, LineFilter::Recursive { sigma, .. }) => {
                crate::filter::gaussian::recursive_reach(*sigma)
            }
        }
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
    let pad = f.pad();
    let rows = lines.n + 2 * pad;
    let coef = match &f.filter {
        LineFilter::Recursive { differences, .. } => Some(Coef::differences(differences)),
        LineFilter::Fir { .. } => None,
    };
    let (src, dst) = (Shared(src as *mut S), Shared(dst));
    lines.blocks().into_par_iter().for_each_init(
        || (vec![V::ZERO; rows], vec![V::ZERO; lines.n]),
        |(x, out), block| {
            let _flush = FlushSubnormals::new(true);
            // SAFETY: the caller's promise; each block touches only its own lines.
            unsafe { gather(src.get(), block, lines, pad, x) };
            extend(x, lines.n, pad, f, || block_cvals(block, lines, &f.cvals));
            match (&coef, &f.filter) {
                (Some(k), _) => recursive(x, out, k, pad),
                (None, LineFilter::Fir { taps, .. }) => fir(x, out, taps, pad),
                (None, LineFilter::Recursive { .. }) => unreachable!("coefficients made above"),
            }
            // SAFETY: as for the gather.
            unsafe { scatter(dst.get(), block, lines, out) };
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

/// Reads a block's lines into rows `pad .. pad + n` of `x`, one line per lane (lanes past the
/// block's own are zero).
///
/// # Safety
/// `src` holds the array `lines` describes.
unsafe fn gather<S: Element>(src: *const S, block: Block, lines: Lines, pad: usize, x: &mut [V]) {
    let n = lines.n;
    let x = &mut x[pad..pad + n];
    match block {
        Block::Columns { start, lanes } => {
            for (k, row) in x.iter_mut().enumerate() {
                let p = src.add(start + k * lines.inner);
                let mut v = V::ZERO;
                for l in 0..lanes {
                    v.0[l] = (*p.add(l)).load();
                }
                *row = v;
            }
        }
        Block::Rows { start, lanes } => {
            // 16×16 tiles: lane ℓ is row ℓ of the tile, its samples k0 .. k0 + 16.
            let step = lines.inner;
            for k0 in (0..n).step_by(LANES) {
                let len = (n - k0).min(LANES);
                let mut tile = [V::ZERO; LANES];
                for (l, t) in tile.iter_mut().enumerate().take(lanes) {
                    let p = src.add(start + (l * n + k0) * step);
                    for k in 0..len {
                        t.0[k] = (*p.add(k * step)).load();
                    }
                }
                for k in 0..len {
                    let mut v = V::ZERO;
                    for (l, t) in tile.iter().enumerate() {
                        v.0[l] = t.0[k];
                    }
                    x[k0 + k] = v;
                }
            }
        }
    }
}

/// Writes the filtered lines back where `gather` read them.
///
/// # Safety
/// `dst` holds the array `lines` describes.
unsafe fn scatter<D: Element>(dst: *mut D, block: Block, lines: Lines, out: &[V]) {
    let n = lines.n;
    match block {
        Block::Columns { start, lanes } => {
            for (k, row) in out.iter().enumerate() {
                let p = dst.add(start + k * lines.inner);
                for l in 0..lanes {
                    *p.add(l) = D::store(row.0[l]);
                }
            }
        }
        Block::Rows { start, lanes } => {
            let step = lines.inner;
            for k0 in (0..n).step_by(LANES) {
                let len = (n - k0).min(LANES);
                for l in 0..lanes {
                    let p = dst.add(start + (l * n + k0) * step);
                    for k in 0..len {
                        *p.add(k * step) = D::store(out[k0 + k].0[l]);
                    }
                }
            }
        }
    }
}

/// Writes the `pad` rows before and after the line in `x` as the edge mode extends it;
/// `cvals` gives each lane's constant, where the mode has one.
fn extend(x: &mut [V], n: usize, pad: usize, f: &AxisFilter, cvals: impl Fn() -> V) {
    if pad == 0 {
        return;
    }
    let constant = matches!(f.edge, EdgeMode::Constant(_)).then(cvals);
    let (n, p) = (n as i64, pad as i64);
    for k in (-p..0).chain(n..n + p) {
        let row = (k + p) as usize;
        x[row] = match (f.edge.source(k, n), constant) {
            (Some(s), _) => x[pad + s],
            (None, Some(c)) => c,
            (None, None) => V::ZERO,
        };
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

simd_dispatch!(fn recursive<>(x: &[V], out: &mut [V], k: &Coef, pad: usize) => recursive_impl);

/// Both halves of the recursive filter down `x` (the line with its extension), in the
/// difference form, into `out` (the line's own rows): causal outputs first, then the
/// anticausal pass adds its own and the input.
#[inline(always)]
fn recursive_impl<I: Isa>(x: &[V], out: &mut [V], k: &Coef, pad: usize) {
    let (m, n) = (x.len(), out.len());
    let mut st = Sections::ZERO;
    let mut xp = x[0];
    for &xi in &x[..pad] {
        st.step::<I>(k, xi - xp);
        xp = xi;
    }
    for (o, &xi) in out.iter_mut().zip(&x[pad..pad + n]) {
        st.step::<I>(k, xi - xp);
        xp = xi;
        *o = st.output::<I>(k.causal(), V::ZERO);
    }
    let mut st = Sections::ZERO;
    let mut x1 = V::ZERO;
    for j in (pad + n..m).rev() {
        st.step::<I>(k, x1);
        x1 = x[j] - x[j - 1];
    }
    for j in (pad..pad + n).rev() {
        st.step::<I>(k, x1);
        let a = st.output::<I>(k.anticausal(), V::ZERO);
        out[j - pad] = x[j] + (out[j - pad] + a);
        x1 = if j > 0 { x[j] - x[j - 1] } else { V::ZERO };
    }
}

simd_dispatch!(fn fir<>(x: &[V], out: &mut [V], taps: &[f32], pad: usize) => fir_impl);

/// The FIR down `x`, reads clamped to it, each output its input plus the taps' weighted
/// differences from it (`reference::fir_line`).
#[inline(always)]
fn fir_impl<I: Isa>(x: &[V], out: &mut [V], taps: &[f32], pad: usize) {
    let (m, r) = (x.len() as isize, (taps.len() / 2) as isize);
    for (i, o) in out.iter_mut().enumerate() {
        let c = (i + pad) as isize;
        let centre = x[c as usize];
        let mut acc = V::ZERO;
        for (t, &w) in taps.iter().enumerate() {
            let j = (c + t as isize - r).clamp(0, m - 1) as usize;
            acc = V::madd::<I>(V::splat(w), x[j] - centre, acc);
        }
        *o = acc + centre;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::reference;
    use crate::filter::Method;

    fn filter(sigma: f64, method: Method, edge: EdgeMode) -> AxisFilter {
        AxisFilter {
            filter: LineFilter::new(method, sigma),
            edge,
            cvals: vec![0.25],
        }
    }

    /// The line extended by `edge` far beyond any reach, filtered by the reference with its
    /// clamp, and cut back: what every mode means.
    fn expected(line: &[f32], f: &AxisFilter) -> Vec<f32> {
        let n = line.len() as i64;
        let ext = 4000i64;
        let wide: Vec<f32> = (-ext..n + ext)
            .map(|k| match f.edge.source(k, n) {
                Some(s) => line[s],
                None => f.cvals[0],
            })
            .collect();
        let mut out = vec![0.0; wide.len()];
        reference::filter_line(&wide, &mut out, &f.filter);
        out[ext as usize..(ext + n) as usize].to_vec()
    }

    fn noise(len: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2654435761).wrapping_add(1);
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s % 1000) as f32 / 1000.0
            })
            .collect()
    }

    #[test]
    fn every_axis_of_every_shape_matches_the_extended_reference() {
        let modes = [
            EdgeMode::Clamp,
            EdgeMode::Reflect,
            EdgeMode::Reflect101,
            EdgeMode::Wrap,
            EdgeMode::Constant(0.0),
        ];
        // Shapes that give every kind of block: rows, columns (whole and partial), any.
        for shape in [
            vec![37usize],
            vec![19, 23],
            vec![5, 3, 40],
            vec![4, 33, 3],
            vec![2, 17, 18],
        ] {
            let len: usize = shape.iter().product();
            let data = noise(len, len as u32);
            for axis in 0..shape.len() {
                for (sigma, method) in
                    [(1.3, Method::Auto), (4.0, Method::Auto), (0.9, Method::Fir)]
                {
                    for mode in modes {
                        let f = filter(sigma, method, mode);
                        let mut got = vec![0f32; len];
                        filter_axis(&data, &mut got, &shape, axis, &f);
                        let lines = Lines::along(&shape, axis);
                        for l in 0..lines.outer * lines.inner {
                            let s = lines.start(l);
                            let line: Vec<f32> =
                                (0..lines.n).map(|k| data[s + k * lines.inner]).collect();
                            let want = expected(&line, &f);
                            for k in 0..lines.n {
                                let g = got[s + k * lines.inner];
                                assert!(
                                    (g - want[k]).abs() < 2e-4,
                                    "{shape:?} axis {axis} σ {sigma} {mode:?}: line {l} [{k}] {g} vs {}",
                                    want[k]
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn in_place_equals_into_another_buffer_and_keeps_constants() {
        let shape = [9, 40, 21];
        let data = noise(9 * 40 * 21, 7);
        let f = filter(6.0, Method::Auto, EdgeMode::Reflect);
        for axis in 0..3 {
            let mut a = vec![0f32; data.len()];
            filter_axis(&data, &mut a, &shape, axis, &f);
            let mut b = data.clone();
            filter_axis_in_place(&mut b, &shape, axis, &f);
            assert_eq!(a, b);
        }
        let mut flat = vec![0.3f32; data.len()];
        filter_axis_in_place(&mut flat, &shape, 1, &f);
        assert!(flat.iter().all(|&v| v == 0.3));
    }

    #[test]
    fn integers_are_rounded_and_clamped_once() {
        let data: Vec<u8> = (0..64).map(|i| if i < 32 { 0 } else { 255 }).collect();
        let mut out = vec![0u8; 64];
        let f = filter(3.0, Method::Auto, EdgeMode::Clamp);
        filter_axis(&data, &mut out, &[64], 0, &f);
        let as_f32: Vec<f32> = data.iter().map(|&v| v as f32).collect();
        let mut want = vec![0f32; 64];
        filter_axis(&as_f32, &mut want, &[64], 0, &f);
        for (g, w) in out.iter().zip(&want) {
            assert_eq!(*g, w.round().clamp(0.0, 255.0) as u8);
        }
        assert_eq!(i16::store(-40000.0), i16::MIN);
        assert_eq!(u16::store(f32::NAN), 0);
        assert_eq!(u8::store(2.5), 3);
    }
}
