//! An image or array resident on the device: its working buffer and a scratch buffer of the
//! same size, new or kept by the context between calls.

use crate::gpu::opencl::{ClContext, ClError};
use opencl3::memory::Buffer;

/// An image resident on the device: the working buffer `a` (input, then result) and a scratch
/// buffer `b` of the same size.
pub struct DeviceImage {
    pub a: Buffer<f32>,
    pub b: Buffer<f32>,
    pub width: usize,
    pub height: usize,
    pub channels: usize,
}

impl DeviceImage {
    pub fn new(
        ctx: &ClContext,
        width: usize,
        height: usize,
        channels: usize,
    ) -> Result<Self, ClError> {
        let n = width * height * channels;
        Ok(Self {
            a: ctx.buffer(n, false)?,
            b: ctx.buffer(n, false)?,
            width,
            height,
            channels,
        })
    }

    /// `new` from the context's kept scratch buffers (`ClContext::scratch_f32`), for arrays
    /// of a size seen before to allocate nothing; hand them back with `keep`.
    pub fn from_kept(
        ctx: &ClContext,
        width: usize,
        height: usize,
        channels: usize,
    ) -> Result<(Self, [usize; 2]), ClError> {
        let n = width * height * channels;
        let ((la, a), (lb, b)) = (ctx.scratch_f32(n)?, ctx.scratch_f32(n)?);
        let img = Self {
            a,
            b,
            width,
            height,
            channels,
        };
        Ok((img, [la, lb]))
    }

    /// Hands the buffers of `from_kept` back to the context, once no command uses them.
    pub fn keep(self, ctx: &ClContext, [la, lb]: [usize; 2]) {
        ctx.spare_f32((la, self.a));
        ctx.spare_f32((lb, self.b));
    }

    // Never empty: a buffer of the size asked for (public only as an internal).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.width * self.height * self.channels
    }
}
