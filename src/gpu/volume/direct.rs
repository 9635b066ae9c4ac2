//! An array in the context's page-locked memory (`opencl::lanes`), blurred with no copy on the
//! host: the copy engines read it and write the result straight back.
//!
//! A large array goes through in slabs along its first axis of more than one sample. The whole
//! array goes up into one device buffer, a slab's new rows a command, on the upload queue. As
//! soon as a slab's rows and its margin past them are up, the kernel queue copies that stretch
//! into the slab's own buffers and blurs it whole, every axis, as `blur_whole` blurs an array;
//! the download queue brings the slab's own rows back. So the bus carries one slab down while
//! the next ones go up, and only the first slab's upload and the last one's filtering and
//! download are not hidden behind the rest. The margin is `margin` of the first axis's filter,
//! as for arrays larger than the device (`blur_in_slabs`): starting a slab's pass from its
//! clamped margin instead of the rows beyond moves its own samples by under `SEAM_WEIGHT` of
//! the range. Each row goes up once: the margins are copied on the device.
//!
//! The host never reads the array, so the device looks at each slab's own rows for NaN and
//! infinity as they arrive (kernels/finite.cl, a read of them beside the passes); where it
//! finds one, the caller blurs the array again by the staged route, which treats them as the
//! host does. In place, the input must then still be there: with several slabs the whole
//! input is on the device and goes back down over the results; one slab's input is
//! overwritten by its own passes, so its result comes down only once the device has looked.

use super::{enqueue_axes, margin, plane_dims, room, Axes};
use crate::filter::LineFilter;
use crate::gpu::opencl::{ClContext, ClError, Timed};
use crate::gpu::pipeline::{DeviceImage, Run};
use crate::gpu::plan::Pipeline;
use crate::report::{Pass, PassKind};
use opencl3::event::Event;
use opencl3::memory::Buffer;

/// Slabs an array is cut into at most: enough that the first upload and the last download,
/// which nothing overlaps, are short.
const SLABS: usize = 8;

/// A slab's own rows are at least this many times its margin: the margins' rows are
/// filtered twice, once for their own slab and once for their neighbour.
const OWN_PER_MARGIN: usize = 4;

/// Slabs on the device at once, each in buffers of its own: one filtered, one coming down,
/// one waiting for its turn.
const SETS: usize = 3;

/// The samples of a direct blur: `input` into `output`, or in place.
pub enum Direct<'a> {
    Into(&'a [f32], &'a mut [f32]),
    InPlace(&'a mut [f32]),
}

impl Direct<'_> {
    fn input(&self) -> &[f32] {
        match self {
            Direct::Into(input, _) => input,
            Direct::InPlace(data) => data,
        }
    }

    fn dst(&mut self) -> *mut f32 {
        match self {
            Direct::Into(_, output) => output.as_mut_ptr(),
            Direct::InPlace(data) => data.as_mut_ptr(),
        }
    }
}

/// Blurs `arrays`, of `shape`, `filters[k]` along axis k and clamped at every edge, with the
/// copy engines reading and writing the caller's memory, which must be the context's
/// page-locked memory (`ClContext::page_locked`) for the transfers to run at the bus's
/// rate. Where the input holds a NaN or an infinity the result is None, for the caller to
/// blur it again the way that treats them as the host does: in place, the array is as it was;
/// into another array, the output's samples are left undefined.
pub fn blur_direct(
    ctx: &ClContext,
    mut arrays: Direct,
    shape: &[usize],
    filters: &[Option<LineFilter>],
    pipeline: Pipeline,
) -> Result<Option<Vec<Pass>>, ClError> {
    assert_eq!(
        arrays.input().len(),
        shape.iter().product::<usize>(),
        "array size"
    );
    assert_eq!(shape.len(), filters.len(), "one filter per axis");
    if arrays.input().is_empty() {
        return Ok(Some(Vec::new()));
    }
    let mut slabs = Slabs::new(ctx, shape, filters)?;
    let result = slabs.run(&mut arrays, pipeline);
    // No command may still read or write the caller's memory once the call has returned, nor
    // use the buffers the slabs hand back.
    let finished = ctx.finish_lanes();
    drop(slabs);
    let passes = result?;
    finished?;
    Ok(passes)
}

