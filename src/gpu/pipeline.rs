//! The enqueue engine: every `Pipeline` becomes passes on one in-order queue over a planar f32
//! image resident on the device, each pass profiled and named for the report, and every
//! coefficient and scratch buffer kept alive until the queue has finished.
//!
//! `Pipeline::Transpose` is the fast shape of "Tuning Performance on the GPU": column pass +
//! transpose + column pass + transpose (rgV + T + rgV + T = rgV + rgH), so both filtering
//! passes walk down columns with coalesced accesses. `Pipeline::Direct` is that chapter's
//! first version: a row pass then a column pass, no transposes.

use crate::filter::gaussian::SECTION_FLOATS;
use crate::filter::{Blur2d, LineFilter};
use crate::gpu::defines::{blocked_defines, blocked_tune, overlap_defines, summary_vectors};
pub use crate::gpu::device_image::DeviceImage;
use crate::gpu::format::PixelFormat;
use crate::gpu::host_array::Same;
use crate::gpu::opencl::program::{BLOCKS, CONVOLUTION, EDGES, RECURSIVE, TRANSPOSE};
use crate::gpu::opencl::queue::Arg;
use crate::gpu::opencl::staged::SLOT_BYTES;
use crate::gpu::opencl::{ClContext, ClError, Enqueued, Timed};
use crate::gpu::plan::Upload;
use crate::gpu::plan::{blocked_plan, BlockedPlan, Blocking, Pipeline};
use crate::gpu::transpose::{enqueue_transpose, TransposeKind};
use crate::pixels;
use crate::pixels::planar::Planar;
use crate::report::{Pass, PassKind};
use opencl3::memory::Buffer;
use std::sync::Arc;

/// Global-memory accesses per sample of each pass kind: the recursive pass reads the input
/// twice and the output once and writes the output twice; FIR taps beyond the first hit cache.
pub fn accesses(filter: &LineFilter) -> u64 {
    if filter.is_recursive() {
        5
    } else {
        2
    }
}

/// Direction of a filtering pass in the current layout.
#[derive(Clone, Copy)]
pub(super) enum Along {
    Columns,
    Rows,
}

/// The commands of one blur as they are enqueued, and the buffers they read.
pub(super) struct Run<'a> {
    ctx: &'a ClContext,
    timed: Vec<Enqueued>,
    /// Tables that must live until the queue has finished.
    keep: Vec<Arc<Buffer<f32>>>,
    /// Scratch buffers (`ClContext::scratch_f32`), handed back when the queue has finished.
    scratch: Vec<(usize, Buffer<f32>)>,
    /// Whether the queue has finished everything enqueued so far.
    finished: bool,
}

/// A line filter with its coefficient block or taps on the device, and a derivative's second
/// block (`LineFilter::Recursive::second`).
pub(super) struct DeviceFilter<'a> {
    line: &'a LineFilter,
    pub(super) coef: Arc<Buffer<f32>>,
    second: Option<Arc<Buffer<f32>>>,
}

/// Uploads a filter's coefficient block or taps (blocking: it is tiny, and a wait inside the
/// sequence of kernels would show up as a gap in the timed span).
pub(super) fn upload_filter<'a>(
    ctx: &ClContext,
    f: &'a LineFilter,
) -> Result<DeviceFilter<'a>, ClError> {
    let (coef, second) = match f {
        LineFilter::Recursive {
            differences,
            second,
            ..
        } => (
            ctx.constant(differences)?,
            second.as_ref().map(|s| ctx.constant(s)).transpose()?,
        ),
        LineFilter::Fir { taps, .. } => (ctx.constant(taps)?, None),
    };
    Ok(DeviceFilter {
        line: f,
        coef,
        second,
    })
}

/// What a blocked pass of one filter down columns of some length needs besides the image:
/// the chunk length and either the reach and weights of its overlapped sums or, for carried
/// states, the carry matrices (per section T^chunk, then T^last) and the weights of the
/// summaries' sums (kernels/recursive_blocks.cl, block_summary).
pub(super) enum Starts {
    Overlap {
        chunk: usize,
        reach: usize,
        gains: Arc<Buffer<f32>>,
    },
    Carried {
        chunk: usize,
        matrices: Arc<Buffer<f32>>,
        gains: Arc<Buffer<f32>>,
    },
}

