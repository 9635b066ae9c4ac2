//! N-D arrays on the device: a contiguous f32 array of any rank, uploaded once, filtered
//! along each axis that has a filter, downloaded once. The last two axes are the rows and
//! columns of a stack of planes (the planar pipeline's own passes); an earlier axis k is a
//! column pass over `prod(shape[..k])` stacked images of `prod(shape[k+1..])` columns and
//! `shape[k]` rows, one work-item per column, which is where a volume's z pass lies. Every
//! pass starts from the clamped edge; other edge modes extend the array on the host first.
//!
//! An array larger than the device takes (each of its two buffers within its largest
//! allocation and a third of its memory) goes through in slabs along its first axis, each with the
//! filter's reach along that axis on both sides (`SEAM_WEIGHT`): the slab's own samples
//! come back, its margins only feed them.

use super::host_array::Same;
use super::opencl::staged::{fill_in_pieces, HostSide, SLOT_BYTES};
use super::opencl::{ClContext, ClError};
use super::pipeline::{self, upload_filter, Along, DeviceImage, Run};

mod direct;

use super::plan::Pipeline;
use crate::cpu::axis::Lines;
use crate::filter::{Blur2d, LineFilter, Method};
use crate::report::Pass;
pub use direct::{blur_direct, holds_whole, Direct};

/// Blurs `data`, an array of `shape`, on the device, `filters[k]` along axis k (None: left
/// alone); returns every pass with its device time.
pub fn blur(
    ctx: &ClContext,
    data: &mut [f32],
    shape: &[usize],
    filters: &[Option<LineFilter>],
    pipeline: Pipeline,
) -> Result<Vec<Pass>, ClError> {
    assert_eq!(data.len(), shape.iter().product::<usize>(), "array size");
    blur_staged(
        ctx,
        &mut Same(data),
        shape,
        filters,
        pipeline,
        SLOT_BYTES / 4,
    )
}

/// `blur` of the device's array of `shape` that `host` fills and drains (`opencl::staged`),
/// in chunks of `chunk` samples at most through the context's pinned slots; in slabs where
/// the device cannot hold the array.
pub fn blur_staged(
    ctx: &ClContext,
    host: &mut dyn HostSide,
    shape: &[usize],
    filters: &[Option<LineFilter>],
    pipeline: Pipeline,
    chunk: usize,
) -> Result<Vec<Pass>, ClError> {
    let constants = vec![None; filters.len()];
    blur_staged_with_constants(ctx, host, shape, (filters, &constants), pipeline, chunk)
}

/// `blur_staged` where each axis whose extension is one sample of a constant at both ends
/// (`host_array::Pad`) has those samples set to it afresh before its pass (`constants[k]`),
/// as scipy extends each pass's input anew: needed where an earlier pass's derivative would
/// have taken them to 0.
pub fn blur_staged_with_constants(
    ctx: &ClContext,
    host: &mut dyn HostSide,
    shape: &[usize],
    (filters, constants): (&[Option<LineFilter>], &[Option<f32>]),
    pipeline: Pipeline,
    chunk: usize,
) -> Result<Vec<Pass>, ClError> {
    let edges: Vec<Option<Constant>> = constants
        .iter()
        .map(|c| {
            c.map(|value| Constant {
                value,
                start: true,
                end: true,
            })
        })
        .collect();
    let axes = Axes {
        filters,
        constants: &edges,
        first: 0,
    };
    blur_staged_axes(ctx, host, shape, axes, pipeline, chunk)
}

/// Each axis's filter and constant edges, the axes being the caller's from `first` on (the
/// passes are named by the caller's).
#[derive(Clone, Copy)]
struct Axes<'a> {
    filters: &'a [Option<LineFilter>],
    constants: &'a [Option<Constant>],
    first: usize,
}

/// A constant set at an axis's ends before its pass, where they are the array's own (a slab
/// along the first axis holds its start, its end, both or neither).
#[derive(Clone, Copy, Debug)]
struct Constant {
    value: f32,
    start: bool,
    end: bool,
}

