//! Pass 2's column filter: a strip of 64-column chunks walked up a band from its stored
//! boundary state and down from the state carried out of the band above, a 16-row tile per
//! visit of a chunk, each finished tile transposed into the band scratch the rows pass reads.
//! The walk (`Walk`, `tiles`) is also pass 1's.

use super::samples::{Pixels, Rows, Sample};
use super::sections::{Coef, Sections};
use super::{BOUNDARY, CARRY, CHUNK, VECS};
use crate::cpu::lanes::simd_dispatch;
use crate::cpu::lanes::{Isa, LANES, V};
use rayon::prelude::*;

/// Rows a column walk takes per visit of a chunk. A strip's chunks are visited in turn, so
/// each row is read left to right across the strip, which the hardware prefetchers follow
/// (a walk down one chunk alone steps a page per row and waits on memory at every step).
/// It is also the rows pass's group: one lane per row.
pub(super) const TILE_ROWS: usize = LANES;
/// How far ahead of a column walk its rows are prefetched.
pub(super) const PREFETCH_ROWS: usize = 2 * TILE_ROWS;
/// Chunks per column work item at most: a strip 1024 samples wide.
pub(super) const STRIP: usize = 16;

/// Chunks per column work item for a row of `chunks`: `STRIP`, or fewer where that would
/// leave fewer than four strips per thread (a 4896-wide gray image is 77 chunks: 5 strips of
/// 16 keep one of two threads idle a fifth of the time; 8 of 10 do not).
pub(super) fn strip_chunks(chunks: usize) -> usize {
    chunks
        .div_ceil(4 * rayon::current_num_threads())
        .clamp(1, STRIP)
}

/// How a row's chunks are dealt out as column work items.
#[derive(Clone, Copy)]
pub(super) struct Strips {
    /// Chunks in a row.
    pub(super) chunks: usize,
    /// Chunks per work item (`strip_chunks`).
    pub(super) strip: usize,
    /// Vectors of pass-1 states per chunk: one `BOUNDARY` block per band boundary.
    pub(super) boundaries: usize,
}

/// One chunk's column walk between visits: both sections, the input below the next row
/// (anticausally) and the column offsets. In the difference form (`Sample::EXACT`) `x1` is
/// the sample below the next row, the anticausal input being its difference from that row's,
/// and `x0` the sample above the next row, which the causal input is the difference from.
#[derive(Clone, Copy)]
pub(super) struct Walk {
    pub(super) st: [Sections; VECS],
    x1: [V; VECS],
    pub(super) x0: [V; VECS],
}

impl Walk {
    pub(super) const ZERO: Walk = Walk {
        st: [Sections::ZERO; VECS],
        x1: [V::ZERO; VECS],
        x0: [V::ZERO; VECS],
    };

    /// The anticausal start below the bottom edge.
    #[inline(always)]
    pub(super) fn from_bottom<T: Sample>(
        img: Rows<T>,
        j0: usize,
        px: &Pixels,
        k: &Coef,
        x0: [V; VECS],
    ) -> Walk {
        let last = img.load(img.height - 1, j0, px);
        let mut w = Walk { x0, ..Walk::ZERO };
        for v in 0..VECS {
            if T::EXACT {
                // Below the edge every difference is 0: a zero state.
                w.x1[v] = last[v];
            } else {
                let xl = last[v] - x0[v];
                w.st[v] = Sections::steady(k, xl);
                w.x1[v] = xl;
            }
        }
        w
    }