/// block_overlap's gain table for a chunk `reach` rows from its neighbours: the causal shares
/// of the rows above a chunk by distance, the head, the anticausal shares of the rows 1 ..=
/// reach below, the tail.
fn overlap_gains(coefficients: &[f32; 2 * SECTION_FLOATS], reach: usize) -> Vec<f32> {
    let causal = crate::filter::gaussian::causal_shares(coefficients, reach);
    let anticausal = crate::filter::gaussian::anticausal_shares(coefficients, reach);
    causal
        .full
        .iter()
        .chain(&causal.head[reach - 1..])
        .chain(&anticausal.full[1..])
        .chain(&anticausal.tail[reach - 1..])
        .flatten()
        .map(|&v| v as f32)
        .collect()
}

/// The `Starts` of `f` down columns of `len` rows, for the pipeline's `Blocking`.
pub(super) fn blocked_starts(
    ctx: &ClContext,
    f: &LineFilter,
    blocked: Blocking,
    len: usize,
    format: PixelFormat,
) -> Result<Starts, ClError> {
    let BlockedPlan { chunk, reach } = blocked_plan(f, blocked, len, format);
    let LineFilter::Recursive { differences, .. } = f else {
        unreachable!("blocked passes are recursive")
    };
    // The kernels feed the differences to the sections' poles alone: the shares are the
    // poles', and the transitions the same as any block's.
    let coefficients = &crate::filter::gaussian::pole_block(differences);
    if let Some(reach) = reach {
        let gains = ctx.constant(&overlap_gains(coefficients, reach))?;
        return Ok(Starts::Overlap {
            chunk,
            reach,
            gains,
        });
    }
    let last = len - (len.div_ceil(chunk) - 1) * chunk;
    let (full, last) = (
        crate::filter::gaussian::block_transition(coefficients, chunk),
        crate::filter::gaussian::block_transition(coefficients, last),
    );
    let matrices: Vec<f32> = (0..2)
        .flat_map(|s| {
            full[s]
                .iter()
                .chain(&last[s])
                .map(|&v| v as f32)
                .collect::<Vec<_>>()
        })
        .collect();
    // The anticausal shares of x[0 ..= chunk], its m2 g[j] for j < chunk, the causal shares
    // by distance from the chunk's end, then its n1 g[j] for j < chunk (block_summary's gain
    // table), rounded once from f64.
    let anticausal = crate::filter::gaussian::anticausal_shares(coefficients, chunk);
    let causal = crate::filter::gaussian::causal_shares(coefficients, chunk);
    let gains: Vec<f32> = anticausal
        .full
        .iter()
        .chain(&anticausal.tail)
        .chain(&causal.full)
        .chain(&causal.head)
        .flatten()
        .map(|&v| v as f32)
        .collect();
    Ok(Starts::Carried {
        chunk,
        matrices: ctx.constant(&matrices)?,
        gains: ctx.constant(&gains)?,
    })
}

/// One axis of the blocked pipeline: `src` walked down the columns of `dims` (`w`×`h` pixels
/// of `format` on each of `planes` planes) and written to `dst` transposed. `coef` is the
/// filter's coefficient block; `lut` maps 8-bit samples to f32 (read only when
/// `format.in_u8`); `name` ("y" or "x") goes into the pass names.
pub(super) struct BlockedAxis<'a> {
    pub(super) coef: &'a Buffer<f32>,
    pub(super) lut: &'a Buffer<f32>,
    pub(super) src: Arg<'a>,
    pub(super) dst: Arg<'a>,
    pub(super) dims: (usize, usize, usize),
    pub(super) format: PixelFormat,
    pub(super) name: &'a str,
}

