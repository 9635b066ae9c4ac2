//! The choice of pipeline and the plan of each blocked pass: what the user asked for resolves
//! to one `Pipeline` per device, and every blocked pass gets a chunk length and, where
//! overlapped chunks pay and fit in constant memory, the reach of their sums.

use crate::filter::{Blur2d, LineFilter};
use crate::gpu::format::PixelFormat;
use crate::gpu::opencl::DeviceInfo;
use crate::gpu::transpose::TransposeKind;
use image::ColorType;

/// What the user asked for; resolved against the device by `resolve`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipelineChoice {
    /// The fastest for the device.
    Auto,
    /// The transpose pipeline; `None` picks the fastest transpose for the device.
    Transpose(Option<TransposeKind>),
    /// Column passes straight down the columns, no transpose.
    Direct,
    /// Block-parallel column passes (`Pipeline::Blocked`), chunks started so.
    Blocked(ChunkStart),
}

impl PipelineChoice {
    /// The pipeline this choice means on `device`.
    pub fn resolve(self, device: &DeviceInfo) -> Pipeline {
        match self {
            PipelineChoice::Auto => Pipeline::fastest_for(device),
            PipelineChoice::Transpose(t) => {
                Pipeline::Transpose(t.unwrap_or_else(|| TransposeKind::fastest_for(device)))
            }
            PipelineChoice::Direct => Pipeline::Direct,
            PipelineChoice::Blocked(start) => Pipeline::Blocked { chunk: 0, start },
        }
    }
}

/// A device's blur pipeline: how its column passes run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pipeline {
    /// Row passes, a transpose, row passes again, a transpose back.
    Transpose(TransposeKind),
    /// Column passes straight down the columns, no transpose.
    Direct,
    /// Block-parallel column passes with the transpose fused into their output
    /// (kernels/recursive_blocks.cl): enough work-items to fill a GPU. `chunk` is the rows
    /// per chunk (CHUNK in the kernel); 0 picks it per pass from the column length
    /// (`auto_chunk`). `start` is how each chunk finds its incoming states.
    Blocked {
        /// Rows per chunk; 0 picks them per pass.
        chunk: usize,
        /// How each chunk finds its incoming states.
        start: ChunkStart,
    },
}

/// The blocked pipeline's column passes: rows per chunk (0 picks them per pass from the
/// column length) and how each chunk finds its incoming states (`Pipeline::Blocked`'s fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocking {
    pub chunk: usize,
    pub start: ChunkStart,
}

/// How a blocked pass finds the states each chunk starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkStart {
    /// Per pass: `Overlap` where it measured faster (`overlap_pays`: a short reach, and
    /// pixels it suits), else `Carried`.
    Auto,
    /// Nehab et al.'s three kernels: zero-state summaries of every chunk, a sequential carry
    /// down the chunks, a final walk from the carried states. The cost does not depend on
    /// sigma.
    Carried,
    /// One kernel: each chunk takes its incoming states from weighted sums of the
    /// `gaussian::settle_rows` rows on either side of it (`block_overlap`). Reads the image
    /// once per axis instead of twice, but the reach grows with sigma (about 10 sigma rows
    /// each way).
    Overlap,
}

impl Pipeline {
    /// The blocked pipeline with the chunk length and start chosen per pass.
    pub const BLOCKED: Pipeline = Pipeline::Blocked {
        chunk: 0,
        start: ChunkStart::Auto,
    };

    /// The default per device class, from `gblur bench blur` (docs/BENCHMARKS.md): on GPUs
    /// the blocked pipeline fills the device; on CPU devices (PoCL) the direct one wins,
    /// because a work-item walking a row reads memory in order.
    pub fn fastest_for(device: &DeviceInfo) -> Pipeline {
        if device.is_gpu() {
            Pipeline::BLOCKED
        } else {
            Pipeline::Direct
        }
    }

    /// Its name in the report (`transpose (tile32)`, `blocked (carried)`).
    pub fn describe(self) -> String {
        match self {
            Pipeline::Transpose(t) => format!("transpose/{t}"),
            Pipeline::Direct => "direct".into(),
            Pipeline::Blocked { chunk, start } => {
                let mut name = match start {
                    ChunkStart::Auto => "blocked",
                    ChunkStart::Carried => "blocked/carried",
                    ChunkStart::Overlap => "blocked/overlap",
                }
                .to_string();
                if chunk != 0 {
                    name.push_str(&format!("/c{chunk}"));
                }
                name
            }
        }
    }
}

