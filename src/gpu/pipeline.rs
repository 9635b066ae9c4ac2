//! The device blur: a plan (pipeline shape and transpose strategy) turned into enqueued,
//! profiled passes over a planar f32 image.
//!
//! `Pipeline::Transpose` is the seed's fast shape: column pass + transpose + column pass +
//! transpose (Apple, "Tuning Performance on the GPU": rgV + T + rgV + T = rgV + rgH), so both
//! filtering passes walk down columns with coalesced accesses. `Pipeline::Direct` is the
//! seed's version 1: a row pass then a column pass, no transposes.

use crate::filter::{Blur2d, LineFilter};
use crate::gpu::opencl::program::{BLOCKS, CONVOLUTION, RECURSIVE, TRANSPOSE};
use crate::gpu::opencl::queue::Arg;
use crate::gpu::opencl::{ClContext, ClError, Timed};
use crate::pixels;
use crate::pixels::planar::Planar;
use crate::report::{Pass, PassKind};
use image::{ColorType, DynamicImage};
use opencl3::memory::Buffer;
use serde::Serialize;
use std::fmt;

/// How the transposes of `Pipeline::Transpose` are done (see kernels/transpose.cl).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransposeKind {
    Naive,
    Local,
    Skewed,
    Padded,
    PaddedSkewed,
    Tile32,
    Tile32Skewed,
}

impl TransposeKind {
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
    pub fn fastest_for(device: &crate::gpu::opencl::DeviceInfo) -> TransposeKind {
        if device.is_gpu() {
            TransposeKind::Tile32
        } else {
            TransposeKind::Local
        }
    }

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

/// What the user asked for; resolved against the device by `resolve`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipelineChoice {
    Auto,
    /// The transpose pipeline; `None` picks the fastest transpose for the device.
    Transpose(Option<TransposeKind>),
    Direct,
    Blocked(ChunkStart),
}

