//! Pass 2's row filter: each 16-row group of a band read from the column results (rows in
//! lanes), filtered along x 16 pixels at a time, finished and written back over the image
//! through 16×16 register transposes. It meets the columns only at `BandScratch`'s layout.

use super::columns::{copy_columns, TILE_ROWS};
use super::samples::Rows;
use super::samples::{luma, Pixels, Sample, Unsharp};
use super::sections::{Coef, Sections};
use super::VECS;
use crate::cpu::lanes::simd_dispatch;
use crate::cpu::lanes::{Isa, LANES, V};
use crate::pixels::linear_to_srgb;
use rayon::prelude::*;
use std::cell::RefCell;

/// A band's column results, per 16-row group and in it per 64-column chunk: the tile's 16
/// rows of `VECS` vectors as the column walks leave them, transposed in place once finished,
/// so that the 64 vectors hold samples `64 chunk + i` (i = 0..64) with the tile's rows in
/// lanes. The rows pass reads a group's tiles as they are, one contiguous run.
#[derive(Clone, Copy)]
pub(super) struct BandScratch<'a> {
    pub(super) data: &'a [V],
    pub(super) chunks: usize,
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
/// results wait in `u` (`stride` vectors) while the anticausal sweep runs back. `k` None
/// leaves x alone (a blur along y only): the column results are finished and stored as they
/// are.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn rows_impl<T: Sample, I: Isa>(
    scratch: BandScratch,
    g: usize,
    width: usize,
    px: &Pixels,
    k: Option<&Coef>,
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

simd_dispatch!(fn rows<T: Sample>(scratch: BandScratch, g: usize, width: usize, px: &Pixels, k: Option<&Coef>, u: &mut [V], out: &mut [T]) => rows_impl);

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
// Long: one SIMD kernel; its walks split into inline helpers compiled to 60-118 more vector
// moves (what is done after a block's walk, its finishing and store, stands apart).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn rows_c<T: Sample, I: Isa, const C: usize>(
    scratch: BandScratch,
    g: usize,
    width: usize,
    px: &Pixels,
    k: Option<&Coef>,
    u: &mut [V],
    out: &mut [T],
) {
    let stride = width * C;
    let pixel_count = width.div_ceil(LANES);

    // Causal, left to right; keeps the first pixel (the offset) and the last (the edge).
    let first = pixel_blocks::<C>(scratch, g, stride, 0)[0];
    let mut x0: [V; C] = std::array::from_fn(|c| first[c]);
    let mut st = [Sections::ZERO; C];
    let mut xl = [V::ZERO; C];
    let identity = Coef::identity();
    let (k, blurs) = (k.unwrap_or(&identity), k.is_some());
    for pb in (0..pixel_count).filter(|_| blurs) {
        let blk = pixel_blocks::<C>(scratch, g, stride, pb);
        let np = (width - pb * LANES).min(LANES);
        let u = &mut u[pb * LANES * C..][..LANES * C];
        // A macro, not a closure: a closure would not inherit the target features.
        macro_rules! pixels {
            ($xs:expr) => {
                for x in $xs {
                    for c in 0..C {
                        let q = x * C + c;
                        let raw = blk[q / LANES][q % LANES];
                        let xv = raw - x0[c];
                        if T::EXACT {
                            // The difference form: the next input is the difference from
                            // this sample, and the output this sample plus the sections'.
                            x0[c] = raw;
                        }
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
    // The difference form starts from a zero state, `x1` the last sample; the direct form
    // from the steady state of the last input.
    let mut x1 = if T::EXACT { x0 } else { xl };
    st = std::array::from_fn(|c| match T::EXACT {
        true => Sections::ZERO,
        false => Sections::steady(k, xl[c]),
    });
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
                        let raw = blk[q / LANES][q % LANES];
                        if T::EXACT {
                            st[c].step::<I>(k, x1[c] - raw);
                            x1[c] = raw;
                        } else {
                            st[c].step::<I>(k, x1[c]);
                            x1[c] = raw - x0[c];
                        }
                        done[q / LANES][q % LANES] = st[c].output::<I>(k.anticausal(), u[q]);
                    }
                }
            };
        }
        if !blurs {
            for q in 0..np * C {
                done[q / LANES][q % LANES] = blk[q / LANES][q % LANES];
            }
        } else if np == LANES {
            pixels!((0..LANES).rev())
        } else {
            pixels!((0..np).rev())
        }
        if px.alpha || px.linear.is_some() {
            straighten::<T, C>(&mut done, px, np);
        }
        match px.sharpen {
            Some(u) => store_sharpened::<T, I, C>(&done, u, out, (stride, pb, np)),
            None => store::<T, I, C>(&done, px, out, (width, pb)),
        }
    }
}

