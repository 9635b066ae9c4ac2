//! A blur along y alone, in place: each 64-sample chunk of columns (a few side by side) is
//! walked up the whole image (anticausally, into a column buffer), then down (causally),
//! adding both halves and storing each finished row of the chunk straight over the input.
//! Nothing needs the columns transposed for a rows pass, and the whole height is one walk, so
//! the banded blur's summaries, band scratch and transposes are all skipped: the two reads of
//! the image and one write are the pass's whole traffic. The filter steps as the banded
//! blur's column walks step (`Sections`), and rows are finished as its rows pass finishes
//! them (alpha, linear light, a selection's mix, the unsharp mask).

use super::samples::{Pixels, Rows, Sample};
use super::sections::{Coef, Sections};
use super::{CHUNK, VECS};
use crate::cpu::lanes::{simd_dispatch, Isa, LANES, V};
use crate::pixels::linear_to_srgb;
use rayon::prelude::*;
use std::cell::RefCell;

/// How far ahead of a walk its rows are prefetched: one chunk per row is a page apart from
/// the next, which the hardware prefetchers do not predict.
const AHEAD: usize = 32;

/// The image as the parallel walks share it: each walk reads and writes only its own chunk
/// of every row, so the walks never touch the same samples.
#[derive(Clone, Copy)]
struct Shared<T> {
    data: *mut T,
    stride: usize,
    height: usize,
}

// SAFETY: the walks that share it take disjoint column ranges (`chunk`).
unsafe impl<T: Send> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for Shared<T> {}

impl<T: Sample> Shared<T> {
    /// Samples `j0 .. j0 + CHUNK` of row `r` (fewer at the row's end).
    ///
    /// # Safety
    /// No other live reference may cover these samples: each walk takes its own `j0`.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    unsafe fn chunk(&self, r: usize, j0: usize) -> &mut [T] {
        let n = (self.stride - j0).min(CHUNK);
        // SAFETY: r < height and j0 + n ≤ stride keep it inside the buffer; the caller
        // guarantees that nothing else refers to these samples.
        unsafe { std::slice::from_raw_parts_mut(self.data.add(r * self.stride + j0), n) }
    }

    #[inline(always)]
    fn prefetch(&self, r: usize, j0: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            let n = (self.stride - j0).min(CHUNK);
            let line = 64 / std::mem::size_of::<T>();
            for j in (0..n).step_by(line) {
                // SAFETY: a prefetch never faults, and the address is inside the row.
                unsafe {
                    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                    let p = self.data.add(r * self.stride + j0 + j);
                    _mm_prefetch::<_MM_HINT_T0>(p as *const i8);
                }
            }
        }
    }
}

/// A chunk of one row as working values (premultiplied, in linear light where asked).
#[inline(always)]
fn load<T: Sample>(chunk: &[T], px: &Pixels) -> [V; VECS] {
    let row = Rows {
        data: chunk,
        stride: chunk.len(),
        height: 1,
    };
    row.load(0, 0, px)
}

/// Chunks walked together: their rows are read side by side (4 cache lines of 8-bit samples a
/// row, where one chunk alone would take a new page for every line), and their column buffer
/// stays within the last-level cache.
const WALKED: usize = 4;

/// The walks of chunks `c0 .. c0 + n` (n ≤ `WALKED`): up into `buf`, then down, storing each
/// row.
#[inline(always)]
fn chunk_impl<T: Sample, I: Isa>(
    img: Shared<T>,
    (c0, n): (usize, usize),
    (px, width): (&Pixels, usize),
    k: &Coef,
    buf: &mut [V],
) {
    let h = img.height;
    let j = |c: usize| (c0 + c) * CHUNK;
    // SAFETY (every `chunk` call below): this walk alone takes chunks c0 .. c0 + n.
    let first: [[V; VECS]; WALKED] = std::array::from_fn(|c| {
        if c < n {
            load(unsafe { img.chunk(0, j(c)) }, px)
        } else {
            [V::ZERO; VECS]
        }
    });
    let mut st = [[Sections::ZERO; VECS]; WALKED];
    let mut x1 = [[V::ZERO; VECS]; WALKED];
    for c in 0..n {
        let last = load(unsafe { img.chunk(h - 1, j(c)) }, px);
        for v in 0..VECS {
            if T::EXACT {
                // Below the edge every difference is 0: a zero state.
                x1[c][v] = last[v];
            } else {
                x1[c][v] = last[v] - first[c][v];
                st[c][v] = Sections::steady(k, x1[c][v]);
            }
        }
    }
    for r in (0..h).rev() {
        for c in 0..n {
            if r >= AHEAD {
                img.prefetch(r - AHEAD, j(c));
            }
            let x = load(unsafe { img.chunk(r, j(c)) }, px);
            let out = &mut buf[(r * WALKED + c) * VECS..][..VECS];
            let (st, x1, first) = (&mut st[c], &mut x1[c], &first[c]);
            for v in 0..VECS {
                if T::EXACT {
                    st[v].step::<I>(k, x1[v] - x[v]);
                    // The input plus the anticausal part; the causal walk adds its own.
                    out[v] = st[v].output::<I>(k.anticausal(), x[v]);
                    x1[v] = x[v];
                } else {
                    st[v].step::<I>(k, x1[v]);
                    // With the offset (the top row) added back.
                    out[v] = st[v].output::<I>(k.anticausal(), first[v]);
                    x1[v] = x[v] - first[v];
                }
            }
        }
    }
    let mut st = [[Sections::ZERO; VECS]; WALKED];
    let mut x0 = first;
    for r in 0..h {
        let select = px.mix.map(|m| &m[r * width..][..width]);
        for c in 0..n {
            if r + AHEAD < h {
                img.prefetch(r + AHEAD, j(c));
            }
            let dst = unsafe { img.chunk(r, j(c)) };
            let x = load(dst, px);
            let (st, x0) = (&mut st[c], &mut x0[c]);
            let mut done = [[0f32; LANES]; VECS];
            for v in 0..VECS {
                st[v].step::<I>(k, x[v] - x0[v]);
                if T::EXACT {
                    x0[v] = x[v];
                }
                done[v] = st[v]
                    .output::<I>(k.causal(), buf[(r * WALKED + c) * VECS + v])
                    .0;
            }
            let done = done.as_flattened_mut();
            finish::<T>(done, px);
            store(dst, done, (px, select), j(c));
        }
    }
}

