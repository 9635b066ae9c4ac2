//! The last two axes of a stack of planes (a volume's slices, a batch of images) filtered one
//! plane at a time: a thread filters a plane along its next-to-last axis and then, while the
//! plane is still in its cache, along its last, so that the two axes cost one trip through
//! memory instead of two. Each plane's lines are the whole array's lines of those axes; they
//! fall into other blocks and items than in a pass over the whole array, but every lane of a
//! block is its own line's recursion (or FIR), so the result is the same to the bit.

use super::{AxisFilter, AxisPass, Element, Lines, Shared, LANES};
use rayon::prelude::*;

/// The most bytes a plane may hold (in the type it is filtered in) to go plane by plane: a
/// plane and the items' scratch stay in a core's share of the caches between the two axes.
/// `gaussian_filter` along the last two axes in one call against two (alternating, medians of
/// 7): 1 MiB planes (f32 512³) 0.74 times the time on 16 threads of a Xeon and 0.79 on 2
/// cores of an EPYC; 4 MiB planes (256×1024²) 0.98 and 0.90; 16 MiB planes, not taken (the
/// same path both ways), 0.94 and 0.98.
const PLANE_BYTES: usize = 4 << 20;

/// The fewest planes to a thread: the planes are the only split, so fewer leave threads idle
/// while the last ones finish.
const PLANES_PER_THREAD: usize = 8;

/// Whether an array of `shape` goes plane by plane along its last two axes on `threads`
/// threads, its planes held in samples of `sample_bytes`: at least three axes, planes that fit
/// `PLANE_BYTES`, enough of them for every thread, and both axes at least a block's `LANES`
/// long (a plane of fewer columns, such as an image's pixels by its three channels, would
/// fill one lane of each block where the whole array fills sixteen).
pub(crate) fn by_planes(shape: &[usize], sample_bytes: usize, threads: usize) -> bool {
    let d = shape.len();
    if d < 3 {
        return false;
    }
    if shape[d - 2] < LANES || shape[d - 1] < LANES {
        return false;
    }
    let plane = shape[d - 2] * shape[d - 1];
    let planes: usize = shape[..d - 2].iter().product();
    plane > 0 && plane * sample_bytes <= PLANE_BYTES && planes >= PLANES_PER_THREAD * threads.max(1)
}

/// Every plane of `shape` filtered along axis `d − 2` by `fa` from `src` into `mid`, then
/// along axis `d − 1` by `fb` from `mid` into `dst`, a plane to a task.
///
/// # Safety
/// Each pointer holds the array of `shape`; any two of `src`, `mid` and `dst` are the same
/// buffer or do not overlap; nothing else accesses them during the call. A `Constant` edge's
/// values (`AxisFilter::cvals`) are indexed from each plane's start: one value, or as many as
/// divide a plane's samples.
unsafe fn filter_planes_raw<S: Element, M: Element, D: Element>(
    (src, mid, dst): (*const S, *mut M, *mut D),
    shape: &[usize],
    fa: &AxisFilter,
    fb: &AxisFilter,
) {
    let d = shape.len();
    let (rows, cols) = (shape[d - 2], shape[d - 1]);
    let divides = |f: &AxisFilter| f.cvals.len() <= 1 || (rows * cols) % f.cvals.len() == 0;
    debug_assert!(
        divides(fa) && divides(fb),
        "a constant's values follow the planes"
    );
    let along_rows = AxisPass::new::<S, M>(
        Lines {
            outer: 1,
            n: rows,
            inner: cols,
        },
        fa,
    );
    let along_cols = AxisPass::new::<M, D>(
        Lines {
            outer: rows,
            n: cols,
            inner: 1,
        },
        fb,
    );
    let planes: usize = shape[..d - 2].iter().product();
    let (src, mid, dst) = (Shared(src as *mut S), Shared(mid), Shared(dst));
    (0..planes).into_par_iter().for_each_init(
        || (along_rows.scratch(), along_cols.scratch()),
        |(first, second), p| {
            let at = p * rows * cols;
            // SAFETY: the caller's promise; this task alone touches plane `p`'s samples.
            let (s, m, o) = unsafe {
                (
                    Shared(src.get().add(at)),
                    Shared(mid.get().add(at)),
                    Shared(dst.get().add(at)),
                )
            };
            for blocks in along_rows.items() {
                // SAFETY: as above: the item's lines are plane `p`'s.
                unsafe { along_rows.item(s, m, blocks, first) };
            }
            for blocks in along_cols.items() {
                // SAFETY: as above.
                unsafe { along_cols.item(m, o, blocks, second) };
            }
        },
    );
}

/// The last two axes of `dst`, plane by plane: the first of them from `src` into `dst` (from
/// `dst` itself where `src` is None), the last in place. `dst` holds floats: an integer one
/// would be rounded between the two axes.
pub(crate) fn filter_planes<S: Element, D: Element>(
    src: Option<&[S]>,
    dst: &mut [D],
    shape: &[usize],
    fa: &AxisFilter,
    fb: &AxisFilter,
) {
    assert!(D::FLOAT, "plane by plane in place: float samples alone");
    assert_eq!(dst.len(), shape.iter().product::<usize>(), "array size");
    let len = dst.len();
    let d = dst.as_mut_ptr();
    let s = source_or(src, d, len);
    // SAFETY: both hold the array; `src`, where given, is borrowed apart from `dst`, which is
    // borrowed mutably for the call.
    unsafe { filter_planes_raw((s, d, d), shape, fa, fb) }
}

/// The last two axes plane by plane through an f32 `work` array: the first of them from `src`
/// into `work` (in place where `src` is None), the last from `work` into `dst`, so that an
/// integer output is rounded once.
pub(crate) fn filter_planes_through<S: Element, D: Element>(
    src: Option<&[S]>,
    work: &mut [f32],
    dst: &mut [D],
    shape: &[usize],
    (fa, fb): (&AxisFilter, &AxisFilter),
) {
    assert_eq!(work.len(), shape.iter().product::<usize>(), "array size");
    assert_eq!(dst.len(), work.len(), "destination size");
    let w = work.as_mut_ptr();
    let s = source_or(src, w, dst.len());
    // SAFETY: the three hold the array; `work` and `dst` are borrowed mutably (apart from
    // each other and from `src`) for the call.
    unsafe { filter_planes_raw((s, w, dst.as_mut_ptr()), shape, fa, fb) }
}

/// Where the first axis reads: `src` (of `len` samples), else `own`, the array it writes, in
/// place (one sample type).
fn source_or<S: Element, T: Element>(src: Option<&[S]>, own: *mut T, len: usize) -> *const S {
    match src {
        Some(src) => {
            assert_eq!(src.len(), len, "source size");
            src.as_ptr()
        }
        None => {
            assert!(same_type::<S, T>(), "in place: one sample type");
            own as *const S
        }
    }
}

/// Whether `A` and `B` are one type.
fn same_type<A: 'static, B: 'static>() -> bool {
    std::any::TypeId::of::<A>() == std::any::TypeId::of::<B>()
}
