//! Page-locked arrays and the transfers beside the kernels.
//!
//! An array in ordinary host memory reaches the device through the pinned staging slots
//! (`staged`): two copies on the host's cores, into a slot and out of one. On the H200 host
//! those copies, not the bus, set the pace: 16 threads copy into or out of page-locked memory
//! at 47–51 GB/s (non-temporal stores no faster), the bus moves 54 GB/s each way from it, and
//! 48.8 GB/s each way at once on two queues. So a caller may keep its arrays in page-locked
//! memory of the context's own (`ClContext::page_locked`): the copy engines read and write
//! them directly, with no copy on the host at all.
//!
//! Such an array goes through in slabs (`gpu::volume::direct`): uploads on a queue of their
//! own, downloads on another, the kernels on the context's queue, ordered by events (the
//! kernel queue waits for the upload of the rows a slab needs, `kernels_after`; a download
//! waits for the marker after its slab's kernels, `kernels_marker`), so that one slab comes
//! down while the next ones go up. The host never reads such an array, so the device looks
//! for NaN and infinity in it (`flag_non_finite`).

use super::pinned::Pinned;
use super::program::FINITE;
use super::{Arg, ClContext, ClError, Timed};
use opencl3::command_queue::{CommandQueue, CL_QUEUE_PROFILING_ENABLE};
use opencl3::event::Event;
use opencl3::memory::{Buffer, ClMem, CL_MEM_COPY_HOST_PTR, CL_MEM_READ_WRITE};
use opencl3::types::{cl_event, CL_BLOCKING, CL_NON_BLOCKING};
use std::sync::{Arc, Mutex, PoisonError};

/// Arrays of at least this many bytes go through in overlapped slabs where their shape
/// allows it. On the H200 host 8192² f32 took 8.1 ms in slabs against 11.3 whole, 512³ 15.6
/// against 22.8; 4096² 3.1 against 2.8 and 2896² 2.5 against 1.4: under about 128 MiB the
/// slabs' margins and commands cost more than the overlap saves.
pub const OVERLAP_FROM_BYTES: usize = 128 << 20;

/// Where a context's arrays go through in slabs from: `OVERLAP_FROM_BYTES` on a GPU; never on a
/// CPU device, whose transfers are copies on the same cores as its kernels, so that a slab's
/// margins would only add work.
pub fn overlap_default(info: &super::DeviceInfo) -> usize {
    match info.is_gpu() {
        true => OVERLAP_FROM_BYTES,
        false => usize::MAX,
    }
}

const UP: usize = 0;
const DOWN: usize = 1;

/// The page-locked blocks a context handed out and that are still alive: their addresses
/// and lengths in bytes.
#[derive(Clone, Default)]
pub struct Locked(Arc<Mutex<Vec<(usize, usize)>>>);

impl Locked {
    fn blocks(&self) -> std::sync::MutexGuard<'_, Vec<(usize, usize)>> {
        // A block list holds no invariant a panic could break half-way.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `bytes` bytes from `addr` lie inside one block.
    fn holds(&self, addr: usize, bytes: usize) -> bool {
        self.blocks()
            .iter()
            .any(|&(a, n)| addr >= a && addr + bytes <= a + n)
    }
}

/// f32 samples in page-locked host memory of a context (`ClContext::page_locked`): arrays
/// held here go to and from its device at the bus's rate, with no staging copy.
pub struct PageLocked {
    memory: Pinned,
    len: usize,
    locked: Locked,
}

impl PageLocked {
    pub fn as_slice(&self) -> &[f32] {
        &self.memory.as_f32()[..self.len]
    }

    pub fn as_mut_slice(&mut self) -> &mut [f32] {
        let len = self.len;
        &mut self.memory.as_f32_mut()[..len]
    }
}

impl Drop for PageLocked {
    fn drop(&mut self) {
        let addr = self.memory.as_slice().as_ptr() as usize;
        self.locked.blocks().retain(|&(a, _)| a != addr);
    }
}