/// Undoes the working form of pixel block `done`'s first `np` pixels: colour divided by alpha
/// (premultiplied while filtering) and turned back from linear light.
#[inline(always)]
fn straighten<T: Sample, const C: usize>(done: &mut [[V; LANES]; C], px: &Pixels, np: usize) {
    let colour = if px.alpha { C - 1 } else { C };
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

/// Stores pixel block `pb` (`done`, rows in lanes) over `out`'s rows (`width` pixels each):
/// transposed back into samples, and mixed into the input by the selection where there is one.
#[inline(always)]
fn store<T: Sample, I: Isa, const C: usize>(
    done: &[[V; LANES]; C],
    px: &Pixels,
    out: &mut [T],
    (width, pb): (usize, usize),
) {
    let stride = width * C;
    let n_rows = out.len() / stride;
    for (kb, block) in done.iter().enumerate() {
        let b = pb * C + kb;
        if b * LANES >= stride {
            break;
        }
        let n = (stride - b * LANES).min(LANES);
        let m = T::transposed::<I>(block);
        for (r, row) in m.iter().enumerate().take(n_rows) {
            let dst = &mut out[r * stride + b * LANES..];
            if let Some(select) = px.mix {
                let select = &select[r * width..][..width];
                mix_into::<T, C>(&mut dst[..n], &row[..n], select, b * LANES);
            } else if n == LANES {
                dst[..LANES].copy_from_slice(row);
            } else {
                dst[..n].copy_from_slice(&row[..n]);
            }
        }
    }
}

/// Stores pixel block `pb` (`np` pixels; `done` holds their blur, rows in lanes) as the unsharp
/// mask of the samples it overwrites in `out` (rows of `stride` samples). The blur stays f32
/// until it meets the input: one rounding. With `u.luminance` and three channels, Rec. 709
/// luma is sharpened and its change added to red, green and blue alike.
#[inline(always)]
fn store_sharpened<T: Sample, I: Isa, const C: usize>(
    done: &[[V; LANES]; C],
    u: Unsharp,
    out: &mut [T],
    (stride, pb, np): (usize, usize, usize),
) {
    let n_rows = out.len() / stride;
    let blocks: [[V; LANES]; C] = std::array::from_fn(|kb| match (pb * C + kb) * LANES < stride {
        true => I::transpose(&done[kb]),
        false => [V::ZERO; LANES],
    });
    let at = |r: usize, q: usize| blocks[q / LANES][r].0[q % LANES];
    for r in 0..n_rows {
        let dst = &mut out[r * stride + pb * LANES * C..][..np * C];
        if u.luminance && C == 3 {
            for (x, pixel) in dst.chunks_exact_mut(3).enumerate() {
                let o = [pixel[0].to_f32(), pixel[1].to_f32(), pixel[2].to_f32()];
                let b = [at(r, 3 * x), at(r, 3 * x + 1), at(r, 3 * x + 2)];
                let dy = u.apply(luma(o), luma(b)) - luma(o);
                for (s, o) in pixel.iter_mut().zip(o) {
                    *s = T::from_f32(o + dy);
                }
            }
        } else {
            for (q, d) in dst.iter_mut().enumerate() {
                *d = T::from_f32(u.apply(d.to_f32(), at(r, q)));
            }
        }
    }
}

/// Mixes `blurred`, samples `s0 ..` of a row, into `dst`, the input's samples there, by
/// `select`, the row's selection (`Sample::mix`). Masks are mostly 0 or 1 over a 16-sample
/// block: an unselected block keeps its input untouched, a fully selected one is a copy.
#[inline(always)]
fn mix_into<T: Sample, const C: usize>(dst: &mut [T], blurred: &[T], select: &[f32], s0: usize) {
    let Some(last) = (s0 + dst.len()).checked_sub(1) else {
        return;
    };
    let m = &select[s0 / C..=last / C];
    if m.iter().all(|v| *v <= 0.0) {
        return;
    }
    if m.iter().all(|v| *v >= 1.0) {
        dst.copy_from_slice(blurred);
        return;
    }
    for (i, (d, b)) in dst.iter_mut().zip(blurred).enumerate() {
        *d = T::mix(*d, *b, select[(s0 + i) / C]);
    }
}

// The rows pass's causal results: one buffer per worker thread, kept across bands and images.
thread_local! {
    static ROW_BUFFER: RefCell<Vec<V>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` on every 16-row group of `out` (the image's rows, `width` pixels each) in
/// parallel: with the group's index, its own rows of the selection (`px.mix` starts at `out`'s
/// first row), its thread's row buffer sized for the causal results, and its rows.
fn for_each_group<T: Sample>(
    out: &mut [T],
    width: usize,
    px: &Pixels,
    f: impl Fn(usize, &Pixels, &mut [V], &mut [T]) + Sync,
) {
    let stride = width * px.channels;
    let padded = width.div_ceil(LANES) * LANES * px.channels;
    out.par_chunks_mut(LANES * stride)
        .enumerate()
        .for_each(|(group, out)| {
            let _flush = crate::cpu::lanes::FlushSubnormals::new(true);
            let px = &Pixels {
                mix: px.mix.map(|s| &s[group * LANES * width..]),
                ..*px
            };
            ROW_BUFFER.with_borrow_mut(|u| {
                u.resize(padded, V::ZERO);
                f(group, px, u, out)
            })
        });
}

/// Pass 2's rows for a band: `out`, the band's rows of the image, filtered along x from the
/// band's column results, 16 rows per work item (`px.mix` starts at the band's first row).
pub(super) fn band_rows<T: Sample>(
    scratch: BandScratch,
    out: &mut [T],
    width: usize,
    px: &Pixels,
    k: Option<&Coef>,
) {
    for_each_group(out, width, px, |group, px, u, out| {
        rows(scratch, group * LANES, width, px, k, u, out)
    });
}

thread_local! {
    /// One 16-row group's samples in `BandScratch`'s layout, for `rows_only`.
    static GROUP_SCRATCH: RefCell<Vec<V>> = const { RefCell::new(Vec::new()) };
}

/// A blur along x alone, in place: each 16-row group is transposed into a scratch of its own
/// (a group's worth, which stays in the core's cache) and filtered straight out of it, so no
/// band of column results is written and read back as the 2-D blur's columns pass leaves one.
pub(super) fn rows_only<T: Sample>(data: &mut [T], width: usize, px: &Pixels, k: &Coef) {
    let stride = width * px.channels;
    let chunks = stride.div_ceil(super::CHUNK);
    for_each_group(data, width, px, |_, px, u, out| {
        GROUP_SCRATCH.with_borrow_mut(|scratch| {
            scratch.resize(chunks * TILE_ROWS * VECS, V::ZERO);
            let img = Rows {
                data: &*out,
                stride,
                height: out.len() / stride,
            };
            copy_columns(
                img,
                (0, img.height),
                (0, chunks),
                px,
                &mut [&mut scratch[..]],
            );
            let group_scratch = BandScratch {
                data: scratch,
                chunks,
            };
            rows(group_scratch, 0, width, px, Some(k), u, out);
        })
    });
}