impl BlockedAxis<'_> {
    /// Chunks of `chunk` rows down a column (the last one may be shorter).
    fn chunks(&self, chunk: usize) -> usize {
        self.dims.1.div_ceil(chunk)
    }

    /// Samples in the image: pixels of every plane times their channels.
    fn samples(&self) -> u64 {
        let (w, h, planes) = self.dims;
        (w * h * planes) as u64 * self.format.channels as u64
    }

    /// Bytes of the image as the pass reads it and as it writes it.
    fn image_bytes(&self) -> (u64, u64) {
        let size = |u8: bool| self.samples() * if u8 { 1 } else { 4 };
        (size(self.format.in_u8), size(self.format.out_u8))
    }

    /// `block_overlap`: every chunk starts from the weighted sums (`gains`) of the `reach` rows
    /// on either side of it, then walks its rows, in one kernel.
    fn overlap(
        &self,
        ctx: &ClContext,
        chunk: usize,
        reach: usize,
        gains: &Buffer<f32>,
    ) -> Result<Timed, ClError> {
        let (w, h, planes) = self.dims;
        let (defines, [tile, group_chunks], lanes) = overlap_defines(chunk, self.format, reach);
        let chunks = self.chunks(chunk);
        let k = ctx.kernel(BLOCKS, "block_overlap", &defines)?;
        // Work-items across: pixels, or samples (`lanes` a pixel).
        let across = w * lanes;
        let args = [
            self.src,
            self.dst,
            Arg::Buf(self.coef),
            Arg::Buf(gains),
            Arg::Buf(self.lut),
            Arg::U32(across as u32),
            Arg::U32(h as u32),
            Arg::U32(chunks as u32),
        ];
        let global = [
            across.div_ceil(tile) * tile,
            chunks.div_ceil(group_chunks) * group_chunks,
            planes,
        ];
        let name = format!("block overlap + transpose ({})", self.name);
        ctx.run(&k, &args, &global, Some(&[tile, group_chunks, 1]), &name)
    }

    /// `block_summary`: the zero-state summaries of every chunk into `sum`, weighted by
    /// `gains`. The summaries of `vec` neighbouring columns run as one column of vectors
    /// (`summary_vectors`).
    fn summaries(
        &self,
        ctx: &ClContext,
        chunk: usize,
        sum: &Buffer<f32>,
        gains: &Buffer<f32>,
    ) -> Result<Timed, ClError> {
        let (w, h, planes) = self.dims;
        let vec = summary_vectors(w, self.format);
        let (defines, _, [sum_lanes, split]) = blocked_defines(chunk, self.format.widened(vec));
        let wv = w / vec;
        let chunks = self.chunks(chunk);
        let k = ctx.kernel(BLOCKS, "block_summary", &defines)?;
        let args = [
            self.src,
            Arg::Buf(sum),
            Arg::Buf(self.coef),
            Arg::Buf(gains),
            Arg::Buf(self.lut),
            Arg::U32(wv as u32),
            Arg::U32(h as u32),
            Arg::U32(chunks as u32),
        ];
        ctx.run(
            &k,
            &args,
            &[wv.div_ceil(sum_lanes) * sum_lanes, chunks * split, planes],
            Some(&[sum_lanes, split, 1]),
            &format!("block summaries ({})", self.name),
        )
    }

    /// `block_carry`: the sequential carry of the states down the chunks, through the carry
    /// `matrices`, in place in `sum`.
    fn carries(
        &self,
        ctx: &ClContext,
        chunk: usize,
        sum: &Buffer<f32>,
        matrices: &Buffer<f32>,
    ) -> Result<Timed, ClError> {
        let (w, h, planes) = self.dims;
        let (defines, _, _) = blocked_defines(chunk, self.format);
        // Work-group width: the driver's choice unless tuned.
        let lanes = blocked_tune().lanes;
        let wide = lanes.map_or(w, |l| w.div_ceil(l) * l);
        let local = lanes.map(|l| [l, 1, 1]);
        let k = ctx.kernel(BLOCKS, "block_carry", &defines)?;
        let args = [
            self.src,
            Arg::Buf(sum),
            Arg::Buf(self.coef),
            Arg::Buf(matrices),
            Arg::Buf(self.lut),
            Arg::U32(w as u32),
            Arg::U32(h as u32),
            Arg::U32(self.chunks(chunk) as u32),
        ];
        ctx.run(
            &k,
            &args,
            &[wide, planes, 2],
            local.as_ref().map(|l| &l[..]),
            &format!("block carries ({})", self.name),
        )
    }

    /// `block_final`: every chunk walked from its carried states in `sum`, written transposed.
    fn final_walk(
        &self,
        ctx: &ClContext,
        chunk: usize,
        sum: &Buffer<f32>,
    ) -> Result<Timed, ClError> {
        let (w, h, planes) = self.dims;
        let (defines, [tile, group_chunks], _) = blocked_defines(chunk, self.format);
        let chunks = self.chunks(chunk);
        let k = ctx.kernel(BLOCKS, "block_final", &defines)?;
        let args = [
            self.src,
            self.dst,
            Arg::Buf(sum),
            Arg::Buf(self.coef),
            Arg::Buf(self.lut),
            Arg::U32(w as u32),
            Arg::U32(h as u32),
            Arg::U32(chunks as u32),
        ];
        let global = [
            w.div_ceil(tile) * tile,
            chunks.div_ceil(group_chunks) * group_chunks,
            planes,
        ];
        ctx.run(
            &k,
            &args,
            &global,
            Some(&[tile, group_chunks, 1]),
            &format!("block final + transpose ({})", self.name),
        )
    }
}