impl PipelineChoice {
    pub fn resolve(self, device: &crate::gpu::opencl::DeviceInfo) -> Pipeline {
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pipeline {
    Transpose(TransposeKind),
    Direct,
    /// Block-parallel column passes with the transpose fused into their output
    /// (kernels/recursive_blocks.cl): enough work-items to fill a GPU. `chunk` is the rows
    /// per chunk (CHUNK in the kernel); 0 picks it per pass from the column length
    /// (`auto_chunk`). `start` is how each chunk finds its incoming states.
    Blocked {
        chunk: usize,
        start: ChunkStart,
    },
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
    pub fn fastest_for(device: &crate::gpu::opencl::DeviceInfo) -> Pipeline {
        if device.is_gpu() {
            Pipeline::BLOCKED
        } else {
            Pipeline::Direct
        }
    }

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

/// The chunk length a `Pipeline::Blocked { chunk }` pass over columns of `len` rows uses.
fn chunk_for(chunk: usize, len: usize, format: PixelFormat) -> usize {
    if chunk == 0 {
        auto_chunk(len, format)
    } else {
        chunk
    }
}

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
    (chunk, start): (usize, ChunkStart),
    len: usize,
    format: PixelFormat,
) -> BlockedPlan {
    let chunk = chunk_for(chunk, len, format);
    let LineFilter::Recursive { coefficients, .. } = f else {
        unreachable!("blocked passes are recursive")
    };
    // Past the column's length the sums would only repeat its end rows: a reach of `len`
    // already covers every row a chunk's state depends on.
    let settle = || {
        crate::filter::gaussian::settle_rows(coefficients, OVERLAP_TOLERANCE, len)
            .unwrap_or(len)
            .max(1)
    };
    let reach = match start {
        ChunkStart::Carried => None,
        ChunkStart::Overlap => Some(settle()).filter(|&reach| reach <= MAX_REACH),
        ChunkStart::Auto => Some(settle()).filter(|&reach| overlap_pays(reach, format)),
    };
    BlockedPlan { chunk, reach }
}

/// The defines a blocked pass over columns of `len` pixels of `format` is built with, as
/// `blocked_plan` decides for `f` and `blocked`: `block_overlap`'s where the chunks overlap,
/// the carried kernels' otherwise (for reports such as `gblur bench blur`'s).
pub fn pass_defines(
    f: &LineFilter,
    blocked: (usize, ChunkStart),
    len: usize,
    format: PixelFormat,
) -> String {
    let plan = blocked_plan(f, blocked, len, format);
    match plan.reach {
        Some(reach) => overlap_defines(plan.chunk, format, reach).0,
        None => blocked_defines(plan.chunk, format).0,
    }
}

/// The build options and work-group shape of `block_overlap`, and the work-items it puts
/// across one pixel: pixels of several channels walk one sample column per work-item
/// (`layout_defines`). The reach sets the length of its sums (a constant, so that their
/// weights sit at constant offsets).
pub fn overlap_defines(
    chunk: usize,
    format: PixelFormat,
    reach: usize,
) -> (String, [usize; 2], usize) {
    let samples = format.channels > 1;
    let (defines, shape, _) = layout_defines(chunk, format, samples);
    let lanes = if samples { format.channels } else { 1 };
    (format!("{defines} -DREACH={reach}"), shape, lanes)
}

/// Whether overlapped chunks reaching `reach` rows beat carried states, from `gblur bench
/// blur` on an H100 (docs/BENCHMARKS.md, session 7), 16 MP, f32: 1.28× at sigma 5 (reach 51)
/// and 1.66× at sigma 2 with c128, 1.4× and 1.6× with c64, but 0.90× at sigma 10 (reach 109)
/// and 0.5× at sigma 20, whatever the chunk: the sums' rows cost more than the carried
/// pipeline's second read once they are twice the reach of sigma 5. 8-bit RGB walked as
/// sample columns gained too (both passes 0.57 against 0.72 ms), and 8-bit gray more (0.17–
/// 0.18 against 0.25 ms, session 8), while 8-bit RGBA lost (overlapped c128 0.93 ms against
/// carried c64's 0.86, even with its samples decoded without a table). Gray+alpha was not
/// timed, so it stays carried.
fn overlap_pays(reach: usize, format: PixelFormat) -> bool {
    reach <= AUTO_REACH && (format.channels == 1 || format.channels == 3)
}

const AUTO_REACH: usize = 64;

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
    fn widened(self, vec: usize) -> PixelFormat {
        PixelFormat {
            channels: self.channels * vec,
            ..self
        }
    }

    /// Bytes of one pixel in registers and local memory (an OpenCL float3 takes 16).
    fn local_bytes(self) -> usize {
        4 * if self.channels == 3 { 4 } else { self.channels }
    }
}

/// The build options and work-group shapes of the blocked kernels for `chunk` rows per chunk
/// and pixels of `format`: `[TILE, GROUP_CHUNKS]` of the final pass (TILE columns ×
/// GROUP_CHUNKS chunks, a local tile of about 34 KB, under the 48 KB OpenCL devices promise)
/// and `[SUM_LANES, SPLIT]` of the summaries (SUM_LANES columns × SPLIT work-items per chunk).
/// `GBLUR_BLOCKED_TUNE` (`tile=N,group=N,batch=N,pre=0|1,lanes=N,split=N,vec=N`, any of them)
/// overrides the shapes, the rows loaded ahead and whether they are double-buffered, the
/// work-group width of the summaries and carries and the columns each of their work-items
/// takes (`summary_vectors`), for tuning sweeps with `gblur bench blur`; normal use never
/// sets it.
pub fn blocked_defines(chunk: usize, format: PixelFormat) -> (String, [usize; 2], [usize; 2]) {
    layout_defines(chunk, format, false)
}

/// `blocked_defines`, or with `samples` those of `block_overlap` walking one sample column
/// per work-item (-DSAMPLES, for pixels of several channels): TILE counts sample columns,
/// whole pixels of them (32, or 96 for 3 channels), and the walks are those of 1-channel f32.
fn layout_defines(
    chunk: usize,
    format: PixelFormat,
    samples: bool,
) -> (String, [usize; 2], [usize; 2]) {
    let bytes = format.local_bytes();
    let tune = blocked_tune();
    let (tile, column_bytes, stride) = if samples {
        let tile = if format.channels == 3 { 96 } else { 32 };
        (tile, 4, tile + format.channels)
    } else {
        let tile = tune.tile.unwrap_or(if bytes >= 16 { 16 } else { 32 });
        (tile, bytes, tile + 1)
    };
    let group_chunks = tune
        .group
        .unwrap_or((34 * 1024 / (chunk * stride * column_bytes)).clamp(1, 8));
    // SPLIT must divide the chunk; the partial sums (8 pixels per work-item) stay within
    // 32 KB of local memory.
    let split = tune
        .split
        .filter(|&s| s.is_power_of_two() && s <= 8 && chunk.is_multiple_of(s))
        .unwrap_or(SUMMARY_SPLIT);
    let sum_lanes = tune
        .lanes
        .unwrap_or(SUMMARY_LANES)
        .min((32 * 1024 / (8 * split * bytes)).max(1));
    let mut defines = format!(
        "-DCHUNK={chunk} -DTILE={tile} -DGROUP_CHUNKS={group_chunks} -DCH={} \
         -DSPLIT={split} -DSUM_LANES={sum_lanes}",
        format.channels
    );
    // The walks of 1-channel f32 pixels load 32 rows ahead, double-buffered (PREFETCH): on an
    // H100, 16 MP, the final passes went from 0.079 / 0.075 to 0.073 / 0.069 ms per axis; 32
    // rows alone gave 0.077 / 0.073, 8 rows double-buffered 0.091 / 0.087. Wider pixels keep 16
    // rows, double-buffered only where they are read as 8-bit samples: RGBA8's y final went
    // from 0.296-0.301 to 0.275-0.283 ms, while its x final (reading f32 RGBA) lost up to 0.009.
    let f32_1 = format == PixelFormat::F32 || samples;
    let batch = tune.batch.or(f32_1.then_some(32));
    if let Some(batch) = batch {
        defines.push_str(&format!(" -DBATCH={batch}"));
    }
    if tune.prefetch.unwrap_or(f32_1 || format.in_u8) {
        defines.push_str(" -DPREFETCH");
    }
    for (on, flag) in [
        (samples, " -DSAMPLES"),
        (format.in_u8, " -DIN_U8"),
        (format.out_u8, " -DOUT_U8"),
        (format.in_u8 && format.linear, " -DU8_LUT"),
        (format.out_u8 && format.linear, " -DLINEAR"),
    ] {
        if on {
            defines.push_str(flag);
        }
    }
    (defines, [tile, group_chunks], [sum_lanes, split])
}

/// How many neighbouring columns one work-item of the summaries takes, as one column of
/// OpenCL vectors: 1-channel f32 columns side by side are, to that kernel, a float4 (float2)
/// image of a quarter (half) the width with the very same floats in the very same places, so
/// the same summaries come out of wider loads (H100, 16 MP: 0.046 / 0.039 ms per axis with
/// float4 against 0.065 / 0.049 with single columns, both with SPLIT 4–8). 8-bit sources (their
/// conversion depends on the channel count) and multi-channel pixels keep one column each.
/// The carries keep one column per work-item: their walk is a chain, and a quarter of the
/// work-items made them 2.5× slower (0.025 against 0.009–0.010 ms).
fn summary_vectors(width: usize, format: PixelFormat) -> usize {
    if format != PixelFormat::F32 {
        return 1;
    }
    let most = blocked_tune()
        .vec
        .filter(|v| [1, 2, 4].contains(v))
        .unwrap_or(SUMMARY_VECTORS);
    [4, 2, 1]
        .into_iter()
        .find(|&v| v <= most && width.is_multiple_of(v))
        .unwrap_or(1)
}

const SUMMARY_VECTORS: usize = 4;

/// Work-items that share one chunk's summary, and columns per work-group of the summaries.
/// One work-item per chunk (SPLIT 1) left the c128 summaries as slow as the walk they replace
/// (0.076 against 0.073 ms per axis, 16 MP on an H100); 4 per chunk gave 0.046 with float4
/// columns. 2, 4 and 8 (32 columns wide) were within a point of each other on RGBA8.
const SUMMARY_SPLIT: usize = 4;
const SUMMARY_LANES: usize = 64;

#[derive(Clone, Copy, Default)]
struct BlockedTune {
    tile: Option<usize>,
    group: Option<usize>,
    batch: Option<usize>,
    lanes: Option<usize>,
    split: Option<usize>,
    vec: Option<usize>,
    prefetch: Option<bool>,
}

fn blocked_tune() -> BlockedTune {
    static TUNE: std::sync::OnceLock<BlockedTune> = std::sync::OnceLock::new();
    *TUNE.get_or_init(|| {
        let mut t = BlockedTune::default();
        let spec = std::env::var("GBLUR_BLOCKED_TUNE").unwrap_or_default();
        for (key, value) in spec.split(',').filter_map(|kv| kv.split_once('=')) {
            let raw: Option<usize> = value.trim().parse().ok();
            let value = raw.filter(|&v| v > 0);
            match key.trim() {
                "tile" => t.tile = value,
                "group" => t.group = value,
                "batch" => t.batch = value,
                "lanes" => t.lanes = value,
                "split" => t.split = value,
                "vec" => t.vec = value,
                "pre" => t.prefetch = raw.map(|v| v > 0),
                _ => {}
            }
        }
        t
    })
}

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
enum Along {
    Columns,
    Rows,
}

struct Run<'a> {
    ctx: &'a ClContext,
    timed: Vec<Enqueued>,
    /// Scratch buffers that must live until the queue has finished.
    keep: Vec<Buffer<f32>>,
}

