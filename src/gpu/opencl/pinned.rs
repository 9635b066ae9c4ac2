//! Page-locked host memory for a GPU's transfers. A driver copies from ordinary (pageable)
//! memory through its own staging buffer, on the queue's timeline: on an H200 that made the
//! transfers of a 6 MP JPEG's planes 3.4 ms of a batch's 4 ms per image on the device
//! worker. From page-locked memory the copy engine reads and writes directly, so a batch's
//! decoders copy each image's planes into a slot of it (`StagingPool`) on their own cores,
//! and the device worker only waits for the transfers themselves.

use super::{ClContext, ClError};
use crossbeam_channel::{bounded, Receiver, Sender};
use opencl3::memory::{
    Buffer, CL_MAP_READ, CL_MAP_WRITE, CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_WRITE,
};
use opencl3::types::CL_BLOCKING;
use std::ptr::NonNull;
use std::sync::Arc;

/// `len` bytes of host memory that the device's driver allocated page-locked
/// (`CL_MEM_ALLOC_HOST_PTR`) and mapped once for good.
pub struct Pinned {
    /// Keeps the allocation alive; releasing it frees the mapping too.
    _buffer: Buffer<u8>,
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain host memory owned by this value alone; `&mut self` guards
// writes, and the buffer object is released once, by whichever thread drops it.
unsafe impl Send for Pinned {}
unsafe impl Sync for Pinned {}

impl Pinned {
    // Never empty: a buffer of the size asked for (public only as an internal).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` bytes that live as long as `_buffer`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes this the only view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The memory as f32 samples (the mapping is page-aligned; a tail of under 4 bytes is
    /// left out).
    pub fn as_f32(&self) -> &[f32] {
        // SAFETY: any bytes are a valid f32; the driver's mapping is aligned past 4 bytes.
        let (head, samples, _) = unsafe { self.as_slice().align_to::<f32>() };
        assert!(head.is_empty(), "pinned memory aligned for f32");
        samples
    }

    pub fn as_f32_mut(&mut self) -> &mut [f32] {
        // SAFETY: as `as_f32`.
        let (head, samples, _) = unsafe { self.as_mut_slice().align_to_mut::<f32>() };
        assert!(head.is_empty(), "pinned memory aligned for f32");
        samples
    }
}

impl ClContext {
    /// `len` bytes of page-locked host memory for this context's transfers.
    pub fn pinned(&self, len: usize) -> Result<Pinned, ClError> {
        let len = len.max(1);
        let flags = CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR;
        // SAFETY: no host pointer is passed; the driver allocates.
        let buffer =
            unsafe { Buffer::<u8>::create(self.context(), flags, len, std::ptr::null_mut()) }
                .map_err(|e| {
                    self.api_error(&format!("allocating {} MiB of pinned memory", len >> 20), e)
                })?;
        let mut mapped: cl3::types::cl_mem = std::ptr::null_mut();
        // SAFETY: a blocking map of the whole buffer, which stays mapped as long as it lives.
        unsafe {
            self.queue().enqueue_map_buffer(
                &buffer,
                CL_BLOCKING,
                CL_MAP_READ | CL_MAP_WRITE,
                0,
                len,
                &mut mapped,
                &[],
            )
        }
        .map_err(|e| self.api_error("mapping pinned memory", e))?;
        let ptr = NonNull::new(mapped.cast::<u8>()).ok_or_else(|| {
            self.api_error("mapping pinned memory", opencl3::error_codes::ClError(-5))
        })?;
        Ok(Pinned {
            _buffer: buffer,
            ptr,
            len,
        })
    }
}

/// A bounded set of pinned slots shared by a batch's threads: a decoder takes a free slot
/// (never waiting for one: without one the image goes by pageable memory), the device worker
/// transfers from and into it, and dropping the `Staging` hands the slot back. The device
/// worker adds slots, sized for the images it sees, up to `slots` of them and `bytes` in all.
pub struct StagingPool {
    free: (Sender<Pinned>, Receiver<Pinned>),
    /// Slots in use or free; a slot too small for an image is freed for good.
    made: std::sync::atomic::AtomicUsize,
    slots: usize,
    bytes: usize,
}

impl StagingPool {
    /// A pool of at most `slots` buffers of `bytes` each, made as they are first taken.
    pub fn new(slots: usize, bytes: usize) -> Self {
        Self {
            free: bounded(slots),
            made: std::sync::atomic::AtomicUsize::new(0),
            slots,
            bytes,
        }
    }

    /// A free slot of at least `len` bytes, if there is one now. A smaller free slot is
    /// freed, so that the device worker can make a larger one.
    pub fn take(self: &Arc<Self>, len: usize) -> Option<Staging> {
        let slot = self.free.1.try_recv().ok()?;
        if slot.len() < len {
            drop(slot);
            self.made.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            return None;
        }
        Some(Staging {
            slot: Some(slot),
            pool: Arc::clone(self),
            blurred: false,
        })
    }

    /// Adds a slot of `len` bytes from `ctx` where the pool has room for one; a failed
    /// allocation leaves the images on pageable memory, no worse than without the pool.
    pub fn grow(&self, ctx: &ClContext, len: usize) {
        use std::sync::atomic::Ordering::SeqCst;
        let most = self.slots.min(self.bytes / len.max(1));
        if self.made.fetch_add(1, SeqCst) >= most {
            self.made.fetch_sub(1, SeqCst);
            return;
        }
        match ctx.pinned(len) {
            Ok(slot) => {
                let _ = self.free.0.try_send(slot);
            }
            Err(_) => {
                self.made.fetch_sub(1, SeqCst);
            }
        }
    }
}

/// An image's slot of pinned memory while it is in the batch: its planes one after another.
pub struct Staging {
    slot: Option<Pinned>,
    pool: Arc<StagingPool>,
    /// Whether the slot holds the blurred planes (the device wrote them back there), so that
    /// the encoder must copy them out.
    pub blurred: bool,
}

impl Staging {
    /// The staged bytes.
    pub fn bytes(&self) -> &[u8] {
        self.slot.as_ref().expect("held until dropped").as_slice()
    }

    /// The staged bytes, to fill.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.slot
            .as_mut()
            .expect("held until dropped")
            .as_mut_slice()
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            // The pool holds at most `slots`: a send only fails if it is gone.
            let _ = self.pool.free.0.try_send(slot);
        }
    }
}