/// Rows per chunk for columns of `len` rows, from `gblur bench blur` on an H100
/// (docs/BENCHMARKS.md): short chunks leave too little work per work-item, long ones too few
/// work-items and a long sequential carry; c32 led at 512 rows, c64 at 1024–2048, c128 from
/// 4096 on. Pixels of 3 or 4 channels stop at c64: a c128 tile of them leaves one chunk per
/// work-group (16 work-items), and c64 led c128 by 25–30% on RGBA8.
pub fn auto_chunk(len: usize, format: PixelFormat) -> usize {
    let chunk = match len {
        0..=512 => 32,
        513..=2048 => 64,
        _ => 128,
    };
    if format.local_bytes() >= 16 {
        chunk.min(64)
    } else {
        chunk
    }
}

/// The chunk length a `Pipeline::Blocked { chunk }` pass over columns of `len` rows uses,
/// overlapped or carried.
fn chunk_for(chunk: usize, len: usize, format: PixelFormat, overlapped: bool) -> usize {
    match chunk {
        0 if overlapped => auto_chunk(len, format).min(OVERLAP_CHUNK),
        0 => auto_chunk(len, format),
        chunk => chunk,
    }
}

/// The longest chunk of the overlapped passes `auto` runs. Shorter chunks need less local
/// memory per work-item, so more of them run at once, and with walks that load 8 rows at a
/// time (`defines::overlap_defines`) that outweighs summing their reaches twice as often: H200
/// host, 8192² 1 ch f32, c64 0.470 ms at σ 2 and 0.595 at σ 5 against c128's 0.617 and 0.694
/// (docs/BENCHMARKS.md).
const OVERLAP_CHUNK: usize = 64;

/// What a blocked pass down columns of `len` rows does: its chunk length, and the reach of
/// its overlapped chunks' sums (`ChunkStart::Overlap`), or `None` for carried states.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockedPlan {
    pub chunk: usize,
    pub reach: Option<usize>,
}

/// How close the overlapped chunks' starting states must come to the true ones, in units of the
/// column's own range: 2^-24, half an f32 step at 1.0.
pub const OVERLAP_TOLERANCE: f64 = 1.0 / (1u32 << 24) as f64;

/// The longest reach of the overlapped chunks: their weights (8 floats a row) stay within
/// 32 KB of the 64 KB of constant memory every OpenCL device has. Beyond it (sigmas of
/// about 100 and up on columns longer than 1024 rows) passes are carried whatever was asked.
pub const MAX_REACH: usize = 1024;

/// The plan of a blocked pass of `f` (recursive) down columns of `len` rows.
pub fn blocked_plan(
    f: &LineFilter,
    Blocking { chunk, start }: Blocking,
    len: usize,
    format: PixelFormat,
) -> BlockedPlan {
    let LineFilter::Recursive { differences, .. } = f else {
        unreachable!("blocked passes are recursive")
    };
    // The sections' poles take the differences alone and their numerators weigh the poles'
    // state at the output: the state's error within the tolerance over that weight.
    let poles = crate::filter::gaussian::pole_block(differences);
    let tolerance = OVERLAP_TOLERANCE / crate::filter::gaussian::largest_output_weight(differences);
    // Past the column's length the sums would only repeat its end rows: a reach of `len`
    // already covers every row a chunk's state depends on.
    let settle = || {
        crate::filter::gaussian::settle_rows(&poles, tolerance, len)
            .unwrap_or(len)
            .max(1)
    };
    let reach = match start {
        ChunkStart::Carried => None,
        ChunkStart::Overlap => Some(settle()).filter(|&reach| reach <= MAX_REACH),
        ChunkStart::Auto => Some(settle()).filter(|&reach| overlap_pays(reach, format)),
    };
    let chunk = chunk_for(chunk, len, format, reach.is_some());
    BlockedPlan { chunk, reach }
}

/// Whether overlapped chunks reaching `reach` rows beat carried states, from `gblur bench
/// blur` on an H100 (docs/BENCHMARKS.md, overlapped chunks), 16 MP, f32: 1.28× at sigma 5 (reach 51)
/// and 1.66× at sigma 2 with c128, 1.4× and 1.6× with c64, but 0.90× at sigma 10 (reach 109)
/// and 0.5× at sigma 20, whatever the chunk: the sums' rows cost more than the carried
/// pipeline's second read once they are twice the reach of sigma 5. 8-bit RGB walked as
/// sample columns gained too (both passes 0.57 against 0.72 ms), and 8-bit gray more (0.17–
/// 0.18 against 0.25 ms, 8-bit decoding). On the H200 host (8192², c64 chunks walking 8 rows
/// at a time, `overlap_defines`), 8-bit RGBA in and out as well: 2.12 ms against the carried
/// c64's 3.00 at sigma 2, 2.64 against 2.99 at sigma 5. Gray+alpha was not timed, so it stays
/// carried. f32 on the H200 (c128, each sum's rows loaded once): overlapped 0.49 ms against
/// carried 0.69 at sigma 2, 0.64 against 0.69 at sigma 5, 0.84 against 0.69 at sigma 10.
fn overlap_pays(reach: usize, format: PixelFormat) -> bool {
    reach <= AUTO_REACH && format.channels != 2
}