/// Whether `blur_direct` takes an array of `len` samples: the device must hold it whole (its
/// slabs' buffers beside it where it is cut, else `cut` leaves it whole). A larger array goes
/// by the staged route, which sends it up in slabs with their margins.
pub fn holds_whole(ctx: &ClContext, len: usize) -> bool {
    len <= room(ctx)
}

/// A slab's rows along the first axis: its own `a..b` and, with its margins, `lo..hi`.
#[derive(Clone, Copy, Debug)]
struct Rows {
    a: usize,
    b: usize,
    lo: usize,
    hi: usize,
}

/// The rows of each slab of an array of `n` rows along its first axis of more than one
/// sample, where `reach` rows of margin are needed on either side: several slabs where the
/// array is large enough (`ClContext::overlaps_from`) and long enough for three or more whose
/// own rows outweigh their margins, and fits the device so; else one.
fn cut(ctx: &ClContext, (n, inner): (usize, usize), reach: usize) -> Vec<Rows> {
    let whole = vec![Rows {
        a: 0,
        b: n,
        lo: 0,
        hi: n,
    }];
    let len = n * inner;
    let own = n.div_ceil(SLABS).max(OWN_PER_MARGIN * reach).max(1);
    let slab = (own + 2 * reach) * inner;
    let fits = len <= room(ctx) && len + 2 * SETS * slab <= 2 * room(ctx);
    if len * 4 < ctx.overlaps_from() || n.div_ceil(own) < 3 || !fits {
        return whole;
    }
    (0..n)
        .step_by(own)
        .map(|a| {
            let b = (a + own).min(n);
            let (lo, hi) = (a.saturating_sub(reach), (b + reach).min(n));
            Rows { a, b, lo, hi }
        })
        .collect()
}

/// A slab whose kernels are enqueued: what they keep alive, the marker after them, its
/// buffers and which of them holds the result, and where asked a marker after the look at
/// its own rows for NaN and infinity.
struct Filtering<'c> {
    run: Run<'c>,
    marker: Event,
    set: usize,
    in_a: bool,
    looked: Option<Event>,
}

struct Slabs<'c> {
    ctx: &'c ClContext,
    /// The array's shape from its first axis of more than one sample on (rank 2 at least),
    /// and those axes' filters.
    shape: Vec<usize>,
    filters: Vec<Option<LineFilter>>,
    first: usize,
    inner: usize,
    rows: Vec<Rows>,
    /// The whole array on the device, where there are several slabs (one slab goes up into
    /// its own buffers), and each slab's buffers, all from the context's kept scratch (with
    /// their lengths), handed back when done.
    whole: Option<(usize, Buffer<f32>)>,
    sets: Vec<(DeviceImage, [usize; 2])>,
}

impl Drop for Slabs<'_> {
    /// `blur_direct` has finished every queue by the time the slabs go: no command uses
    /// the buffers any more.
    fn drop(&mut self) {
        for (dev, kept) in self.sets.drain(..) {
            dev.keep(self.ctx, kept);
        }
        if let Some(whole) = self.whole.take() {
            self.ctx.spare_f32(whole);
        }
    }
}

impl<'c> Slabs<'c> {
    fn new(
        ctx: &'c ClContext,
        shape: &[usize],
        filters: &[Option<LineFilter>],
    ) -> Result<Self, ClError> {
        let (mut shape, mut filters) = (shape.to_vec(), filters.to_vec());
        if shape.len() == 1 {
            shape.insert(0, 1);
            filters.insert(0, None);
        }
        let lead = shape.iter().position(|&n| n > 1).unwrap_or(0);
        let lead = lead.min(shape.len() - 2);
        let (shape, filters) = (shape[lead..].to_vec(), filters[lead..].to_vec());
        let (n, inner) = (shape[0], shape[1..].iter().product::<usize>());
        let reach = filters[0].as_ref().map_or(0, margin).min(n);
        let rows = cut(ctx, (n, inner), reach);
        let mut part = shape.clone();
        part[0] = rows.iter().map(|s| s.hi - s.lo).max().unwrap_or(1);
        let (w, h, planes) = plane_dims(&part);
        let sets = (0..SETS.min(rows.len()))
            .map(|_| DeviceImage::from_kept(ctx, w, h, planes))
            .collect::<Result<_, _>>()?;
        let whole = match rows.len() {
            1 => None,
            _ => Some(ctx.scratch_f32(n * inner)?),
        };
        Ok(Self {
            ctx,
            first: lead,
            shape,
            filters,
            inner,
            rows,
            whole,
            sets,
        })
    }