impl ClContext {
    /// `len` f32 samples (zeros) of page-locked host memory for the caller's arrays.
    pub fn page_locked(&self, len: usize) -> Result<PageLocked, ClError> {
        let mut memory = self.pinned(len * 4)?;
        memory.as_mut_slice().fill(0);
        let addr = memory.as_slice().as_ptr() as usize;
        self.locked.blocks().push((addr, memory.len()));
        Ok(PageLocked {
            memory,
            len,
            locked: self.locked.clone(),
        })
    }

    /// Whether `samples` lie in page-locked memory that this context handed out.
    pub fn is_page_locked(&self, samples: &[f32]) -> bool {
        self.locked
            .holds(samples.as_ptr() as usize, std::mem::size_of_val(samples))
    }

    fn lanes(&self) -> Result<&[CommandQueue; 2], ClError> {
        if self.lanes.get().is_none() {
            let make = || {
                CommandQueue::create_default_with_properties(
                    self.context(),
                    CL_QUEUE_PROFILING_ENABLE,
                    0,
                )
                .map_err(|e| self.api_error("creating a transfer queue", e))
            };
            let _ = self.lanes.set([make()?, make()?]);
        }
        Ok(self.lanes.get().expect("made above"))
    }

    /// Arrays of at least `bytes` go through in overlapped slabs where their shape allows it
    /// (`usize::MAX`: never); `overlap_default` unless set.
    pub fn overlap_from(&self, bytes: usize) {
        self.overlap_from.set(bytes);
    }

    /// The size from which arrays go through in overlapped slabs.
    pub fn overlaps_from(&self) -> usize {
        self.overlap_from.get()
    }

    /// Enqueues the upload of `n` samples from `src` into `buf` from sample `at`, on the
    /// upload queue.
    ///
    /// # Safety
    /// `src..src + n` must stay readable and unwritten until the returned event completes.
    pub unsafe fn upload_from(
        &self,
        buf: &Buffer<f32>,
        at: usize,
        (src, n): (*const f32, usize),
    ) -> Result<Timed, ClError> {
        let queue = &self.lanes()?[UP];
        // SAFETY: the caller keeps the samples as they are until the event completes.
        let event = unsafe {
            cl3::command_queue::enqueue_write_buffer(
                queue.get(),
                buf.get(),
                CL_NON_BLOCKING,
                at * 4,
                n * 4,
                src.cast(),
                0,
                std::ptr::null(),
            )
        };
        self.lane_command(queue, event, "upload")
    }

    /// Enqueues the download of `n` samples of `buf` from sample `at` into `dst`, on the
    /// download queue, once `after` has completed.
    ///
    /// # Safety
    /// `dst..dst + n` must stay writable, and be neither read nor written, until the
    /// returned event completes.
    pub unsafe fn download_to(
        &self,
        buf: &Buffer<f32>,
        at: usize,
        (dst, n): (*mut f32, usize),
        after: &Event,
    ) -> Result<Timed, ClError> {
        let queue = &self.lanes()?[DOWN];
        let wait: [cl_event; 1] = [after.get()];
        // SAFETY: the caller leaves the samples alone until the event completes.
        let event = unsafe {
            cl3::command_queue::enqueue_read_buffer(
                queue.get(),
                buf.get(),
                CL_NON_BLOCKING,
                at * 4,
                n * 4,
                dst.cast(),
                1,
                wait.as_ptr(),
            )
        };
        self.lane_command(queue, event, "download")
    }

    /// A transfer enqueued on `queue`, flushed so that the other queues waiting on it see it.
    fn lane_command(
        &self,
        queue: &CommandQueue,
        event: Result<cl_event, i32>,
        name: &str,
    ) -> Result<Timed, ClError> {
        let what = format!("{name}ing");
        let event = event.map_err(|e| self.api_error(&what, opencl3::error_codes::ClError(e)))?;
        let event = Event::new(event);
        queue.flush().map_err(|e| self.api_error(&what, e))?;
        Ok(Timed {
            name: name.into(),
            event,
        })
    }

    /// The kernel queue's next commands wait for `event`, of another queue.
    pub fn kernels_after(&self, event: &Event) -> Result<(), ClError> {
        let wait = [event.get()];
        // SAFETY: a barrier touches no memory; the event outlives the call.
        unsafe { self.queue().enqueue_barrier_with_wait_list(&wait) }
            .map(drop)
            .map_err(|e| self.api_error("ordering the queues", e))
    }