fn blur_staged_axes(
    ctx: &ClContext,
    host: &mut dyn HostSide,
    shape: &[usize],
    axes: Axes,
    pipeline: Pipeline,
    chunk: usize,
) -> Result<Vec<Pass>, ClError> {
    assert_eq!(shape.len(), axes.filters.len(), "one filter per axis");
    assert_eq!(shape.len(), axes.constants.len(), "one constant per axis");
    let len: usize = shape.iter().product();
    if len == 0 {
        return Ok(Vec::new());
    }
    if len > room(ctx) && axes.filters.iter().any(Option::is_some) {
        return blur_in_slabs(ctx, host, shape, axes, pipeline, chunk);
    }
    blur_whole(ctx, host, shape, axes, pipeline, chunk)
}

/// Samples of an array the device holds at once: two buffers of it, each within the largest
/// allocation and a third of the device's memory (its kernels' scratch beside).
fn room(ctx: &ClContext) -> usize {
    let info = &ctx.info;
    let bytes = (info.max_alloc_mib << 20).min((info.global_mem_mib << 20) / 3);
    (bytes / 4) as usize
}

/// The weight of the samples past a slab's margin in its own samples at most: a start from
/// the clamped margin instead of the true neighbours moves them by this fraction of the
/// array's range at most, far under the kernels' 1e-5 agreement with the host.
pub const SEAM_WEIGHT: f64 = 1e-7;

/// The samples of margin a slab needs along an axis with `filter`: the FIR's half width, or
/// the recursion's reach to `SEAM_WEIGHT` (the Gaussian's response decays as
/// exp(-1.72 n / sigma), so 9.4 sigma; 9.5 sigma and three samples cover small sigma too; a
/// derivative's from its fitted envelopes).
fn margin(filter: &LineFilter) -> usize {
    match filter {
        LineFilter::Fir { taps, .. } => taps.len() / 2,
        LineFilter::Recursive {
            sigma, order: 0, ..
        } => (9.5 * sigma).ceil() as usize + 3,
        LineFilter::Recursive { sigma, order, .. } => {
            crate::filter::derivative::reach_within(*sigma, *order, SEAM_WEIGHT)
        }
    }
}

/// The array in slabs along its first axis (past leading axes of one sample), each with
/// `margin` samples more on both sides where that axis is filtered.
fn blur_in_slabs(
    ctx: &ClContext,
    host: &mut dyn HostSide,
    shape: &[usize],
    axes: Axes,
    pipeline: Pipeline,
    chunk: usize,
) -> Result<Vec<Pass>, ClError> {
    let lead = shape.iter().position(|&n| n > 1).unwrap_or(0);
    let (shape, filters) = (&shape[lead..], &axes.filters[lead..]);
    let mut constants = axes.constants[lead..].to_vec();
    let (n, inner) = (shape[0], shape[1..].iter().product::<usize>());
    let reach = filters[0].as_ref().map_or(0, margin).min(n);
    let rows = room(ctx) / inner.max(1);
    if rows <= 2 * reach {
        let need = (2 * reach + 1) * inner * 4;
        return Err(ClError::TooLarge {
            device: ctx.device_name(),
            need_mib: (need as u64).div_ceil(1 << 20),
            max_mib: ctx.info.max_alloc_mib,
        });
    }
    let own = rows - 2 * reach;
    let mut passes: Vec<Pass> = Vec::new();
    // A host blurred in place has its own samples written back slab by slab, over the margin
    // the next slab still has to read: that margin's samples are kept before each drain, in
    // two buffers that take turns.
    let in_place = host.drains_over_its_input();
    let (mut kept, mut spare) = (Kept::default(), Vec::new());
    for a in (0..n).step_by(own) {
        let b = (a + own).min(n);
        let (lo, hi) = (a.saturating_sub(reach), (b + reach).min(n));
        let margin = b.saturating_sub(reach) * inner..b * inner;
        let next = kept.next(&*host, margin, std::mem::take(&mut spare), in_place);
        let mut slab = Slab {
            host: &mut *host,
            offset: lo * inner,
            own: (a - lo) * inner..(b - lo) * inner,
            kept: &kept,
        };
        let mut part = shape.to_vec();
        part[0] = hi - lo;
        if let Some(c) = &mut constants[0] {
            (c.start, c.end) = (lo == 0, hi == n);
        }
        let part_axes = Axes {
            filters,
            constants: &constants,
            first: axes.first + lead,
        };
        let done = blur_whole(ctx, &mut slab, &part, part_axes, pipeline, chunk)?;
        crate::report::add_up(&mut passes, done);
        spare = std::mem::replace(&mut kept, next).samples;
    }
    Ok(passes)
}