/// A run dropped before it finished (an enqueue failed) still waits for the queue: commands
/// already in it read and write host memory and buffers that go with it.
impl Drop for Run<'_> {
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.ctx.finish();
        }
    }
}

impl<'a> Run<'a> {
    pub(super) fn new(ctx: &'a ClContext) -> Self {
        Self {
            ctx,
            timed: Vec::new(),
            keep: Vec::new(),
            scratch: Vec::new(),
            finished: false,
        }
    }

    /// Waits for the queue, then hands the scratch buffers back to the context; returns the
    /// commands.
    pub(super) fn finish(mut self) -> Result<Vec<Enqueued>, ClError> {
        self.finish_now()
    }

    /// `finish` for a run whose commands have completed (its owner waited for them): the
    /// queue is not waited for again.
    pub(super) fn finish_done(mut self) -> Vec<Enqueued> {
        self.finished = true;
        self.keep.clear();
        for s in self.scratch.drain(..) {
            self.ctx.spare_f32(s);
        }
        std::mem::take(&mut self.timed)
    }

    /// `finish` for an owner that has more to do with the run's context before it goes.
    pub(super) fn finish_now(&mut self) -> Result<Vec<Enqueued>, ClError> {
        self.ctx.finish()?;
        self.finished = true;
        self.keep.clear();
        for s in self.scratch.drain(..) {
            self.ctx.spare_f32(s);
        }
        Ok(std::mem::take(&mut self.timed))
    }

