//! Long columns in one walk each way: the gather feeds the causal half of the recursive filter
//! row by row, and the anticausal half writes each finished row straight to the array, so the
//! scratch (larger than the core's cache for long lines) is walked twice instead of four times.

use super::{load16, prefetch, store_block, Block, Element, Item, LANES, V};
use crate::cpu::banded::sections::{Coef, Sections};
use crate::cpu::lanes::Isa;

/// Row `k` of an item of columns into `row` (one vector per block), the row `item.ahead` of it
/// asked for.
///
/// # Safety
/// `src` holds the array `item.lines` describes.
#[inline(always)]
pub(super) unsafe fn load_row<S: Element>(src: *const S, item: Item<'_>, k: usize, row: &mut [V]) {
    let lines = item.lines;
    for (v, &block) in row.iter_mut().zip(item.blocks) {
        let Block::Columns { start, lanes } = block else {
            unreachable!("an item's blocks are of one kind")
        };
        if k + item.ahead < lines.n {
            let ahead = src.add(start + (k + item.ahead) * lines.inner);
            prefetch(ahead, lanes * std::mem::size_of::<S>());
        }
        let p = src.add(start + k * lines.inner);
        *v = if lanes == LANES {
            load16(p)
        } else {
            let mut v = V::ZERO;
            for l in 0..lanes {
                v.0[l] = (*p.add(l)).load();
            }
            v
        };
    }
}

/// `gather` and the causal half of `recursive_impl` in one walk down an item of columns with
/// clamp edges (no extension) and one pair of sections: each row is filtered as it arrives,
/// while it is in the core's first cache, not read back from the scratch. The same steps in
/// the same order as the two apart, so the same results to the bit. Returns whether the lines
/// hold a NaN or an infinity.
///
/// # Safety
/// `src` holds the array `item.lines` describes.
#[inline(always)]
pub(super) unsafe fn gather_causal<S: Element, I: Isa, const G: usize>(
    src: *const S,
    item: Item<'_>,
    x: &mut [V],
    out: &mut [V],
    k: &Coef,
) -> bool {
    let n = item.lines.n;
    let mut st = [Sections::ZERO; G];
    let mut seen = [V::ZERO; G];
    for r in 0..n {
        load_row(src, item, r, &mut x[r * G..][..G]);
        for g in 0..G {
            let xr = x[r * G + g];
            // The input before the first sample is the first sample (clamp).
            let xp = x[r.saturating_sub(1) * G + g];
            seen[g] = V::madd::<I>(xr, V::ZERO, seen[g]);
            st[g].step::<I>(k, xr - xp);
            out[r * G + g] = st[g].output::<I>(k.causal(), V::ZERO);
        }
    }
    seen.iter().any(|v| v.0.iter().any(|a| a.is_nan()))
}

/// The anticausal half of `recursive_impl` up an item of columns with clamp edges, each row's
/// sum written straight to `dst` (where `scatter` would have put it), the rows above asked
/// for ahead of the walk.
///
/// # Safety
/// `dst` holds the array `item.lines` describes.
#[inline(always)]
pub(super) unsafe fn anticausal_scatter<D: Element, I: Isa, const G: usize>(
    dst: *mut D,
    item: Item<'_>,
    x: &[V],
    out: &[V],
    k: &Coef,
) {
    let Item { blocks, lines, .. } = item;
    let n = lines.n;
    let mut st = [Sections::ZERO; G];
    let mut x1 = [V::ZERO; G];
    for j in (0..n).rev() {
        for (g, &block) in blocks.iter().enumerate() {
            st[g].step::<I>(k, x1[g]);
            let a = st[g].output::<I>(k.anticausal(), V::ZERO);
            let o = V::madd::<I>(x[j * G + g], k.input, out[j * G + g] + a);
            x1[g] = match j {
                0 => V::ZERO,
                _ => x[j * G + g] - x[(j - 1) * G + g],
            };
            let ahead = j.checked_sub(item.ahead);
            store_block(dst, block, lines, (j, ahead), o);
        }
    }
}