/// The host's samples `from..from + samples.len()` as they were before a slab wrote over them.
#[derive(Default)]
struct Kept {
    from: usize,
    samples: Vec<f32>,
}

impl Kept {
    /// The host's samples `range` as they are now (this one's where it holds them), in
    /// `buffer`, which is reused so that its pages are faulted in once and not for every
    /// slab; none where the host is not blurred in place.
    fn next(
        &self,
        host: &dyn HostSide,
        range: std::ops::Range<usize>,
        mut buffer: Vec<f32>,
        in_place: bool,
    ) -> Kept {
        if in_place {
            buffer.resize(range.len(), 0.0);
            fill_in_pieces(range.start, &mut buffer, |f, p| self.fill(host, f, p));
        }
        Kept {
            from: range.start,
            samples: buffer,
        }
    }

    /// Host samples `first..first + out.len()` as they were: kept ones from here, the rest
    /// from the host.
    fn fill(&self, host: &dyn HostSide, first: usize, out: &mut [f32]) {
        let end = first + out.len();
        let (a, b) = (
            self.from.max(first),
            (self.from + self.samples.len()).min(end),
        );
        if a >= b {
            return host.fill(first, out);
        }
        if first < a {
            host.fill(first, &mut out[..a - first]);
        }
        out[a - first..b - first].copy_from_slice(&self.samples[a - self.from..b - self.from]);
        if b < end {
            host.fill(b, &mut out[b - first..]);
        }
    }
}

/// A slab of the host's array: its samples from `offset` on go up (as they were before an
/// earlier slab wrote over them, `kept`), and only its own (`own`, counted from `offset`)
/// come back.
struct Slab<'a> {
    host: &'a mut dyn HostSide,
    offset: usize,
    own: std::ops::Range<usize>,
    kept: &'a Kept,
}

impl HostSide for Slab<'_> {
    fn fill(&self, first: usize, out: &mut [f32]) {
        self.kept.fill(&*self.host, self.offset + first, out);
    }

    /// Takes the slab's own samples alone (`wanted`), which are the host's from `offset` on.
    fn drain(&mut self, first: usize, samples: &[f32]) {
        debug_assert!(self.own.start <= first && first + samples.len() <= self.own.end);
        self.host.drain(self.offset + first, samples);
    }

    /// Only the slab's own samples come down: its margins were the neighbours' own.
    fn wanted(&self, _len: usize) -> std::ops::Range<usize> {
        self.own.clone()
    }

    fn drains_over_its_input(&self) -> bool {
        self.host.drains_over_its_input()
    }
}

/// How axis `k` of an array of `shape` (rank 2 or more) is walked on the device: its (width,
/// height, planes) as the kernels see them, along rows or columns, and the pass's name (the
/// caller's axis numbers start at `first`).
fn axis_pass(shape: &[usize], k: usize, first: usize) -> ((usize, usize, usize), Along, String) {
    let r = shape.len();
    let plane = plane_dims(shape);
    match k {
        k if k == r - 1 => (plane, Along::Rows, "row pass (axis -1)".into()),
        k if k == r - 2 => (plane, Along::Columns, "column pass (axis -2)".into()),
        k => {
            let dims = (
                shape[k + 1..].iter().product(),
                shape[k],
                shape[..k].iter().product(),
            );
            let name = format!("column pass (axis {})", first + k);
            (dims, Along::Columns, name)
        }
    }
}