/// Uploads a filter's coefficient block or taps (blocking: it is tiny, and a wait inside the
/// sequence of kernels would show up as a gap in the timed span).
fn upload_filter(ctx: &ClContext, f: &LineFilter) -> Result<Buffer<f32>, ClError> {
    match f {
        LineFilter::Recursive { coefficients, .. } => upload_floats(ctx, coefficients),
        LineFilter::Fir { taps, .. } => upload_floats(ctx, taps),
    }
}

/// What a blocked pass of one filter down columns of some length needs besides the image:
/// the chunk length and either the reach and weights of its overlapped sums or, for carried
/// states, the carry matrices (per section T^chunk, then T^last) and the weights of the
/// summaries' sums (kernels/recursive_blocks.cl, block_summary).
enum Starts {
    Overlap {
        chunk: usize,
        reach: usize,
        gains: Buffer<f32>,
    },
    Carried {
        chunk: usize,
        matrices: Buffer<f32>,
        gains: Buffer<f32>,
    },
}

/// The `Starts` of `f` down columns of `len` rows, for the pipeline's `(chunk, start)`.
fn blocked_starts(
    ctx: &ClContext,
    f: &LineFilter,
    blocked: (usize, ChunkStart),
    len: usize,
    format: PixelFormat,
) -> Result<Starts, ClError> {
    let BlockedPlan { chunk, reach } = blocked_plan(f, blocked, len, format);
    let LineFilter::Recursive { coefficients, .. } = f else {
        unreachable!("blocked passes are recursive")
    };
    if let Some(reach) = reach {
        // block_overlap's gain table: the causal shares of the rows above a chunk by distance,
        // the head, the anticausal shares of the rows 1 ..= reach below, the tail.
        let causal = crate::filter::gaussian::causal_shares(coefficients, reach);
        let anticausal = crate::filter::gaussian::anticausal_shares(coefficients, reach);
        let gains: Vec<f32> = causal
            .full
            .iter()
            .chain(&causal.head[reach - 1..])
            .chain(&anticausal.full[1..])
            .chain(&anticausal.tail[reach - 1..])
            .flatten()
            .map(|&v| v as f32)
            .collect();
        let gains = upload_floats(ctx, &gains)?;
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
        matrices: upload_floats(ctx, &matrices)?,
        gains: upload_floats(ctx, &gains)?,
    })
}