    /// Anticausal over rows `rows` (walked upwards); stores each row's result in `out` at
    /// `(r - out_row0) * VECS` when STORE.
    #[inline(always)]
    pub(super) fn up<T: Sample, I: Isa, const STORE: bool>(
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
                if T::EXACT {
                    st[v].step::<I>(k, x1[v] - x[v]);
                    if STORE {
                        // The input plus the anticausal part; the causal walk adds its own.
                        out[(r - out_row0) * VECS + v] = st[v].output::<I>(k.anticausal(), x[v]);
                    }
                    x1[v] = x[v];
                    continue;
                }
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
        let (mut st, mut x0) = (self.st, self.x0);
        // The tile's results, rows in lanes once transposed: [vector][row].
        let mut tile = [[V::ZERO; LANES]; VECS];
        for (i, r) in rows.clone().enumerate() {
            if r + PREFETCH_ROWS < img.height {
                img.prefetch(r + PREFETCH_ROWS, j0);
            }
            let x = img.load(r, j0, px);
            for v in 0..VECS {
                st[v].step::<I>(k, x[v] - x0[v]);
                if T::EXACT {
                    x0[v] = x[v];
                }
                tile[v][i] = st[v].output::<I>(k.causal(), block[i * VECS + v]);
            }
        }
        (self.st, self.x0) = (st, x0);
        for (v, m) in tile.iter().enumerate() {
            let to: &mut [V; LANES] = (&mut block[v * LANES..][..LANES]).try_into().unwrap();
            I::transpose_to(m, to);
        }
    }
}

/// Row tiles of `rows`, bottom first when `upwards`.
pub(super) fn tiles(
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

/// Pass 2, columns, for the strip of chunks starting at `c0`: filters rows `r0..r1` both
/// ways into `out` (per chunk, `band` rows of `VECS` vectors). `states` holds the strip's
/// pass-1 boundary states (empty if the image is one band); `carry` holds each chunk's causal
/// state and column offsets from the band above, and is started here when `first` (row `r0`
/// is the image's top row).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn columns_impl<T: Sample, I: Isa>(
    img: Rows<T>,
    (r0, r1, first): (usize, usize, bool),
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
        if first {
            start_carry(img, r0, j0, px, carry);
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
                w.x1[v] = if T::EXACT { below[v] } else { below[v] - x0[v] };
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
        // The column offsets, or in the difference form the band's last row.
        carry[4 * VECS..].copy_from_slice(&w.x0);
    }
}

simd_dispatch!(fn columns<T: Sample>(img: Rows<T>, rows: (usize, usize, bool), c0: usize, px: &Pixels, k: &Coef, states: &[V], carry: &mut [V], out: &mut [&mut [V]]) => columns_impl);

/// Pass 2's columns where y is left alone (a blur along x only): rows `r0..r1` of the strip of
/// `n` chunks starting at `c0`, loaded and transposed into `out` as the column walk leaves its
/// results, with no filtering.
#[inline(always)]
fn copy_columns_impl<T: Sample, I: Isa>(
    img: Rows<T>,
    (r0, r1): (usize, usize),
    (c0, n): (usize, usize),
    px: &Pixels,
    out: &mut [&mut [V]],
) {
    for rows in tiles(r0..r1, false) {
        let group = &mut *out[(rows.start - r0) / TILE_ROWS];
        for i in 0..n {
            let j0 = (c0 + i) * CHUNK;
            let mut tile = [[V::ZERO; LANES]; VECS];
            for (t, r) in rows.clone().enumerate() {
                if r + PREFETCH_ROWS < img.height {
                    img.prefetch(r + PREFETCH_ROWS, j0);
                }
                let x = img.load(r, j0, px);
                for v in 0..VECS {
                    tile[v][t] = x[v];
                }
            }
            let block = &mut group[i * TILE_ROWS * VECS..][..TILE_ROWS * VECS];
            for (v, m) in tile.iter().enumerate() {
                let to: &mut [V; LANES] = (&mut block[v * LANES..][..LANES]).try_into().unwrap();
                I::transpose_to(m, to);
            }
        }
    }
}

simd_dispatch!(pub(super) fn copy_columns<T: Sample>(img: Rows<T>, rows: (usize, usize), chunks: (usize, usize), px: &Pixels, out: &mut [&mut [V]]) => copy_columns_impl);