    pub(super) fn ctx(&self) -> &'a ClContext {
        self.ctx
    }

    /// Commands enqueued so far.
    pub(super) fn len(&self) -> usize {
        self.timed.len()
    }

    /// Records a transfer enqueued beside the run's kernels (an upload or a download).
    pub(super) fn transfer(&mut self, timed: Timed, bytes: u64) {
        self.record(timed, PassKind::Transfer, bytes);
    }

    /// A kernel of the run's that looks at `bytes` of samples and changes none.
    pub(super) fn check(&mut self, timed: Timed, bytes: u64) {
        self.record(timed, PassKind::Check, bytes);
    }

    fn record(&mut self, timed: Timed, kind: PassKind, bytes: u64) {
        self.finished = false;
        self.timed.push(Enqueued { timed, kind, bytes });
    }

    /// One axis of the blocked pipeline, writing `axis.dst` transposed: the overlapped kernel,
    /// or summaries, carries and final pass.
    pub(super) fn blocked(&mut self, axis: &BlockedAxis, starts: Starts) -> Result<(), ClError> {
        let (read, written) = axis.image_bytes();
        match starts {
            Starts::Overlap {
                chunk,
                reach,
                gains,
            } => {
                let t = axis.overlap(self.ctx, chunk, reach, &gains)?;
                // The overlaps are neighbouring chunks' rows, read at about the same time:
                // counted once, like the cache hits of the carried final pass.
                self.record(t, PassKind::Filter, read + written);
                self.keep.push(gains);
            }
            Starts::Carried {
                chunk,
                matrices,
                gains,
            } => {
                let (w, _, planes) = axis.dims;
                let ch = axis.format.channels;
                let sum = self
                    .ctx
                    .scratch_f32(8 * axis.chunks(chunk) * w * planes * ch)?;
                // Bytes of the summaries, written once and read by the carries and the final
                // pass.
                let summaries = axis.samples() * 32 / chunk as u64;
                let t = axis.summaries(self.ctx, chunk, &sum.1, &gains)?;
                self.record(t, PassKind::Filter, read + summaries);
                let t = axis.carries(self.ctx, chunk, &sum.1, &matrices)?;
                self.record(t, PassKind::Filter, 2 * summaries);
                let t = axis.final_walk(self.ctx, chunk, &sum.1)?;
                self.record(t, PassKind::Filter, 2 * read + written + summaries);
                // The summary and carry buffers must outlive the kernels that read them.
                self.keep.extend([matrices, gains]);
                self.scratch.push(sum);
            }
        }
        Ok(())
    }

    /// The blocked pipeline over the planar f32 image `img`: each recursive axis leaves its
    /// result transposed, so after y then x the image is upright; a FIR axis runs a column pass
    /// and a transpose instead.
    fn blocked_planar(
        &mut self,
        img: &DeviceImage,
        [fy, fx]: [&DeviceFilter; 2],
        blocked: Blocking,
    ) -> Result<(), ClError> {
        let ctx = self.ctx;
        let (w, h, c) = (img.width, img.height, img.channels);
        let (a, b) = (&img.a, &img.b);
        let mut in_a = true;
        // Every upload happens before the first kernel, so none waits inside the sequence.
        let mut carries = Vec::new();
        for (f, len) in [(fy, h), (fx, w)] {
            carries.push(match f.line.is_recursive() {
                true => Some(blocked_starts(ctx, f.line, blocked, len, PixelFormat::F32)?),
                false => None,
            });
        }
        let lut = ctx.constant(&pixels::u8_lut(false))?;
        let axes = [(fy, (w, h, c), "y"), (fx, (h, w, c), "x")];
        for ((f, dims, name), carry) in axes.into_iter().zip(carries) {
            let (cur, other) = if in_a { (a, b) } else { (b, a) };
            if let Some(starts) = carry {
                let axis = BlockedAxis {
                    coef: &f.coef,
                    lut: &lut,
                    src: Arg::Buf(cur),
                    dst: Arg::Buf(other),
                    dims,
                    format: PixelFormat::F32,
                    name,
                };
                self.blocked(&axis, starts)?;
                in_a = !in_a;
            } else {
                let pass = format!("fir pass ({name})");
                self.filter(f, (cur, other), dims, Along::Columns, &pass)?;
                let pass = format!("transpose ({name})");
                self.transpose(TransposeKind::DEFAULT, other, cur, dims, &pass)?;
            }
        }
        if !in_a {
            let t = ctx.copy(b, a, img.len(), "copy back")?;
            self.record(t, PassKind::Transfer, img.len() as u64 * 8);
        }
        self.keep.push(lut);
        Ok(())
    }

    /// A pass of `f` from `src` to `dst` along the rows or down the columns of `w`×`h`.
    pub(super) fn filter(
        &mut self,
        f: &DeviceFilter,
        (src, dst): (&Buffer<f32>, &Buffer<f32>),
        (w, h, planes): (usize, usize, usize),
        along: Along,
        name: &str,
    ) -> Result<(), ClError> {
        let bytes = (w * h * planes) as u64 * 4 * accesses(f.line);
        let (w32, h32) = (w as u32, h as u32);
        let coef = &f.coef;
        let t = match (f.line, along) {
            (LineFilter::Recursive { .. }, along) => {
                // (len, lines, elem_stride, line_stride)
                let (len, lines, es, ls) = match along {
                    Along::Columns => (h32, w32, w32, 1),
                    Along::Rows => (w32, h32, 1, w32),
                };
                let blocks = [(coef, ""), (coef, "-DACCUMULATE")];
                let blocks = match &f.second {
                    Some(second) => vec![blocks[0], (second, blocks[1].1)],
                    None => vec![blocks[0]],
                };
                let mut passes = Vec::new();
                for (block, defines) in blocks {
                    let k = self.ctx.kernel(RECURSIVE, "recursive_line", defines)?;
                    let args = [
                        Arg::Buf(src),
                        Arg::Buf(dst),
                        Arg::Buf(block),
                        Arg::U32(len),
                        Arg::U32(lines),
                        Arg::U32(es),
                        Arg::U32(ls),
                        Arg::U32(w32 * h32),
                    ];
                    let ranges = [lines as usize, planes];
                    passes.push(self.ctx.run(&k, &args, &ranges, None, name)?);
                }
                // A second block's pass is timed apart, under the same name, after the first.
                let last = passes.pop().expect("the first block always runs");
                for t in passes {
                    self.record(t, PassKind::Filter, bytes);
                }
                last
            }
            (LineFilter::Fir { taps, .. }, along) => {
                let radius = taps.len() / 2;
                self.fir_pass(f, radius, (src, dst), (w, h, planes), along, name)?
            }
        };
        self.record(t, PassKind::Filter, bytes);
        Ok(())
    }

    /// `filter`'s pass of an FIR of `radius` taps each side.
    fn fir_pass(
        &self,
        f: &DeviceFilter,
        radius: usize,
        (src, dst): (&Buffer<f32>, &Buffer<f32>),
        (w, h, planes): (usize, usize, usize),
        along: Along,
        name: &str,
    ) -> Result<Timed, ClError> {
        let kname = match along {
            Along::Columns => "fir_y",
            Along::Rows => "fir_x",
        };
        let k = self.ctx.kernel(CONVOLUTION, kname, "")?;
        let args = [
            Arg::Buf(src),
            Arg::Buf(dst),
            Arg::Buf(&f.coef),
            Arg::U32(radius as u32),
            Arg::U32(w as u32),
            Arg::U32(h as u32),
            Arg::F32(f.line.input_weight()),
        ];
        self.ctx.run(&k, &args, &[w, h, planes], None, name)
    }

    /// Sets the first and last rows of every block of `lines` in `data` to `value`, where
    /// `ends` (start, end) says they are the array's own (kernels/edges.cl).
    pub(super) fn constant_edges(
        &mut self,
        data: &Buffer<f32>,
        value: f32,
        lines: crate::cpu::axis::Lines,
        (start, end): (bool, bool),
    ) -> Result<(), ClError> {
        let k = self.ctx.kernel(EDGES, "constant_edges", "")?;
        let ends = u32::from(start) | u32::from(end) << 1;
        let args = [
            Arg::Buf(data),
            Arg::F32(value),
            Arg::U32(lines.n as u32),
            Arg::U32(lines.inner as u32),
            Arg::U32(ends),
        ];
        let global = [lines.inner, lines.outer, 2];
        let t = self.ctx.run(&k, &args, &global, None, "constant edges")?;
        let bytes = (2 * lines.outer * lines.inner) as u64 * 4;
        self.record(t, PassKind::Transfer, bytes);
        Ok(())
    }

    fn transpose(
        &mut self,
        kind: TransposeKind,
        src: &Buffer<f32>,
        dst: &Buffer<f32>,
        dims: (usize, usize, usize),
        name: &str,
    ) -> Result<(), ClError> {
        self.timed
            .push(enqueue_transpose(self.ctx, kind, src, dst, dims, name)?);
        Ok(())
    }
}

