//! Every transpose strategy of kernels/transpose.cl with its kernel name and NDRange, and
//! one enqueue of it: `planes` planes of `w`×`h` in, the same planes of `h`×`w` out.

use crate::gpu::opencl::program::TRANSPOSE;
use crate::gpu::opencl::queue::Arg;
use crate::gpu::opencl::Enqueued;
use crate::gpu::opencl::{ClContext, ClError, DeviceInfo};
use crate::report::PassKind;
use opencl3::memory::Buffer;
use serde::Serialize;
use std::fmt;

/// How the transposes of `Pipeline::Transpose` are done (see kernels/transpose.cl).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransposeKind {
    /// Read rows, write columns.
    Naive,
    /// Through a tile in local memory.
    Local,
    /// Through local memory, the tile's columns skewed against bank conflicts.
    Skewed,
    /// Through local memory, each tile row padded by one against bank conflicts.
    Padded,
    /// Padded and skewed.
    PaddedSkewed,
    /// 32×32 tiles, each work-item moving several elements.
    Tile32,
    /// 32×32 tiles, skewed.
    Tile32Skewed,
}

impl TransposeKind {
    /// Every strategy, the simplest first.
    pub const ALL: [TransposeKind; 7] = [
        Self::Naive,
        Self::Local,
        Self::Skewed,
        Self::Padded,
        Self::PaddedSkewed,
        Self::Tile32,
        Self::Tile32Skewed,
    ];

    /// The transpose used where no device class is known (the blocked pipeline's FIR axes).
    pub const DEFAULT: TransposeKind = TransposeKind::Tile32;

    /// The fastest strategy per device class, from `gblur bench transpose`
    /// (docs/BENCHMARKS.md): on an H100, tile32 reaches 91–93% of the copy kernel at 4096²
    /// and 8192²; on PoCL's CPU device the 16×16 local tile is fastest.
    pub fn fastest_for(device: &DeviceInfo) -> TransposeKind {
        if device.is_gpu() {
            TransposeKind::Tile32
        } else {
            TransposeKind::Local
        }
    }

    /// Its name on the command line (`--transpose`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Naive => "naive",
            Self::Local => "local",
            Self::Skewed => "skewed",
            Self::Padded => "padded",
            Self::PaddedSkewed => "padded-skewed",
            Self::Tile32 => "tile32",
            Self::Tile32Skewed => "tile32-skewed",
        }
    }

    /// Its kernel in `kernels/transpose.cl`.
    pub fn kernel_name(self) -> &'static str {
        match self {
            Self::Naive => "transpose_naive",
            Self::Local => "transpose_local",
            Self::Skewed => "transpose_skewed",
            Self::Padded => "transpose_padded",
            Self::PaddedSkewed => "transpose_padded_skewed",
            Self::Tile32 => "transpose_tile32",
            Self::Tile32Skewed => "transpose_tile32_skewed",
        }
    }

    /// (global, local) NDRange for transposing `planes` planes of `w`×`h`.
    fn ndrange(self, w: usize, h: usize, planes: usize) -> ([usize; 3], Option<[usize; 3]>) {
        const T: usize = 16;
        match self {
            Self::Naive => ([w, h, planes], None),
            Self::Tile32 | Self::Tile32Skewed => (
                [w.div_ceil(32) * 32, h.div_ceil(32) * 8, planes],
                Some([32, 8, 1]),
            ),
            _ => (
                [w.div_ceil(T) * T, h.div_ceil(T) * T, planes],
                Some([T, T, 1]),
            ),
        }
    }
}

impl fmt::Display for TransposeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Enqueues one transpose of `planes` planes of `w`×`h` from `src` into `dst`.
pub fn enqueue_transpose(
    ctx: &ClContext,
    kind: TransposeKind,
    src: &Buffer<f32>,
    dst: &Buffer<f32>,
    (w, h, planes): (usize, usize, usize),
    name: &str,
) -> Result<Enqueued, ClError> {
    let k = ctx.kernel(TRANSPOSE, kind.kernel_name(), "")?;
    let (global, local) = kind.ndrange(w, h, planes);
    let args = [
        Arg::Buf(src),
        Arg::Buf(dst),
        Arg::U32(w as u32),
        Arg::U32(h as u32),
    ];
    let timed = ctx.run(&k, &args, &global, local.as_ref().map(|l| &l[..]), name)?;
    Ok(Enqueued {
        timed,
        kind: PassKind::Transpose,
        bytes: (w * h * planes) as u64 * 8,
    })
}