    /// Enqueues, slab by slab, its upload, its kernels and the download of the slab before
    /// it; None where the device finds a NaN or an infinity in the input, with an array
    /// blurred in place as it was.
    fn run(
        &mut self,
        arrays: &mut Direct,
        pipeline: Pipeline,
    ) -> Result<Option<Vec<Pass>>, ClError> {
        let in_place = matches!(arrays, Direct::InPlace(_));
        let dst = arrays.dst();
        let src = match arrays {
            Direct::Into(input, _) => input.as_ptr(),
            Direct::InPlace(_) => dst.cast_const(),
        };
        let slabs = self.rows.len();
        // One slab in place: its passes overwrite its input, so the host waits for the look
        // at it (on the download queue, the passes running meanwhile) before it comes down.
        let wait = in_place && self.whole.is_none();
        let flag = self.ctx.clear_flag()?;
        let (mut ups, mut sent) = (Vec::with_capacity(slabs), 0);
        let mut runs: Vec<Filtering> = Vec::with_capacity(slabs);
        let mut downs: Vec<Timed> = Vec::with_capacity(slabs);
        // In the order the device takes them: a slab's upload, its kernels (once the slab
        // that had its buffers has come down), the download of the slab before it.
        for k in 0..=slabs {
            if k < slabs {
                self.upload_slab(k, src, &mut sent, &mut ups)?;
                let up = &ups.last().expect("the first slab's upload").event;
                let after = k.checked_sub(SETS).map(|j| &downs[j].event);
                runs.push(self.enqueue_slab(k, (up, after), &flag, wait, pipeline)?);
                if wait && self.ctx.flag_raised(&flag, runs[k].looked.as_ref())? {
                    self.ctx.finish_lanes()?;
                    return Ok(Self::discard(runs));
                }
            }
            if k >= 1 {
                downs.push(self.download(k - 1, &runs[k - 1], dst)?);
            }
        }
        self.ctx.finish_lanes()?;
        if self.ctx.flag_raised(&flag, None)? {
            if let (true, Some((_, whole))) = (in_place, &self.whole) {
                self.restore(whole, dst)?;
            }
            return Ok(Self::discard(runs));
        }
        let mut passes = vec![self.transfer("upload", &ups)?];
        for f in runs {
            for c in f.run.finish_done() {
                crate::report::add_up(&mut passes, vec![c.into_pass(self.ctx)?]);
            }
        }
        passes.push(self.transfer("download", &downs)?);
        Ok(Some(passes))
    }

    /// None, once the slabs' runs (finished) have handed their scratch back.
    fn discard(runs: Vec<Filtering>) -> Option<Vec<Pass>> {
        for f in runs {
            drop(f.run.finish_done());
        }
        None
    }

    /// Brings the input, whole on the device, back down into `dst` over the results.
    fn restore(&self, whole: &Buffer<f32>, dst: *mut f32) -> Result<(), ClError> {
        let now = self.ctx.kernels_marker()?;
        let len = self.shape.iter().product::<usize>();
        // SAFETY: `dst` holds the array's `len` samples, which nothing else reads or writes
        // until the queues are finished below.
        unsafe { self.ctx.download_to(whole, 0, (dst, len), &now) }?;
        self.ctx.finish_lanes()
    }