/// Builds every kernel `blur` will need for a `width`×`height` image, so that compilation is
/// not inside a timed run.
pub fn prepare(
    ctx: &ClContext,
    blur: &Blur2d,
    pipeline: Pipeline,
    (width, height): (usize, usize),
    upload: Upload,
) -> Result<(), ClError> {
    for f in [&blur.x, &blur.y] {
        if f.is_recursive() {
            ctx.kernel(RECURSIVE, "recursive_line", "")?;
        } else {
            ctx.kernel(CONVOLUTION, "fir_x", "")?;
        }
    }
    match pipeline {
        Pipeline::Transpose(kind) => {
            ctx.kernel(TRANSPOSE, kind.kernel_name(), "")?;
        }
        Pipeline::Blocked { chunk, start } => {
            // Each pass runs down columns of `len` rows, `across` of them side by side.
            let passes = [(&blur.y, height, width), (&blur.x, width, height)];
            for ((f, len, across), format) in passes.into_iter().zip(upload.formats()) {
                if !f.is_recursive() {
                    continue;
                }
                let plan = blocked_plan(f, Blocking { chunk, start }, len, format);
                if let Some(reach) = plan.reach {
                    let defines = overlap_defines(plan.chunk, format, reach).0;
                    ctx.kernel(BLOCKS, "block_overlap", &defines)?;
                    continue;
                }
                let defines = blocked_defines(plan.chunk, format).0;
                for k in ["block_carry", "block_final"] {
                    ctx.kernel(BLOCKS, k, &defines)?;
                }
                let wide = format.widened(summary_vectors(across, format));
                ctx.kernel(
                    BLOCKS,
                    "block_summary",
                    &blocked_defines(plan.chunk, wide).0,
                )?;
            }
            ctx.kernel(TRANSPOSE, TransposeKind::DEFAULT.kernel_name(), "")?;
        }
        Pipeline::Direct => {}
    }
    Ok(())
}