const AUTO_REACH: usize = 64;

/// What the device receives: premultiplied planar f32 (any image, converted on the host), or
/// the decoded 8-bit samples themselves, converted inside the blocked kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upload {
    PlanarF32,
    U8 { channels: usize, linear: bool },
}

impl Upload {
    /// How an image of colour type `color` goes to a device running `pipeline` for `blur`:
    /// 8-bit gray, gray+alpha, RGB and RGBA as they are when both axes are recursive and the
    /// pipeline is the blocked one, anything else as planar f32.
    pub fn for_image(color: ColorType, linear: bool, pipeline: Pipeline, blur: &Blur2d) -> Upload {
        let Some(channels) = u8_channels(color) else {
            return Upload::PlanarF32;
        };
        let recursive = blur.x.is_recursive() && blur.y.is_recursive();
        match pipeline {
            Pipeline::Blocked { .. } if recursive => Upload::U8 { channels, linear },
            _ => Upload::PlanarF32,
        }
    }

    /// The pixel formats of the y pass and the x pass.
    pub(super) fn formats(self) -> [PixelFormat; 2] {
        match self {
            Upload::PlanarF32 => [PixelFormat::F32; 2],
            Upload::U8 { channels, linear } => [
                PixelFormat {
                    channels,
                    in_u8: true,
                    out_u8: false,
                    linear,
                },
                PixelFormat {
                    channels,
                    in_u8: false,
                    out_u8: true,
                    linear,
                },
            ],
        }
    }

    /// (largest buffer, all buffers) in bytes on the device for a `width`×`height` image.
    pub fn device_bytes(self, width: usize, height: usize, channels: usize) -> (u64, u64) {
        let samples = (width * height * channels) as u64;
        match self {
            Upload::PlanarF32 => (4 * samples, 8 * samples),
            // The bytes (1), the f32 intermediate (4), summaries of at most a quarter of it (1).
            Upload::U8 { .. } => (4 * samples, 6 * samples),
        }
    }
}

/// Samples per pixel of the 8-bit colour types the blocked kernels read and write as bytes.
pub fn u8_channels(color: ColorType) -> Option<usize> {
    match color {
        ColorType::L8 => Some(1),
        ColorType::La8 => Some(2),
        ColorType::Rgb8 => Some(3),
        ColorType::Rgba8 => Some(4),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(sigma: f64, start: ChunkStart, chunk: usize, format: PixelFormat) -> BlockedPlan {
        let f = LineFilter::recursive(sigma, 0);
        blocked_plan(&f, Blocking { chunk, start }, 8192, format)
    }

    fn rgba8(in_u8: bool) -> PixelFormat {
        PixelFormat {
            channels: 4,
            in_u8,
            out_u8: !in_u8,
            linear: false,
        }
    }

    /// `auto` overlaps short reaches in chunks of at most 64 rows, and carries long reaches
    /// and gray+alpha in chunks of the column's length; a chunk asked for is kept.
    #[test]
    fn auto_overlaps_short_reaches_in_short_chunks() {
        let auto = ChunkStart::Auto;
        for format in [PixelFormat::F32, rgba8(true), rgba8(false)] {
            let short = plan(5.0, auto, 0, format);
            assert!(short.reach.is_some_and(|r| r <= AUTO_REACH));
            assert_eq!(short.chunk, OVERLAP_CHUNK);
            let long = plan(20.0, auto, 0, format);
            assert_eq!(long.reach, None);
            assert_eq!(long.chunk, auto_chunk(8192, format));
        }
        let gray_alpha = PixelFormat {
            channels: 2,
            in_u8: true,
            out_u8: false,
            linear: false,
        };
        assert_eq!(plan(5.0, auto, 0, gray_alpha).reach, None);
        assert_eq!(
            plan(5.0, ChunkStart::Carried, 0, PixelFormat::F32).chunk,
            128
        );
        let asked = plan(5.0, ChunkStart::Overlap, 128, PixelFormat::F32);
        assert_eq!((asked.chunk, asked.reach.is_some()), (128, true));
    }
}
