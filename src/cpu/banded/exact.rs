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
//! Where that is over the budget (a slide 100 000 pixels wide needs 1.2 GiB) the states go to
//! a temporary file instead (`spilled_plan`), and the window alone must fit.

use super::columns::{start_carries, strip_chunks, Walk, STRIP};
use super::samples::{Pixels, Rows, Sample};
use super::sections::{Coef, Sections};
use super::summaries::{weighted_sums, BandSums};
use super::{Axis, BOUNDARY, CARRY, CHUNK, VECS};
use crate::cpu::lanes::simd_dispatch;
use crate::cpu::lanes::{Isa, V};
use rayon::prelude::*;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::time::Instant;

/// The anticausal column filter's exact state at every `strip`-th row of an image, as the
/// first pass leaves them for the second.
pub struct ColumnStates {
    strip: usize,
    /// Fields of one boundary: every chunk's `BOUNDARY` fields, chunk after chunk.
    per_boundary: usize,
    store: Store,
}

/// Where the states are kept: in memory, or where they do not fit it in a temporary file
/// (unnamed, so that it goes whatever happens to the process), read back a boundary at a time.
enum Store {
    /// Boundary `k · strip` (k = 1, 2, …, above the image's last row) at `k − 1`.
    Memory(Vec<V>),
    File {
        file: File,
        read: Vec<V>,
    },
}

impl ColumnStates {
    fn new(strip: usize, per_boundary: usize, count: usize, spill: Option<File>) -> Self {
        let store = match spill {
            Some(file) => Store::File {
                file,
                read: vec![V::ZERO; per_boundary],
            },
            None => Store::Memory(vec![V::ZERO; count * per_boundary]),
        };
        ColumnStates {
            strip,
            per_boundary,
            store,
        }
    }

    /// The states at row `row` (a multiple of the strip, inside the image).
    pub(super) fn at(&mut self, row: usize) -> io::Result<&[V]> {
        debug_assert!(row > 0 && row.is_multiple_of(self.strip));
        self.get(row / self.strip - 1)
    }

    pub fn strip(&self) -> usize {
        self.strip
    }

    /// Whether the states are in a temporary file.
    pub fn spilled(&self) -> bool {
        matches!(self.store, Store::File { .. })
    }

    /// Boundary `b`'s states.
    fn get(&mut self, b: usize) -> io::Result<&[V]> {
        let n = self.per_boundary;
        match &mut self.store {
            Store::Memory(all) => Ok(&all[b * n..][..n]),
            Store::File { file, read } => {
                file.seek(SeekFrom::Start((b * n * size_of::<V>()) as u64))?;
                file.read_exact(as_bytes_mut(read))?;
                Ok(read)
            }
        }
    }

    /// Stores `states` as boundary `b`'s.
    fn put(&mut self, b: usize, states: &[V]) -> io::Result<()> {
        let n = self.per_boundary;
        match &mut self.store {
            Store::Memory(all) => all[b * n..][..n].copy_from_slice(states),
            Store::File { file, .. } => {
                file.seek(SeekFrom::Start((b * n * size_of::<V>()) as u64))?;
                file.write_all(as_bytes(states))?;
            }
        }
        Ok(())
    }
}

fn as_bytes(v: &[V]) -> &[u8] {
    // SAFETY: V is `repr(C)` 16 f32s with no padding; any bytes are some f32s.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), size_of_val(v)) }
}

fn as_bytes_mut(v: &mut [V]) -> &mut [u8] {
    // SAFETY: as `as_bytes`; the bytes read in are f32 bit patterns this process wrote.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast(), size_of_val(v)) }
}

/// Row boundaries the first pass stores for an image `height` rows tall in strips of `strip`.
pub(super) fn boundaries(height: usize, strip: usize) -> usize {
    height.saturating_sub(1) / strip
}

/// Pass 1: reads a `width`×`height` image of interleaved samples from `fill` (whole rows, top
/// to bottom) and returns the anticausal column states at every `strip`-th row, kept in
/// `spill` where given, with the time the sums took in ms (not the reads). Stops at the first
/// error of `fill` or of the file.
pub fn summarise_streamed<T: Sample, E: From<io::Error>>(
    (width, height): (usize, usize),
    px: &Pixels,
    ky: Axis,
    strip: usize,
    spill: Option<File>,
    mut fill: impl FnMut(&mut [T]) -> Result<(), E>,
) -> Result<(ColumnStates, f64), E> {
    let stride = width * px.channels;
    let chunks = stride.div_ceil(CHUNK);
    let per_boundary = chunks * BOUNDARY;
    let count = boundaries(height, strip);
    let mut out = ColumnStates::new(strip, per_boundary, count, spill);
    if stride == 0 || height == 0 {
        return Ok((out, 0.0));
    }
    let ky = ky.form::<T>();
    let sums = BandSums::new(ky, strip);
    let k = Coef::of::<T>(ky);
    let per_strip = strip_chunks(chunks);
    let mut carry = vec![V::ZERO; chunks * CARRY];
    let mut data = vec![T::from_f32(0.0); (strip + 1).min(height) * stride];
    let mut this = vec![V::ZERO; per_boundary];
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
            start_carries(window, px, &mut carry);
        } else {
            // The last boundary's state is the walk from the bottom edge; every other one
            // starts as the weighted sum of the strip below it.
            let walk = top == count * strip;
            this.par_chunks_mut(per_strip * BOUNDARY)
                .zip(carry.par_chunks(per_strip * CARRY))
                .enumerate()
                .for_each(|(s, (out, carry))| {
                    let _flush = crate::cpu::lanes::FlushSubnormals::new(true);
                    strip_sums(window, s * per_strip, px, (&k, &sums), (carry, out), walk);
                });
            out.put(top / strip - 1, &this)?;
        }
        ms += t.elapsed().as_secs_f64() * 1e3;
        let n = strip.min(height - top);
        data.copy_within(n * stride..want * stride, 0);
        (top, held) = (top + n, want - n);
    }
    let t = Instant::now();
    carry_all_up(&mut out, &sums, count, this)?;
    ms += t.elapsed().as_secs_f64() * 1e3;
    Ok((out, ms))
}

/// Each of the `count` boundaries' states in `out` (a strip's sums, the last one the walk from
/// the bottom edge) completed by the state below it, bottom to top; `this` is a boundary's room.
fn carry_all_up(
    out: &mut ColumnStates,
    sums: &BandSums,
    count: usize,
    mut this: Vec<V>,
) -> io::Result<()> {
    if count < 2 {
        return Ok(());
    }
    let mut below = out.get(count - 1)?.to_vec();
    for b in (0..count - 1).rev() {
        this.copy_from_slice(out.get(b)?);
        this.par_chunks_mut(BOUNDARY)
            .zip(below.par_chunks(BOUNDARY))
            .for_each(|(z, s)| carry_up(sums, s, z));
        out.put(b, &this)?;
        std::mem::swap(&mut this, &mut below);
    }
    Ok(())
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