    /// A marker on the kernel queue, complete once every command enqueued there before it is;
    /// the queue is flushed, so that other queues waiting on the marker see it come.
    pub fn kernels_marker(&self) -> Result<Event, ClError> {
        // SAFETY: a marker touches no memory.
        let marker = unsafe { self.queue().enqueue_marker_with_wait_list(&[]) }
            .map_err(|e| self.api_error("ordering the queues", e))?;
        self.queue()
            .flush()
            .map_err(|e| self.api_error("ordering the queues", e))?;
        Ok(marker)
    }

    /// Device-side copy of `len` samples of `src` from sample `from` into `dst` from sample
    /// `to`, on the kernel queue.
    pub fn copy_at(
        &self,
        (src, from): (&Buffer<f32>, usize),
        (dst, to): (&Buffer<f32>, usize),
        len: usize,
        name: &str,
    ) -> Result<Timed, ClError> {
        // SAFETY: callers pass ranges inside both buffers; the copy is ordered on the queue.
        let event = unsafe {
            cl3::command_queue::enqueue_copy_buffer(
                self.queue().get(),
                src.get(),
                dst.get(),
                from * 4,
                to * 4,
                len * 4,
                0,
                std::ptr::null(),
            )
        }
        .map_err(|e| self.api_error("copying a slab", opencl3::error_codes::ClError(e)))?;
        Ok(Timed {
            name: name.into(),
            event: Event::new(event),
        })
    }

    /// A flag on the device, clear, for `flag_non_finite` to set.
    pub fn clear_flag(&self) -> Result<Buffer<u32>, ClError> {
        let mut clear = [0u32];
        let flags = CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR;
        // SAFETY: the buffer is made from one u32, copied before the call returns.
        unsafe { Buffer::<u32>::create(self.context(), flags, 1, clear.as_mut_ptr().cast()) }
            .map_err(|e| self.api_error("creating a flag", e))
    }

    /// Enqueues on the kernel queue a look at `len` samples of `data` from sample `at`, which
    /// sets `flag` where one is NaN or infinite (kernels/finite.cl).
    pub fn flag_non_finite(
        &self,
        (data, at): (&Buffer<f32>, usize),
        len: usize,
        flag: &Buffer<u32>,
    ) -> Result<Timed, ClError> {
        let kernel = self.kernel(FINITE, "flag_non_finite", "")?;
        let args = [
            Arg::Buf(data),
            Arg::U64(at as u64),
            Arg::U64(len as u64),
            Arg::Words(flag),
        ];
        // Up to 4 Mi work-items (more than any device runs at once), each taking every
        // global-size-th sample: a 64 Mi-sample slab is 16 reads each.
        let global = len.div_ceil(256).clamp(1, 1 << 14) * 256;
        self.run(&kernel, &args, &[global], None, "finite check")
    }

    /// Whether `flag` is set, read once `after` (a flushed command, if any) has completed.
    /// The read goes on the download queue, so the kernels after `after` keep running.
    pub fn flag_raised(&self, flag: &Buffer<u32>, after: Option<&Event>) -> Result<bool, ClError> {
        let queue = &self.lanes()?[DOWN];
        let wait: Vec<cl_event> = after.iter().map(|e| e.get()).collect();
        let mut value = [0u32];
        // SAFETY: a blocking read into a local of the flag's one element.
        unsafe { queue.enqueue_read_buffer(flag, CL_BLOCKING, 0, &mut value, &wait) }
            .map_err(|e| self.api_error("reading a flag", e))?;
        Ok(value[0] != 0)
    }

    /// Waits for the kernel queue and both transfer queues: once they are done, no command
    /// still reads or writes a caller's memory or a buffer about to be freed.
    pub fn finish_lanes(&self) -> Result<(), ClError> {
        // Every queue is finished, even after one fails: none may still be moving a caller's
        // samples once this returns.
        let mut done = self.finish();
        if let Some(lanes) = self.lanes.get() {
            for q in lanes {
                let lane = q
                    .finish()
                    .map_err(|e| self.api_error("finishing a transfer queue", e));
                done = done.and(lane);
            }
        }
        done
    }
}
