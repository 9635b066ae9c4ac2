//! How the blocked kernels see an image's pixels: the one description that the plan (chunk
//! lengths, whether chunks overlap), the `-D` defines and the enqueue engine all take.

/// How a blocked pass stores its pixels: `channels` interleaved samples per pixel, f32 unless
/// `in_u8` / `out_u8` make the source / destination 8-bit (converted in the kernels, with
/// sRGB decoding and encoding when `linear`). Planar f32 images run as one-channel pixels
/// over several planes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelFormat {
    pub channels: usize,
    pub in_u8: bool,
    pub out_u8: bool,
    pub linear: bool,
}

impl PixelFormat {
    pub const F32: PixelFormat = PixelFormat {
        channels: 1,
        in_u8: false,
        out_u8: false,
        linear: false,
    };

    /// `vec` pixels side by side as one pixel (see `summary_vectors`).
    pub fn widened(self, vec: usize) -> PixelFormat {
        PixelFormat {
            channels: self.channels * vec,
            ..self
        }
    }

    /// Bytes of one pixel in registers and local memory (an OpenCL float3 takes 16).
    pub fn local_bytes(self) -> usize {
        4 * if self.channels == 3 { 4 } else { self.channels }
    }
}