/// A small read-only buffer holding `data`, written with a blocking call because `data` may
/// not outlive this function (a non-blocking write may read it later). Done before the first
/// kernel, so the wait is not a gap inside the timed sequence.
fn upload_floats(ctx: &ClContext, data: &[f32]) -> Result<Buffer<f32>, ClError> {
    let mut buf = ctx.buffer(data.len(), true)?;
    ctx.write_blocking(&mut buf, data, "coefficients")?;
    Ok(buf)
}

impl Run<'_> {
    fn record(&mut self, timed: Timed, kind: PassKind, bytes: u64) {
        self.timed.push(Enqueued { timed, kind, bytes });
    }

    /// One axis of the blocked pipeline, writing `dst` transposed: the overlapped kernel, or
    /// summaries, carries and final pass. `lut` maps 8-bit samples to f32 (read only when
    /// `format.in_u8`).
    #[allow(clippy::too_many_arguments)]
    fn blocked(
        &mut self,
        coef: &Buffer<f32>,
        lut: &Buffer<f32>,
        (src, dst): (Arg, Arg),
        (w, h, planes): (usize, usize, usize),
        format: PixelFormat,
        axis: &str,
        starts: Starts,
    ) -> Result<(), ClError> {
        let ctx = self.ctx;
        let (chunk, matrices, gains) = match starts {
            Starts::Overlap {
                chunk,
                reach,
                gains,
            } => {
                let (defines, [tile, group_chunks], lanes) = overlap_defines(chunk, format, reach);
                let chunks = h.div_ceil(chunk);
                let k = ctx.kernel(BLOCKS, "block_overlap", &defines)?;
                // Work-items across: pixels, or samples (`lanes` a pixel).
                let across = w * lanes;
                let args = [
                    src,
                    dst,
                    Arg::Buf(coef),
                    Arg::Buf(&gains),
                    Arg::Buf(lut),
                    Arg::U32(across as u32),
                    Arg::U32(h as u32),
                    Arg::U32(chunks as u32),
                ];
                let global = [
                    across.div_ceil(tile) * tile,
                    chunks.div_ceil(group_chunks) * group_chunks,
                    planes,
                ];
                let name = format!("block overlap + transpose ({axis})");
                let t = ctx.run(&k, &args, &global, Some(&[tile, group_chunks, 1]), &name)?;
                // The overlaps are neighbouring chunks' rows, read at about the same time:
                // counted once, like the cache hits of the carried final pass.
                let n = (w * h * planes * format.channels) as u64;
                let size = |u8: bool| n * if u8 { 1 } else { 4 };
                self.record(
                    t,
                    PassKind::Filter,
                    size(format.in_u8) + size(format.out_u8),
                );
                self.keep.push(gains);
                return Ok(());
            }
            Starts::Carried {
                chunk,
                matrices,
                gains,
            } => (chunk, matrices, gains),
        };
        let (defines, [tile, group_chunks], _) = blocked_defines(chunk, format);
        // The summaries of `vec` neighbouring columns run as one column of vectors
        // (`summary_vectors`).
        let vec = summary_vectors(w, format);
        let (sum_defines, _, [sum_lanes, split]) = blocked_defines(chunk, format.widened(vec));
        let (wv, wv32) = (w / vec, (w / vec) as u32);
        let chunks = h.div_ceil(chunk);
        let ch = format.channels;
        let sum = ctx.buffer(8 * chunks * w * planes * ch, false)?;
        let (w32, h32, c32) = (w as u32, h as u32, chunks as u32);
        // Bytes of the image as the pass reads it, as it writes it, and of its summaries.
        let n = (w * h * planes) as u64;
        let size = |u8: bool| n * ch as u64 * if u8 { 1 } else { 4 };
        let (read, written) = (size(format.in_u8), size(format.out_u8));
        let summaries = n * ch as u64 * 32 / chunk as u64;

        let k = ctx.kernel(BLOCKS, "block_summary", &sum_defines)?;
        let args = [
            src,
            Arg::Buf(&sum),
            Arg::Buf(coef),
            Arg::Buf(&gains),
            Arg::Buf(lut),
            Arg::U32(wv32),
            Arg::U32(h32),
            Arg::U32(c32),
        ];
        let t = ctx.run(
            &k,
            &args,
            &[wv.div_ceil(sum_lanes) * sum_lanes, chunks * split, planes],
            Some(&[sum_lanes, split, 1]),
            &format!("block summaries ({axis})"),
        )?;
        self.record(t, PassKind::Filter, read + summaries);

        // Work-group width of the carries: the driver's choice unless tuned.
        let lanes = blocked_tune().lanes;
        let wide = lanes.map_or(w, |l| w.div_ceil(l) * l);
        let local = |rest: [usize; 2]| lanes.map(|l| [l, rest[0], rest[1]]);
        let k = ctx.kernel(BLOCKS, "block_carry", &defines)?;
        let args = [
            src,
            Arg::Buf(&sum),
            Arg::Buf(coef),
            Arg::Buf(&matrices),
            Arg::Buf(lut),
            Arg::U32(w32),
            Arg::U32(h32),
            Arg::U32(c32),
        ];
        let t = ctx.run(
            &k,
            &args,
            &[wide, planes, 2],
            local([1, 1]).as_ref().map(|l| &l[..]),
            &format!("block carries ({axis})"),
        )?;
        self.record(t, PassKind::Filter, 2 * summaries);

        let k = ctx.kernel(BLOCKS, "block_final", &defines)?;
        let args = [
            src,
            dst,
            Arg::Buf(&sum),
            Arg::Buf(coef),
            Arg::Buf(lut),
            Arg::U32(w32),
            Arg::U32(h32),
            Arg::U32(c32),
        ];
        let global = [
            w.div_ceil(tile) * tile,
            chunks.div_ceil(group_chunks) * group_chunks,
            planes,
        ];
        let t = ctx.run(
            &k,
            &args,
            &global,
            Some(&[tile, group_chunks, 1]),
            &format!("block final + transpose ({axis})"),
        )?;
        self.record(t, PassKind::Filter, 2 * read + written + summaries);
        // The summary and carry buffers must outlive the kernels that read them.
        self.keep.extend([sum, matrices, gains]);
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn filter(
        &mut self,
        f: &LineFilter,
        coef: &Buffer<f32>,
        src: &Buffer<f32>,
        dst: &Buffer<f32>,
        (w, h, planes): (usize, usize, usize),
        along: Along,
        name: &str,
    ) -> Result<(), ClError> {
        let bytes = (w * h * planes) as u64 * 4 * accesses(f);
        let (w32, h32) = (w as u32, h as u32);
        let t = match (f, along) {
            (LineFilter::Recursive { .. }, along) => {
                let k = self.ctx.kernel(RECURSIVE, "recursive_line", "")?;
                // (len, lines, elem_stride, line_stride)
                let (len, lines, es, ls) = match along {
                    Along::Columns => (h32, w32, w32, 1),
                    Along::Rows => (w32, h32, 1, w32),
                };
                let args = [
                    Arg::Buf(src),
                    Arg::Buf(dst),
                    Arg::Buf(coef),
                    Arg::U32(len),
                    Arg::U32(lines),
                    Arg::U32(es),
                    Arg::U32(ls),
                    Arg::U32(w32 * h32),
                ];
                self.ctx
                    .run(&k, &args, &[lines as usize, planes], None, name)?
            }
            (LineFilter::Fir { taps, .. }, along) => {
                let kname = match along {
                    Along::Columns => "fir_y",
                    Along::Rows => "fir_x",
                };
                let k = self.ctx.kernel(CONVOLUTION, kname, "")?;
                let args = [
                    Arg::Buf(src),
                    Arg::Buf(dst),
                    Arg::Buf(coef),
                    Arg::U32((taps.len() / 2) as u32),
                    Arg::U32(w32),
                    Arg::U32(h32),
                ];
                self.ctx.run(&k, &args, &[w, h, planes], None, name)?
            }
        };
        self.record(t, PassKind::Filter, bytes);
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
                let plan = blocked_plan(f, (chunk, start), len, format);
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

    pub fn len(&self) -> usize {
        self.width * self.height * self.channels
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A device command with what the report says about it.
pub struct Enqueued {
    pub timed: Timed,
    pub kind: PassKind,
    pub bytes: u64,
}

impl Enqueued {
    pub fn into_pass(self, ctx: &ClContext) -> Result<Pass, ClError> {
        let ms = self.timed.device_ms().map_err(|e| ClError::Api {
            device: ctx.device_name(),
            what: "reading profiling counters".into(),
            code: e.to_string(),
        })?;
        Ok(Pass::device(self.timed.name, self.kind, ms, self.bytes))
    }
}

/// Enqueues the blur of `img.a` in place (`img.b` is scratch) and returns the commands.
pub fn enqueue(
    ctx: &ClContext,
    img: &DeviceImage,
    blur: &Blur2d,
    pipeline: Pipeline,
) -> Result<Vec<Enqueued>, ClError> {
    let (w, h, c) = (img.width, img.height, img.channels);
    let (a, b) = (&img.a, &img.b);
    let (cx, cy) = (upload_filter(ctx, &blur.x)?, upload_filter(ctx, &blur.y)?);
    let mut run = Run {
        ctx,
        timed: Vec::new(),
        keep: Vec::new(),
    };
    match pipeline {
        Pipeline::Transpose(kind) => {
            run.filter(
                &blur.y,
                &cy,
                a,
                b,
                (w, h, c),
                Along::Columns,
                "column pass 1 (y)",
            )?;
            run.transpose(kind, b, a, (w, h, c), "transpose 1")?;
            run.filter(
                &blur.x,
                &cx,
                a,
                b,
                (h, w, c),
                Along::Columns,
                "column pass 2 (x)",
            )?;
            run.transpose(kind, b, a, (h, w, c), "transpose 2")?;
        }
        Pipeline::Direct => {
            run.filter(&blur.x, &cx, a, b, (w, h, c), Along::Rows, "row pass (x)")?;
            run.filter(
                &blur.y,
                &cy,
                b,
                a,
                (w, h, c),
                Along::Columns,
                "column pass (y)",
            )?;
        }
        Pipeline::Blocked { chunk, start } => {
            // Each axis leaves its result transposed, so after y then x the image is upright.
            let mut in_a = true;
            // Every upload happens before the first kernel, so none waits inside the sequence.
            let mut carries = Vec::new();
            for (f, len) in [(&blur.y, h), (&blur.x, w)] {
                carries.push(match f.is_recursive() {
                    true => Some(blocked_starts(
                        ctx,
                        f,
                        (chunk, start),
                        len,
                        PixelFormat::F32,
                    )?),
                    false => None,
                });
            }
            let lut = upload_floats(ctx, &pixels::u8_lut(false))?;
            let axes = [
                (&blur.y, &cy, (w, h, c), "y"),
                (&blur.x, &cx, (h, w, c), "x"),
            ];
            for ((f, coef, dims, axis), carry) in axes.into_iter().zip(carries) {
                let (cur, other) = if in_a { (a, b) } else { (b, a) };
                if let Some(carry) = carry {
                    let io = (Arg::Buf(cur), Arg::Buf(other));
                    run.blocked(coef, &lut, io, dims, PixelFormat::F32, axis, carry)?;
                    in_a = !in_a;
                } else {
                    let name = format!("fir pass ({axis})");
                    run.filter(f, coef, cur, other, dims, Along::Columns, &name)?;
                    let name = format!("transpose ({axis})");
                    run.transpose(TransposeKind::DEFAULT, other, cur, dims, &name)?;
                }
            }
            if !in_a {
                let t = ctx.copy(b, a, img.len(), "copy back")?;
                run.record(t, PassKind::Transfer, img.len() as u64 * 8);
            }
            run.keep.push(lut);
        }
    }
    // The coefficient and scratch buffers must live until their kernels ran.
    ctx.finish()?;
    drop(run.keep);
    Ok(run.timed)
}

/// Blurs `img` on the device; returns the result and every pass with its device time. The
/// result is downloaded into `img`'s own memory: its pages are already mapped, where a fresh
/// allocation would fault on every page during the copy (measured: 1.1 GB/s instead of ~6 on
/// an H100 with pageable memory).
pub fn blur(
    ctx: &ClContext,
    mut img: Planar,
    blur: &Blur2d,
    pipeline: Pipeline,
) -> Result<(Planar, Vec<Pass>), ClError> {
    let n = img.data.len() as u64;
    let mut dev = DeviceImage::new(ctx, img.width, img.height, img.channels)?;
    let mut commands = vec![Enqueued {
        timed: ctx.write(&mut dev.a, &img.data, "upload")?,
        kind: PassKind::Transfer,
        bytes: n * 4,
    }];
    commands.extend(enqueue(ctx, &dev, blur, pipeline)?);
    commands.push(Enqueued {
        timed: ctx.read(&dev.a, &mut img.data, "download")?,
        kind: PassKind::Transfer,
        bytes: n * 4,
    });
    let passes = commands
        .into_iter()
        .map(|c| c.into_pass(ctx))
        .collect::<Result<Vec<_>, ClError>>()?;
    Ok((img, passes))
}

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
    fn formats(self) -> [PixelFormat; 2] {
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

/// Enqueues the blur of the 8-bit image in `bytes` (`w`×`h` pixels of `channels` samples), in
/// place: the y axis reads the bytes and writes the f32 intermediate `mid` transposed, the x
/// axis reads `mid` and writes the bytes back upright. Both axes must be recursive.
#[allow(clippy::too_many_arguments)]
pub fn enqueue_u8(
    ctx: &ClContext,
    bytes: &Buffer<u8>,
    mid: &Buffer<f32>,
    (w, h, channels): (usize, usize, usize),
    blur: &Blur2d,
    linear: bool,
    blocked: (usize, ChunkStart),
) -> Result<Vec<Enqueued>, ClError> {
    let (cx, cy) = (upload_filter(ctx, &blur.x)?, upload_filter(ctx, &blur.y)?);
    let lut = upload_floats(ctx, &pixels::u8_lut(linear))?;
    let [fy, fx] = Upload::U8 { channels, linear }.formats();
    let carries = [
        blocked_starts(ctx, &blur.y, blocked, h, fy)?,
        blocked_starts(ctx, &blur.x, blocked, w, fx)?,
    ];
    let mut run = Run {
        ctx,
        timed: Vec::new(),
        keep: Vec::new(),
    };
    let [carry_y, carry_x] = carries;
    let io = (Arg::Bytes(bytes), Arg::Buf(mid));
    run.blocked(&cy, &lut, io, (w, h, 1), fy, "y", carry_y)?;
    let io = (Arg::Buf(mid), Arg::Bytes(bytes));
    run.blocked(&cx, &lut, io, (h, w, 1), fx, "x", carry_x)?;
    ctx.finish()?;
    drop(run.keep);
    Ok(run.timed)
}

/// Blurs an 8-bit image (gray, gray+alpha, RGB, RGBA) on the device in place: its samples go
/// up as bytes and come back as bytes into the same memory, so the host holds no other copy.
/// `pipeline` must be the blocked one and both axes recursive (`Upload::for_image`).
pub fn blur_u8(
    ctx: &ClContext,
    image: &mut DynamicImage,
    blur: &Blur2d,
    linear: bool,
    pipeline: Pipeline,
) -> Result<Vec<Pass>, ClError> {
    let (w, h) = (image.width() as usize, image.height() as usize);
    let channels = image.color().channel_count() as usize;
    let Pipeline::Blocked { chunk, start } = pipeline else {
        unreachable!("Upload::for_image sends 8-bit images only to the blocked pipeline")
    };
    let samples: &mut [u8] = match image {
        DynamicImage::ImageLuma8(b) => b,
        DynamicImage::ImageLumaA8(b) => b,
        DynamicImage::ImageRgb8(b) => b,
        DynamicImage::ImageRgba8(b) => b,
        _ => unreachable!("Upload::for_image sends only 8-bit images here"),
    };
    let n = samples.len() as u64;
    let mut bytes = ctx.buffer::<u8>(samples.len(), false)?;
    let mid = ctx.buffer::<f32>(samples.len(), false)?;
    let mut commands = vec![Enqueued {
        timed: ctx.write(&mut bytes, samples, "upload (8-bit)")?,
        kind: PassKind::Transfer,
        bytes: n,
    }];
    commands.extend(enqueue_u8(
        ctx,
        &bytes,
        &mid,
        (w, h, channels),
        blur,
        linear,
        (chunk, start),
    )?);
    commands.push(Enqueued {
        timed: ctx.read(&bytes, samples, "download (8-bit)")?,
        kind: PassKind::Transfer,
        bytes: n,
    });
    commands
        .into_iter()
        .map(|c| c.into_pass(ctx))
        .collect::<Result<Vec<_>, ClError>>()
}