    /// Enqueues the upload of slab `k`'s rows not yet sent (those from `sent` on), from `src`.
    fn upload_slab(
        &self,
        k: usize,
        src: *const f32,
        sent: &mut usize,
        ups: &mut Vec<Timed>,
    ) -> Result<(), ClError> {
        let target = self.whole.as_ref().map_or(&self.sets[0].0.a, |w| &w.1);
        let to = self.rows[k].hi * self.inner;
        // A last slab within the margin of the one before has no rows of its own to send.
        if to > *sent {
            // SAFETY: `src` holds the array's samples, which stay as they are until
            // `blur_direct` has finished every queue; `sent..to` lies inside them.
            let n = to - *sent;
            let t = unsafe { self.ctx.upload_from(target, *sent, (src.add(*sent), n)) }?;
            ups.push(t);
            *sent = to;
        }
        Ok(())
    }

    /// Enqueues slab `k`'s copy out of the whole array, the look at its own rows that sets
    /// `flag` at a NaN or an infinity (with a marker after it where `mark`) and its passes,
    /// once `up` (the upload of its last rows) and `after` (the download of the slab that had
    /// its buffers) are done.
    fn enqueue_slab(
        &mut self,
        k: usize,
        (up, after): (&Event, Option<&Event>),
        flag: &Buffer<u32>,
        mark: bool,
        pipeline: Pipeline,
    ) -> Result<Filtering<'c>, ClError> {
        let (ctx, inner, rows, set) = (self.ctx, self.inner, self.rows[k], k % SETS);
        ctx.kernels_after(up)?;
        if let Some(after) = after {
            ctx.kernels_after(after)?;
        }
        let mut part = self.shape.clone();
        part[0] = rows.hi - rows.lo;
        let dev = &mut self.sets[set].0;
        (dev.width, dev.height, dev.channels) = plane_dims(&part);
        let mut run = Run::new(ctx);
        if let Some((_, whole)) = &self.whole {
            let len = part.iter().product::<usize>();
            let copy = ctx.copy_at((whole, rows.lo * inner), (&dev.a, 0), len, "slab copy")?;
            run.transfer(copy, len as u64 * 8);
        }
        let own = (rows.b - rows.a) * inner;
        let look = ctx.flag_non_finite((&dev.a, (rows.a - rows.lo) * inner), own, flag)?;
        run.check(look, own as u64 * 4);
        let looked = if mark {
            Some(ctx.kernels_marker()?)
        } else {
            None
        };
        let constants = vec![None; part.len()];
        let axes = Axes {
            filters: &self.filters,
            constants: &constants,
            first: self.first,
        };
        let in_a = enqueue_axes(&mut run, dev, &part, axes, pipeline)?;
        let marker = ctx.kernels_marker()?;
        Ok(Filtering {
            run,
            marker,
            set,
            in_a,
            looked,
        })
    }

    /// Enqueues the download of slab `k`'s own rows into `dst` once its kernels are done.
    fn download(&self, k: usize, f: &Filtering, dst: *mut f32) -> Result<Timed, ClError> {
        let (r, inner) = (self.rows[k], self.inner);
        let set = &self.sets[f.set].0;
        let result = if f.in_a { &set.a } else { &set.b };
        let n = (r.b - r.a) * inner;
        // SAFETY: `dst` holds the array's samples, which nothing reads or writes until
        // `blur_direct` has finished every queue; the slab's own rows lie inside them, and
        // the uploads read none of them after its kernels started (its rows are up by then).
        unsafe {
            self.ctx.download_to(
                result,
                (r.a - r.lo) * inner,
                (dst.add(r.a * inner), n),
                &f.marker,
            )
        }
    }

    /// A transfer's commands as one pass, once the queues are done.
    fn transfer(&self, name: &str, timed: &[Timed]) -> Result<Pass, ClError> {
        let mut ms = 0.0;
        for t in timed {
            ms += t
                .device_ms()
                .map_err(|e| self.ctx.api_error("reading profiling counters", e))?;
        }
        let bytes = self.shape.iter().product::<usize>() as u64 * 4;
        Ok(Pass::device(name.into(), PassKind::Transfer, ms, bytes))
    }
}
