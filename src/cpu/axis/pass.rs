//! One axis's pass over an array: its lines dealt out as work items of blocks side by side,
//! each filtered from the source into the destination with one thread's scratch.

use super::{
    filter_four, filter_one, filter_wide, filter_widest, is_f32, AxisFilter, Block, Element, Item,
    Lines, Recursion, Shared, GROUP, LANES, PAGE, SCRATCH_BYTES, V, WIDE, WIDEST,
};
use crate::cpu::banded::sections::Coef;
use crate::cpu::lanes::FlushSubnormals;
use crate::filter::LineFilter;

/// One axis's lines as work items: how many blocks an item takes, and the recursion's
/// coefficients, made once for every item.
pub(super) struct AxisPass<'a> {
    f: &'a AxisFilter,
    lines: Lines,
    pad: usize,
    rows: usize,
    coef: Option<Recursion>,
    /// Blocks to an item: `WIDEST`, `WIDE`, `GROUP` or 1.
    group: usize,
    blocks: Vec<Block>,
    /// Rows ahead a walk down columns asks for (`ahead_rows`).
    ahead: usize,
}

/// An item's scratch: its lines with their extension, and the filtered lines.
pub(super) type Scratch = (Vec<V>, Vec<V>);

impl<'a> AxisPass<'a> {
    /// The items of `lines` filtered by `f`, from `S` samples into `D` samples.
    pub(super) fn new<S: Element, D: Element>(lines: Lines, f: &'a AxisFilter) -> AxisPass<'a> {
        let pad = f.pad();
        let rows = lines.n + 2 * pad;
        let coef = match &f.filter {
            LineFilter::Recursive {
                differences,
                second,
                ..
            } => Some(Recursion {
                first: Coef::differences(differences),
                second: second.as_ref().map(Coef::differences),
            }),
            LineFilter::Fir { .. } => None,
        };
        // Four blocks side by side where the lanes are columns: a row of the item is then 64
        // neighbouring samples, and a walk down columns waits on memory, not on its scratch
        // (`WIDEST` or `WIDE` where f32 columns are a page or more apart). Where the lanes are
        // rows, four only where their scratch stays in the core's cache.
        let fits = |g: usize| (rows + lines.n) * g * std::mem::size_of::<V>() <= SCRATCH_BYTES;
        let far = is_f32::<S>() && is_f32::<D>() && lines.inner * size_of::<f32>() >= PAGE;
        let group = match (fits(GROUP), lines.inner >= LANES) {
            (_, true) if far && fits(WIDEST) => WIDEST,
            (_, true) if far && fits(WIDE) => WIDE,
            (true, _) | (_, true) => GROUP,
            (false, false) => 1,
        };
        AxisPass {
            f,
            lines,
            pad,
            rows,
            coef,
            group,
            blocks: lines.blocks(),
            ahead: ahead_rows(group * LANES * size_of::<S>(), rayon::current_num_threads()),
        }
    }

    /// A scratch for one thread's items.
    pub(super) fn scratch(&self) -> Scratch {
        let g = self.group;
        (
            vec![V::ZERO; self.rows * g],
            vec![V::ZERO; self.lines.n * g],
        )
    }

    /// The items of the pass, in memory order.
    pub(super) fn items(&self) -> std::slice::Chunks<'_, Block> {
        self.blocks.chunks(self.group)
    }

    /// The items of the pass, to share between the threads.
    pub(super) fn par_items(&self) -> rayon::slice::Chunks<'_, Block> {
        use rayon::prelude::*;
        self.blocks.par_chunks(self.group)
    }

    /// Filters one item, `blocks` (one of `items`), from `src` into `dst`.
    ///
    /// # Safety
    /// As `filter_axis_raw`'s, for the item's lines: nothing else touches them meanwhile.
    pub(super) unsafe fn item<S: Element, D: Element>(
        &self,
        src: Shared<S>,
        dst: Shared<D>,
        blocks: &[Block],
        (x, out): &mut Scratch,
    ) {
        // Wide items are compiled for f32 alone: the types of this call, not of `new`'s, say
        // whether the buffers may be read as f32.
        let f32s = is_f32::<S>() && is_f32::<D>();
        let _flush = FlushSubnormals::new(true);
        let (f, coef) = (self.f, self.coef.as_ref());
        let item = Item {
            blocks,
            lines: self.lines,
            pad: self.pad,
            ahead: self.ahead,
        };
        match self.group {
            WIDEST if f32s => {
                let (src, dst) = (
                    Shared(src.get().cast::<f32>()),
                    Shared(dst.get().cast::<f32>()),
                );
                filter_widest(src, dst, item, f, coef, x, out)
            }
            WIDE if f32s => {
                let (src, dst) = (
                    Shared(src.get().cast::<f32>()),
                    Shared(dst.get().cast::<f32>()),
                );
                filter_wide(src, dst, item, f, coef, x, out)
            }
            GROUP => filter_four(src, dst, item, f, coef, x, out),
            1 => filter_one(src, dst, item, f, coef, x, out),
            _ => unreachable!("wide items are chosen for f32 alone"),
        }
    }
}

/// The bytes all threads together ask for ahead of a walk down columns: each row of an item
/// is a page or more from the next, which the hardware prefetchers do not follow, and beyond
/// what the memory controllers queue a request ahead waits or is dropped. On a 16-core Xeon
/// at 16 threads, 2 KiB a thread (4 rows of 128 f32 columns) took 0.81 times the time of 8 KiB
/// on the first axis of f32 512³, 0.91 times on f32 8192²; on 2 cores of an EPYC, 8 KiB a
/// thread was the faster (2 KiB: 1.07 times as long).
const AHEAD_BYTES: usize = 32 << 10;

/// Rows ahead of a walk down columns, whose rows are `row_bytes` each, on `threads` threads:
/// `AHEAD_BYTES` shared between the threads, 2–8 KiB each, 2–16 rows.
pub(super) fn ahead_rows(row_bytes: usize, threads: usize) -> usize {
    let bytes = (AHEAD_BYTES / threads.max(1)).clamp(2 << 10, 8 << 10);
    (bytes / row_bytes.max(1)).clamp(2, 16)
}