/// `blur_staged` of an array the device holds whole.
fn blur_whole(
    ctx: &ClContext,
    host: &mut dyn HostSide,
    shape: &[usize],
    axes: Axes,
    pipeline: Pipeline,
    chunk: usize,
) -> Result<Vec<Pass>, ClError> {
    let len: usize = shape.iter().product();
    if axes.filters.iter().all(Option::is_none) {
        // Nothing to filter: the host's side takes its own samples back.
        let mut same = vec![0f32; len];
        fill_in_pieces(0, &mut same, |f, p| host.fill(f, p));
        host.drain(0, &same);
        return Ok(Vec::new());
    }
    // Rank 1 is one row of a single plane.
    let (mut shape, mut filters) = (shape.to_vec(), axes.filters.to_vec());
    let mut constants = axes.constants.to_vec();
    if shape.len() == 1 {
        shape.insert(0, 1);
        filters.insert(0, None);
        constants.insert(0, None);
    }
    let axes = Axes {
        filters: &filters,
        constants: &constants,
        first: axes.first,
    };
    let (w, h, planes) = plane_dims(&shape);
    let (mut dev, kept) = DeviceImage::from_kept(ctx, w, h, planes)?;
    let upload = ctx.upload_staged(&mut dev.a, len, host, chunk)?;
    let mut run = Run::new(ctx);
    let in_a = enqueue_axes(&mut run, &dev, &shape, axes, pipeline)?;
    let result = if in_a { &dev.a } else { &dev.b };
    let download = ctx.download_staged(result, len, host, chunk)?;
    let commands = run.finish()?;
    dev.keep(ctx, kept);
    let mut passes = vec![upload.into_pass(ctx)?];
    for c in commands {
        passes.push(c.into_pass(ctx)?);
    }
    passes.push(download.into_pass(ctx)?);
    Ok(passes)
}

/// An array of `shape` (rank 2 or more) as the kernels see it: its planes' width and height,
/// and how many planes.
fn plane_dims(shape: &[usize]) -> (usize, usize, usize) {
    let r = shape.len();
    (shape[r - 1], shape[r - 2], shape[..r - 2].iter().product())
}

/// Enqueues on `run` every pass of the array of `shape` (rank 2 or more) that `dev.a`
/// holds; returns whether the result is in `dev.a` (else in `dev.b`).
fn enqueue_axes(
    run: &mut Run,
    dev: &DeviceImage,
    shape: &[usize],
    axes: Axes,
    pipeline: Pipeline,
) -> Result<bool, ClError> {
    let (filters, constants, first) = (axes.filters, axes.constants, axes.first);
    let r = shape.len();
    // The planes: the pipeline's own 2-D blur where both of their axes are filtered.
    let (fy, fx) = (&filters[r - 2], &filters[r - 1]);
    // A derivative's planes go pass by pass (the pipelines' blocked kernels take the Gaussian),
    // and so do the planes of an array whose constant edges are set afresh before each pass.
    let fresh = constants.iter().any(Option::is_some);
    let derivative = |f: &Option<LineFilter>| f.as_ref().is_some_and(|f| f.order() > 0);
    let planar = !fresh && fy.is_some() && fx.is_some() && !derivative(fy) && !derivative(fx);
    if let (true, Some(fy), Some(fx)) = (planar, fy, fx) {
        let blur = Blur2d {
            x: fx.clone(),
            y: fy.clone(),
            method: Method::Auto,
            truncate: None,
        };
        pipeline::enqueue_on(run, dev, &blur, pipeline)?;
    }
    // One axis at a time: the planes' (unless blurred together above), then the earlier
    // axes; in the axes' own order where constant edges are set afresh, scipy's order, which
    // a derivative does not commute with there.
    let mut order: Vec<usize> = (r - 2..r).chain(0..r - 2).collect();
    if fresh {
        order.sort_unstable();
    }
    let mut in_a = true;
    for k in order {
        let Some(f) = filters[k].as_ref().filter(|_| !(planar && k >= r - 2)) else {
            continue;
        };
        let (dims, along, name) = axis_pass(shape, k, first);
        let f = upload_filter(run.ctx(), f)?;
        let (src, dst) = if in_a {
            (&dev.a, &dev.b)
        } else {
            (&dev.b, &dev.a)
        };
        if let Some(c) = constants[k] {
            run.constant_edges(src, c.value, Lines::along(shape, k), (c.start, c.end))?;
        }
        run.filter(&f, (src, dst), dims, along, &name)?;
        in_a = !in_a;
    }
    Ok(in_a)
}