/// One chunk's carry at the image's top row `r0`: no causal state, and the row itself as the
/// column offsets (in the difference form, as the row above the first input).
#[inline(always)]
fn start_carry<T: Sample>(img: Rows<T>, r0: usize, j0: usize, px: &Pixels, carry: &mut [V]) {
    carry.fill(V::ZERO);
    carry[4 * VECS..].copy_from_slice(&img.load(r0, j0, px));
}

/// Every chunk's carry at the top row of `img` (`start_carry`), `CARRY` fields a chunk.
pub(super) fn start_carries<T: Sample>(img: Rows<T>, px: &Pixels, carry: &mut [V]) {
    for (i, c) in carry.chunks_exact_mut(CARRY).enumerate() {
        start_carry(img, 0, i * CHUNK, px, c);
    }
}

/// Pass 2's columns for band rows `r0..r1`, every strip in parallel, into `scratch` (laid out
/// as `BandScratch` reads it). `carry` holds each chunk's state out of the band above and
/// takes the state out of this one; `first` starts it (row `r0` is the image's top row).
/// `k` None leaves y alone (a blur along x only): the band is only transposed into `scratch`.
pub(super) fn band_columns<T: Sample>(
    img: Rows<T>,
    rows: (usize, usize, bool),
    strips: Strips,
    px: &Pixels,
    k: Option<&Coef>,
    (states, carry): (&[V], &mut [V]),
    scratch: &mut [V],
) {
    let band = (rows.0, rows.1);
    group_columns(
        img,
        (band, 1),
        strips,
        px,
        k,
        (states, carry),
        scratch,
        rows.2,
    );
}

/// Pass 2's columns for `count` bands of `rows.1 - rows.0` rows from row `rows.0` on (the last
/// ending at the image's bottom at most), every strip in parallel: each strip walks its chunks
/// down the bands in turn, carrying their state from band to band, into each band's piece of
/// `scratch` (`scratch.len() / count` vectors a band). A strip needs only its own chunks of
/// the band above, so the bands need no wait between them: one parallel loop for them all.
#[allow(clippy::too_many_arguments)]
pub(super) fn group_columns<T: Sample>(
    img: Rows<T>,
    ((r0, r1), count): ((usize, usize), usize),
    strips: Strips,
    px: &Pixels,
    k: Option<&Coef>,
    (states, carry): (&[V], &mut [V]),
    scratch: &mut [V],
    first: bool,
) {
    let Strips {
        chunks,
        strip,
        boundaries,
    } = strips;
    let (band, per_band) = (r1 - r0, scratch.len() / count);
    // Each strip's tiles in every group of every band: disjoint pieces of the scratch.
    let tile = TILE_ROWS * VECS;
    let mut pieces: Vec<Vec<Vec<&mut [V]>>> = (0..chunks.div_ceil(strip))
        .map(|_| (0..count).map(|_| vec![]).collect())
        .collect();
    for (b, band_scratch) in scratch.chunks_mut(per_band).enumerate() {
        for group in band_scratch.chunks_mut(chunks * tile) {
            for (s, piece) in group.chunks_mut(strip * tile).enumerate() {
                pieces[s][b].push(piece);
            }
        }
    }
    pieces
        .par_iter_mut()
        .zip(carry.par_chunks_mut(strip * CARRY))
        .enumerate()
        .for_each(|(s, (bands, carry))| {
            let _flush = crate::cpu::lanes::FlushSubnormals::new(true);
            let n = carry.len() / CARRY;
            for (b, out) in bands.iter_mut().enumerate() {
                let top = r0 + b * band;
                let rows = (top, (top + band).min(img.height));
                if rows.0 >= rows.1 {
                    break;
                }
                let Some(k) = k else {
                    copy_columns(img, rows, (s * strip, n), px, out);
                    continue;
                };
                let strip_states =
                    &states[(s * strip * boundaries).min(states.len())..][..n * boundaries];
                let rows = (rows.0, rows.1, first && b == 0);
                columns(img, rows, s * strip, px, k, strip_states, carry, out);
            }
        });
}