simd_dispatch!(fn walk_chunks<T: Sample>(img: Shared<T>, chunks: (usize, usize), px: (&Pixels, usize), k: &Coef, buf: &mut [V]) => chunk_impl);

/// Premultiplied working values back to straight ones, and linear light back to sRGB, as the
/// rows pass finishes its blocks. Without alpha every sample is colour; with it a chunk starts
/// on a pixel (64 is a multiple of 2 and 4).
#[inline(always)]
fn finish<T: Sample>(done: &mut [f32], px: &Pixels) {
    if !px.alpha {
        if px.linear.is_some() {
            for v in done {
                *v = linear_to_srgb(*v * (1.0 / T::FULL)) * T::FULL;
            }
        }
        return;
    }
    let c = px.channels;
    let colour = if px.alpha { c - 1 } else { c };
    for pixel in done.chunks_exact_mut(c) {
        let alpha = pixel[c - 1];
        for v in &mut pixel[..colour] {
            if px.alpha {
                // Where nothing is left of the coverage the colour is undefined: 0.
                *v = if alpha > 1e-7 * T::FULL {
                    *v / alpha * T::FULL
                } else {
                    0.0
                };
            }
            if px.linear.is_some() {
                *v = linear_to_srgb(*v * (1.0 / T::FULL)) * T::FULL;
            }
        }
    }
}

/// Writes a finished chunk of a row over the input samples in `dst`: the blur, or mixed into
/// them by the row's selection, or the unsharp mask of them.
#[inline(always)]
fn store<T: Sample>(
    dst: &mut [T],
    done: &[f32],
    (px, select): (&Pixels, Option<&[f32]>),
    j0: usize,
) {
    if let Some(u) = px.sharpen {
        for (d, &blurred) in dst.iter_mut().zip(done) {
            *d = T::from_f32(u.apply(d.to_f32(), blurred));
        }
    } else if let Some(select) = select {
        for (i, (d, &blurred)) in dst.iter_mut().zip(done).enumerate() {
            *d = T::mix(*d, T::from_f32(blurred), select[(j0 + i) / px.channels]);
        }
    } else if dst.len() == CHUNK {
        // A whole chunk: a fixed count the compiler vectorises.
        for i in 0..CHUNK {
            dst[i] = T::from_f32(done[i]);
        }
    } else {
        for (d, &blurred) in dst.iter_mut().zip(done) {
            *d = T::from_f32(blurred);
        }
    }
}

// Each worker's column buffer, kept across chunks and images.
thread_local! {
    static COLUMN_BUFFER: RefCell<Vec<V>> = const { RefCell::new(Vec::new()) };
}

/// Blurs `width`×`height` interleaved pixels along y only, in place (`k`: y's coefficients in
/// the form `T` is filtered in).
pub(super) fn blur_columns<T: Sample>(
    data: &mut [T],
    (width, height): (usize, usize),
    px: &Pixels,
    k: &Coef,
) {
    let stride = width * px.channels;
    if stride == 0 || height == 0 {
        return;
    }
    let img = Shared {
        data: data.as_mut_ptr(),
        stride,
        height,
    };
    let chunks = stride.div_ceil(CHUNK);
    // Fewer chunks per walk where the cores would otherwise wait on the last few walks: a grey
    // 16 MP image has 77 chunks, 20 walks of 4, which leave 12 of 16 cores idle for half the
    // pass; 4 walks per thread at least keep them all busy to the end.
    let walked = (chunks / (4 * rayon::current_num_threads())).clamp(1, WALKED);
    (0..chunks.div_ceil(walked)).into_par_iter().for_each(|w| {
        let _flush = crate::cpu::lanes::FlushSubnormals::new(true);
        let c0 = w * walked;
        // Taken out of the thread's slot, not borrowed in it: a large buffer is filled on every
        // core, and while this thread waits on that fill it may take up another walk, which
        // then finds the slot empty and makes its own.
        let mut buf = COLUMN_BUFFER.take();
        let n = height * WALKED * VECS;
        if buf.capacity() < n {
            buf = crate::memory::huge_vec(n, V::ZERO);
        }
        buf.resize(n, V::ZERO);
        walk_chunks(
            img,
            (c0, (chunks - c0).min(walked)),
            (px, width),
            k,
            &mut buf,
        );
        COLUMN_BUFFER.set(buf);
    });
}