/// Enqueues the blur of `img.a` in place (`img.b` is scratch) and returns the commands.
pub fn enqueue(
    ctx: &ClContext,
    img: &DeviceImage,
    blur: &Blur2d,
    pipeline: Pipeline,
) -> Result<Vec<Enqueued>, ClError> {
    let mut run = Run::new(ctx);
    enqueue_on(&mut run, img, blur, pipeline)?;
    // The coefficient and scratch buffers must live until their kernels ran.
    run.finish()
}

/// `enqueue` onto `run`, which keeps what the kernels need until it is finished.
pub(super) fn enqueue_on(
    run: &mut Run,
    img: &DeviceImage,
    blur: &Blur2d,
    pipeline: Pipeline,
) -> Result<(), ClError> {
    let ctx = run.ctx();
    let (w, h, c) = (img.width, img.height, img.channels);
    let (a, b) = (&img.a, &img.b);
    let (fx, fy) = (upload_filter(ctx, &blur.x)?, upload_filter(ctx, &blur.y)?);
    match pipeline {
        Pipeline::Transpose(kind) => {
            run.filter(&fy, (a, b), (w, h, c), Along::Columns, "column pass 1 (y)")?;
            run.transpose(kind, b, a, (w, h, c), "transpose 1")?;
            run.filter(&fx, (a, b), (h, w, c), Along::Columns, "column pass 2 (x)")?;
            run.transpose(kind, b, a, (h, w, c), "transpose 2")?;
        }
        Pipeline::Direct => {
            run.filter(&fx, (a, b), (w, h, c), Along::Rows, "row pass (x)")?;
            run.filter(&fy, (b, a), (w, h, c), Along::Columns, "column pass (y)")?;
        }
        Pipeline::Blocked { chunk, start } => {
            run.blocked_planar(img, [&fy, &fx], Blocking { chunk, start })?;
        }
    }
    Ok(())
}

/// Blurs `img` on the device; returns the result and every pass with its device time. The
/// planes go up and come back in chunks through the context's pinned slots
/// (`opencl::staged`), the result into `img`'s own memory.
pub fn blur(
    ctx: &ClContext,
    mut img: Planar,
    blur: &Blur2d,
    pipeline: Pipeline,
) -> Result<(Planar, Vec<Pass>), ClError> {
    let len = img.data.len();
    let mut dev = DeviceImage::new(ctx, img.width, img.height, img.channels)?;
    let chunk = SLOT_BYTES / 4;
    let upload = ctx.upload_staged(&mut dev.a, len, &Same(&mut img.data), chunk)?;
    let kernels = enqueue(ctx, &dev, blur, pipeline)?;
    let download = ctx.download_staged(&dev.a, len, &mut Same(&mut img.data), chunk)?;
    let mut passes = vec![upload.into_pass(ctx)?];
    for c in kernels {
        passes.push(c.into_pass(ctx)?);
    }
    passes.push(download.into_pass(ctx)?);
    Ok((img, passes))
}
